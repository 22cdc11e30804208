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


def _lse_weights(ctx, out3):
    """d out_j / d src_k = exp(src_k - out_j): the softmax of k's group; 0 for dropped entries."""
    with np.errstate(over="ignore", invalid="ignore"):
        return mask_dropped(ctx, ctx.xp.exp(ctx.src3 - ctx.take(out3)), 0)


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
    grad = (ctx.take(rows["grad_out"]) * _lse_weights(ctx, rows["out"])).reshape(expected)
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
    return ctx.put(_lse_weights(ctx, rows["out"]) * rows["src_dot"]).reshape(shape_of(out))


# ---- softmax and log-softmax -----------------------------------------------------------------------------------

def _softmax_map(ctx, v3):
    """y * (v - sum over the group of y * v), y = ctx.src3: the softmax Jacobian (symmetric) applied to v."""
    y3 = ctx.src3
    return y3 * (v3 - ctx.take(ctx.put(y3 * v3)))


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
        grad = g3 - ctx.xp.exp(ctx.src3) * ctx.take(ctx.put(g3))
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
        tangent = dot3 - ctx.take(ctx.put(ctx.xp.exp(ctx.src3) * dot3))
    return mask_dropped(ctx, tangent, 0).reshape(shape_of(out))
