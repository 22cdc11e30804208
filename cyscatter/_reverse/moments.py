"""VJPs and JVPs of scatter_var / scatter_std and their NaN-skipping twins, free of any autodiff framework."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.moments import check_ddof, group_means, minus_taken, nan_means
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._docs import reverse_doc
from cyscatter._plan.layout import unbroadcast
from cyscatter._reverse.groups import _dst_view

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, IndexLike, Mode


def _moment_factor(ctx, out3, ddof, std: bool, skip_nan: bool = False):
    """(group means (outer, size, inner), per-element factor (outer, size, inner)) with d out_j / d src_k =
    factor_j * (src_k - mean_j); the factor is 0 where the result is NaN by count <= ddof, or a std is 0 (a
    kink). `skip_nan` (nanvar/nanstd): the mean of the non-NaN members, whose deviations are NaN at NaN entries
    (the callers zero them, `_absent_to_zero`), and the count of those members per output element, as
    `cyscatter._api.moments.var3` computes the result."""
    if skip_nan:
        mean, counts = nan_means(ctx)
        dof = (counts - ddof).astype(ctx.dtype)
    else:
        mean, counts = group_means(ctx)
        dof = (counts - ddof)[None, :, None].astype(ctx.dtype)
    ok = dof > 0
    if std:
        ok = ok & (out3 > 0)
        denom = dof * out3
    else:
        denom = dof / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return mean, ctx.xp.where(ok, 1 / denom, 0).astype(ctx.dtype, copy=False)


def _absent_to_zero(ctx, skip_nan, values, rows3):
    """`values` (rows of src `rows3`) with 0 at the NaN entries of src where `skip_nan`: those entries take no
    part, so neither a cotangent reaches them nor does their tangent (NaN or not) reach the output."""
    return ctx.xp.where(~ctx.xp.isnan(rows3), values, 0) if skip_nan else values


# both read src a chunk of rows at a time (`Reverse.src_chunks`): an entry's derivative needs its own src row and
# its group's mean and factor only, so a float16 src is never converted whole to the float64 derivative dtype

def _moment_vjp(name, std, grad_out, src, index, out, ddof, axis, mode, skip_nan=False):
    ctx, rows, expected = _dst_view(name, src, index, out, axis, mode, grad_out=grad_out)
    mean, factor = _moment_factor(ctx, rows["out"], check_ddof(ddof), std, skip_nan)
    scaled = rows["grad_out"] * factor

    def rows_grad(_, plan, rows3):
        return _absent_to_zero(ctx, skip_nan, ctx.take(scaled, plan) * minus_taken(ctx, mean, rows3, plan), rows3)
    grad = ctx.map_rows(rows_grad, ctx.dtype)
    return unbroadcast(grad.reshape(expected), shape_of(src), ctx.xp)


def _moment_jvp(name, std, src, index, out, src_dot, ddof, axis, mode, skip_nan=False):
    ctx, rows, _ = _dst_view(name, src, index, out, axis, mode, src_dot=src_dot)
    mean, factor = _moment_factor(ctx, rows["out"], check_ddof(ddof), std, skip_nan)
    dot3 = rows["src_dot"]

    def rows_tangent(at, plan, rows3):
        return _absent_to_zero(ctx, skip_nan, minus_taken(ctx, mean, rows3, plan) * dot3[:, at], rows3)
    return (ctx.put_rows(rows_tangent, ctx.dtype) * factor).reshape(shape_of(out))


@reverse_doc("scatter_var")
def scatter_var_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of `scatter_var` w.r.t. `src`: ``grad_out[j] * 2 (src_k - mean_j) / (count_j - ddof)``.

    Parameters
    ----------
    {grad_out}
    {real_src}
    {index}
    {out}
    {ddof}
    {axis}
    {mode}

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype. Members of groups with ``count <= ddof`` (NaN result)
        get 0.
    """
    if porting:
        raise unexpected_keywords("scatter_var_vjp", porting)
    return _moment_vjp("scatter_var_vjp", False, grad_out, src, index, out, ddof, axis, mode)


@reverse_doc("scatter_var")
def scatter_var_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of `scatter_var`: ``2 sum((src_k - mean_j) src_dot_k) / (count_j - ddof)``.

    Parameters
    ----------
    {real_src}
    {index}
    {out}
    {src_dot}
    {ddof}
    {axis}
    {mode}

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    if porting:
        raise unexpected_keywords("scatter_var_jvp", porting)
    return _moment_jvp("scatter_var_jvp", False, src, index, out, src_dot, ddof, axis, mode)


