"""cyscatter on Dask arrays: lazy, chunked scatter and gather for data larger than memory or than one machine.

``cyscatter.dask.scatter`` reduces each (src block, index block) pair with the core Cython kernel into a partial
output and merges the partials with a tree reduction using each op's combine rule (``cyscatter._registry.ops.Op.combine``);
``cyscatter.dask.gather`` gathers each index block from the src blocks it needs. Both build Dask graphs and
compute nothing; they run on any Dask scheduler (threads, processes, ``dask.distributed``).
``cyscatter.dask.scatter_argmax`` / ``scatter_argmin`` reduce each block pair to (winning value, position in the
whole flattened index) and merge those pairs by the same tree, keeping the max/min winner (NaN wins, signed
zeros ordered) and on equal values the smaller position: the in-memory ``cyscatter.scatter_argmax`` /
``scatter_argmin`` result, int64 positions with ``n = index.size`` for empty groups.
``cyscatter.dask.scatter_scan`` scans each chunk with the core and combines it with the running total of the
chunks before it (a chain of per-chunk group totals): the in-memory ``cyscatter.scatter_scan`` result.

An empty index tuple (``index=()``, ``dim_size=()``: one entry reaching the whole destination, NumPy's ``a[()]``)
runs as the 0-d index 0 into a size-1 axis that the result then drops (``cyscatter.dask._whole``).

Needs the optional extra ``dask`` (``pip install "cyscatter[dask]"``); ``import cyscatter`` does not import Dask.
"""

try:
    import dask.array as _dask_array  # noqa: F401  (only whether it imports)
except ImportError as err:   # pragma: no cover - depends on the environment
    raise ImportError('cyscatter.dask needs Dask: pip install "cyscatter[dask]"') from err

from cyscatter._arrays.protocols import take_foreign_in as _take_foreign_in
from cyscatter.dask._argext import scatter_argmax, scatter_argmin, scatter_nanargmax, scatter_nanargmin
from cyscatter.dask._count import scatter_count
from cyscatter.dask._gather import gather
from cyscatter.dask._logical import scatter_all, scatter_any
from cyscatter.dask._quantile import scatter_nanquantile, scatter_quantile, with_order_stats
from cyscatter.dask._scan import scatter_scan
from cyscatter.dask._scatter import scatter
from cyscatter.dask._whole import accept_empty_tuple as _accept_empty_tuple

scatter = with_order_stats(scatter)   # the ops median / nanmedian: whole groups (cyscatter.dask._quantile)
del with_order_stats

__all__ = ["scatter", "gather", "scatter_argmax", "scatter_argmin", "scatter_count", "scatter_any", "scatter_all",
           "scatter_nanargmax", "scatter_nanargmin", "scatter_scan"]
for _name in __all__:
    globals()[_name] = _accept_empty_tuple(globals()[_name])
del _name
__all__ += ["scatter_quantile", "scatter_nanquantile"]   # index=() handled by themselves (a q axis may lead)
_take_foreign_in(globals(), __all__)
