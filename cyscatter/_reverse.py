"""Split reverse functions and forward derivatives of scatter and gather, free of any autodiff framework.

NNlib's ``∇scatter_src``, ``∇scatter_dst`` and ``∇gather_src``, plus JVPs: any AD system (autograd, JAX,
PyTorch, Yota-style) can build its rules from these. The per-op rules live in `cyscatter._rules`.
"""
from __future__ import annotations

import numpy as np

from cyscatter import _rules
from cyscatter._canonical import normalize_axis, precheck, prod, rows_view
from cyscatter._docs import fill_doc
from cyscatter._gather import gather
from cyscatter._index import check_sizes, parse_coords, plan_index
from cyscatter._ops import get_op
from cyscatter._scatter import scatter, scatter_into, split_src

def _float_dtype(*arrays) -> np.dtype:
    dtype = np.result_type(*[np.asarray(a).dtype for a in arrays if a is not None])
    return dtype if dtype.kind in "fc" and dtype != np.float16 else np.dtype(np.float64)


def _context(op, src, index, out, dst, axis, mode, *extra):
    """Validated shapes, canonical arrays and the `Reverse` context shared by the VJPs and JVPs."""
    op = get_op(op)
    src, out = np.asarray(src), np.asarray(out)
    op.check_dtype(src.dtype)   # the forward pass refused these; the rules would return zeros for them
    if dst is not None:
        op.check_dtype(np.asarray(dst).dtype, "dst")
    coords = parse_coords(index)
    axis, batch, feat = split_src(src, coords, axis)
    m = len(coords)
    if out.shape[:axis] != batch or out.shape[axis + m:] != feat or out.ndim != len(batch) + m + len(feat):
        raise ValueError(f"out shape {out.shape} does not match src shape {src.shape} and an index of "
                         f"shape {coords[0].shape} addressing {m} axis(es) at axis {axis}")
    for name, arr in (("dst", dst), *extra):
        if arr is not None and np.shape(arr) != out.shape:
            raise ValueError(f"{name} shape {np.shape(arr)} != out shape {out.shape}")
    plan = plan_index(None, out.shape[axis:axis + m], mode, coords=coords, dims_arg="out.shape")
    precheck(plan)   # some rules (add's dst gradient) never reach a kernel that would report a bad entry
    dtype = _float_dtype(src, out, dst, *(a for _, a in extra))
    outer, inner = prod(batch), prod(feat)
    ctx = _rules.Reverse(plan, rows_view(src, dtype, outer, plan.n, inner),
                         rows_view(out, dtype, outer, plan.size, inner),
                         None if dst is None else rows_view(np.asarray(dst), dtype, outer, plan.size, inner))
    return op, ctx, axis, src.shape, out.shape


