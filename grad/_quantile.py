"""scatter_quantile and scatter_nanquantile (and scatter's ops median / nanmedian) as autograd primitives, any order.

A quantile is linear in src wherever the sort does not change: ``out = W src`` with W the selection weights of
`cyscatter.scatter_quantile_vjp` (interpolation weights, ties split evenly, a NaN group's cotangent to its NaN
members). W and its transpose are two primitives here, each the other's VJP (as autograd's ``getitem`` and
``untake``), both linear in their first argument and constant in src, so every derivative of any order follows:
the second and higher derivatives with respect to src are 0.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from autograd.extend import defjvp, defvjp
from autograd.tracer import getval

import cyscatter as cs
from cyscatter._plan.index import plan_index
from grad._args import require_inexact
from grad._primitive import primitive

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode


@primitive
def _weights(src_dot, src, index, q, method, skip_nan, dims, axis, mode):
    """W src_dot: the tangent of the quantiles (shape of the result)."""
    jvp = cs.scatter_nanquantile_jvp if skip_nan else cs.scatter_quantile_jvp
    return _in_dtype_of(src, jvp(src, index, src_dot, q, method=method, dim_size=dims, axis=axis, mode=mode))


@primitive
def _weights_t(g, src, index, q, method, skip_nan, dims, axis, mode):
    """W^T g: the cotangent of src (shape of src)."""
    vjp = cs.scatter_nanquantile_vjp if skip_nan else cs.scatter_quantile_vjp
    return _in_dtype_of(src, vjp(g, src, index, q, method=method, axis=axis, mode=mode))


def _in_dtype_of(src, derivative):
    """`derivative` in the float dtype of `src` (and of the quantiles): the core's float16 rules answer in float64,
    while a gradient or a tangent has its primal's dtype, as everywhere in `grad`."""
    return derivative.astype(src.dtype, copy=False) if src.dtype.kind in "fc" else derivative


defvjp(_weights, lambda ans, d, *rest: lambda h: _weights_t(h, *rest), None)
defvjp(_weights_t, lambda ans, g, *rest: lambda h: _weights(h, *rest), None)
defjvp(_weights, lambda d_dot, ans, d, *rest: _weights(d_dot, *rest), None)
defjvp(_weights_t, lambda g_dot, ans, g, *rest: _weights_t(g_dot, *rest), None)


def _fixed(src, index, q, method, skip_nan, dim_size, axis, mode):
    """The constant arguments of W: src's value (not traced: W does not vary with it) and the group shape D."""
    return (np.asarray(getval(src)), index, q, method, skip_nan, plan_index(index, dim_size, mode).dims, axis,
            mode)


def order_stat_vjp(ans, src, index, q, method, skip_nan, dim_size, axis, mode, fun):
    require_inexact(src, "src", fun)
    fixed = _fixed(src, index, q, method, skip_nan, dim_size, axis, mode)
    return lambda g: _weights_t(g, *fixed)


def order_stat_jvp(src_dot, ans, src, index, q, method, skip_nan, dim_size, axis, mode, fun):
    require_inexact(src, "src", fun)
    return _weights(src_dot, *_fixed(src, index, q, method, skip_nan, dim_size, axis, mode))


_DOC = """Differentiable `cyscatter.{name}` (same parameters, result and errors), reverse and forward mode, any order.

    The derivative is `cyscatter.{name}_vjp`'s rule: each output element's cotangent goes to the member(s) its
    quantile reads, times the interpolation weights, split evenly among members tied with them (max/min's
    rule){nan}. `index`, `q` and the rest are not differentiable.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (real float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.{name}`.
    q : float or 1-d sequence of floats in [0, 1], default 0.5
        As in `cyscatter.{name}`.
    method, dim_size, axis, fill_value, mode : optional
        As in `cyscatter.{name}` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F, or (Q,) + B + D + F for a 1-d `q`
        The result of `cyscatter.{name}`.

    Examples
    --------
    >>> import numpy as np, autograd.numpy as anp, grad as csgrad
    >>> from autograd import grad
    >>> src, index = np.array([1., 4., 2., 8.]), np.array([0, 0, 0, 1])
    >>> grad(lambda s: anp.sum(csgrad.{name}(s, index, 0.75)))(src)
    array([0. , 0.5, 0.5, 1. ])
    """


@primitive
def scatter_quantile(src: ArrayInput, index: IndexLike, q: Any = 0.5, *, method: str = "linear",
                     dim_size: DimSize | None = None, axis: SupportsIndex = 0, fill_value: FillValue | None = None,
                     mode: Mode = "raise") -> Any:
    return cs.scatter_quantile(src, index, q, method=method, dim_size=dim_size, axis=axis, fill_value=fill_value,
                               mode=mode)


@primitive
def scatter_nanquantile(src: ArrayInput, index: IndexLike, q: Any = 0.5, *, method: str = "linear",
                        dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                        fill_value: FillValue | None = None, mode: Mode = "raise") -> Any:
    return cs.scatter_nanquantile(src, index, q, method=method, dim_size=dim_size, axis=axis,
                                  fill_value=fill_value, mode=mode)


scatter_quantile.__doc__ = _DOC.format(name="scatter_quantile",
                                       nan="; a group holding a NaN sends its cotangent to its NaN members")
scatter_nanquantile.__doc__ = _DOC.format(name="scatter_nanquantile", nan="; NaN entries get 0")


def _register(fun, skip_nan):
    name = fun.__name__

    def vjp(ans, src, index, q=0.5, *, method="linear", dim_size=None, axis=0, fill_value=None, mode="raise"):
        return order_stat_vjp(ans, src, index, q, method, skip_nan, dim_size, axis, mode, name)

    def jvp(src_dot, ans, src, index, q=0.5, *, method="linear", dim_size=None, axis=0, fill_value=None,
            mode="raise"):
        return order_stat_jvp(src_dot, ans, src, index, q, method, skip_nan, dim_size, axis, mode, name)

    defvjp(fun, vjp)
    defjvp(fun, jvp)


_register(scatter_quantile, False)
_register(scatter_nanquantile, True)
