"""JAX primitives that run cyscatter's host kernels, with the rules that let every JAX transformation through.

Each cyscatter function becomes a JAX primitive (the way ``jax/_src/lax/slicing.py`` fills in a primitive's rules
right beside it): evaluated eagerly by calling cyscatter on the host arrays, under ``jax.jit`` lowered to a
call of the same function through XLA's FFI (`cyscatter.jax._ffi`, which hands it the buffers XLA gives as
NumPy views, no copy; a ``jax.pure_callback``, which copies every operand, where that extension is not built), its
output shape found from the operands' shapes (a static size such as
``dim_size`` is a parameter), and batched (``jax.vmap``) by moving the batch axis to the end of the value
operands, where it is one more feature axis that the kernels treat independently (an index or a per-edge weight
with a batch axis instead runs one call per batch element through ``lax.map``).

Differentiation follows HIPS autograd's ``getitem``/``untake``: every derivative is a *linear* primitive in its
first operand whose transpose is another primitive, and the two transpose into each other, so any order of
reverse and forward mode composes. A forward primitive's JVP binds the linear map of its tangent that the core's
``*_jvp`` function computes (for a linear op, the forward primitive itself); JAX transposes that for reverse mode
into the core's ``*_vjp_src``. The other operands of a linear primitive (src, out: which elements won a max, how
many entries a mean divides by) enter it as residuals. Where the op's partial derivatives are locally constant
(`cyscatter.OPS`: ``Op.partials == ""``: add, mean, max, min, the assignments and the NaN-skipping twins), a
residual's own derivative is zero, which makes second derivatives exact; elsewhere (mul, div, softmax, var, ...)
a second derivative raises NotImplementedError rather than return a silently wrong zero.
"""
from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_NOT_MAPPED = None   # how a batching rule is told that an operand has no batch axis


class Static:
    """A host object (a `GatherScatterPlan`) carried as a primitive parameter: equal only to itself, hashed by
    identity, so a traced function is retraced for another plan and never compares plans' arrays."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return id(self.value)

    def __eq__(self, other):
        return isinstance(other, Static) and other.value is self.value

    def __repr__(self):
        return f"Static({type(self.value).__name__} at {id(self.value):#x})"


def canonical(dtype) -> np.dtype:
    """The dtype JAX gives an array of `dtype` (float64 -> float32 without x64)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.dtype(dtype)))


