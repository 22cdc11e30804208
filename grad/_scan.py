"""`scatter_scan` (grouped cumulative add, mul, max, min) as autograd primitives.

add is linear and its VJP is the same scan run the other way (``reverse`` flipped), itself this primitive, so
derivatives of any order follow. max/min pick, for each output, the src element holding the running extremum
(positions from the core kernel, not differentiated); the pick is autograd's own indexing of `src`, whose
derivatives (getitem / untake) go to any order; ties: the first member to reach the extremum. mul's VJP and
JVP are the core's `scatter_scan_vjp` / `scatter_scan_jvp` (exact with zeros): first order only, a second
derivative of the mul scan raises autograd's NotImplementedError.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp
from autograd.tracer import Box, getval

import cyscatter as cs
from cyscatter._scan import ScanView, flag, scan_op
from grad._args import require_inexact
from grad._primitive import primitive

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import NDArray

    from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode
    from cyscatter._typing import ScanOpLike as OpLike


@primitive
def _scan_add(src, index, dim_size, axis, mode, exclusive, reverse):
    return cs.scatter_scan(src, index, "add", dim_size=dim_size, axis=axis, mode=mode, exclusive=exclusive,
                           reverse=reverse)


defvjp(_scan_add, lambda ans, src, index, dim_size, axis, mode, exclusive, reverse: lambda g: _scan_add(
    g, index, dim_size, axis, mode, exclusive, not reverse))
defjvp(_scan_add, lambda g, ans, src, index, dim_size, axis, mode, exclusive, reverse: _scan_add(
    g, index, dim_size, axis, mode, exclusive, reverse))


@primitive
def _scan_mul(src, index, dim_size, axis, mode, exclusive, reverse):
    return cs.scatter_scan(src, index, "mul", dim_size=dim_size, axis=axis, mode=mode, exclusive=exclusive,
                           reverse=reverse)


@primitive
def _scan_mul_vjp(g, src, index, dim_size, axis, mode, exclusive, reverse):
    """The mul scan's VJP: a primitive of its own with no derivative, so a second derivative says so clearly."""
    return cs.scatter_scan_vjp("mul", g, src, index, dim_size=dim_size, axis=axis, mode=mode, exclusive=exclusive,
                               reverse=reverse)


defvjp(_scan_mul, lambda ans, src, index, dim_size, axis, mode, exclusive, reverse: lambda g: _scan_mul_vjp(
    g, src, index, dim_size, axis, mode, exclusive, reverse))
defjvp(_scan_mul, lambda g, ans, src, index, dim_size, axis, mode, exclusive, reverse: cs.scatter_scan_jvp(
    "mul", getval(src), index, getval(g), dim_size=dim_size, axis=axis, mode=mode, exclusive=exclusive,
    reverse=reverse))


def _scan_extreme(op, src, index, dim_size, axis, mode, exclusive, reverse):
    """max/min: src's element at the position of each running extremum (the op's identity where none)."""
    view = ScanView("grad.scatter_scan", op, getval(src), index, dim_size, axis, mode, reverse, exclusive)
    _, arg3 = view.scan(view.src3, track=True)
    outer, n, inner = view.src3.shape
    o = np.arange(outer).reshape(outer, 1, 1)
    f = np.arange(inner).reshape(1, 1, inner)
    flat = ((o * n + np.where(arg3 < 0, 0, arg3)) * inner + f).reshape(view.shape)
    picked = anp.reshape(src, (-1,))[flat] if flat.size else anp.reshape(src, view.shape)
    return anp.where((arg3 >= 0).reshape(view.shape), picked, view.identity(view.result))


@overload
def scatter_scan(src: DeviceArray, index: IndexLike, op: OpLike = ..., *, dim_size: DimSize | None = ...,
                 axis: SupportsIndex = ..., mode: Mode = ..., exclusive: bool = ..., reverse: bool = ...) -> Any: ...


@overload
def scatter_scan(src: ArrayInput, index: DeviceIndex, op: OpLike = ..., *, dim_size: DimSize | None = ...,
                 axis: SupportsIndex = ..., mode: Mode = ..., exclusive: bool = ..., reverse: bool = ...) -> Any: ...


@overload
def scatter_scan(src: ArrayInput, index: IndexLike, op: OpLike = ..., *, dim_size: DimSize | None = ...,
                 axis: SupportsIndex = ..., mode: Mode = ..., exclusive: bool = ...,
                 reverse: bool = ...) -> NDArray[Any]: ...


def scatter_scan(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize | None = None,
                 axis: SupportsIndex = 0, mode: Mode = "raise", exclusive: bool = False, reverse: bool = False) -> Any:
    """Differentiable `cyscatter.scatter_scan` (same parameters, result and errors).

    add, max and min to any order; mul to first order (exact with zeros; a second derivative raises
    NotImplementedError). max/min send each cotangent to the first member that reached the running extremum.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Values (float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_scan`.
    op : {"add", "mul", "max", "min"}, default "add"
        As in `cyscatter.scatter_scan`.
    dim_size, axis, mode, exclusive, reverse : optional
        As in `cyscatter.scatter_scan` (keyword-only).

    Returns
    -------
    out : ndarray, shape of `src`
        The result of `cyscatter.scatter_scan`.
    """
    name = scan_op(op).name
    if isinstance(src, Box):   # being differentiated
        require_inexact(src, "src", "scatter_scan")
    args = (index, dim_size, axis, mode, flag("exclusive", exclusive), flag("reverse", reverse))
    if name == "add":
        return _scan_add(src, *args)
    if name == "mul":
        return _scan_mul(src, *args)
    return _scan_extreme(name, src, *args)