@reverse_doc("scatter_std")
def scatter_std_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of `scatter_std` w.r.t. `src`: ``grad_out[j] (src_k - mean_j) / ((count_j - ddof) std_j)``.

    Parameters
    ----------
    {grad_out}
    {real_src}
    {index}
    {out}
    {ddof}
    {axis}
    {mode}

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype. Where a group's std is 0 (all members equal) the gradient
        is taken as 0, the symmetric (central-difference) derivative of the kink; groups with ``count <= ddof``
        pass 0.
    """
    if porting:
        raise unexpected_keywords("scatter_std_vjp", porting)
    return _moment_vjp("scatter_std_vjp", True, grad_out, src, index, out, ddof, axis, mode)


@reverse_doc("scatter_std")
def scatter_std_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                    axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of `scatter_std`: the `scatter_var_jvp` tangent over ``2 std`` (0 where std is 0).

    Parameters
    ----------
    {real_src}
    {index}
    {out}
    {src_dot}
    {ddof}
    {axis}
    {mode}

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    if porting:
        raise unexpected_keywords("scatter_std_jvp", porting)
    return _moment_jvp("scatter_std_jvp", True, src, index, out, src_dot, ddof, axis, mode)


# ---- variance and standard deviation over the non-NaN entries ----------------------------------------------

@reverse_doc("scatter_nanvar")
def scatter_nanvar_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of `scatter_nanvar` w.r.t. `src`: `scatter_var_vjp` over each element's non-NaN members.

    ``grad_out[j] * 2 (src_k - mean_j) / (count_j - ddof)`` with the mean and the count over the non-NaN members of
    element j (the derivative numpy_groupies' ``nanvar`` and NumPy's ``np.nanvar`` have, per group, away from NaN).
    A NaN entry of `src` takes no part: its cotangent is 0, whatever `grad_out` holds.

    Parameters
    ----------
    {grad_out}
    {nan_src}
    {index}
    {out}
    {ddof}
    {axis}
    {mode}

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
    if porting:
        raise unexpected_keywords("scatter_nanvar_vjp", porting)
    return _moment_vjp("scatter_nanvar_vjp", False, grad_out, src, index, out, ddof, axis, mode, skip_nan=True)


@reverse_doc("scatter_nanvar")
def scatter_nanvar_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of `scatter_nanvar`: `scatter_var_jvp` over each element's non-NaN members.

    ``2 sum((src_k - mean_j) src_dot_k) / (count_j - ddof)`` with the mean and the count over the non-NaN members of
    element j. The tangent at a NaN entry of `src` (NaN or not) does not reach the output: the entry takes no part.

    Parameters
    ----------
    {nan_src}
    {index}
    {out}
    {src_dot}
    {ddof}
    {axis}
    {mode}

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
    if porting:
        raise unexpected_keywords("scatter_nanvar_jvp", porting)
    return _moment_jvp("scatter_nanvar_jvp", False, src, index, out, src_dot, ddof, axis, mode, skip_nan=True)


@reverse_doc("scatter_nanstd")
def scatter_nanstd_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Gradient of `scatter_nanstd` w.r.t. `src`: `scatter_std_vjp` over each element's non-NaN members.

    ``grad_out[j] (src_k - mean_j) / ((count_j - ddof) std_j)`` with the mean and the count over the non-NaN members
    of element j (the derivative numpy_groupies' ``nanstd`` and NumPy's ``np.nanstd`` have, per group, away from
    NaN). A NaN entry of `src` takes no part: its cotangent is 0, whatever `grad_out` holds.

    Parameters
    ----------
    {grad_out}
    {nan_src}
    {index}
    {out}
    {ddof}
    {axis}
    {mode}

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
    if porting:
        raise unexpected_keywords("scatter_nanstd_vjp", porting)
    return _moment_vjp("scatter_nanstd_vjp", True, grad_out, src, index, out, ddof, axis, mode, skip_nan=True)


@reverse_doc("scatter_nanstd")
def scatter_nanstd_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = 0,
                       axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    """Forward derivative of `scatter_nanstd`: `scatter_std_jvp` over each element's non-NaN members.

    The `scatter_nanvar_jvp` tangent over ``2 std_j``, with the mean and the count over the non-NaN members of
    element j. The tangent at a NaN entry of `src` (NaN or not) does not reach the output: the entry takes no part.

    Parameters
    ----------
    {nan_src}
    {index}
    {out}
    src_dot : array_like, shape B + I + F
        Tangent of `src`.
    {ddof}
    {axis}
    {mode}

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
    if porting:
        raise unexpected_keywords("scatter_nanstd_jvp", porting)
    return _moment_jvp("scatter_nanstd_jvp", True, src, index, out, src_dot, ddof, axis, mode, skip_nan=True)
