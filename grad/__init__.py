"""grad: cyscatter's scatter and gather as HIPS autograd primitives, in reverse and forward mode, to any order.

Import it under an alias::

    import grad as csgrad      # not to be confused with autograd's own `grad` function

`csgrad.scatter`, `csgrad.scatter_into`, `csgrad.gather` and `csgrad.gather_into` take the arguments of their
cyscatter namesakes; the ``*_into`` forms are functional here (they return an updated copy). Reverse mode (`grad`,
`make_vjp`) and forward mode (`make_jvp`) work for every op, to any order (mul: to second order); the rules come
from the core's split reverse functions (`cyscatter.scatter_vjp_src`, ...). Needs the `grad` extra:
``pip install cyscatter[grad]``.
"""
try:
    import autograd as _autograd  # noqa: F401  (only whether it imports)
except ImportError as error:   # pragma: no cover - depends on the environment
    raise ImportError("the grad package needs autograd: pip install 'cyscatter[grad]' (or pip install autograd)"
                      ) from error

from cyscatter._arrays.protocols import take_foreign_in as _take_foreign_in
from grad._gather import gather, gather_into
from grad._gather_scatter import gather_scatter
from grad._groups import (
    gather_segment,
    scatter_argmax,
    scatter_argmin,
    scatter_log_softmax,
    scatter_logsumexp,
    scatter_nanstd,
    scatter_nanvar,
    scatter_softmax,
    scatter_std,
    scatter_var,
    segment,
    segment_ranges,
)
from grad._multi import gather_scatter_multi, scatter_multi, segment_multi
from grad._quantile import scatter_nanquantile, scatter_quantile
from grad._scan import scatter_scan
from grad._scatter import scatter, scatter_into

__all__ = ["scatter", "scatter_into", "gather", "gather_into",
           "scatter_logsumexp", "scatter_softmax", "scatter_log_softmax", "scatter_var", "scatter_std",
           "segment", "gather_segment", "scatter_argmax", "scatter_argmin", "gather_scatter",
           "scatter_scan", "scatter_nanvar", "scatter_nanstd", "scatter_quantile", "scatter_nanquantile",
           "segment_ranges", "scatter_multi", "segment_multi", "gather_scatter_multi"]

for _public in (scatter, scatter_into, gather, gather_into, scatter_logsumexp, scatter_softmax,
                scatter_log_softmax, scatter_var, scatter_std, gather_scatter, scatter_scan, scatter_nanvar,
                scatter_nanstd, scatter_quantile, scatter_nanquantile):
    _public.__module__ = __name__   # autograd's wrapper keeps name and doc, not the module (help(), doctest)
del _public
_take_foreign_in(globals(), __all__)
