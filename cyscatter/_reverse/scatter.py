"""Split reverse functions and forward derivatives of scatter and gather, free of any autodiff framework.

NNlib's ``∇scatter_src``, ``∇scatter_dst`` and ``∇gather_src``, plus JVPs: any AD system (autograd, JAX,
PyTorch, Yota-style) can build its rules from these. The per-op rules live in `cyscatter._reverse.rules`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.gather import gather
from cyscatter._api.scatter import scatter, scatter_into
from cyscatter._arrays.integers import prod
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import host_asarray
from cyscatter._backends.host import precheck, rows_view
from cyscatter._backends.reduce import _reduce_into
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.index import check_sizes, check_table_bytes, index_shape, parse_coords, plan_index, sized_by
from cyscatter._plan.layout import normalize_axis, split_src, unbroadcast
from cyscatter._plan.prepare import prepare
from cyscatter._plan.values import _float_dtype, check_given, check_numeric
from cyscatter._reverse import rules as _rules

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, IndexLike, Mode, OpLike



def _reverse_call(op, src, index, out, dst, axis, mode, *extra):
    """(op, Reverse context, views, (src shape, the shape B + I + F it broadcasts to), out shape) of a reverse
    call, planned once by `prepare`'s "reverse" kind."""
    call = prepare("reverse", src, index, op, dst=dst, out=out, axis=axis, mode=mode, extra=extra)
    return call.op, call.context, call.views, (call.src_shape, call.expected), call.shape


@fill_doc
def scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                    dst: ArrayInput | None = None, axis: SupportsIndex = 0, mode: Mode = "raise",
                     **porting: object) -> Any:
    """Gradient of a scatter with respect to `src` (NNlib's ``∇scatter_src``): the VJP ``grad_out -> grad_src``.

    Parameters
    ----------
    {op}
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    {forward_args}

    Returns
    -------
    grad_src : ndarray, shape of `src`
        NumPy's promotion of the dtypes of `src`, `out` and `grad_out`; where that is an integer, float16 or
        bfloat16 dtype, float64 (the derivatives are computed in it; the ``grad`` package rounds them back to the
        input's dtype, as PyTorch and JAX return them).

    Raises
    ------
    {raises}

    Notes
    -----
    add: ``gather(g)``; sub: ``-gather(g)``; mean: ``gather(g) / count``; mul: ``gather(g)`` times the exact
    product of the *other* members of the group and the initial value (prefix and suffix products: right
    with zeros, no division by src, unlike NNlib's ``scatter!`` rule); div: ``-gather(g * out) / src``;
    max/min: ``gather(g)`` split evenly among the tied winners (NaN winners when the result is NaN), the
    initial dst value counting as a candidate (NNlib gives every tied winner the full gradient).
    Entries dropped under ``mode="drop"`` or ``"normalize_drop"`` get 0.
    {gpu}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src, idx = np.array([2., 3., 5.]), np.array([0, 0, 1])
    >>> out = cs.scatter(src, idx, "mul")
    >>> cs.scatter_vjp_src("mul", np.ones(2), src, idx, out)
    array([3., 2., 1.])
    """
    if porting:
        raise unexpected_keywords("scatter_vjp_src", porting)
    op, ctx, views, src_shape, _ = _reverse_call(op, src, index, out, dst, axis, mode, ("grad_out", grad_out, "out"))
    shape, expected = src_shape
    return unbroadcast(_rules.RULES[op.rule].vjp_src(ctx, views["grad_out"]).reshape(expected), shape, ctx.xp)


