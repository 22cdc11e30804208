"""Argument checks and index layout shared by the primitives: which dims of an array the index spans."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from autograd.extend import defjvp, defvjp
from autograd.tracer import getval, isbox

import cyscatter as cs
from cyscatter._arrays.dtypes import is_bfloat16
from cyscatter._plan.layout import normalize_axis
from grad._primitive import primitive


def require_inexact(x, arg: str, fun: str) -> None:
    """Refuse to differentiate with respect to an integer (or boolean) argument."""
    dtype = np.asarray(getval(x)).dtype   # (np.result_type reads a list as a dtype spec)
    if is_bfloat16(dtype):   # autograd has no vector space for ml_dtypes' dtypes (kind 'V')
        raise TypeError(f"grad.{fun} cannot differentiate with respect to {arg} of dtype bfloat16: autograd has "
                        f"no bfloat16 vector space; the forward call works, and to differentiate cast {arg} to "
                        "float32 (cyscatter accumulates bfloat16 in float32) or float64 (check_grads)")
    if dtype.kind not in "fc":
        raise TypeError(f"grad.{fun} cannot differentiate with respect to {arg} of dtype {dtype}: only floating "
                        f"and complex arrays have gradients (cast {arg} to float first)")


def require_inexact_traced(x, arg: str, fun: str) -> None:
    """`require_inexact` at once for a traced (boxed) argument of a function built on other primitives (segment
    on scatter, gather_scatter on gather and scatter): the error names `fun`, the function called, rather than
    the inner primitive whose derivative rule would refuse it later."""
    if isbox(x):
        require_inexact(x, arg, fun)


class Layout(NamedTuple):
    """Where an index sits in an array of shape B + X + F: X is the index shape I (src side) or D (dst side)."""

    axis: int                # = len(B)
    feature_ndim: int        # = len(F)
    index_shape: tuple       # I
    dims: tuple | None       # D, the m destination sizes (dst side only)

    def broadcastable(self, a: np.ndarray) -> np.ndarray:
        """`a` of shape I or D, reshaped to broadcast against B + I + F or B + D + F."""
        return np.reshape(a, (1,) * self.axis + np.shape(a) + (1,) * self.feature_ndim)


def layout(index, shape, axis, *, dst_side: bool) -> Layout:
    """The layout of `index` in an array of `shape`: a dst (B + D + F) or a src (B + I + F)."""
    # the empty tuple (no indexed axes, NumPy's a[()]) has the index shape (): no arrays broadcast to ()
    if isinstance(index, tuple):
        index_shape = np.shape(index[0]) if index else ()
    else:
        index_shape = np.shape(index)
    m = len(index) if isinstance(index, tuple) else 1
    span = m if dst_side else len(index_shape)
    axis = normalize_axis(axis, len(shape), span)
    return Layout(axis, len(shape) - axis - span, index_shape, tuple(shape[axis:axis + m]) if dst_side else None)


def valid_entries(index, dims, mode) -> np.ndarray:
    """Boolean mask of shape I: the entries that take part (all but those dropped under mode="drop")."""
    return cs.gather(np.ones(dims, bool), index, mode=mode, fill_value=False)


@primitive
def cast(x, dtype):
    """``x.astype(dtype)`` as a linear autograd primitive (autograd's own astype has no JVP): its VJP casts the
    cotangent back to the dtype of `x` (the real part for a real `x`), its JVP casts the tangent to `dtype`."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = x.real
    return x.astype(dtype, copy=False)


defvjp(cast, lambda ans, x, dtype: lambda g: cast(g, np.result_type(x)))
defjvp(cast, lambda g, ans, x, dtype: cast(g, dtype))


def in_primal_dtype(g, dtype):
    """The gradient `g` in its primal's `dtype` where that is a narrower float (or complex) than `g`'s, as a
    float64 cotangent flowing back to a float16 input makes it: a gradient has its primal's dtype (PyTorch's and
    JAX's rule)."""
    g_dtype = np.asarray(getval(g)).dtype
    if dtype.kind in "fc" and g_dtype.kind == dtype.kind and g_dtype.itemsize > dtype.itemsize:
        return cast(g, dtype)
    return g


def vjp_in_primal_dtype(vjpmaker, argnum: int = 0):
    """`vjpmaker` (autograd's ``(ans, *args, **kwargs) -> vjp``) whose gradients take the dtype of argument
    `argnum` (`in_primal_dtype`)."""
    def made(ans, *args, **kwargs):
        vjp = vjpmaker(ans, *args, **kwargs)
        dtype = np.asarray(getval(args[argnum])).dtype   # (the dtype only: the VJP keeps no input alive)
        return lambda g: in_primal_dtype(vjp(g), dtype)
    return made
