"""cyscatter: fast scatter/gather for NumPy, with split reverse functions for any autodiff system.

Semantics follow NNlib.jl (`scatter`, `scatter!`, `gather`, `gather!`, `∇scatter_src`, `∇scatter_dst`,
`∇gather_src`) in NumPy conventions: index dims first, feature dims last.
"""
import os as _os

from cyscatter._runtime.wait_policy import load_kernels as _load_kernels

_load_kernels()   # first of all: libgomp loads with it, with passive waiting unless the user chose otherwise

from cyscatter._runtime.machine import apply as _apply_machine  # the kernels' thresholds for this machine's caches

_apply_machine()

from cyscatter._api.argext import scatter_argmax, scatter_argmin, scatter_nanargmax, scatter_nanargmin
from cyscatter._api.count import scatter_count
from cyscatter._api.gather import gather, gather_into
from cyscatter._api.gather_scatter import gather_scatter
from cyscatter._api.logical import scatter_all, scatter_any
from cyscatter._api.moments import scatter_nanstd, scatter_nanvar, scatter_std, scatter_var
from cyscatter._api.multi import gather_scatter_multi, scatter_multi, segment_multi
from cyscatter._api.ranges import segment_ranges
from cyscatter._api.quantile import scatter_nanquantile, scatter_quantile
from cyscatter._api.scan import scatter_scan, scatter_scan_jvp, scatter_scan_vjp
from cyscatter._api.scatter import scatter, scatter_into
from cyscatter._api.segment import gather_segment, segment, segment_ids
from cyscatter._api.softmax import scatter_log_softmax, scatter_logsumexp, scatter_softmax
from cyscatter._arrays.keywords import hide_catch_all as _hide_catch_all
from cyscatter._plan.edges import GatherScatterPlan, gather_scatter_plan
from cyscatter._plan.index import MODES
from cyscatter._registry.ops import OP_NAMES, OPS, get_op
from cyscatter._reverse.gather_scatter import gather_scatter_jvp, gather_scatter_vjp_src, gather_scatter_vjp_weight
from cyscatter._reverse.moments import (
    scatter_nanstd_jvp,
    scatter_nanstd_vjp,
    scatter_nanvar_jvp,
    scatter_nanvar_vjp,
    scatter_std_jvp,
    scatter_std_vjp,
    scatter_var_jvp,
    scatter_var_vjp,
)
from cyscatter._reverse.multi import (
    gather_scatter_multi_jvp,
    gather_scatter_multi_vjp_src,
    gather_scatter_multi_vjp_weight,
    scatter_multi_jvp,
    scatter_multi_vjp_src,
    segment_multi_jvp,
    segment_multi_vjp_src,
)
from cyscatter._reverse.quantile import (
    scatter_nanquantile_jvp,
    scatter_nanquantile_vjp,
    scatter_quantile_jvp,
    scatter_quantile_vjp,
)
from cyscatter._reverse.scatter import gather_jvp, gather_vjp_src, scatter_jvp, scatter_vjp_dst, scatter_vjp_src
from cyscatter._reverse.segment import (
    gather_segment_vjp_src,
    segment_jvp,
    segment_ranges_jvp,
    segment_ranges_vjp_src,
    segment_vjp_src,
)
from cyscatter._reverse.softmax import (
    scatter_log_softmax_jvp,
    scatter_log_softmax_vjp,
    scatter_logsumexp_jvp,
    scatter_logsumexp_vjp,
    scatter_softmax_jvp,
    scatter_softmax_vjp,
)
from cyscatter._runtime.threads import get_num_threads, set_num_threads
from cyscatter._version import __version__

__all__ = [
    "scatter", "scatter_into", "gather", "gather_into",
    "scatter_vjp_src", "scatter_vjp_dst", "gather_vjp_src", "scatter_jvp", "gather_jvp",
    "OPS", "OP_NAMES", "MODES", "get_op", "get_include", "set_num_threads", "get_num_threads",
    # more reductions
    "scatter_argmax", "scatter_argmin", "scatter_logsumexp", "scatter_softmax", "scatter_log_softmax",
    "scatter_var", "scatter_std", "segment", "gather_segment", "segment_ids",
    "scatter_logsumexp_vjp", "scatter_logsumexp_jvp", "scatter_softmax_vjp", "scatter_softmax_jvp",
    "scatter_log_softmax_vjp", "scatter_log_softmax_jvp", "scatter_var_vjp", "scatter_var_jvp",
    "scatter_std_vjp", "scatter_std_jvp", "segment_vjp_src", "segment_jvp", "gather_segment_vjp_src",
    # message passing in one pass
    "gather_scatter", "gather_scatter_plan", "GatherScatterPlan", "gather_scatter_vjp_src",
    "gather_scatter_vjp_weight", "gather_scatter_jvp",
    # counts, any/all and grouped scans
    "scatter_count", "scatter_any", "scatter_all", "scatter_scan", "scatter_scan_vjp", "scatter_scan_jvp",
    # NaN-skipping reductions (the ops nansum, nanprod, fmax, fmin, nanmean are in OPS)
    "scatter_nanargmax", "scatter_nanargmin", "scatter_nanvar", "scatter_nanstd",
    "scatter_nanvar_vjp", "scatter_nanvar_jvp", "scatter_nanstd_vjp", "scatter_nanstd_jvp",
    # segments given as (start, stop) row ranges
    "segment_ranges", "segment_ranges_vjp_src", "segment_ranges_jvp",
    # several aggregations in one call (PyG's MultiAggregation layout)
    "scatter_multi", "segment_multi", "gather_scatter_multi", "scatter_multi_vjp_src", "scatter_multi_jvp",
    "segment_multi_vjp_src", "segment_multi_jvp", "gather_scatter_multi_vjp_src", "gather_scatter_multi_vjp_weight",
    "gather_scatter_multi_jvp",
    # per-group order statistics (scatter, segment and gather_scatter also take the ops "median", "nanmedian")
    "scatter_quantile", "scatter_nanquantile", "scatter_quantile_vjp", "scatter_quantile_jvp",
    "scatter_nanquantile_vjp", "scatter_nanquantile_jvp",
]





def get_include() -> str:
    """Directory holding ``cyscatter/kernels.pxd``, for ``include_path`` when cythonizing code that cimports it.

    Returns
    -------
    str
        The folder *above* the package, so ``from cyscatter.kernels cimport ...`` resolves.
    """
    return _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))


# the public functions take a port's torch_scatter / JAX keywords in a ``**porting`` catch-all that raises with the
# cyscatter spelling (cyscatter._arrays.keywords); their signatures, as help() and the docs show them, leave it out
for _public in __all__:
    if "porting" in getattr(getattr(globals()[_public], "__code__", None), "co_varnames", ()):
        _hide_catch_all(globals()[_public])
del _public