@fill_doc
def scatter_vjp_dst(op: OpLike, grad_out: ArrayInput, dst: ArrayInput, src: ArrayInput, index: IndexLike,
                    out: ArrayInput, *, axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of ``scatter_into`` with respect to the initial `dst` (NNlib's ``∇scatter_dst``).

    Parameters
    ----------
    {op}
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    dst : array_like, shape B + D + F
        The destination before the update.
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` of the forward call.
    {index}
    out : array_like, shape B + D + F
        `dst` after the update.
    {axis}
    {mode}

    Returns
    -------
    grad_dst : ndarray, shape of `dst`
        NumPy's promotion of the dtypes of `dst`, `src`, `out` and `grad_out`; where that is an integer, float16 or
        bfloat16 dtype, float64 (the derivatives are computed in it; the ``grad`` package rounds them back to the
        input's dtype, as PyTorch and JAX return them).

    Raises
    ------
    {raises}

    Notes
    -----
    add/sub/mean: ``g`` (mean adds the group mean to dst); mul: ``g`` times the product of the group's src;
    div: ``g / prod(src)`` computed as the forward divisions; max/min: ``g`` where dst stays the winner,
    split with the tied src winners.
    {gpu}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> dst, src, idx = np.array([1., 1.]), np.array([1., 0.]), np.array([0, 0])
    >>> out = cs.scatter_into(dst.copy(), src, idx, "max")
    >>> cs.scatter_vjp_dst("max", np.ones(2), dst, src, idx, out)
    array([0.5, 1. ])
    """
    if porting:
        raise unexpected_keywords("scatter_vjp_dst", porting)
    if dst is None:
        raise TypeError("dst is required, got None: it is the initial destination of scatter_into")
    op, ctx, views, _, out_shape = _reverse_call(op, src, index, out, dst, axis, mode, ("grad_out", grad_out, "out"))
    return _rules.RULES[op.rule].vjp_dst(ctx, views["grad_out"]).reshape(out_shape)


@fill_doc
def gather_vjp_src(grad_out: ArrayInput, index: IndexLike, src_shape: SupportsIndex | Sequence[SupportsIndex], *,
                   axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of ``gather`` with respect to `src` (NNlib's ``∇gather_src``): a scatter-add of `grad_out`.

    Parameters
    ----------
    grad_out : array_like, shape B + I + F
        Cotangent of the gathered output.
    {index}
    src_shape : int or tuple of int
        Shape B + D + F of the `src` that was gathered from.
    {axis}
    {mode}

    Returns
    -------
    grad_src : ndarray, shape `src_shape`
        The scatter-add of `grad_out`, in its dtype.

    Raises
    ------
    {raises}

    Notes
    -----
    {gpu}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.gather_vjp_src(np.array([1., 2., 3.]), np.array([1, 1, 0]), (3,))
    array([3., 3., 0.])
    """
    if porting:
        raise unexpected_keywords("gather_vjp_src", porting)
    check_given("grad_out", grad_out)
    be = backend_of(grad_out=grad_out, index=index)
    grad_out = check_numeric(be.asarray(grad_out), "grad_out")
    src_shape = check_sizes(src_shape, "src_shape")
    coords = parse_coords(index, be=be)
    m = len(coords)
    if len(src_shape) < m:
        raise ValueError(f"src_shape={src_shape} has {len(src_shape)} dims but the index addresses {m}")
    axis = normalize_axis(axis, len(src_shape), m, array="src_shape")
    expected = src_shape[:axis] + index_shape(coords) + src_shape[axis + m:]
    if tuple(grad_out.shape) != expected:
        raise ValueError(f"grad_out shape {grad_out.shape} does not match src_shape {src_shape} gathered with an "
                         f"index of shape {index_shape(coords)} at axis {axis}: expected {expected}")
    dtype = _float_dtype(grad_out)
    check_table_bytes(src_shape, dtype, "src_shape", src_shape)
    with sized_by("src_shape", src_shape):
        grad_src = be.xp.zeros(src_shape, dtype)
    return scatter_into(grad_src, grad_out, index, "add", axis=axis, mode=mode)


@fill_doc
def scatter_jvp(op: OpLike, src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                dst: ArrayInput | None = None, dst_dot: ArrayInput | None = None, axis: SupportsIndex = 0,
                mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of a scatter: the tangent of `out` given tangents of `src` (and `dst`).

    Parameters
    ----------
    {op}
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` the forward scatter was called with.
    {index}
    out : array_like, shape B + D + F
        The forward result (for in-place forms: `dst` after the update).
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    dst : array_like, shape B + D + F, optional
        The initial destination of an in-place ``scatter_into``; None for the allocating ``scatter``.
    dst_dot : array_like, shape of `dst`, optional
        Tangent of the initial `dst` (in-place form only: without `dst` it raises ValueError; None means zero).
    {axis}
    {mode}

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output: NumPy's promotion of the dtypes of `src`, `out` and `src_dot`; where that is an
        integer, float16 or bfloat16 dtype, float64 (a float16/bfloat16 `src_dot` is converted whole to it).

    Raises
    ------
    {raises}

    Notes
    -----
    add, sub and mean are linear: the tangent is the same scatter of the tangents. For mul, div, max and min
    it is ``scatter_add(d out / d src * src_dot) + d out / d dst * dst_dot`` with the partial derivatives of
    `scatter_vjp_src` / `scatter_vjp_dst`, so ``<J v, w> == <v, J^T w>`` holds (to rounding). The ops that
    select entries (max/min and fmax/fmin: the tied winners; nansum/nanmean: the non-NaN entries) compute it
    as the mean (nansum: the sum) of the selected entries' tangents, the initial dst a candidate of max/min and
    fmax/fmin; an unselected entry's tangent, inf or NaN as it may be, never reaches the output (JAX's rule).
    {gpu}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src, idx = np.array([2., 3.]), np.array([0, 0])
    >>> cs.scatter_jvp("mul", src, idx, cs.scatter(src, idx, "mul"), np.array([1., 0.]))
    array([3.])
    """
    if porting:
        raise unexpected_keywords("scatter_jvp", porting)
    if dst is None and dst_dot is not None:
        raise ValueError("dst_dot was given without dst: the tangent of the initial destination needs that "
                         "destination (the in-place form); pass dst, or leave dst_dot out")
    op, ctx, views, _, out_shape = _reverse_call(op, src, index, out, dst, axis, mode, ("src_dot", src_dot, "src"),
                                            ("dst_dot", dst_dot, "out"))
    dot3, dst_dot3 = views["src_dot"], views.get("dst_dot")
    if op.linear:
        base = ctx.xp.zeros(ctx.out3.shape, ctx.dtype) if dst_dot3 is None else dst_dot3.copy()
        if dst is None and op.counts:   # allocating mean: rows without entries stay 0 in value and tangent
            base[...] = 0
        _reduce_into(ctx.be, op, dot3, ctx.plan, base)
        return base.reshape(out_shape)
    ones = ctx.xp.ones(ctx.out3.shape, ctx.dtype)   # (the partial derivatives are the VJPs of ones)
    out_dot = _rules.selected_tangents(ctx, dot3, op)   # the selecting ops on the CPU: one fused pass
    if out_dot is None:
        if op.skips_nan:   # a NaN entry is absent: its tangent (NaN, inf or a number) does not reach the output
            dot3 = _present_tangents(ctx, dot3)
        out_dot = ctx.put(_tangent_part(ctx.xp, op, _rules.RULES[op.rule].vjp_src(ctx, ones), dot3))
    if dst is not None and dst_dot3 is not None:
        out_dot += _tangent_part(ctx.xp, op, _rules.RULES[op.rule].vjp_dst(ctx, ones), dst_dot3)
    return out_dot.reshape(out_shape)


def _present_tangents(ctx, dot3):
    """dot3 with 0 at src's NaN entries; by chunks of src rows where src is read in place (no converted copy)."""
    if not ctx.in_place:
        return ctx.xp.where(ctx.src3 == ctx.src3, dot3, 0)
    kept = np.array(dot3, order="C")
    for rows, _, rows3 in ctx.src_chunks():
        np.copyto(kept[:, rows], 0, where=rows3 != rows3)  # noqa: PLR0124 (NaN in every dtype)
    return kept


def _tangent_part(xp, op, coefficient, dot):
    """coefficient * dot; for an op that selects (max/min and twins) 0 wherever the coefficient is 0, so that the
    inf or NaN tangent of an entry that lost does not reach the output (JAX's rule; 0 * inf would be NaN)."""
    if not op.selects:
        return coefficient * dot
    with np.errstate(invalid="ignore"):
        return xp.where(coefficient != 0, coefficient * dot, 0)


def gather_jvp(src_dot: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0, mode: Mode = "raise",
               **porting: object) -> Any:
    """Forward derivative of ``gather``: the gather of the tangent (gather is linear).

    Parameters
    ----------
    src_dot : array_like, shape B + D + F
        Tangent of the gathered `src`.
    index : int array of shape I, or tuple of m int arrays all of shape I
        The index given to `gather`.
    axis : int, default 0
        As given to `gather`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `gather`.

    Returns
    -------
    out_dot : ndarray, shape B + I + F
        The gathered tangent, dtype of `src_dot`.

    Raises
    ------
    TypeError, ValueError, IndexError
        As `gather` does.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.gather_jvp(np.array([0.5, 1., 2.]), np.array([2, 2, 0]))
    array([2. , 2. , 0.5])
    """
    if porting:
        raise unexpected_keywords("gather_jvp", porting)
    check_given("src_dot", src_dot)
    be = backend_of(src_dot=src_dot, index=index)
    src_dot = check_numeric(be.asarray(src_dot), "src_dot")
    normalize_axis(axis, src_dot.ndim, len(index) if isinstance(index, tuple) else 1, array="src_dot")
    return gather(src_dot, index, axis=axis, mode=mode)


@fill_doc
def others_product(src, index, dim_size, *, axis=0, mode="raise", src_dot=None):
    """Per entry, the product of the *other* `src` entries of its group: the partials of a scatter ``"mul"``.

    ``d scatter(src, index, "mul")[b, j, f] / d src[b, k, f]`` for an entry k of group j, computed with prefix
    and suffix products: exact with zeros, no division by `src` (pytorch_scatter divides).

    Parameters
    ----------
    src : array_like, shape B + I + F
    {index}
    dim_size : int or tuple of m ints
        Destination shape D the index addresses (it decides the groups under wrap/clip/drop).
    {axis}
    {mode}
    src_dot : array_like, shape of `src`, optional
        A tangent of `src`: also return the derivative of the products along it.

    Returns
    -------
    products : ndarray, shape of `src`, floating dtype (float32 stays float32; integers give float64)
        Entries dropped under ``mode="drop"`` or ``"normalize_drop"`` get 0.
    products_dot : ndarray, shape of `src`
        Only with `src_dot`: ``sum over the other members m of src_dot[m] * product over the members but k and m``,
        in dual-number arithmetic (exact with zeros). It is the Hessian of the group product applied to `src_dot`;
        the Hessian is symmetric, so this is also the VJP of `products` for the cotangent `src_dot`.

    Raises
    ------
    {raises}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> from cyscatter._reverse.scatter import others_product
    >>> src, idx = np.array([2., 3., 0., 5.]), np.array([0, 0, 1, 1])
    >>> others_product(src, idx, 2)
    array([3., 2., 5., 0.])
    >>> others_product(src, idx, 2, src_dot=np.array([1., 0., 0., 1.]))[1]
    array([0., 1., 1., 0.])
    """
    src = host_asarray(src)
    coords = parse_coords(index)
    axis, batch, feat = split_src(src, coords, axis)
    if src_dot is not None and np.shape(src_dot) != src.shape:
        raise ValueError(f"src_dot shape {np.shape(src_dot)} != src shape {src.shape}")
    plan = plan_index(None, dim_size, mode, coords=coords)
    precheck(plan)
    dtype = _float_dtype(src, src_dot)
    shape3 = (prod(batch), plan.n, prod(feat))
    src3 = rows_view(src, dtype, *shape3)
    if src_dot is None:
        return _rules.exclusive_products(plan, src3).reshape(src.shape)
    products, products_dot = _rules.exclusive_products(plan, src3, rows_view(np.asarray(src_dot), dtype, *shape3))
    return products.reshape(src.shape), products_dot.reshape(src.shape)


__all__ = ["gather_jvp", "gather_vjp_src", "others_product", "scatter", "scatter_jvp", "scatter_vjp_dst", "scatter_vjp_src"]