def zeros_like_shape(shape, dtype):
    """A zero array of `shape` that allocates one element: a residual a rule reads only for its shape."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape))


def host_primitive(name: str, host, result, *, values=(0,), index=None) -> Primitive:
    """A primitive ``cyscatter_<name>`` computing ``host(*numpy_operands, **params)``.

    result(*operands, **params) -> (shape, dtype) from anything with ``.shape``/``.dtype``. `values` are the
    operands whose trailing axes are feature axes (the batching rule may append one): src, out, tangents; never
    an index or a per-edge weight; or a function (operands, params) -> those positions.

    `index`: the position of an index operand that may be a tuple index, stacked. The primitive then takes the
    parameter ``coords``: None for an integer index, m for a tuple of m coordinate arrays stacked into one
    operand of shape (m, *I) (a primitive's operands are arrays); `host` and `result` receive the tuple of the m
    coordinates (of shape I each) in its place and never see ``coords``, so the core keeps every tuple and mode
    rule. Or a function params -> ((position, m), ...) for several such operands, whose parameters `host` and
    `result` then receive."""
    prim = Primitive(f"cyscatter_{name}")

    def unstack(operands, params, split):
        if index is None:
            return operands, params
        if callable(index):
            stacked = index(params)
        else:
            params = dict(params)
            stacked = ((index, params.pop("coords")),)
        operands = list(operands)
        for position, m in stacked:
            if m is not None:
                operands[position] = split(operands[position], m)
        return operands, params

    def run(*arrays, **params):
        arrays, params = unstack([np.asarray(a) for a in arrays], params, lambda a, m: tuple(a[k] for k in range(m)))
        shape, dtype = result(*arrays, **params)
        out = np.asarray(host(*arrays, **params))
        if out.shape != tuple(shape):
            raise AssertionError(f"cyscatter_{name}: host result of shape {out.shape}, expected {tuple(shape)}")
        return out.astype(dtype, copy=False)

    def shaped(avals, params):
        avals, params = unstack(avals, params, lambda a, m: (jax.ShapeDtypeStruct(a.shape[1:], a.dtype),) * m)
        return result(*avals, **params)

    def impl(*arrays, **params):
        return jnp.asarray(run(*arrays, **params))

    def abstract(*avals, **params):
        shape, dtype = shaped(avals, params)
        return jax.core.ShapedArray(tuple(shape), dtype)

    def lower(*args, **params):
        shape, dtype = shaped(args, params)
        fn = functools.partial(run, **params)
        if host_call() == "ffi" and all(_bridged(a.dtype) for a in (*args, jax.ShapeDtypeStruct((), dtype))):
            return jax.ffi.ffi_call(_TARGET, jax.ShapeDtypeStruct(tuple(shape), dtype))(
                *args, key=np.int64(_key(prim.name, params, fn)))
        return jax.pure_callback(fn, jax.ShapeDtypeStruct(tuple(shape), dtype), *args, vmap_method="sequential")

    prim.def_impl(impl)
    prim.def_abstract_eval(abstract)
    mlir.register_lowering(prim, mlir.lower_fun(lower, multiple_results=False))
    batching.primitive_batchers[prim] = functools.partial(_batch, prim, values)
    return prim


def index_shape(index) -> tuple:
    """The index shape I of an integer index or of a tuple of coordinates (the empty tuple's is ())."""
    if isinstance(index, tuple):
        return tuple(index[0].shape) if index else ()
    return tuple(index.shape)


def addressed(index) -> int:
    """How many destination axes `index` addresses: m for a tuple of m coordinates, 1 for an integer index."""
    return len(index) if isinstance(index, tuple) else 1


def sizes(size) -> tuple:
    """A static destination size as a tuple: (n,) for an integer index's n, the tuple of a tuple index's."""
    return tuple(size) if isinstance(size, tuple) else (size,)


def leading(shape, coords):
    """The destination size that an array of `shape` (D + F) has for an index of `coords` (None or m): its
    first dim, or the tuple of its first m dims (a primitive's static parameter)."""
    return shape[0] if coords is None else tuple(shape[:coords])


# ---- the host call under jit -----------------------------------------------------------------------------------------

_TARGET = "cyscatter_host_call"
_CALLS: list = []          # key -> run(*arrays) of one primitive with its parameters
_KEYS: dict = {}           # (primitive name, parameters) -> key, so retracing reuses a key
# the dtypes the bridge views as NumPy arrays (`numpy_type` in _ffi.cc); others (bfloat16, the float8s, int4, ...)
# are ml_dtypes' extension types, which only the callback's copies handle
_BRIDGED = frozenset(map(np.dtype, ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                    "float16", "float32", "float64", "complex64", "complex128")))


def _bridged(dtype) -> bool:
    return np.dtype(dtype) in _BRIDGED


_MODE = {"value": None}    # "ffi" or "callback", decided on first use


def host_call() -> str:
    """How a jitted primitive calls cyscatter: ``"ffi"`` (the compiled bridge `cyscatter.jax._ffi`: no copies) or
    ``"callback"`` (``jax.pure_callback``: the fallback where the bridge was not built, or where the environment
    sets ``CYSCATTER_JAX_FFI=0``)."""
    if _MODE["value"] is None:
        set_host_call("callback" if os.environ.get("CYSCATTER_JAX_FFI", "1") == "0" else "ffi")
    return _MODE["value"]


def set_host_call(mode: str) -> str:
    """Choose how functions traced from now on call cyscatter (``"ffi"`` falls back to ``"callback"`` when the
    bridge is unavailable); returns the mode in force. Functions already compiled keep theirs."""
    if mode not in ("ffi", "callback"):
        raise ValueError(f"mode must be 'ffi' or 'callback', got {mode!r}")
    _MODE["value"] = "ffi" if mode == "ffi" and _bridge() else "callback"
    return _MODE["value"]


@functools.cache
def _bridge() -> bool:
    try:
        from cyscatter.jax import _ffi
    except ImportError:
        return False
    _ffi.set_dispatch(_dispatch)
    jax.ffi.register_ffi_target(_TARGET, _ffi.handler(), platform="cpu")
    return True


def _key(name, params, fn) -> int:
    try:
        ident = (name, tuple(sorted(params.items())))
        hash(ident)
    except TypeError:   # an unhashable parameter: a key of its own
        ident = None
    if ident is not None and ident in _KEYS:
        return _KEYS[ident]
    _CALLS.append(fn)
    if ident is not None:
        _KEYS[ident] = len(_CALLS) - 1
    return len(_CALLS) - 1


def _dispatch(key, args, rets):
    """Called by the FFI handler with read-only views of the operands and the writable result buffer."""
    rets[0][...] = _CALLS[key](*args)


def _batch(prim, values, args, dims, **params):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not _NOT_MAPPED)
    values = frozenset(values(args, params) if callable(values) else values)
    if all(d is _NOT_MAPPED or i in values for i, d in enumerate(dims)):
        # the batch axis becomes the last feature axis of every value operand: one kernel call for the batch
        moved = []
        for i, (a, d) in enumerate(zip(args, dims)):
            if i in values:
                a = (jnp.moveaxis(a, d, -1) if d is not _NOT_MAPPED
                     else jnp.broadcast_to(a[..., None], (*a.shape, size)))
            moved.append(a)
        out = prim.bind(*moved, **params)
        return out, out.ndim - 1
    # a batched index or weight: one call per batch element
    batched = [i for i, d in enumerate(dims) if d is not _NOT_MAPPED]

    def one(slices):
        full = list(args)
        for i, s in zip(batched, slices):
            full[i] = s
        return prim.bind(*full, **params)
    return jax.lax.map(one, [jnp.moveaxis(args[i], dims[i], 0) for i in batched]), 0