@fill_doc
def scatter_vjp_src(op, grad_out, src, index, out, *, dst=None, axis=0, mode="raise"):
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
        Floating dtype (float32 stays float32; integers give float64).

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
    Entries dropped under ``mode="drop"`` get 0.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src, idx = np.array([2., 3., 5.]), np.array([0, 0, 1])
    >>> out = cs.scatter(src, idx, "mul")
    >>> cs.scatter_vjp_src("mul", np.ones(2), src, idx, out)
    array([3., 2., 1.])
    """
    op, ctx, _, src_shape, out_shape = _context(op, src, index, out, dst, axis, mode, ("grad_out", grad_out))
    g3 = rows_view(np.asarray(grad_out), ctx.dtype, *ctx.out3.shape)
    return op.rules["vjp_src"](ctx, g3).reshape(src_shape)


@fill_doc
def scatter_vjp_dst(op, grad_out, dst, src, index, out, *, axis=0, mode="raise"):
    """Gradient of ``scatter_into`` with respect to the initial `dst` (NNlib's ``∇scatter_dst``).

    Parameters
    ----------
    {op}
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    dst : array_like, shape B + D + F
        The destination before the update.
    src : array_like, shape B + I + F
    {index}
    out : array_like, shape B + D + F
        `dst` after the update.
    {axis}
    {mode}

    Returns
    -------
    grad_dst : ndarray, shape of `dst`, floating dtype

    Raises
    ------
    {raises}

    Notes
    -----
    add/sub/mean: ``g`` (mean adds the group mean to dst); mul: ``g`` times the product of the group's src;
    div: ``g / prod(src)`` computed as the forward divisions; max/min: ``g`` where dst stays the winner,
    split with the tied src winners.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> dst, src, idx = np.array([1., 1.]), np.array([1., 0.]), np.array([0, 0])
    >>> out = cs.scatter_into(dst.copy(), src, idx, "max")
    >>> cs.scatter_vjp_dst("max", np.ones(2), dst, src, idx, out)
    array([0.5, 1. ])
    """
    if dst is None:
        raise ValueError("dst is required: it is the initial destination of scatter_into")
    op, ctx, _, _, out_shape = _context(op, src, index, out, dst, axis, mode, ("grad_out", grad_out))
    g3 = rows_view(np.asarray(grad_out), ctx.dtype, *ctx.out3.shape)
    return op.rules["vjp_dst"](ctx, g3).reshape(out_shape)


@fill_doc
def gather_vjp_src(grad_out, index, src_shape, *, axis=0, mode="raise"):
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
    grad_src : ndarray, shape `src_shape`, dtype of `grad_out`

    Raises
    ------
    {raises}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.gather_vjp_src(np.array([1., 2., 3.]), np.array([1, 1, 0]), (3,))
    array([3., 3., 0.])
    """
    grad_out = np.asarray(grad_out)
    src_shape = check_sizes(src_shape, "src_shape")
    m = len(parse_coords(index))
    axis = normalize_axis(axis, len(src_shape), m)
    grad_src = np.zeros(src_shape, _float_dtype(grad_out))
    return scatter_into(grad_src, grad_out, index, "add", axis=axis, mode=mode)


@fill_doc
def scatter_jvp(op, src, index, out, src_dot, *, dst=None, dst_dot=None, axis=0, mode="raise"):
    """Forward derivative of a scatter: the tangent of `out` given tangents of `src` (and `dst`).

    Parameters
    ----------
    {op}
    {forward_args}
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    dst_dot : array_like, shape of `dst`, optional
        Tangent of the initial `dst` (in-place form only; None means zero).

    Returns
    -------
    out_dot : ndarray, shape of `out`, floating dtype

    Raises
    ------
    {raises}

    Notes
    -----
    add, sub and mean are linear: the tangent is the same scatter of the tangents. For mul, div, max and min
    it is ``scatter_add(d out / d src * src_dot) + d out / d dst * dst_dot`` with the partial derivatives of
    `scatter_vjp_src` / `scatter_vjp_dst`, so ``<J v, w> == <v, J^T w>`` holds exactly.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src, idx = np.array([2., 3.]), np.array([0, 0])
    >>> cs.scatter_jvp("mul", src, idx, cs.scatter(src, idx, "mul"), np.array([1., 0.]))
    array([3.])
    """
    op, ctx, axis, src_shape, out_shape = _context(op, src, index, out, dst, axis, mode,
                                                   ("dst_dot", dst_dot))
    if np.shape(src_dot) != src_shape:
        raise ValueError(f"src_dot shape {np.shape(src_dot)} != src shape {src_shape}")
    dot3 = rows_view(np.asarray(src_dot), ctx.dtype, *ctx.src3.shape)
    if op.linear:
        base = np.zeros(ctx.out3.shape, ctx.dtype) if dst_dot is None else \
            np.array(rows_view(np.asarray(dst_dot), ctx.dtype, *ctx.out3.shape))
        if dst is None and op.counts:   # allocating mean: rows without entries stay 0 in value and tangent
            base[...] = 0
        _scatter_rows(base, dot3, ctx, op)
        return base.reshape(out_shape)
    ones = np.ones(ctx.out3.shape, ctx.dtype)
    out_dot = ctx.put(op.rules["vjp_src"](ctx, ones) * dot3)
    if dst is not None and dst_dot is not None:
        out_dot += op.rules["vjp_dst"](ctx, ones) * rows_view(np.asarray(dst_dot), ctx.dtype, *ctx.out3.shape)
    return out_dot.reshape(out_shape)


def _scatter_rows(base3, dot3, ctx, op):
    """Apply a linear op's scatter of the canonical tangent into the canonical base (in place)."""
    from cyscatter._scatter import _reduce_into
    _reduce_into(op, dot3, ctx.plan, base3, fresh=False, count=False)


def gather_jvp(src_dot, index, *, axis=0, mode="raise"):
    """Forward derivative of ``gather``: the gather of the tangent (gather is linear).

    Parameters
    ----------
    src_dot : array_like, shape B + D + F
    index, axis, mode
        As for `gather`.

    Returns
    -------
    out_dot : ndarray, shape B + I + F
    """
    return gather(src_dot, index, axis=axis, mode=mode)


__all__ = ["scatter_vjp_src", "scatter_vjp_dst", "gather_vjp_src", "scatter_jvp", "gather_jvp", "scatter"]
