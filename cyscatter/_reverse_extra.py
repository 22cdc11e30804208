"""VJPs and JVPs of the group ops beyond the core (softmax family, moments, CSR segments), free of any autodiff
framework, in the style of `cyscatter._reverse`. Each is built from scatter-add and gather, so an AD system that
registers those as primitives gets every higher derivative too.

The Jacobians, per group with softmax y (p for logsumexp) and deviations d = x - mean:
logsumexp ``p^T``; softmax ``diag(y) - y y^T`` (symmetric: the VJP and JVP are one map); log-softmax
``I - 1 y^T``; var ``2 d^T / (count - ddof)``; std ``d^T / ((count - ddof) std)``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from cyscatter._backend import backend_of, shape_of
from cyscatter._canonical import normalize_axis
from cyscatter._groups import group_view
from cyscatter._index import parse_coords, sized_by
from cyscatter._moments import check_ddof, deviations3, nan_deviations3
from cyscatter._reverse import _float_dtype, check_given, check_numeric, scatter_jvp, scatter_vjp_src
from cyscatter._scatter import expand_cast, size_arg, src_layout, unbroadcast
from cyscatter._segment import batched_indptr, check_indptr, merge_batch, segment, segment_axis, segment_ids
from cyscatter._softmax import mask_dropped

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import NDArray

    from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode, OpLike


# ---- shared plumbing -----------------------------------------------------------------------------------------

def _grad_dtype(name: str, *arrays) -> np.dtype:
    dtype = _float_dtype(*arrays)
    if dtype.kind == "c":
        raise TypeError(f"{name} differentiates real inputs only, got dtype {dtype}")
    return dtype


def _check_shape(name: str, arr, like: str, shape: tuple):
    if arr.shape != shape:
        raise ValueError(f"{name} shape {arr.shape} != {like} shape {shape}")
    return arr


def _dst_view(name, src, index, out, axis, mode, **given):
    """Context for an op whose output has shape B + D + F (groups read off `out`), on the arrays' backend, the
    canonical rows of `out` and of the one array in `given`: `grad_out` (shaped like out) or `src_dot` (shaped
    like src), and the shape B + I + F that src broadcasts to (`src_layout`; `unbroadcast` takes a cotangent
    back to src's own shape)."""
    (arg, value), = given.items()
    for arg, value in (("src", src), ("out", out), (arg, value)):
        check_given(arg, value)
    grad_out, src_dot = given.get("grad_out"), given.get("src_dot")
    be = backend_of(src=src, index=index, out=out, grad_out=grad_out, src_dot=src_dot)
    src, out = check_numeric(be.asarray(src), "src"), check_numeric(be.asarray(out), "out")
    coords = parse_coords(index, xp=be.xp)
    axis, batch, feat, expected = src_layout(src.shape, coords, axis, table_shape=out.shape, table_arg="out")
    m = len(coords)
    dims = out.shape[axis:axis + m]
    given = {k: _check_shape(k, check_numeric(be.asarray(v), k), *(("out", out.shape) if k != "src_dot" else
                                                                    ("src", src.shape)))
             for k, v in (("grad_out", grad_out), ("src_dot", src_dot)) if v is not None}
    dtype = _grad_dtype(name, src, out, *given.values())
    if "src_dot" in given:   # the tangent of a broadcast src is broadcast as src is
        given["src_dot"] = expand_cast(given["src_dot"], expected, len(feat), dtype, be.xp)
    src = expand_cast(src, expected, len(feat), dtype, be.xp)
    ctx = group_view(name, src, index, dims, axis, mode, compute=dtype)[0]
    outer, inner = ctx.src3.shape[0], ctx.src3.shape[2]
    rows = {k: be.rows_view(v, dtype, outer, ctx.plan.n if k == "src_dot" else ctx.plan.size, inner)
            for k, v in (("out", out), *given.items())}
    return ctx, rows, expected


def _src_view(name, out, index, dim_size, axis, mode, other_name, other):
    """Context for an op whose output has the shape of src (softmax): `out` as the rows, and `other` alike."""
    check_given("out", out)
    check_given(other_name, other)
    be = backend_of(out=out, index=index, **{other_name: other})
    out = check_numeric(be.asarray(out), "out")
    other = _check_shape(other_name, check_numeric(be.asarray(other), other_name), "out", out.shape)
    dtype = _grad_dtype(name, out, other)
    ctx = group_view(name, out, index, dim_size, axis, mode, compute=dtype, src_arg="out", broadcast=False)[0]
    return ctx, be.rows_view(other, dtype, *ctx.src3.shape)


# ---- logsumexp -------------------------------------------------------------------------------------------------

def _lse_weights(ctx, out3):
    """d out_j / d src_k = exp(src_k - out_j): the softmax of k's group; 0 for dropped entries."""
    with np.errstate(over="ignore", invalid="ignore"):
        return mask_dropped(ctx, ctx.xp.exp(ctx.src3 - ctx.take(out3)), 0)


@overload
def scatter_logsumexp_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_logsumexp_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_logsumexp_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_logsumexp_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                          axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Gradient of `scatter_logsumexp` with respect to `src`: ``grad_out[index[k]] * softmax(src)[k]``.

    Parameters
    ----------
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_logsumexp`.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_logsumexp`.
    out : array_like, shape B + D + F
        Its result.
    axis : int, default 0
        As given to `scatter_logsumexp`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_logsumexp`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integer or float16 inputs).

    Notes
    -----
    Members of a group whose result is not finite (all -inf, a +inf or a NaN member) get NaN, as the
    softmax there is NaN; dropped entries get 0.
    """
    ctx, rows, expected = _dst_view("scatter_logsumexp_vjp", src, index, out, axis, mode, grad_out=grad_out)
    grad = (ctx.take(rows["grad_out"]) * _lse_weights(ctx, rows["out"])).reshape(expected)
    return unbroadcast(grad, shape_of(src), ctx.xp)


@overload
def scatter_logsumexp_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_logsumexp_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_logsumexp_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_logsumexp_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Forward derivative of `scatter_logsumexp`: ``out_dot[j] = sum(softmax(src)[k] * src_dot[k])`` over j's group.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_logsumexp`.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_logsumexp`.
    out : array_like, shape B + D + F
        Its result.
    src_dot : array_like, the shape of `src` (its tangent; a broadcast `src` takes one of its own shape)
        Tangent of `src`.
    axis : int, default 0
        As given to `scatter_logsumexp`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_logsumexp`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    ctx, rows, _ = _dst_view("scatter_logsumexp_jvp", src, index, out, axis, mode, src_dot=src_dot)
    return ctx.put(_lse_weights(ctx, rows["out"]) * rows["src_dot"]).reshape(shape_of(out))


# ---- softmax and log-softmax -----------------------------------------------------------------------------------

def _softmax_map(ctx, v3):
    """y * (v - sum over the group of y * v), y = ctx.src3: the softmax Jacobian (symmetric) applied to v."""
    y3 = ctx.src3
    return y3 * (v3 - ctx.take(ctx.put(y3 * v3)))


@overload
def scatter_softmax_vjp(grad_out: DeviceArray, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None,
                        axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Gradient of `scatter_softmax` with respect to `src`: ``y * (g - sum(g * y over the group))``, y = `out`.

    Parameters
    ----------
    grad_out : array_like, shape B + I + F
        Cotangent of the output.
    out : array_like, shape B + I + F
        The result of `scatter_softmax` (the gradient needs only it, not `src`).
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_softmax`.
    dim_size : int or tuple of ints, optional
        As given to `scatter_softmax` (it matters for ``mode="wrap"``/``"clip"``).
    axis : int, default 0
        As given to `scatter_softmax`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_softmax`.

    Returns
    -------
    grad_src : ndarray, shape of `out`
        Float dtype.
    """
    ctx, g3 = _src_view("scatter_softmax_vjp", out, index, dim_size, axis, mode, "grad_out", grad_out)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        grad = _softmax_map(ctx, g3)
    return grad.reshape(shape_of(out))


@overload
def scatter_softmax_jvp(out: DeviceArray, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_softmax_jvp(out: ArrayInput, index: DeviceIndex, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = None,
                        axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Forward derivative of `scatter_softmax`: ``y * (src_dot - sum(y * src_dot over the group))``, y = `out`.

    Parameters
    ----------
    out : array_like, shape B + I + F
        The result of `scatter_softmax`.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_softmax`.
    src_dot : array_like, shape B + I + F
        Tangent of `src`.
    dim_size : int or tuple of ints, optional
        As given to `scatter_softmax`.
    axis : int, default 0
        As given to `scatter_softmax`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_softmax`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    ctx, dot3 = _src_view("scatter_softmax_jvp", out, index, dim_size, axis, mode, "src_dot", src_dot)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        tangent = _softmax_map(ctx, dot3)
    return tangent.reshape(shape_of(out))


@overload
def scatter_log_softmax_vjp(grad_out: DeviceArray, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_log_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: DeviceIndex, *,
                            dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_log_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_log_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None,
                            axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Gradient of `scatter_log_softmax` w.r.t. `src`: ``g - exp(out) * sum(g over the group)``.

    Parameters
    ----------
    grad_out : array_like, shape B + I + F
        Cotangent of the output.
    out : array_like, shape B + I + F
        The result of `scatter_log_softmax`.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_log_softmax`.
    dim_size : int or tuple of ints, optional
        As given to `scatter_log_softmax`.
    axis : int, default 0
        As given to `scatter_log_softmax`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_log_softmax`.

    Returns
    -------
    grad_src : ndarray, shape of `out`
        Float dtype; dropped entries (whose output is the constant -inf) get 0.
    """
    ctx, g3 = _src_view("scatter_log_softmax_vjp", out, index, dim_size, axis, mode, "grad_out", grad_out)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        grad = g3 - ctx.xp.exp(ctx.src3) * ctx.take(ctx.put(g3))
    return mask_dropped(ctx, grad, 0).reshape(shape_of(out))


@overload
def scatter_log_softmax_jvp(out: DeviceArray, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_log_softmax_jvp(out: ArrayInput, index: DeviceIndex, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_log_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_log_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = None,
                            axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Forward derivative of `scatter_log_softmax`: ``src_dot - sum(exp(out) * src_dot over the group)``.

    Parameters
    ----------
    out : array_like, shape B + I + F
        The result of `scatter_log_softmax`.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_log_softmax`.
    src_dot : array_like, shape B + I + F
        Tangent of `src`.
    dim_size : int or tuple of ints, optional
        As given to `scatter_log_softmax`.
    axis : int, default 0
        As given to `scatter_log_softmax`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_log_softmax`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype; dropped entries get 0.
    """
    ctx, dot3 = _src_view("scatter_log_softmax_jvp", out, index, dim_size, axis, mode, "src_dot", src_dot)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        tangent = dot3 - ctx.take(ctx.put(ctx.xp.exp(ctx.src3) * dot3))
    return mask_dropped(ctx, tangent, 0).reshape(shape_of(out))


# ---- variance and standard deviation ---------------------------------------------------------------------------

def _moment_factor(ctx, out3, ddof, std: bool, skip_nan: bool = False):
    """(deviations (outer, n, inner), per-element factor (outer, size, inner)) with d out_j / d src_k =
    factor_j * dev_k; the factor is 0 where the result is NaN by count <= ddof, or a std is 0 (a kink).
    `skip_nan` (nanvar/nanstd): deviations from the mean of the non-NaN members, NaN at NaN entries (the
    callers zero them, `_absent_to_zero`), and the count of those members per output element, as
    `cyscatter._moments.var3` computes the result."""
    if skip_nan:
        dev, counts, _ = nan_deviations3(ctx)
        dof = (counts - ddof).astype(ctx.dtype)
    else:
        dev, counts = deviations3(ctx)
        dof = (counts - ddof)[None, :, None].astype(ctx.dtype)
    ok = dof > 0
    if std:
        ok = ok & (out3 > 0)
        denom = dof * out3
    else:
        denom = dof / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return dev, ctx.xp.where(ok, 1 / denom, 0).astype(ctx.dtype, copy=False)


def _absent_to_zero(ctx, skip_nan, values):
    """`values` (outer, n, inner) with 0 at the NaN entries of src where `skip_nan`: those entries take no part,
    so neither a cotangent reaches them nor does their tangent (NaN or not) reach the output."""
    return ctx.xp.where(ctx.src3 == ctx.src3, values, 0) if skip_nan else values


def _moment_vjp(name, std, grad_out, src, index, out, ddof, axis, mode, skip_nan=False):
    ctx, rows, expected = _dst_view(name, src, index, out, axis, mode, grad_out=grad_out)
    dev, factor = _moment_factor(ctx, rows["out"], check_ddof(ddof), std, skip_nan)
    grad = _absent_to_zero(ctx, skip_nan, ctx.take(rows["grad_out"] * factor) * dev)
    return unbroadcast(grad.reshape(expected), shape_of(src), ctx.xp)


def _moment_jvp(name, std, src, index, out, src_dot, ddof, axis, mode, skip_nan=False):
    ctx, rows, _ = _dst_view(name, src, index, out, axis, mode, src_dot=src_dot)
    dev, factor = _moment_factor(ctx, rows["out"], check_ddof(ddof), std, skip_nan)
    return (ctx.put(_absent_to_zero(ctx, skip_nan, dev * rows["src_dot"])) * factor).reshape(shape_of(out))


@overload
def scatter_var_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_var_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_var_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_var_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Gradient of `scatter_var` w.r.t. `src`: ``grad_out[j] * 2 (src_k - mean_j) / (count_j - ddof)``.

    Parameters
    ----------
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_var` (real dtypes only).
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_var`.
    out : array_like, shape B + D + F
        Its result.
    ddof : int, default 0
        As given to `scatter_var`.
    axis : int, default 0
        As given to `scatter_var`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_var`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype. Members of groups with ``count <= ddof`` (NaN result)
        get 0.
    """
    return _moment_vjp("scatter_var_vjp", False, grad_out, src, index, out, ddof, axis, mode)


@overload
def scatter_var_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_var_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_var_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_var_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Forward derivative of `scatter_var`: ``2 sum((src_k - mean_j) src_dot_k) / (count_j - ddof)``.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_var` (real dtypes only).
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_var`.
    out : array_like, shape B + D + F
        Its result.
    src_dot : array_like, the shape of `src` (its tangent; a broadcast `src` takes one of its own shape)
        Tangent of `src`.
    ddof : int, default 0
        As given to `scatter_var`.
    axis : int, default 0
        As given to `scatter_var`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_var`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    return _moment_jvp("scatter_var_jvp", False, src, index, out, src_dot, ddof, axis, mode)


@overload
def scatter_std_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_std_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_std_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_std_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Gradient of `scatter_std` w.r.t. `src`: ``grad_out[j] (src_k - mean_j) / ((count_j - ddof) std_j)``.

    Parameters
    ----------
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_std` (real dtypes only).
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_std`.
    out : array_like, shape B + D + F
        Its result.
    ddof : int, default 0
        As given to `scatter_std`.
    axis : int, default 0
        As given to `scatter_std`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_std`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype. Where a group's std is 0 (all members equal) the gradient
        is taken as 0, the symmetric (central-difference) derivative of the kink; groups with ``count <= ddof``
        pass 0.
    """
    return _moment_vjp("scatter_std_vjp", True, grad_out, src, index, out, ddof, axis, mode)


@overload
def scatter_std_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_std_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_std_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_std_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Forward derivative of `scatter_std`: the `scatter_var_jvp` tangent over ``2 std`` (0 where std is 0).

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_std` (real dtypes only).
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_std`.
    out : array_like, shape B + D + F
        Its result.
    src_dot : array_like, the shape of `src` (its tangent; a broadcast `src` takes one of its own shape)
        Tangent of `src`.
    ddof : int, default 0
        As given to `scatter_std`.
    axis : int, default 0
        As given to `scatter_std`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_std`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    return _moment_jvp("scatter_std_jvp", True, src, index, out, src_dot, ddof, axis, mode)


# ---- variance and standard deviation over the non-NaN entries ----------------------------------------------

@overload
def scatter_nanvar_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanvar_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanvar_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_nanvar_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Gradient of `scatter_nanvar` w.r.t. `src`: `scatter_var_vjp` over each element's non-NaN members.

    ``grad_out[j] * 2 (src_k - mean_j) / (count_j - ddof)`` with the mean and the count over the non-NaN members of
    element j (the derivative numpy_groupies' ``nanvar`` and NumPy's ``np.nanvar`` have, per group, away from NaN).
    A NaN entry of `src` takes no part: its cotangent is 0, whatever `grad_out` holds.

    Parameters
    ----------
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_nanvar` (real dtypes only), NaN entries included.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_nanvar`.
    out : array_like, shape B + D + F
        Its result.
    ddof : int, default 0
        As given to `scatter_nanvar`.
    axis : int, default 0
        As given to `scatter_nanvar`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_nanvar`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integers, float16 and bfloat16, as `scatter_var_vjp`). 0 at NaN entries;
        members of elements with ``count <= ddof`` (NaN result: all-NaN and empty groups, a single member with
        ``ddof=1``) get 0, as in `scatter_var_vjp`.

    Raises
    ------
    TypeError
        For complex inputs (real inputs only, as `scatter_var_vjp`), a `ddof` that is not a real number, or a
        non-numeric array.
    ValueError
        If `grad_out` or `out` does not have the output's shape B + D + F, or `src` does not match `index`.
    IndexError
        For an index out of range under ``mode="raise"``.
    """
    return _moment_vjp("scatter_nanvar_vjp", False, grad_out, src, index, out, ddof, axis, mode, skip_nan=True)


@overload
def scatter_nanvar_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanvar_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanvar_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_nanvar_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Forward derivative of `scatter_nanvar`: `scatter_var_jvp` over each element's non-NaN members.

    ``2 sum((src_k - mean_j) src_dot_k) / (count_j - ddof)`` with the mean and the count over the non-NaN members of
    element j. The tangent at a NaN entry of `src` (NaN or not) does not reach the output: the entry takes no part.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_nanvar` (real dtypes only), NaN entries included.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_nanvar`.
    out : array_like, shape B + D + F
        Its result.
    src_dot : array_like, the shape of `src` (its tangent; a broadcast `src` takes one of its own shape)
        Tangent of `src`.
    ddof : int, default 0
        As given to `scatter_nanvar`.
    axis : int, default 0
        As given to `scatter_nanvar`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_nanvar`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype (as `scatter_var_jvp`); 0 at elements with ``count <= ddof``.

    Raises
    ------
    TypeError
        For complex inputs (real inputs only, as `scatter_var_jvp`), a `ddof` that is not a real number, or a
        non-numeric array.
    ValueError
        If `src_dot` does not have the shape of `src` (B + I + F), `out` not the output's shape, or `src` does
        not match `index`.
    IndexError
        For an index out of range under ``mode="raise"``.
    """
    return _moment_jvp("scatter_nanvar_jvp", False, src, index, out, src_dot, ddof, axis, mode, skip_nan=True)


@overload
def scatter_nanstd_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanstd_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanstd_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_nanstd_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Gradient of `scatter_nanstd` w.r.t. `src`: `scatter_std_vjp` over each element's non-NaN members.

    ``grad_out[j] (src_k - mean_j) / ((count_j - ddof) std_j)`` with the mean and the count over the non-NaN members
    of element j (the derivative numpy_groupies' ``nanstd`` and NumPy's ``np.nanstd`` have, per group, away from
    NaN). A NaN entry of `src` takes no part: its cotangent is 0, whatever `grad_out` holds.

    Parameters
    ----------
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_nanstd` (real dtypes only), NaN entries included.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_nanstd`.
    out : array_like, shape B + D + F
        Its result.
    ddof : int, default 0
        As given to `scatter_nanstd`.
    axis : int, default 0
        As given to `scatter_nanstd`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_nanstd`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integers, float16 and bfloat16, as `scatter_std_vjp`). 0 at NaN entries;
        members of elements with ``count <= ddof`` (NaN result: all-NaN and empty groups, a single member with
        ``ddof=1``) get 0, as in `scatter_std_vjp`. Where an element's std
        is 0 (its non-NaN members all equal) the gradient is 0, the central-difference derivative of the kink,
        as in `scatter_std_vjp`.

    Raises
    ------
    TypeError
        For complex inputs (real inputs only, as `scatter_std_vjp`), a `ddof` that is not a real number, or a
        non-numeric array.
    ValueError
        If `grad_out` or `out` does not have the output's shape B + D + F, or `src` does not match `index`.
    IndexError
        For an index out of range under ``mode="raise"``.
    """
    return _moment_vjp("scatter_nanstd_vjp", True, grad_out, src, index, out, ddof, axis, mode, skip_nan=True)


@overload
def scatter_nanstd_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanstd_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...


@overload
def scatter_nanstd_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...


def scatter_nanstd_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Forward derivative of `scatter_nanstd`: `scatter_std_jvp` over each element's non-NaN members.

    The `scatter_nanvar_jvp` tangent over ``2 std_j``, with the mean and the count over the non-NaN members of
    element j. The tangent at a NaN entry of `src` (NaN or not) does not reach the output: the entry takes no part.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it
        The `src` given to `scatter_nanstd` (real dtypes only), NaN entries included.
    index : int array or tuple of int arrays, shape I
        The index given to `scatter_nanstd`.
    out : array_like, shape B + D + F
        Its result.
    src_dot : array_like, shape B + I + F
        Tangent of `src`.
    ddof : int, default 0
        As given to `scatter_nanstd`.
    axis : int, default 0
        As given to `scatter_nanstd`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As given to `scatter_nanstd`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype (as `scatter_std_jvp`); 0 at elements with ``count <= ddof`` or
        std 0 (as `scatter_std_jvp`).

    Raises
    ------
    TypeError
        For complex inputs (real inputs only, as `scatter_std_jvp`), a `ddof` that is not a real number, or a
        non-numeric array.
    ValueError
        If `src_dot` does not have the shape of `src` (B + I + F), `out` not the output's shape, or `src` does
        not match `index`.
    IndexError
        For an index out of range under ``mode="raise"``.
    """
    return _moment_jvp("scatter_nanstd_jvp", True, src, index, out, src_dot, ddof, axis, mode, skip_nan=True)


# ---- CSR segments ----------------------------------------------------------------------------------------------

@overload
def segment_vjp_src(op: OpLike, grad_out: DeviceArray, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, *,
                    axis: SupportsIndex | None = ...) -> Any: ...


@overload
def segment_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, *,
                    axis: SupportsIndex | None = ...) -> NDArray[Any]: ...


def segment_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, *,
                    axis: SupportsIndex | None = None) -> Any:
    """Gradient of `segment` w.r.t. `src`: `scatter_vjp_src` with the index ``segment_ids(indptr)``.

    The same rules as scatter's (mean by count, mul by the exact product of the others, max/min split among
    tied winners).

    Parameters
    ----------
    op : str
        The op given to `segment`.
    grad_out : array_like, shape B + (S,) + F
        Cotangent of the output.
    src : array_like, shape B + (n,) + F
        The `src` given to `segment`.
    indptr : int array, shape (S + 1,) or B' + (S + 1,)
        The CSR pointer given to `segment` (batched too).
    out : array_like, shape B + (S,) + F
        The result of `segment`.
    axis : int, optional
        As given to `segment`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integer inputs).
    """
    batched = _batched("segment_vjp_src", src, indptr, axis, grad_out=grad_out, out=out)
    if batched is not None:
        flat, k, a = batched
        return scatter_vjp_src(op, merge_batch(a["grad_out"], k), merge_batch(a["src"], k), segment_ids(flat),
                               merge_batch(a["out"], k)).reshape(shape_of(src))
    ids = _segment_index(src, indptr, axis)
    return scatter_vjp_src(op, grad_out, src, ids, out, axis=_axis0(axis))


@overload
def segment_jvp(op: OpLike, src: DeviceArray, indptr: ArrayInput, out: ArrayInput, src_dot: ArrayInput, *,
                axis: SupportsIndex | None = ...) -> Any: ...


@overload
def segment_jvp(op: OpLike, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, src_dot: ArrayInput, *,
                axis: SupportsIndex | None = ...) -> NDArray[Any]: ...


def segment_jvp(op: OpLike, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, src_dot: ArrayInput, *,
                axis: SupportsIndex | None = None) -> Any:
    """Forward derivative of `segment`: `scatter_jvp` with the index ``segment_ids(indptr)``.

    Parameters
    ----------
    op : str
        The op given to `segment`.
    src : array_like, shape B + (n,) + F
        The `src` given to `segment`.
    indptr : int array, shape (S + 1,) or B' + (S + 1,)
        The CSR pointer given to `segment` (batched too).
    out : array_like, shape B + (S,) + F
        The result of `segment`.
    src_dot : array_like, shape B + (n,) + F
        Tangent of `src`.
    axis : int, optional
        As given to `segment`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    batched = _batched("segment_jvp", src, indptr, axis, out=out, src_dot=src_dot)
    if batched is not None:
        flat, k, a = batched
        return scatter_jvp(op, merge_batch(a["src"], k), segment_ids(flat), merge_batch(a["out"], k),
                           merge_batch(a["src_dot"], k)).reshape(shape_of(out))
    ids = _segment_index(src, indptr, axis)
    return scatter_jvp(op, src, ids, out, src_dot, axis=_axis0(axis))


@overload
def gather_segment_vjp_src(grad_out: DeviceArray, indptr: ArrayInput, *, axis: SupportsIndex | None = ...) -> Any: ...


@overload
def gather_segment_vjp_src(grad_out: ArrayInput, indptr: ArrayInput, *, axis: SupportsIndex | None = ...) -> NDArray[Any]: ...


def gather_segment_vjp_src(grad_out: ArrayInput, indptr: ArrayInput, *, axis: SupportsIndex | None = None) -> Any:
    """Gradient of `gather_segment` w.r.t. its `src`: the segment sums of `grad_out` (``segment(g, indptr)``).

    `gather_segment` is linear, so its forward derivative is `gather_segment` of the tangent.

    Parameters
    ----------
    grad_out : array_like, shape B + (n,) + F
        Cotangent of the output of `gather_segment`.
    indptr : int array, shape (S + 1,) or B' + (S + 1,)
        The CSR pointer given to `gather_segment` (batched too).
    axis : int, optional
        As given to `gather_segment`.

    Returns
    -------
    grad_src : ndarray, shape B + (S,) + F
        Float dtype (float64 for integer inputs).
    """
    check_given("grad_out", grad_out)
    be = backend_of(grad_out=grad_out, indptr=indptr)
    grad_out = check_numeric(be.asarray(grad_out), "grad_out")
    rows = grad_out.shape[segment_axis(indptr, axis, grad_out.ndim, array="grad_out")]
    if len(shape_of(indptr)) <= 1:
        check_indptr(indptr, rows, xp=be.xp, rows_of="grad_out")
    return segment(grad_out.astype(_float_dtype(grad_out), copy=False), indptr, "add", axis=axis)


def _axis0(axis):
    return 0 if axis is None else axis


def _batched(name, src, indptr, axis, **given):
    """(flat pointer, axis, arrays) for a batched `indptr` (see `cyscatter._segment.batched_indptr`), else None.

    The arrays (`src` and `given`, on one backend) are checked against their shapes, B + (n,) + F for `src`
    and `src_dot`, B + (S,) + F for `out` and `grad_out`, before their batch dims are merged."""
    if len(shape_of(indptr)) <= 1:
        return None
    for key, value in {"src": src, **given}.items():
        check_given(key, value)
    be = backend_of(src=src, indptr=indptr, **given)
    arrays = {key: be.asarray(value) for key, value in {"src": src, **given}.items()}
    src_shape = arrays["src"].shape
    k = segment_axis(indptr, axis, len(src_shape))
    flat, batch, nseg, _ = batched_indptr(indptr, src_shape, be.xp, rows=src_shape[k])
    out_shape = batch + (nseg,) + src_shape[k + 1:]
    for key, value in arrays.items():
        if key in ("src_dot", "out", "grad_out"):
            _check_shape(f"{name}: {key}", value, "src" if key == "src_dot" else "segment's output",
                         src_shape if key == "src_dot" else out_shape)
    return flat, k, arrays


def _segment_index(src, indptr, axis):
    axis = _axis0(axis)
    check_given("src", src)
    be = backend_of(src=src, indptr=indptr)
    src_shape = shape_of(src)
    return segment_ids(check_indptr(indptr, src_shape[normalize_axis(axis, len(src_shape), 1)], xp=be.xp))