# ---- differentiation ------------------------------------------------------------------------------------------------

def zero_tangent(primal):
    """The symbolic zero tangent of `primal` (float0 for an integer output)."""
    return ad.Zero(jax.typeof(primal).to_tangent_aval())


def is_zero(t) -> bool:
    return type(t) is ad.Zero


def instantiate(t, like):
    """A tangent as an array (JAX passes symbolic zeros), of the primal `like`'s dtype."""
    return jnp.zeros(like.shape, like.dtype) if is_zero(t) else t


def def_linear(prim: Primitive, transpose, *, residuals_frozen=lambda params, slots: True,
               tangent_params=lambda params: params, what: str = ""):
    """`prim` is linear in operand 0; the other operands are residuals or indices.

    transpose(ct, *operands, aval0, **params) -> the cotangent of operand 0 (`aval0` its abstract value).
    residuals_frozen(params, slots): the derivative of the map with respect to the residual operands `slots` (their
    positions) is zero (the op's partials are locally constant); otherwise a nonzero tangent of a residual (a
    second derivative) raises NotImplementedError. tangent_params(params): the parameters the map of the tangent
    takes (no fill value: an empty group's tangent is zero)."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        slots = frozenset(i for i, t in enumerate(tangents) if i and not is_zero(t))
        if slots and not residuals_frozen(params, slots):
            raise NotImplementedError(
                f"cyscatter.jax: second derivatives of {what or prim.name} {_describe(params)} are not implemented "
                "(only first order, or second order where the op's partial derivatives are locally constant: "
                "add, sub, mean, sqrt_n, max, min, gather)")
        if is_zero(tangents[0]):
            return out, zero_tangent(out)
        return out, prim.bind(tangents[0], *primals[1:], **tangent_params(params))

    ad.primitive_jvps[prim] = jvp
    def_transpose(prim, transpose)


def def_transpose(prim: Primitive, transpose):
    """`prim`'s transpose in operand 0 (the others stay primal values): transpose(ct, *operands[1:], aval0=,
    **params)."""
    def transpose_rule(ct, *operands, **params):
        lin = operands[0]
        if not ad.is_undefined_primal(lin) or any(ad.is_undefined_primal(o) for o in operands[1:]):
            raise NotImplementedError(f"{prim.name} is linear in its first operand only")
        if is_zero(ct):
            return [ad.Zero(lin.aval)] + [None] * (len(operands) - 1)
        return [transpose(ct, *operands[1:], aval0=lin.aval, **params)] + [None] * (len(operands) - 1)

    ad.primitive_transposes[prim] = transpose_rule


def def_nonlinear(prim: Primitive, tangent):
    """`prim`'s JVP: tangent(tangents, primals, out, **params) -> the output tangent, from linear primitives."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(is_zero(t) for t in tangents):
            return out, zero_tangent(out)
        return out, tangent(tangents, primals, out, **params)
    ad.primitive_jvps[prim] = jvp


def def_constant(prim: Primitive):
    """An integer-valued primitive (argmax, count): no derivative."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        return out, zero_tangent(out)
    ad.primitive_jvps[prim] = jvp


def _describe(params) -> str:
    op = params.get("op")
    return f"(op={op!r})" if op is not None else ""
