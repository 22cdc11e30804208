"""scatter and scatter_into as autograd primitives, differentiated through their partial derivatives.

Every op's derivative has one form: out[j] depends only on its initial value dst[j] and on the entries k of its
group, so with the partials ``d_src[k] = d out[j] / d src[k]`` (shape of src) and
``d_dst[j] = d out[j] / d dst[j]`` (shape of out)

    grad_src = d_src * gather(g),  grad_dst = d_dst * g,  out_dot = scatter_add(d_src * src_dot) + d_dst * dst_dot.

The partials are the core's VJPs (`cyscatter.scatter_vjp_src` / `scatter_vjp_dst`) of a unit cotangent. For add,
sub, mean, max and min they are constant wherever the derivative exists (signs, 1 / count, tie shares), so they
are computed once from plain values and the second derivative is the gather / scatter-add pair's. The partials of
mul and div depend on the values: they are built from differentiable primitives (`others_product`, gather, the
scatter itself), so their own derivatives, the second derivatives of mul and div, follow.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defjvp_argnums, defvjp, defvjp_argnums
from autograd.tracer import getval, isbox

import cyscatter as cs
from cyscatter._plan.index import DROPPING, parse_coords
from cyscatter._plan.layout import src_layout
from cyscatter._registry.ops import ORDER_STATS
from grad._args import cast, in_primal_dtype, layout, require_inexact, valid_entries, vjp_in_primal_dtype
from grad._gather import gather, gather_vjp_src
from grad._primitive import primitive
from grad._products import others_product
from grad._quantile import order_stat_jvp, order_stat_vjp
from grad._where import where

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike


@primitive
def scatter(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize | None = None,
            axis: SupportsIndex = 0, fill_value: FillValue | None = None, dtype: DTypeLike | None = None,
            mode: Mode = "raise", indices_are_sorted: bool = False,
            num_threads: SupportsIndex | None = None) -> Any:
    """Differentiable `cyscatter.scatter`: same parameters, result and errors, without ``out=``.

    ``out=`` (writing into a given array) has no meaning under autograd, which needs values, not buffers: it is
    not a parameter here (the functional result is the out). `dtype` is differentiable: the gradient of the cast
    (the cotangent cast back to the dtype of `src`; a tangent cast to `dtype`).

    Differentiable with respect to `src` in reverse and forward mode, to any order (mul: to second order).
    `index`, `dim_size` and `fill_value` are not differentiable; positions filled with `fill_value` pass no
    gradient, nor do entries dropped under ``mode="drop"`` (or ``"normalize_drop"``). `indices_are_sorted` and
    `num_threads` are the forward call's speed settings (they change no value).

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (float or complex to be differentiated).
    index : int array or tuple of int arrays, shape I
        Destination of each entry, as in `cyscatter.scatter`.
    op : {"add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "set", "first", "nansum", "nanprod", \
"fmax", "fmin", "nanmean", "nanlast", "nanfirst"}, default "add"
        As in `cyscatter.scatter` (aliases "sum", "prod", "amax", "amin", "last", "nanadd", "nanmul", "nanmax",
        "nanmin" too). The NaN-skipping ops pass zero to NaN entries.
    dim_size, axis, fill_value, dtype, mode, indices_are_sorted, num_threads : optional
        As in `cyscatter.scatter` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F
        The result of `cyscatter.scatter` (an autograd box while differentiating).

    Notes
    -----
    Gradient rules (the core's, see `cyscatter.scatter_vjp_src`): mean divides by the group size (empty groups:
    0); mul uses the exact product of the other group members (right with zeros); div ``-out / src``; max/min
    split the gradient evenly among tied winners; set/last and first pass a row's gradient to its winning entry
    only. Integer `src` cannot be differentiated (TypeError).

    Examples
    --------
    >>> import numpy as np, autograd.numpy as anp, grad as csgrad
    >>> from autograd import grad
    >>> src, index = np.array([1., 5., 5., 2.]), np.array([0, 0, 0, 1])
    >>> grad(lambda s: anp.sum(csgrad.scatter(s, index, "max")))(src)   # the tie at 5 shares the gradient
    array([0. , 0.5, 0.5, 1. ])
    """
    return cs.scatter(src, index, op, dim_size=dim_size, axis=axis, fill_value=fill_value, dtype=dtype, mode=mode,
                      indices_are_sorted=indices_are_sorted, num_threads=num_threads)


@primitive
def scatter_into(dst: ArrayInput, src: ArrayInput, index: IndexLike, op: OpLike = "add", *, axis: SupportsIndex = 0,
                 mode: Mode = "raise") -> Any:
    """Functional, differentiable `cyscatter.scatter_into`: returns an updated copy of `dst`, which is unchanged.

    Same parameters and errors as `cyscatter.scatter_into` (in-place mean adds the group mean to `dst`).
    Differentiable with respect to `dst` and `src` in reverse and forward mode, to any order (mul: to second
    order); for max/min the initial `dst` value counts as a candidate when the gradient is split among tied winners.

    Parameters
    ----------
    dst : array_like, shape B + D + F
        The initial destination (not modified).
    src : array_like, shape B + I + F, or broadcastable to it
        Values.
    index : int array or tuple of int arrays, shape I
        Destination of each entry, as in `cyscatter.scatter_into`.
    op : {"add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "set", "first", "nansum", "nanprod", \
"fmax", "fmin", "nanmean", "nanlast", "nanfirst"}, default "add"
        As in `cyscatter.scatter_into`.
    axis, mode : optional
        As in `cyscatter.scatter_into` (keyword-only).

    Returns
    -------
    out : ndarray, shape of `dst`
        A new array: `dst` updated by the scatter.

    Examples
    --------
    >>> import numpy as np, autograd.numpy as anp, grad as csgrad
    >>> from autograd import grad
    >>> dst, src, index = np.array([2., 3.]), np.array([0., 4.]), np.array([0, 0])
    >>> grad(lambda d: anp.sum(csgrad.scatter_into(d, src, index, "mul")))(dst)   # d out / d dst = 0 * 4
    array([0., 1.])
    """
    return cs.scatter_into(np.array(dst, copy=True), src, index, op, axis=axis, mode=mode)


class Linearization:
    """The derivative of one scatter call at its inputs, held as its partials (and the index to apply them)."""

    def __init__(self, op, ans, dst, src, index, axis, mode, *, wrt_src=True, wrt_dst=False):
        op = cs.get_op(op)
        self.index, self.mode = index, mode
        self.out = layout(index, np.shape(ans), axis, dst_side=True)
        self.out_shape, self.out_dtype = np.shape(ans), np.result_type(getval(ans))
        if dst is not None:   # scatter_into casts src to dst's dtype first
            src = _as_dtype(src, np.result_type(getval(dst)))
        self.d_src, self.d_dst = _partials_rule(op)(op, ans, dst, src, self, wrt_src, wrt_dst)
        # Where an entry takes no part (a NaN entry of a NaN-skipping op, an entry that lost a max/min) its tangent
        # must not reach the output even when it is inf or NaN (0 * inf is NaN): JAX's rule, and the core's
        self.keep_src = self.keep_dst = None
        src_v = np.asarray(getval(src))
        if op.skips_nan and src_v.dtype.kind in "fc":
            self.keep_src = ~np.isnan(src_v)
        if op.selects:
            if self.d_src is not None:
                won = np.asarray(getval(self.d_src)) != 0
                self.keep_src = won if self.keep_src is None else self.keep_src & won
            if self.d_dst is not None:
                self.keep_dst = np.asarray(getval(self.d_dst)) != 0

    def vjp_src(self, g):
        return self.d_src * gather(g, self.index, axis=self.out.axis, mode=self.mode)

    def vjp_dst(self, g):
        return self.d_dst * g

    def jvp(self, src_dot=None, dst_dot=None):
        out_dot = np.zeros(self.out_shape, self.out_dtype) if src_dot is None else \
            gather_vjp_src(_part(self.d_src, src_dot, self.keep_src), self.index, self.out_shape,
                           axis=self.out.axis, mode=self.mode)
        return out_dot if dst_dot is None else out_dot + _part(self.d_dst, dst_dot, self.keep_dst)


def _part(partial, dot, keep):
    """partial * dot, 0 where `keep` is False (see Linearization)."""
    if keep is None:
        return partial * dot
    with np.errstate(invalid="ignore"):
        return where(keep, partial * dot, 0)


def _as_dtype(x, dtype):
    if isbox(x):
        return x if x.dtype == dtype else x.astype(dtype)
    return np.asarray(x, dtype=dtype)


# ---- partials ---------------------------------------------------------------------------------------------------

def _constant_partials(op, ans, dst, src, lin, wrt_src, wrt_dst):
    """Partials that are locally constant (add, sub, mean, max, min and the NaN-skipping twins but nanprod), read
    off the core's VJPs of a unit cotangent."""
    out, index, mode = lin.out, lin.index, lin.mode
    src_v, ans_v, dst_v = (None if a is None else np.asarray(getval(a)) for a in (src, ans, dst))
    dtype = np.result_type(*(a for a in (src_v, dst_v) if a is not None and a.dtype.kind in "fc"))
    axis = out.axis
    if op.linear:   # the partials depend on the index alone: compute them per entry and per row, then broadcast
        src_v, ans_v = np.zeros(out.index_shape, dtype), np.zeros(out.dims, dtype)
        dst_v, axis = None if dst is None else ans_v, 0
    ones = np.ones(ans_v.shape, dtype)
    d_src = d_dst = None
    if wrt_src:
        d_src = cs.scatter_vjp_src(op, ones, src_v, index, ans_v, dst=dst_v, axis=axis, mode=mode)
    if wrt_dst:
        d_dst = cs.scatter_vjp_dst(op, ones, dst_v, src_v, index, ans_v, axis=axis, mode=mode)
    d_src, d_dst = (None if d is None else d.astype(dtype, copy=False) for d in (d_src, d_dst))   # float16
    if op.linear:
        d_src, d_dst = (None if d is None else out.broadcastable(d) for d in (d_src, d_dst))
    return d_src, d_dst


def _mul_partials(op, ans, dst, src, lin, wrt_src, wrt_dst):
    """out[j] = dst[j] * prod(src[k]): d_src = dst[j] * (product of the others), d_dst = prod(src[k])."""
    out, index, mode = lin.out, lin.index, lin.mode
    d_src = d_dst = None
    if wrt_src:
        d_src = others_product(src, index, out.dims, out.axis, mode)
        if dst is not None:
            d_src = d_src * gather(dst, index, axis=out.axis, mode=mode)
    if wrt_dst:
        d_dst = scatter(src, index, "mul", dim_size=out.dims, axis=out.axis, mode=mode)
    return d_src, d_dst


def _div_partials(op, ans, dst, src, lin, wrt_src, wrt_dst):
    """out[j] = dst[j] / src[k1] / src[k2] ...: d_src = -out[j] / src[k], d_dst = 1 / prod(src[k])."""
    out, index, mode = lin.out, lin.index, lin.mode
    d_src = d_dst = None
    if wrt_dst:
        d_dst = scatter(src, index, "div", dim_size=out.dims, axis=out.axis, mode=mode)
    if wrt_src:
        if mode in DROPPING:   # a dropped entry gathers 0; dividing by 1 keeps its partial (and derivatives) 0
            src = where(out.broadcastable(valid_entries(index, out.dims, mode)), src, 1)
        d_src = -gather(ans, index, axis=out.axis, mode=mode) / src
    return d_src, d_dst


def _nanprod_partials(op, ans, dst, src, lin, wrt_src, wrt_dst):
    """mul's partials over the non-NaN entries: NaN entries multiply by 1 and get a zero partial."""
    nan = anp.isnan(src) if np.result_type(getval(src)).kind in "fc" else np.zeros(np.shape(src), bool)
    d_src, d_dst = _mul_partials(op, ans, dst, where(nan, 1, src), lin, wrt_src, wrt_dst)
    return None if d_src is None else where(nan, 0, d_src), d_dst


# `Op.partials` -> how its value-dependent partials are built from differentiable primitives
_VALUE_DEPENDENT = {"products": _mul_partials, "quotient": _div_partials, "nan_products": _nanprod_partials}


def _partials_rule(op):
    if op.partials in _VALUE_DEPENDENT:
        return _VALUE_DEPENDENT[op.partials]
    # (nansum, nanmean: locally constant partials, the NaN mask)
    if not op.partials and (op.linear or op.ordered or op.skips_nan):
        return _constant_partials
    raise NotImplementedError(f"grad has no derivative rule for op {op.name!r}")


# ---- broadcast src ---------------------------------------------------------------------------------------------
# A src that broadcasts (cyscatter's `src_layout`) is differentiated as ``anp.broadcast_to(src, B + I + F)``
# followed by the scatter: the partials live on the expanded entries, a cotangent is summed back over the
# broadcast dims (autograd's unbroadcast, with differentiable sums: second derivatives follow) and a tangent of
# src's shape is broadcast as src is.

def _expanded(src, index, axis, table_shape=None) -> tuple:
    """The shape B + I + F that `src` broadcasts to in the forward call (the call itself has checked it)."""
    coords = parse_coords(index)
    return src_layout(np.shape(getval(src)), coords, axis, table_shape=table_shape, expanded_check=False)[3]


def _broadcast(x, shape):
    """`x` broadcast to `shape`, differentiably (autograd's broadcast_to wants no new leading dims: reshape first)."""
    if x is None or np.shape(getval(x)) == tuple(shape):
        return x
    lead = len(shape) - np.ndim(getval(x))
    return anp.broadcast_to(anp.reshape(x, (1,) * lead + np.shape(getval(x))) if lead else x, shape)


def _unbroadcast(g, shape):
    """`g` summed over the dims a src of `shape` was broadcast along, back to `shape`."""
    shape = tuple(shape)
    if np.shape(getval(g)) == shape:
        return g
    lead = np.ndim(getval(g)) - len(shape)
    if lead:
        g = anp.sum(g, axis=tuple(range(lead)))
    axes = tuple(d for d, n in enumerate(shape) if n == 1 and np.shape(getval(g))[d] != 1)
    return anp.reshape(anp.sum(g, axis=axes, keepdims=True) if axes else g, shape)


# ---- registration -----------------------------------------------------------------------------------------------

def _scatter_vjp(ans, src, index, op="add", *, dim_size=None, axis=0, fill_value=None, dtype=None, mode="raise",
                 **_speed):
    require_inexact(src, "src", "scatter")
    if type(op) is str and op in ORDER_STATS:   # median / nanmedian: the derivative of the quantile at 0.5
        vjp = order_stat_vjp(ans, src, index, 0.5, "linear", ORDER_STATS[op], dim_size, axis, mode, "scatter")
        return vjp if dtype is None else lambda g: cast(vjp(g), np.result_type(getval(src)))
    shape = np.shape(getval(src))
    expanded = _expanded(src, index, axis)
    if dtype is None:
        vjp = Linearization(op, ans, None, _broadcast(src, expanded), index, axis, mode).vjp_src
        return vjp if shape == expanded else lambda g: _unbroadcast(vjp(g), shape)
    src_dtype = np.result_type(getval(src))   # the gradient of the cast: the cotangent cast back
    vjp = Linearization(op, ans, None, _broadcast(cast(src, dtype), expanded), index, axis, mode).vjp_src
    return lambda g: cast(_unbroadcast(vjp(g), shape), src_dtype)


def _scatter_jvp(src_dot, ans, src, index, op="add", *, dim_size=None, axis=0, fill_value=None, dtype=None,
                 mode="raise", **_speed):
    require_inexact(src, "src", "scatter")
    if dtype is not None:
        src, src_dot = cast(src, dtype), cast(src_dot, dtype)
    if type(op) is str and op in ORDER_STATS:
        return order_stat_jvp(src_dot, ans, src, index, 0.5, "linear", ORDER_STATS[op], dim_size, axis, mode,
                              "scatter")
    expanded = _expanded(src, index, axis)
    return Linearization(op, ans, None, _broadcast(src, expanded), index, axis, mode).jvp(
        src_dot=_broadcast(src_dot, expanded))


def _into_linearization(argnums, ans, args, kwargs):
    dst, src, index, *rest = args
    for argnum in argnums:
        require_inexact(args[argnum], ("dst", "src")[argnum], "scatter_into")
    op = rest[0] if rest else kwargs.get("op", "add")
    axis = kwargs.get("axis", 0)
    expanded = _expanded(src, index, axis, table_shape=np.shape(getval(ans)))
    lin = Linearization(op, ans, dst, _broadcast(src, expanded), index, axis, kwargs.get("mode", "raise"),
                        wrt_src=1 in argnums, wrt_dst=0 in argnums)
    return lin, expanded


def _scatter_into_vjps(argnums, ans, args, kwargs):
    lin, _ = _into_linearization(argnums, ans, args, kwargs)
    shape = np.shape(getval(args[1]))
    vjps = [(lin.vjp_dst, lambda g: _unbroadcast(lin.vjp_src(g), shape))[argnum] for argnum in argnums]
    dtypes = [np.asarray(getval(args[argnum])).dtype for argnum in argnums]   # (no input kept alive)
    return lambda g: tuple(in_primal_dtype(vjp(g), dtype) for vjp, dtype in zip(vjps, dtypes))


def _scatter_into_jvp(argnums, tangents, ans, args, kwargs):
    tangent = dict(zip(argnums, tangents))
    lin, expanded = _into_linearization(argnums, ans, args, kwargs)
    return lin.jvp(src_dot=_broadcast(tangent.get(1), expanded), dst_dot=tangent.get(0))


defvjp(scatter, vjp_in_primal_dtype(_scatter_vjp))
defjvp(scatter, _scatter_jvp)
defvjp_argnums(scatter_into, _scatter_into_vjps)
defjvp_argnums(scatter_into, _scatter_into_jvp)
