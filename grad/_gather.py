"""gather and its adjoint, the scatter-add into zeros of a known shape: each is the other's VJP (autograd's
``getitem``/``untake`` pair). Both are linear, so they are their own JVPs and derivatives of any order follow."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from autograd.extend import defjvp, defvjp

import cyscatter as cs
from grad._args import cast, layout, require_inexact, valid_entries, vjp_in_primal_dtype
from grad._primitive import primitive
from grad._where import where

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import ArrayInput, FillValue, IndexLike, Mode


@primitive
def gather(src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0, mode: Mode = "raise",
           fill_value: FillValue | None = None, dtype: DTypeLike | None = None) -> Any:
    """Differentiable `cyscatter.gather`: same parameters, result and errors, without ``out=`` (no meaning
    under autograd: the result is the out). `dtype` is differentiable: the cotangent is cast back to the dtype
    of `src`, a tangent gathered in `dtype`.

    Differentiable with respect to `src`: the VJP is the scatter-add `cyscatter.gather_vjp_src`, the JVP the
    gather of the tangent; rows filled with `fill_value` under ``mode="drop"`` pass no gradient. `index` and
    `fill_value` are not differentiable.

    Parameters
    ----------
    src : array_like, shape B + D + F
        Rows to gather.
    index : int array or tuple of int arrays, shape I
        Source row of each output entry, as in `cyscatter.gather`.
    axis, mode, fill_value, dtype : optional
        As in `cyscatter.gather` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + I + F
        The gathered rows.

    Examples
    --------
    >>> import numpy as np, autograd.numpy as anp, grad as csgrad
    >>> from autograd import grad
    >>> grad(lambda s: anp.sum(csgrad.gather(s, np.array([2, 0, 2])) ** 2))(np.array([1., 2., 3.]))
    array([ 2.,  0., 12.])
    """
    return cs.gather(src, index, axis=axis, mode=mode, fill_value=fill_value, dtype=dtype)


@primitive
def gather_vjp_src(grad_out, index, src_shape, *, axis=0, mode="raise"):
    """Differentiable `cyscatter.gather_vjp_src`: the scatter-add of `grad_out` into zeros of `src_shape`, in the
    dtype of a floating `grad_out` (the core sums float16 in float64)."""
    dtype = np.result_type(grad_out)
    summed = cs.gather_vjp_src(grad_out, index, src_shape, axis=axis, mode=mode)
    return summed.astype(dtype, copy=False) if dtype.kind in "fc" else summed


@primitive
def gather_into(dst: ArrayInput, src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0,
                mode: Mode = "raise") -> Any:
    """Functional, differentiable `cyscatter.gather_into`: returns an updated copy of `dst`, which is unchanged.

    Same parameters and errors as `cyscatter.gather_into`. Differentiable with respect to `dst` (only the rows
    whose entry is dropped under ``mode="drop"`` keep their value, and pass on their gradient) and `src`.

    Parameters
    ----------
    dst : array_like, shape B + I + F
        The initial destination (not modified).
    src : array_like, shape B + D + F
        Rows to gather.
    index : int array or tuple of int arrays, shape I
        Source row of each output entry, as in `cyscatter.gather_into`.
    axis, mode : optional
        As in `cyscatter.gather_into` (keyword-only).

    Returns
    -------
    out : ndarray, shape of `dst`
        A new array: `dst` with the gathered rows written in.

    Examples
    --------
    >>> import numpy as np, grad as csgrad
    >>> csgrad.gather_into(np.zeros(3), np.array([5., 6.]), np.array([1, 9, 0]), mode="drop")
    array([6., 0., 5.])
    """
    return cs.gather_into(np.array(dst, copy=True), src, index, axis=axis, mode=mode)


def _scatter_add_back(src, index, axis, mode, fun):
    """The VJP with respect to the gathered-from `src`: scatter-add the cotangent into zeros of its shape."""
    require_inexact(src, "src", fun)
    shape = np.shape(src)
    return lambda g: gather_vjp_src(g, index, shape, axis=axis, mode=mode)


def _gather_src_dot(src_dot, src, index, axis, mode, fun):
    require_inexact(src, "src", fun)
    return gather(src_dot, index, axis=axis, mode=mode)   # fill_value is a constant: its tangent is 0


def _kept_rows(dst, src, index, axis, mode) -> np.ndarray:
    """Where gather_into leaves `dst` as it was (entries dropped under mode="drop"), broadcastable to `dst`."""
    require_inexact(dst, "dst", "gather_into")
    dims = layout(index, np.shape(src), axis, dst_side=True).dims
    return layout(index, np.shape(dst), axis, dst_side=False).broadcastable(~valid_entries(index, dims, mode))


def _keep_dropped(kept):
    return lambda g: where(kept, g, 0.0)


def _gather_vjp(ans, src, index, axis=0, mode="raise", fill_value=None, dtype=None):
    vjp = _scatter_add_back(src, index, axis, mode, "gather")
    if dtype is None:
        return vjp
    src_dtype = np.result_type(src)   # the gradient of the cast: the cotangent cast back
    return lambda g: cast(vjp(g), src_dtype)


def _gather_jvp(src_dot, ans, src, index, axis=0, mode="raise", fill_value=0, dtype=None):
    dot = _gather_src_dot(src_dot, src, index, axis, mode, "gather")
    return dot if dtype is None else cast(dot, dtype)


defvjp(gather, vjp_in_primal_dtype(_gather_vjp))
defjvp(gather, _gather_jvp)
defvjp(gather_vjp_src, lambda ans, g, index, src_shape, axis=0, mode="raise":
       lambda v: gather(v, index, axis=axis, mode=mode))
defjvp(gather_vjp_src, "same")
defvjp(gather_into,
       vjp_in_primal_dtype(lambda ans, dst, src, index, axis=0, mode="raise":
                           _keep_dropped(_kept_rows(dst, src, index, axis, mode)), 0),
       vjp_in_primal_dtype(lambda ans, dst, src, index, axis=0, mode="raise":
                           _scatter_add_back(src, index, axis, mode, "gather_into"), 1))
defjvp(gather_into,
       lambda dst_dot, ans, dst, src, index, axis=0, mode="raise":
       _keep_dropped(_kept_rows(dst, src, index, axis, mode))(dst_dot),
       lambda src_dot, ans, dst, src, index, axis=0, mode="raise":
       _gather_src_dot(src_dot, src, index, axis, mode, "gather_into"))
