"""VJPs and JVPs of scatter_quantile / scatter_nanquantile (and so of the ops median / nanmedian), free of any
autodiff framework.

A quantile is a weighted sum of one or two members of its group: ``a + (b - a) t`` has the partials ``1 - t`` and
``t`` (the median's middle pair 1/2 and 1/2), constant wherever the sort does not change. Where members tie with
a selected value the derivative does not exist; the core's rule for max and min applies: the weight of a sorted
position is split evenly among the members equal to its value (so q = 1 gives max's gradient, q = 0 min's), and a
group holding a NaN (which makes the result NaN) sends its cotangent to its NaN members, as max's NaN wins. So
each entry k of group j has one coefficient ``c[q, k]`` per quantile, and
``vjp = sum_q c[q] * gather(grad_out[q])``, ``jvp[q] = scatter_add(c[q] * src_dot)``: a pair of adjoint linear maps.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.quantile import Sorted, check_method, check_q, positions, result_dtype
from cyscatter._arrays.dtypes import is_bfloat16
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._backends.select import backend_of
from cyscatter._plan.groups import group_view
from cyscatter._plan.index import parse_coords, sized_by
from cyscatter._plan.layout import expand_cast, expand_src, src_layout, unbroadcast
from cyscatter._plan.values import _float_dtype, check_given, check_numeric, size_arg

if TYPE_CHECKING:
    from typing import Any, Callable, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, _FuncT


def _runs(srt, xp):
    """(run id of each sorted position (outer, inner, N), length of each run): a run is a stretch of equal values
    (NaN equal to NaN) of one group in one column; ids are unique over all columns."""
    vals = srt.values
    same = (vals[..., 1:] == vals[..., :-1]) | ((vals[..., 1:] != vals[..., 1:]) & (vals[..., :-1] != vals[..., :-1]))
    sorted_keys = srt.keys[srt.perm]
    same &= sorted_keys[..., 1:] == sorted_keys[..., :-1]
    starts = xp.concatenate([xp.ones(vals.shape[:2] + (1,), bool), ~same], axis=2)
    ids = xp.cumsum(starts.reshape(-1)).reshape(starts.shape) - 1   # each column's positions are consecutive
    return ids, xp.bincount(ids.reshape(-1))


def selection_weights(ctx, qs, method: str, skip_nan: bool, values3=None):
    """(nq, outer, n, inner) coefficients c[q, k] of the module docstring, in ctx's float dtype; `values3`: src's
    values to sort in their own dtype (an integer src: 2**53 + 1 beats 2**53, which float64 would tie)."""
    xp, plan = ctx.xp, ctx.plan
    outer, n, inner = ctx.shape3
    coef = xp.zeros((len(qs), outer, n, inner), ctx.dtype)
    if n == 0 or outer * inner == 0:
        return coef
    # a float16/bfloat16 src is sorted as it is (its widening keeps order and ties): no n x F float64 copy
    half = ctx.in_place and (ctx.source.array.dtype == np.float16 or is_bfloat16(ctx.source.array.dtype))
    srt = Sorted(ctx, skip_nan, values3 if values3 is not None else ctx.source.array if half else None)
    ids, lengths = _runs(srt, xp)
    members = xp.broadcast_to(srt.members, (outer, plan.size, inner))
    # the entry at each sorted position, as a flat index into (outer, n, inner)
    flat_pos = ((xp.arange(outer)[:, None, None] * n + srt.perm) * inner
                + xp.arange(inner)[None, :, None]).reshape(-1)
    for i, q in enumerate(qs):
        lo, hi, t = positions(xp, members, float(q), method)
        t = xp.zeros(members.shape) if t is None else t
        w_lo, w_hi = 1.0 - t, t
        if srt.has_nan is not None:   # a NaN member: its NaN result takes the cotangent, as max's NaN wins
            last = members - 1
            lo, hi = xp.where(srt.has_nan, last, lo), xp.where(srt.has_nan, last, hi)
            w_lo, w_hi = xp.where(srt.has_nan, 1.0, w_lo), xp.where(srt.has_nan, 0.0, w_hi)
        present = members > 0
        w_lo, w_hi = xp.where(present, w_lo, 0.0), xp.where(present, w_hi, 0.0)
        run_lo, run_hi = srt.take(ids, lo), srt.take(ids, hi)
        total = xp.bincount(xp.concatenate([run_lo.reshape(-1), run_hi.reshape(-1)]),
                            weights=xp.concatenate([w_lo.reshape(-1), w_hi.reshape(-1)]), minlength=lengths.size)
        share = (total / xp.maximum(lengths, 1))[ids]
        coef[i].reshape(-1)[flat_pos] = share.reshape(-1).astype(ctx.dtype, copy=False)
    return coef


def _view(name, src, index, axis, mode, *, dims=None, grad_out=None, src_dot=None):
    """(context on src in the float dtype of the derivative, batch B, feature F, expected shape B + I + F, the
    float dtype). D is read off `grad_out` (of shape B + D + F, the quantile axis removed) where given, else it is
    `dims` (a dim_size, or None: from the index)."""
    check_given("src", src)
    be = backend_of(src=src, index=index, grad_out=grad_out, src_dot=src_dot)
    src = check_numeric(be.asarray(src), "src")
    result_dtype(src.dtype, "linear", name)   # complex and bool raise TypeError, as the forward functions
    coords = parse_coords(index, be=be)
    given = [check_numeric(be.asarray(a), arg) for a, arg in ((grad_out, "grad_out"), (src_dot, "src_dot"))
             if a is not None]
    dtype = _float_dtype(src, *given)
    if dtype.kind == "c":
        raise TypeError(f"{name} differentiates real inputs only, got dtype {dtype}")
    table = None if grad_out is None else grad_out.shape
    axis, batch, feat, expected = src_layout(src.shape, coords, axis, table_shape=table, table_arg="grad_out")
    if grad_out is not None:
        dims = grad_out.shape[axis:axis + len(coords)]
    own = src
    src = expand_cast(src, expected, len(feat), dtype, be.xp)
    ctx = group_view(name, src, index, dims, axis, mode, compute=dtype,
                     dims_arg="dim_size" if grad_out is None else "grad_out.shape")[0]
    values3 = None
    if own.dtype.kind in "iu":   # sorted as integers: float64 ties 2**53 and 2**53 + 1
        own = own if tuple(own.shape) == tuple(expected) else expand_src(own, expected, len(feat), be.xp)
        values3 = be.rows_view(own, own.dtype, *ctx.shape3)
    return ctx, batch, feat, expected, dtype, values3


def _one_quantile_rows(be, g):
    """An array of one quantile's shape (``g.shape[1:]``) that holds nothing: what `_view` reads D off for an
    empty q."""
    return be.xp.broadcast_to(be.xp.zeros((), g.dtype), g.shape[1:])


def _quantile_vjp(name, grad_out, src, index, q, method, skip_nan, axis, mode):
    qs, scalar = check_q(q)
    check_given("grad_out", grad_out)
    be = backend_of(src=src, index=index, grad_out=grad_out)
    g = check_numeric(be.asarray(grad_out), "grad_out")
    if not scalar and (g.ndim == 0 or g.shape[0] != qs.size):
        raise ValueError(f"grad_out shape {g.shape} must start with the {qs.size} quantiles of q")
    # (D and the shapes are read off one quantile's rows: an empty q has none, only their shape)
    g_rows = g if scalar else g[0] if qs.size else _one_quantile_rows(be, g)
    ctx, batch, feat, expected, dtype, values3 = _view(name, src, index, axis, mode, grad_out=g_rows)
    coef = selection_weights(ctx, qs, method, skip_nan, values3)
    outer, _, inner = ctx.shape3
    size = ctx.plan.size
    grad = ctx.xp.zeros(ctx.shape3, dtype)
    for i in range(qs.size):
        rows = be.rows_view(g if scalar else g[i], dtype, outer, size, inner)
        grad += coef[i] * ctx.take(rows)
    return unbroadcast(grad.reshape(expected), shape_of(src), ctx.xp)


def _quantile_jvp(name, src, index, src_dot, q, method, skip_nan, dim_size, axis, mode):
    qs, scalar = check_q(q)
    check_given("src_dot", src_dot)
    ctx, batch, feat, expected, dtype, values3 = _view(name, src, index, axis, mode, dims=dim_size,
                                                       src_dot=src_dot)
    be = ctx.be
    dot = check_numeric(be.asarray(src_dot), "src_dot")
    if tuple(dot.shape) != tuple(shape_of(src)):
        raise ValueError(f"src_dot shape {tuple(dot.shape)} != src shape {tuple(shape_of(src))}")
    dot = expand_cast(dot, expected, len(feat), dtype, ctx.xp)
    outer, n, inner = ctx.shape3
    dot3 = be.rows_view(dot, dtype, outer, n, inner)
    shape = batch + ctx.plan.dims + feat
    if not qs.size:   # an empty q: no quantile, no tangent
        return ctx.xp.zeros((0,) + shape, dtype)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        coef = selection_weights(ctx, qs, method, skip_nan, values3)
        out = ctx.xp.stack([ctx.put(coef[i] * dot3) for i in range(qs.size)])
    return out.reshape(shape if scalar else (qs.size,) + shape)


_VJP_DOC = """Gradient of `{forward}` with respect to `src`.

    Each output element's cotangent goes to the member(s) its quantile reads, times their interpolation weights
    (``1 - t`` and ``t``; ``np.median``'s middle pair 1/2 each, so ``op="{median}"`` has the derivatives of
    q = 0.5, method "linear"); a weight that reaches a value held by several members of the group is split
    evenly among them (the core's tie rule for max and min: q = 1 gives max's gradient){nan_rule} Empty groups
    pass nothing.

    Parameters
    ----------
    grad_out : array_like, shape of the result: B + D + F, or (Q,) + B + D + F for a 1-d `q`
        Cotangent of the output.
    src : array_like, shape B + I + F, or broadcastable to it along I
        The `src` given to `{forward}` (real).
    index : int array or tuple of int arrays, shape I
        The index given to it.
    q : float or 1-d sequence of floats in [0, 1], default 0.5
        As given to it.
    method : {{"linear", "lower", "higher", "nearest", "midpoint"}}, default "linear"
        As given to it.
    axis : int, default 0
        As given to it.
    mode : {{"raise", "drop", "wrap", "clip", "normalize_drop"}}, default "raise"
        As given to it.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integer or float16 inputs).

    Raises
    ------
    TypeError
        A complex or bool `src`, a non-numeric `grad_out`, None for a required array.
    ValueError
        Mismatched shapes, a bad `q` or `method`, an `axis` that does not fit.
    IndexError
        An out-of-range index entry under ``mode="raise"``.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src, index = np.array([1., 4., 2., 8.]), np.array([0, 0, 0, 0])
    >>> cs.{name}(np.array([1.]), src, index, 0.5)
    array([0. , 0.5, 0.5, 0. ])
    """

_JVP_DOC = """Tangent of `{forward}`: the quantile's weights applied to `src_dot` (see `{vjp}`).

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        The `src` given to `{forward}` (real).
    index : int array or tuple of int arrays, shape I
        The index given to it.
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    q : float or 1-d sequence of floats in [0, 1], default 0.5
        As given to it.
    method : {{"linear", "lower", "higher", "nearest", "midpoint"}}, default "linear"
        As given to it.
    dim_size : int or tuple of ints, optional
        As given to it (D).
    axis : int, default 0
        As given to it.
    mode : {{"raise", "drop", "wrap", "clip", "normalize_drop"}}, default "raise"
        As given to it.

    Returns
    -------
    out_dot : ndarray, shape B + D + F, or (Q,) + B + D + F for a 1-d `q`
        Float dtype (float64 for integer or float16 inputs).

    Raises
    ------
    TypeError
        A complex or bool `src`, a non-numeric `src_dot`, None for a required array.
    ValueError
        Mismatched shapes, a bad `q` or `method`, an `axis` that does not fit.
    IndexError
        An out-of-range index entry under ``mode="raise"``.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src, index = np.array([1., 4., 2., 8.]), np.array([0, 0, 1, 1])
    >>> cs.{name}(src, index, np.array([1., 10., 100., 1000.]), [0.0, 1.0], method="lower")
    array([[   1.,  100.],
           [  10., 1000.]])
    """

_NAN_RULE = "; a group holding a NaN has a NaN result, whose cotangent goes to its NaN members (max's rule)."
_NAN_SKIP = "; NaN entries take no part (they get 0)."


def _doc(text: str, **kw: str) -> Callable[[_FuncT], _FuncT]:
    def decorate(func: _FuncT) -> _FuncT:
        func.__doc__ = text.format(**kw)
        return func
    return decorate


@_doc(_VJP_DOC, forward="scatter_quantile", median="median", nan_rule=_NAN_RULE, name="scatter_quantile_vjp")
def scatter_quantile_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, q: Any = 0.5, *,
                         method: str = "linear", axis: SupportsIndex = 0, mode: Mode = "raise",
                         **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_quantile_vjp", porting)
    return _quantile_vjp("scatter_quantile_vjp", grad_out, src, index, q, check_method(method), False, axis, mode)


@_doc(_VJP_DOC, forward="scatter_nanquantile", median="nanmedian", nan_rule=_NAN_SKIP,
      name="scatter_nanquantile_vjp")
def scatter_nanquantile_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, q: Any = 0.5, *,
                            method: str = "linear", axis: SupportsIndex = 0, mode: Mode = "raise",
                         **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_nanquantile_vjp", porting)
    return _quantile_vjp("scatter_nanquantile_vjp", grad_out, src, index, q, check_method(method), True, axis,
                         mode)


@_doc(_JVP_DOC, forward="scatter_quantile", vjp="scatter_quantile_vjp", name="scatter_quantile_jvp")
def scatter_quantile_jvp(src: ArrayInput, index: IndexLike, src_dot: ArrayInput, q: Any = 0.5, *,
                         method: str = "linear", dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                         mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_quantile_jvp", porting)
    return _quantile_jvp("scatter_quantile_jvp", src, index, src_dot, q, check_method(method), False, dim_size,
                         axis, mode)


@_doc(_JVP_DOC, forward="scatter_nanquantile", vjp="scatter_nanquantile_vjp", name="scatter_nanquantile_jvp")
def scatter_nanquantile_jvp(src: ArrayInput, index: IndexLike, src_dot: ArrayInput, q: Any = 0.5, *,
                            method: str = "linear", dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                            mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_nanquantile_jvp", porting)
    return _quantile_jvp("scatter_nanquantile_jvp", src, index, src_dot, q, check_method(method), True, dim_size,
                         axis, mode)


__all__ = ["scatter_quantile_vjp", "scatter_nanquantile_vjp", "scatter_quantile_jvp", "scatter_nanquantile_jvp",
           "selection_weights"]
