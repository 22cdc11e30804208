"""cyscatter from JAX: every operation as a JAX function that works under ``jax.jit``, ``jax.grad``/``jax.vjp``,
``jax.jvp`` and ``jax.vmap``, run by cyscatter's CPU kernels.

Each function is a JAX primitive (`cyscatter.jax._primitives`): eagerly it calls cyscatter on the arrays; under
``jax.jit`` it lowers to a call through XLA's FFI that hands cyscatter XLA's buffers without copying them (the
optional extension ``cyscatter.jax._ffi``; a ``jax.pure_callback`` where it is not built); its derivatives are
linear primitives built from cyscatter's split reverse functions (``scatter_vjp_src``, ``scatter_jvp``, ``gather_scatter_vjp_src``, ...), each
the other's transpose, so reverse and forward mode compose to any order where the op's partials are locally
constant (add, sub, mean, sqrt_n, max, min, gather, gather_scatter in src, the add/max/min scans). An index is an
integer array or, where the core takes one, a tuple of per-axis integer arrays (stacked into one operand and handed
back to the core as the tuple), placed in src by ``axis=``. Output shapes are static: under jit pass ``dim_size``
(a tuple of sizes for a tuple index; ``num_segments``), or a `cyscatter.GatherScatterPlan` made outside.
``segment_sum``, ``segment_max``, ``segment_min`` and ``segment_prod`` take ``jax.ops``'s signatures and follow its
conventions (docs/jax.rst).

CPU only; needs the optional extra ``jax`` (``pip install "cyscatter[jax]"``); ``import cyscatter`` does not
import JAX.
"""
try:
    import jax as _jax  # noqa: F401  (only whether it imports)
except ImportError as err:   # pragma: no cover - depends on the environment
    raise ImportError('cyscatter.jax needs JAX: pip install "cyscatter[jax]"') from err

from cyscatter.jax._gather_scatter import gather_scatter
from cyscatter.jax._groups import (
    scatter_log_softmax,
    scatter_logsumexp,
    scatter_nanstd,
    scatter_nanvar,
    scatter_scan,
    scatter_softmax,
    scatter_std,
    scatter_var,
)
from cyscatter.jax._into import scatter_into
from cyscatter.jax._scatter import (
    gather,
    gather_segment,
    scatter,
    scatter_all,
    scatter_any,
    scatter_argmax,
    scatter_argmin,
    scatter_count,
    scatter_nanargmax,
    scatter_nanargmin,
    segment,
)
from cyscatter.jax._segment_ops import segment_max, segment_min, segment_prod, segment_sum

__all__ = [
    "gather",
    "gather_scatter",
    "gather_segment",
    "scatter",
    "scatter_all",
    "scatter_any",
    "scatter_argmax",
    "scatter_argmin",
    "scatter_count",
    "scatter_into",
    "scatter_log_softmax",
    "scatter_logsumexp",
    "scatter_nanargmax",
    "scatter_nanargmin",
    "scatter_nanstd",
    "scatter_nanvar",
    "scatter_scan",
    "scatter_softmax",
    "scatter_std",
    "scatter_var",
    "segment",
    "segment_max",
    "segment_min",
    "segment_prod",
    "segment_sum",
]


# the core's hints (`cyscatter._arrays.keywords.HINTS`) where they hold here too; these differ for JAX's frontend
# (dim and axis: only for the functions without `axis`, which index axis 0)
_OWN_HINTS = {
    "dim": ("torch_scatter's name for the indexed axis: this function of cyscatter.jax indexes axis 0, features "
            "last (move the indexed axis first with jnp.moveaxis; torch_scatter's dim=0 is the default)"),
    "axis": "this function of cyscatter.jax indexes axis 0, features last: move the indexed axis first with "
            "jnp.moveaxis",
    "device": "cyscatter.jax runs its kernels on the host (CPU) whatever the device of the arrays",
}


def _hinting(fn):
    """`fn` whose TypeError for a peer's keyword (reduce=, dim=, num_segments=, device=, ...) names the cyscatter
    spelling; the wrapper costs one frame per call, nothing beside a JAX primitive's bind."""
    import functools
    import inspect

    from cyscatter._arrays.keywords import HINTS

    params = inspect.signature(fn).parameters

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError:
            unknown = [key for key in kwargs if key not in params]
            own = None if unknown and unknown[0] == "dim" and "axis" in params else _OWN_HINTS
            hint = ((own or {}).get(unknown[0]) or HINTS.get(unknown[0])) if unknown else None
            if hint is None:
                raise
            raise TypeError(f"{fn.__name__}() got an unexpected keyword argument {unknown[0]!r}: {hint}") from None
    return call


for _name in __all__:
    globals()[_name] = _hinting(globals()[_name])
del _name
