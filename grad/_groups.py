"""The group ops beyond the seven scatter reductions, as autograd primitives (reverse and forward mode, any order).

Each derivative is written with differentiable pieces only: the gather / scatter-add pair of `grad._gather`, the
op's own result (`ans`, itself a primitive) and autograd.numpy, so derivatives of derivatives follow. Per group,
with y the softmax (for logsumexp: exp(src - out)) and d = src - mean:

    logsumexp    vjp  gather(g) * y                      jvp  scatter_add(y * src_dot)
    softmax      vjp  y * (g - gather(scatter_add(g y)))  jvp  the same map (the Jacobian is symmetric)
    log_softmax  vjp  g - y * gather(scatter_add(g))      jvp  src_dot - gather(scatter_add(y * src_dot))
    var / std    vjp  gather(g * c) * d                   jvp  c * scatter_add(d * src_dot)

with c = 2 / (count - ddof) for var and 1 / ((count - ddof) std) for std (0 where the result is NaN by
count <= ddof, or std is 0). nanvar / nanstd are var / std over the non-NaN entries (d, the counts and the mean
over those; d is 0 at a NaN entry, whose tangent is dropped). `segment` and `gather_segment` are `scatter` and
`gather` with the index `cyscatter.segment_ids(indptr)`, so they inherit those primitives' derivatives.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp
from autograd.tracer import getval

import cyscatter as cs
from cyscatter._api.ranges import ranges_index
from cyscatter._api.segment import batched_indptr, check_indptr, initial_for, merge_batch, segment_axis
from cyscatter._backends import host
from cyscatter._plan.index import plan_index
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import fill_for
from grad._args import layout, require_inexact, require_inexact_traced, valid_entries, vjp_in_primal_dtype
from grad._gather import gather, gather_vjp_src
from grad._primitive import notrace_primitive, primitive
from grad._scatter import _broadcast, _expanded, _unbroadcast, scatter, scatter_into
from grad._where import where

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike


class Groups:
    """Where the groups of one call sit: the index, its mode, the normalized axis and the group-array shape."""

    def __init__(self, src, index, dim_size, axis, mode, fun):
        require_inexact(src, "src", fun)
        shape = np.shape(src)
        self.index, self.mode = index, mode
        self.src = layout(index, shape, axis, dst_side=False)
        self.axis = self.src.axis
        self.dims = plan_index(index, dim_size, mode).dims
        span = len(self.src.index_shape)
        self.group_shape = shape[:self.axis] + self.dims + shape[self.axis + span:]
        self.valid = self.src.broadcastable(valid_entries(index, self.dims, mode))
        self.counts = cs.scatter(np.ones(self.src.index_shape), index, "add", dim_size=self.dims, mode=mode)

    def take(self, a):
        """Per entry: the value of its group (0 for dropped entries)."""
        return gather(a, self.index, axis=self.axis, mode=self.mode)

    def put(self, v):
        """Per group: the sum of its entries."""
        return gather_vjp_src(v, self.index, self.group_shape, axis=self.axis, mode=self.mode)

    def members_only(self, v):
        return where(self.valid, v, 0.0)

    def dof_factor(self, ddof, dtype, std_ans=None, counts=None):
        """c of the module docstring in `dtype` (src's: float32 gradients stay float32), shaped to broadcast
        against the group array. `counts`: the members of each output element, shape B + D + F (nanvar/nanstd's
        non-NaN members); the group counts where None."""
        dof = (self.group_dims(self.counts - ddof) if counts is None else counts - ddof).astype(dtype)
        ok = dof > 0
        if std_ans is None:
            return np.where(ok, 2.0 / np.where(ok, dof, 1.0), 0.0)
        ok = ok & (std_ans > 0)
        return where(ok, 1.0 / (np.where(ok, dof, 1.0) * where(ok, std_ans, 1.0)), 0.0)

    def group_dims(self, a):
        """`a` of shape D, reshaped to broadcast against B + D + F."""
        feature_ndim = len(self.group_shape) - self.axis - len(self.dims)
        return np.reshape(a, (1,) * self.axis + np.shape(a) + (1,) * feature_ndim)


# ---- logsumexp ---------------------------------------------------------------------------------------------------

@primitive
def scatter_logsumexp(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                      mode: Mode = "raise") -> Any:
    """Differentiable `cyscatter.scatter_logsumexp` (same parameters, result and errors), any order.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_logsumexp`.
    dim_size, axis, mode : optional
        As in `cyscatter.scatter_logsumexp` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F
        The result of `cyscatter.scatter_logsumexp`.
    """
    return cs.scatter_logsumexp(src, index, dim_size=dim_size, axis=axis, mode=mode)


def _lse_weights(ans, src, groups):
    return groups.members_only(anp.exp(src - groups.take(ans)))


def _lse_vjp(ans, src, index, dim_size=None, axis=0, mode="raise"):
    shape, src = np.shape(getval(src)), _broadcast(src, _expanded(src, index, axis))   # a src that broadcasts
    groups = Groups(src, index, dim_size, axis, mode, "scatter_logsumexp")
    return lambda g: _unbroadcast(groups.take(g) * _lse_weights(ans, src, groups), shape)


def _lse_jvp(src_dot, ans, src, index, dim_size=None, axis=0, mode="raise"):
    expanded = _expanded(src, index, axis)
    src, src_dot = _broadcast(src, expanded), _broadcast(src_dot, expanded)
    groups = Groups(src, index, dim_size, axis, mode, "scatter_logsumexp")
    return groups.put(_lse_weights(ans, src, groups) * src_dot)


# ---- softmax and log-softmax ---------------------------------------------------------------------------------------

@primitive
def scatter_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                    mode: Mode = "raise") -> Any:
    """Differentiable `cyscatter.scatter_softmax` (same parameters, result and errors), any order.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Values (float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_softmax`.
    dim_size, axis, mode : optional
        As in `cyscatter.scatter_softmax` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + I + F
        The result of `cyscatter.scatter_softmax`.
    """
    return cs.scatter_softmax(src, index, dim_size=dim_size, axis=axis, mode=mode)


@primitive
def scatter_log_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                        mode: Mode = "raise") -> Any:
    """Differentiable `cyscatter.scatter_log_softmax` (same parameters, result and errors), any order.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Values (float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_log_softmax`.
    dim_size, axis, mode : optional
        As in `cyscatter.scatter_log_softmax` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + I + F
        The result of `cyscatter.scatter_log_softmax`.
    """
    return cs.scatter_log_softmax(src, index, dim_size=dim_size, axis=axis, mode=mode)


def _softmax_map(ans, groups, v):
    return ans * (v - groups.take(groups.put(v * ans)))


def _softmax_vjp(ans, src, index, dim_size=None, axis=0, mode="raise"):
    groups = Groups(src, index, dim_size, axis, mode, "scatter_softmax")
    return lambda g: _softmax_map(ans, groups, g)


def _softmax_jvp(src_dot, ans, src, index, dim_size=None, axis=0, mode="raise"):
    return _softmax_map(ans, Groups(src, index, dim_size, axis, mode, "scatter_softmax"), src_dot)


def _log_softmax_vjp(ans, src, index, dim_size=None, axis=0, mode="raise"):
    groups = Groups(src, index, dim_size, axis, mode, "scatter_log_softmax")
    return lambda g: groups.members_only(g - anp.exp(ans) * groups.take(groups.put(g)))


def _log_softmax_jvp(src_dot, ans, src, index, dim_size=None, axis=0, mode="raise"):
    groups = Groups(src, index, dim_size, axis, mode, "scatter_log_softmax")
    return groups.members_only(src_dot - groups.take(groups.put(anp.exp(ans) * src_dot)))


# ---- variance and standard deviation ---------------------------------------------------------------------------

@primitive
def scatter_var(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Differentiable `cyscatter.scatter_var` for real `src` (same parameters, result and errors), any order.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (real float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_var`.
    ddof, dim_size, axis, mode : optional
        As in `cyscatter.scatter_var` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F
        The result of `cyscatter.scatter_var`.

    Raises
    ------
    TypeError
        When differentiated with a complex `src` (real inputs only, as `cyscatter.scatter_var_vjp`; the forward
        value is computed), besides the errors of `cyscatter.scatter_var`.
    """
    return cs.scatter_var(src, index, ddof=ddof, dim_size=dim_size, axis=axis, mode=mode)


@primitive
def scatter_std(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Differentiable `cyscatter.scatter_std` for real `src` (same parameters, result and errors), any order.

    Where a group's std is 0 its members get gradient 0 (the central-difference derivative of the kink).

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (real float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_std`.
    ddof, dim_size, axis, mode : optional
        As in `cyscatter.scatter_std` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F
        The result of `cyscatter.scatter_std`.

    Raises
    ------
    TypeError
        When differentiated with a complex `src` (real inputs only, as `cyscatter.scatter_std_vjp`; the forward
        value is computed), besides the errors of `cyscatter.scatter_std`.
    """
    return cs.scatter_std(src, index, ddof=ddof, dim_size=dim_size, axis=axis, mode=mode)


def _real_only(name: str, src) -> None:
    """TypeError for a complex src: the derivatives of var/std here are those of real inputs (as the core's
    reverse functions, which refuse complex too); autograd's complex convention would need the conjugate."""
    dtype = np.asarray(getval(src)).dtype
    if dtype.kind == "c":
        raise TypeError(f"grad.{name} differentiates real src only (as cyscatter.{name}_vjp and _jvp), got src "
                        f"of dtype {dtype}; the forward value of a complex src is cyscatter.{name}")


def _moment_parts(std, ans, src, index, ddof, dim_size, axis, mode):
    """(groups, deviations from the group mean (differentiable), factor c)."""
    _real_only("scatter_std" if std else "scatter_var", src)
    groups = Groups(src, index, dim_size, axis, mode, "scatter_std" if std else "scatter_var")
    mean = scatter(src, index, "mean", dim_size=groups.dims, axis=groups.axis, mode=mode)
    dtype = np.asarray(getval(src)).dtype
    return groups, src - groups.take(mean), groups.dof_factor(ddof, dtype, ans if std else None)


def _moment_vjp(std):
    def make(ans, src, index, ddof=0, dim_size=None, axis=0, mode="raise"):
        shape, src = np.shape(getval(src)), _broadcast(src, _expanded(src, index, axis))   # a src that broadcasts
        groups, dev, factor = _moment_parts(std, ans, src, index, ddof, dim_size, axis, mode)
        return lambda g: _unbroadcast(groups.take(g * factor) * dev, shape)
    return make


def _moment_jvp(std):
    def tangent(src_dot, ans, src, index, ddof=0, dim_size=None, axis=0, mode="raise"):
        expanded = _expanded(src, index, axis)
        src, src_dot = _broadcast(src, expanded), _broadcast(src_dot, expanded)
        groups, dev, factor = _moment_parts(std, ans, src, index, ddof, dim_size, axis, mode)
        return groups.put(dev * src_dot) * factor
    return tangent


@primitive
def scatter_nanvar(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Differentiable `cyscatter.scatter_nanvar` for real `src` (same parameters, result and errors), any order.

    The derivatives of `scatter_var` over each element's non-NaN members: a NaN entry of `src` takes no part, so
    its gradient is 0 and its tangent does not reach the output; elements with ``count <= ddof`` (NaN result)
    pass 0, as `scatter_var`'s do.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (real float to be differentiated), NaN where absent.
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_nanvar`.
    ddof, dim_size, axis, mode : optional
        As in `cyscatter.scatter_nanvar` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F
        The result of `cyscatter.scatter_nanvar`.

    Raises
    ------
    TypeError
        When differentiated with a complex `src` (real inputs only, as `cyscatter.scatter_nanvar_vjp`; the forward
        value is computed), besides the errors of `cyscatter.scatter_nanvar`.
    """
    return cs.scatter_nanvar(src, index, ddof=ddof, dim_size=dim_size, axis=axis, mode=mode)


@primitive
def scatter_nanstd(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, mode: Mode = "raise") -> Any:
    """Differentiable `cyscatter.scatter_nanstd` for real `src` (same parameters, result and errors), any order.

    The derivatives of `scatter_std` over each element's non-NaN members: a NaN entry of `src` takes no part, so
    its gradient is 0 and its tangent does not reach the output; elements with ``count <= ddof`` (NaN result)
    pass 0, as `scatter_std`'s do.
    Where an element's std is 0 (its non-NaN members all equal) its members get gradient 0, as in
    `scatter_std`.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (real float to be differentiated), NaN where absent.
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_nanstd`.
    ddof, dim_size, axis, mode : optional
        As in `cyscatter.scatter_nanstd` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F
        The result of `cyscatter.scatter_nanstd`.

    Raises
    ------
    TypeError
        When differentiated with a complex `src` (real inputs only, as `cyscatter.scatter_nanstd_vjp`; the forward
        value is computed), besides the errors of `cyscatter.scatter_nanstd`.
    """
    return cs.scatter_nanstd(src, index, ddof=ddof, dim_size=dim_size, axis=axis, mode=mode)


def _nan_moment_parts(std, ans, src, index, ddof, dim_size, axis, mode):
    """(groups, present (the non-NaN entries, a constant mask), deviations from the mean of the present members
    (differentiable, 0 at absent entries), factor c over the present members' counts)."""
    _real_only("scatter_nanstd" if std else "scatter_nanvar", src)
    groups = Groups(src, index, dim_size, axis, mode, "scatter_nanstd" if std else "scatter_nanvar")
    value = getval(src)
    present = value == value
    dtype = value.dtype
    counts = groups.put(present.astype(dtype))
    src = where(present, src, 0.0)
    mean = groups.put(src) / np.where(counts > 0, counts, 1)
    dev = where(present, src - groups.take(mean), 0.0)
    return groups, present, dev, groups.dof_factor(ddof, dtype, ans if std else None, counts=counts)


def _nan_moment_vjp(std):
    def make(ans, src, index, ddof=0, dim_size=None, axis=0, mode="raise"):
        shape, src = np.shape(getval(src)), _broadcast(src, _expanded(src, index, axis))
        groups, present, dev, factor = _nan_moment_parts(std, ans, src, index, ddof, dim_size, axis, mode)
        return lambda g: _unbroadcast(where(present, groups.take(g * factor) * dev, 0.0), shape)
    return make


def _nan_moment_jvp(std):
    def tangent(src_dot, ans, src, index, ddof=0, dim_size=None, axis=0, mode="raise"):
        expanded = _expanded(src, index, axis)
        src, src_dot = _broadcast(src, expanded), _broadcast(src_dot, expanded)
        groups, present, dev, factor = _nan_moment_parts(std, ans, src, index, ddof, dim_size, axis, mode)
        return groups.put(dev * where(present, src_dot, 0.0)) * factor   # an absent entry's tangent: none
    return tangent


# ---- CSR segments and arg-extremes ---------------------------------------------------------------------------------

def _rows_along(src, axis) -> int:
    return np.shape(src)[normalize_axis(axis, np.ndim(src), 1)]


def segment(src: ArrayInput, indptr: ArrayInput, op: OpLike = "add", *, axis: SupportsIndex | None = None,
            fill_value: FillValue | None = None, initial: FillValue | None = None) -> Any:
    """Differentiable `cyscatter.segment`: `grad.scatter` with the index ``segment_ids(indptr)``.

    The same values, bit for bit, and the same derivatives to any order; it runs the scatter kernel, not the
    CSR one. With `initial`: `grad.scatter_into` of a constant table holding it (mean, sqrt_n, nanmean: the
    sums from there, divided by the constant counts; equal to `cyscatter.segment` to rounding).

    Parameters
    ----------
    src : array_like, shape B + (n,) + F
        Values; the n rows along `axis` are cut into segments.
    indptr : int array, shape (S + 1,) or B' + (S + 1,)
        CSR pointer, as in `cyscatter.segment` (batched too).
    op : {"add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "set", "first"}, default "add"
        As in `cyscatter.segment`.
    axis, fill_value, initial : optional
        As in `cyscatter.segment` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + (S,) + F
        The result of `cyscatter.segment`.
    """
    require_inexact_traced(src, "src", "segment")
    if np.ndim(indptr) > 1:   # pytorch_scatter's batched pointer: one 1-D pointer over the merged batch rows
        k = segment_axis(indptr, axis, np.ndim(src))
        flat, batch, nseg, _ = batched_indptr(indptr, np.shape(src), rows=np.shape(src)[k])
        out = _segment_ids_reduce(merge_batch(src, k), cs.segment_ids(flat), op, flat.size - 1, 0, fill_value,
                                  initial)
        return out.reshape(batch + (nseg,) + np.shape(src)[k + 1:])
    axis = 0 if axis is None else axis
    ptr = check_indptr(indptr, _rows_along(src, axis))
    return _segment_ids_reduce(src, cs.segment_ids(ptr), op, ptr.size - 1, axis, fill_value, initial)


def _segment_ids_reduce(src, ids, op, nseg, axis, fill_value, initial):
    """The scatter that `segment` equals, from `initial` where it is given."""
    if initial is None:   # (any op scatter takes, the order statistics included)
        return scatter(src, ids, op, dim_size=nseg, axis=axis, fill_value=fill_value)
    op = cs.get_op(op)
    if op.winner:
        return scatter(src, ids, op.name, dim_size=nseg, axis=axis,
                       fill_value=initial if fill_value is None else fill_value)
    value = np.asarray(getval(src))
    result_dtype = op.result_dtype(value.dtype)
    start = initial_for(initial, op, result_dtype)
    fill = fill_for(fill_value, result_dtype)
    k = normalize_axis(axis, np.ndim(value), 1)
    shape = np.shape(value)[:k] + (nseg,) + np.shape(value)[k + 1:]
    table = np.full(shape, start, np.result_type(start))
    counts = None
    if op.counts or fill_value is not None:
        present = (value == value) if op.skips_nan else np.ones(np.shape(value), bool)
        counts = cs.scatter(present.astype(np.int64), ids, "add", dim_size=nseg, axis=axis)
    if op.counts:
        sums = scatter_into(table, src, ids, "nansum" if op.skips_nan else "add", axis=axis)
        divisor = np.maximum(counts, 1).astype(np.result_type(start).type(0).real.dtype)
        out = sums / (np.sqrt(divisor) if op.sqrt_counts else divisor)
    else:
        out = scatter_into(table, src, ids, op.name, axis=axis)
    if fill is not None:
        out = where(counts == 0, fill, out)
    return out.astype(result_dtype) if np.result_type(getval(out)) != result_dtype else out


def segment_ranges(src: ArrayInput, starts: ArrayInput, stops: ArrayInput, op: OpLike = "add", *,
                   axis: SupportsIndex = 0, fill_value: FillValue | None = None,
                   initial: FillValue | None = None) -> Any:
    """Differentiable `cyscatter.segment_ranges`: `segment` of the rows in range order (`grad.gather` of them, or
    a slice where the ranges follow one another).

    Parameters
    ----------
    src : array_like, shape B + (n,) + F
        Values; the ranges index its n rows along `axis`.
    starts, stops : 1-D int arrays of length R
        As in `cyscatter.segment_ranges`.
    op : str, default "add"
        As in `cyscatter.segment_ranges`.
    axis, fill_value, initial : optional
        As in `cyscatter.segment_ranges` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + (R,) + F
        The result of `cyscatter.segment_ranges`.
    """
    require_inexact_traced(src, "src", "segment_ranges")
    k = normalize_axis(axis, np.ndim(getval(src)), 1)
    ranges = ranges_index(starts, stops, np.shape(getval(src))[k], host)
    if ranges.index is None:
        rows = src[(slice(None),) * k + (slice(ranges.offset, ranges.offset + int(ranges.indptr[-1])),)]
    else:
        rows = gather(src, ranges.index, axis=k)
    return segment(rows, ranges.indptr, op, axis=k, fill_value=fill_value, initial=initial)


def gather_segment(src: ArrayInput, indptr: ArrayInput, *, axis: SupportsIndex | None = None) -> Any:
    """Differentiable `cyscatter.gather_segment`: `grad.gather` with the index ``segment_ids(indptr)``.

    Parameters
    ----------
    src : array_like, shape B + (S,) + F
        One row per segment.
    indptr : int array, shape (S + 1,) or B' + (S + 1,)
        CSR pointer, as in `cyscatter.gather_segment` (batched too).
    axis : int, optional
        As in `cyscatter.gather_segment`.

    Returns
    -------
    out : ndarray, shape B + (indptr[-1],) + F
        The result of `cyscatter.gather_segment`.
    """
    require_inexact_traced(src, "src", "gather_segment")
    if np.ndim(indptr) > 1:
        k = segment_axis(indptr, axis, np.ndim(src))
        flat, batch, _, rows = batched_indptr(indptr, np.shape(src), segments=np.shape(src)[k])
        return gather(merge_batch(src, k), cs.segment_ids(flat)).reshape(batch + (rows,) + np.shape(src)[k + 1:])
    axis = 0 if axis is None else axis
    ptr = check_indptr(indptr)
    if ptr.size - 1 != _rows_along(src, axis):
        raise ValueError(f"indptr describes {ptr.size - 1} segments, but src has {_rows_along(src, axis)} rows "
                         f"along axis {axis}")
    return gather(src, cs.segment_ids(ptr), axis=axis)


scatter_argmax = notrace_primitive(cs.scatter_argmax)   # integer results: no derivative, boxes are unwrapped
scatter_argmin = notrace_primitive(cs.scatter_argmin)

defvjp(scatter_logsumexp, vjp_in_primal_dtype(_lse_vjp))
defjvp(scatter_logsumexp, _lse_jvp)
defvjp(scatter_softmax, vjp_in_primal_dtype(_softmax_vjp))
defjvp(scatter_softmax, _softmax_jvp)
defvjp(scatter_log_softmax, vjp_in_primal_dtype(_log_softmax_vjp))
defjvp(scatter_log_softmax, _log_softmax_jvp)
defvjp(scatter_var, vjp_in_primal_dtype(_moment_vjp(std=False)))
defjvp(scatter_var, _moment_jvp(std=False))
defvjp(scatter_std, vjp_in_primal_dtype(_moment_vjp(std=True)))
defjvp(scatter_std, _moment_jvp(std=True))
defvjp(scatter_nanvar, vjp_in_primal_dtype(_nan_moment_vjp(std=False)))
defjvp(scatter_nanvar, _nan_moment_jvp(std=False))
defvjp(scatter_nanstd, vjp_in_primal_dtype(_nan_moment_vjp(std=True)))
defjvp(scatter_nanstd, _nan_moment_jvp(std=True))
