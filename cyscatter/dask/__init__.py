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
``cyscatter.dask.gather_scatter`` runs message passing by block pairs (source partition, destination partition),
each with its own in-memory plan (``cyscatter.dask.gather_scatter_plan``, lazy, ``persist()`` to keep it), the
partials merged as the scatter's; its reverse functions (``gather_scatter_vjp_src``, ``_vjp_weight``, ``_jvp``) run
the in-memory ones per block pair, each pair's cotangent scaled by its share of the edges that an output element's
rule divides among (mean's count, max/min's tied winners). ``scatter_vjp_src``, ``scatter_vjp_dst`` and
``gather_vjp_src`` are the reverse functions of scatter and gather; ``segment``, ``gather_segment``, the softmax
family and the moments (and their NaN-skipping twins) are composed from the Dask scatter and gather.

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
from cyscatter.dask._edges import GatherScatterPlan, gather_scatter_plan
from cyscatter.dask._gather import gather
from cyscatter.dask._groups import (
    gather_segment,
    scatter_log_softmax,
    scatter_logsumexp,
    scatter_nanstd,
    scatter_nanvar,
    scatter_softmax,
    scatter_std,
    scatter_var,
    segment,
)
from cyscatter.dask._logical import scatter_all, scatter_any
from cyscatter.dask._message import gather_scatter
from cyscatter.dask._message_reverse import gather_scatter_jvp, gather_scatter_vjp_src, gather_scatter_vjp_weight
from cyscatter.dask._quantile import scatter_nanquantile, scatter_or_median, scatter_quantile
from cyscatter.dask._scan import scatter_scan
from cyscatter.dask._scatter import scatter
from cyscatter.dask._scatter_reverse import gather_vjp_src, scatter_vjp_dst, scatter_vjp_src
from cyscatter.dask._whole import EXPANDS as _EXPANDS
from cyscatter.dask._whole import accept_empty_tuple as _accept_empty_tuple

# the ops median / nanmedian: whole groups (cyscatter.dask._quantile); typed as the plain scatter
scatter = scatter_or_median
del scatter_or_median

__all__ = [
    "gather",
    "scatter",
    "scatter_all",
    "scatter_any",
    "scatter_argmax",
    "scatter_argmin",
    "scatter_count",
    "scatter_nanargmax",
    "scatter_nanargmin",
    "scatter_scan",
]
for _name in __all__:
    globals()[_name] = _accept_empty_tuple(globals()[_name])
del _name
__all__ += [
    "GatherScatterPlan",
    "gather_scatter",
    "gather_scatter_jvp",
    "gather_scatter_plan",
    "gather_scatter_vjp_src",
    "gather_scatter_vjp_weight",
    "gather_segment",
    "gather_vjp_src",
    "scatter_log_softmax",
    "scatter_nanquantile",
    "scatter_quantile",
    "scatter_logsumexp",
    "scatter_nanstd",
    "scatter_nanvar",
    "scatter_softmax",
    "scatter_std",
    "scatter_var",
    "scatter_vjp_dst",
    "scatter_vjp_src",
    "segment",
]
for _name in __all__:
    if _name in _EXPANDS:
        globals()[_name] = _accept_empty_tuple(globals()[_name])
del _name
_take_foreign_in(globals(), [n for n in __all__ if n != "GatherScatterPlan"])
