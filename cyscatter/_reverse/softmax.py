"""VJPs and JVPs of scatter_logsumexp, scatter_softmax and scatter_log_softmax, free of any autodiff framework."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.softmax import mask_dropped
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._docs import reverse_doc
from cyscatter._plan.index import sized_by
from cyscatter._plan.layout import unbroadcast
from cyscatter._plan.values import size_arg
from cyscatter._reverse.groups import _dst_view, _src_view

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode


def _lse_weights(ctx, out3, plan, rows3):
    """d out_j / d src_k = exp(src_k - out_j) for the entries of `plan` (src rows `rows3`: a chunk of
    `Reverse.src_chunks`, so that a float16 src is not converted whole): the softmax of k's group; 0 for dropped
    entries."""
    with np.errstate(over="ignore", invalid="ignore"):
        return mask_dropped(ctx, ctx.xp.exp(rows3 - ctx.take(out3, plan)), 0, plan)


@reverse_doc("scatter_logsumexp")
def scatter_logsumexp_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                          axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of `scatter_logsumexp` with respect to `src`: ``grad_out[index[k]] * softmax(src)[k]``.

    Parameters
    ----------
    {grad_out}
    {src}
    {index}
    {out}
    {axis}
    {mode}

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integer or float16 inputs).

    Notes
    -----
    Members of a group whose result is not finite (all -inf, a +inf or a NaN member) get NaN, as the
    softmax there is NaN; dropped entries get 0.
    """
    if porting:
        raise unexpected_keywords("scatter_logsumexp_vjp", porting)
    ctx, rows, expected = _dst_view("scatter_logsumexp_vjp", src, index, out, axis, mode, grad_out=grad_out)
    grad = ctx.map_rows(lambda _, plan, rows3: ctx.take(rows["grad_out"], plan)
                        * _lse_weights(ctx, rows["out"], plan, rows3), ctx.dtype).reshape(expected)
    return unbroadcast(grad, shape_of(src), ctx.xp)


@reverse_doc("scatter_logsumexp")
def scatter_logsumexp_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of `scatter_logsumexp`: ``out_dot[j] = sum(softmax(src)[k] * src_dot[k])`` over j's group.

    Parameters
    ----------
    {src}
    {index}
    {out}
    {src_dot}
    {axis}
    {mode}

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    if porting:
        raise unexpected_keywords("scatter_logsumexp_jvp", porting)
    ctx, rows, _ = _dst_view("scatter_logsumexp_jvp", src, index, out, axis, mode, src_dot=src_dot)
    dot3 = rows["src_dot"]
    return ctx.put_rows(lambda at, plan, rows3: _lse_weights(ctx, rows["out"], plan, rows3) * dot3[:, at],
                        ctx.dtype).reshape(shape_of(out))


# ---- softmax and log-softmax -----------------------------------------------------------------------------------

def _softmax_map(ctx, v3):
    """y * (v - sum over the group of y * v), y = the context's src (the softmax output): the softmax Jacobian
    (symmetric) applied to v; y read by chunks, a float16 one never converted whole."""
    sums = ctx.put_rows(lambda at, _, y3: y3 * v3[:, at], ctx.dtype)
    return ctx.map_rows(lambda at, plan, y3: y3 * (v3[:, at] - ctx.take(sums, plan)), ctx.dtype)


@reverse_doc("scatter_softmax")
def scatter_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None,
                        axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of `scatter_softmax` with respect to `src`: ``y * (g - sum(g * y over the group))``, y = `out`.

    Parameters
    ----------
    grad_out : array_like, shape B + I + F
        Cotangent of the output.
    out : array_like, shape B + I + F
        The result of `scatter_softmax` (the gradient needs only it, not `src`).
    {index}
    dim_size : int or tuple of ints, optional
        As given to `scatter_softmax` (it matters for ``mode="wrap"``/``"clip"``).
    {axis}
    {mode}

    Returns
    -------
    grad_src : ndarray, shape of `out`
        Float dtype.
    """
    if porting:
        raise unexpected_keywords("scatter_softmax_vjp", porting)
    ctx, g3 = _src_view("scatter_softmax_vjp", out, index, dim_size, axis, mode, "grad_out", grad_out)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        grad = _softmax_map(ctx, g3)
    return grad.reshape(shape_of(out))


@reverse_doc("scatter_softmax")
def scatter_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = None,
                        axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of `scatter_softmax`: ``y * (src_dot - sum(y * src_dot over the group))``, y = `out`.

    Parameters
    ----------
    out : array_like, shape B + I + F
        The result of `scatter_softmax`.
    {index}
    src_dot : array_like, shape B + I + F
        Tangent of `src`.
    {dim_size}
    {axis}
    {mode}

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    if porting:
        raise unexpected_keywords("scatter_softmax_jvp", porting)
    ctx, dot3 = _src_view("scatter_softmax_jvp", out, index, dim_size, axis, mode, "src_dot", src_dot)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        tangent = _softmax_map(ctx, dot3)
    return tangent.reshape(shape_of(out))


@reverse_doc("scatter_log_softmax")
def scatter_log_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None,
                            axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of `scatter_log_softmax` w.r.t. `src`: ``g - exp(out) * sum(g over the group)``.

    Parameters
    ----------
    grad_out : array_like, shape B + I + F
        Cotangent of the output.
    out : array_like, shape B + I + F
        The result of `scatter_log_softmax`.
    {index}
    {dim_size}
    {axis}
    {mode}

    Returns
    -------
    grad_src : ndarray, shape of `out`
        Float dtype; dropped entries (whose output is the constant -inf) get 0.
    """
    if porting:
        raise unexpected_keywords("scatter_log_softmax_vjp", porting)
    ctx, g3 = _src_view("scatter_log_softmax_vjp", out, index, dim_size, axis, mode, "grad_out", grad_out)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        sums = ctx.put(g3)
        grad = ctx.map_rows(lambda at, plan, y3: g3[:, at] - ctx.xp.exp(y3) * ctx.take(sums, plan), ctx.dtype)
    return mask_dropped(ctx, grad, 0).reshape(shape_of(out))


@reverse_doc("scatter_log_softmax")
def scatter_log_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = None,
                            axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of `scatter_log_softmax`: ``src_dot - sum(exp(out) * src_dot over the group)``.

    Parameters
    ----------
    out : array_like, shape B + I + F
        The result of `scatter_log_softmax`.
    {index}
    src_dot : array_like, shape B + I + F
        Tangent of `src`.
    {dim_size}
    {axis}
    {mode}

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype; dropped entries get 0.
    """
    if porting:
        raise unexpected_keywords("scatter_log_softmax_jvp", porting)
    ctx, dot3 = _src_view("scatter_log_softmax_jvp", out, index, dim_size, axis, mode, "src_dot", src_dot)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        tangent = ctx.take(ctx.put_rows(lambda at, _, y3: ctx.xp.exp(y3) * dot3[:, at], ctx.dtype))
        tangent = ctx.xp.subtract(dot3, tangent, out=tangent)   # in the gather's buffer: one n x F array
    return mask_dropped(ctx, tangent, 0).reshape(shape_of(out))
