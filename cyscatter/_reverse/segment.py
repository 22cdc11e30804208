"""VJPs and JVPs of the sorted-segment (CSR) reductions and of gather_segment."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.ranges import ranges_index
from cyscatter._api.segment import (
    batched_indptr,
    check_indptr,
    initial_for,
    merge_batch,
    segment,
    segment_axis,
    segment_ids,
)
from cyscatter._arrays.dtypes import holds_numbers
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._backends.select import backend_of
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import _float_dtype, check_given, check_numeric
from cyscatter._registry.ops import get_op
from cyscatter._reverse.groups import _check_shape
from cyscatter._reverse.scatter import gather_vjp_src, scatter_jvp, scatter_vjp_src

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, FillValue, OpLike


def segment_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, *,
                    axis: SupportsIndex | None = None, initial: FillValue | None = None, **porting: object) -> Any:
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
    axis, initial : optional
        As given to `segment`. An `initial` takes part as scatter_into's `dst` does (a max/min segment's tie
        candidate; mul's others product); mean, sqrt_n and nanmean divide by the count as without it.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integer inputs).
    """
    if porting:
        raise unexpected_keywords("segment_vjp_src", porting)
    batched = _batched("segment_vjp_src", src, indptr, axis, grad_out=grad_out, out=out)
    if batched is not None:
        flat, k, a = batched
        out = merge_batch(a["out"], k)
        return scatter_vjp_src(op, merge_batch(a["grad_out"], k), merge_batch(a["src"], k), segment_ids(flat),
                               out, dst=_initial_dst(op, initial, out, a["src"])).reshape(shape_of(src))
    ids = _segment_index("segment_vjp_src", src, indptr, axis, grad_out=grad_out, out=out)
    return scatter_vjp_src(op, grad_out, src, ids, out, axis=_axis0(axis), dst=_initial_dst(op, initial, out, src))


def segment_jvp(op: OpLike, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, src_dot: ArrayInput, *,
                axis: SupportsIndex | None = None, initial: FillValue | None = None, **porting: object) -> Any:
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
    axis, initial : optional
        As given to `segment` (`initial` is a constant: its tangent is 0).

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.
    """
    if porting:
        raise unexpected_keywords("segment_jvp", porting)
    batched = _batched("segment_jvp", src, indptr, axis, out=out, src_dot=src_dot)
    if batched is not None:
        flat, k, a = batched
        out3 = merge_batch(a["out"], k)
        return scatter_jvp(op, merge_batch(a["src"], k), segment_ids(flat), out3, merge_batch(a["src_dot"], k),
                           dst=_initial_dst(op, initial, out3, a["src"])).reshape(shape_of(out))
    ids = _segment_index("segment_jvp", src, indptr, axis, out=out)
    return scatter_jvp(op, src, ids, out, src_dot, axis=_axis0(axis), dst=_initial_dst(op, initial, out, src))


def gather_segment_vjp_src(grad_out: ArrayInput, indptr: ArrayInput, *, axis: SupportsIndex | None = None,
                           **porting: object) -> Any:
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
    if porting:
        raise unexpected_keywords("gather_segment_vjp_src", porting)
    check_given("grad_out", grad_out)
    be = backend_of(grad_out=grad_out, indptr=indptr)
    grad_out = check_numeric(be.asarray(grad_out), "grad_out")
    rows = grad_out.shape[segment_axis(indptr, axis, grad_out.ndim, array="grad_out")]
    if len(shape_of(indptr)) <= 1:
        check_indptr(indptr, rows, be=be, rows_of="grad_out")
    else:   # checked here, naming grad_out: segment below would name its own src
        batched_indptr(indptr, grad_out.shape, be, rows=rows, rows_of="grad_out")
    return segment(grad_out.astype(_float_dtype(grad_out), copy=False), indptr, "add", axis=axis)


# ---- row ranges (`segment_ranges`): segment over the rows in range order, then the gather's adjoint ---------------

def segment_ranges_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, starts: ArrayInput,
                           stops: ArrayInput, out: ArrayInput, *, axis: SupportsIndex = 0,
                           initial: FillValue | None = None, **porting: object) -> Any:
    """Gradient of `segment_ranges` w.r.t. `src`: `segment_vjp_src` over the rows in range order, summed back
    onto the rows they came from (a row in several ranges gets the sum of its shares).

    Parameters
    ----------
    op : str
        The op given to `segment_ranges`.
    grad_out : array_like, shape B + (R,) + F
        Cotangent of the output.
    src : array_like, shape B + (n,) + F
        The `src` given to `segment_ranges`.
    starts, stops : 1-D int arrays of length R
        The ranges given to `segment_ranges`.
    out : array_like, shape B + (R,) + F
        The result of `segment_ranges`.
    axis, initial : optional
        As given to `segment_ranges`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integer inputs).

    Raises
    ------
    TypeError, ValueError
        As `segment_ranges` and `segment_vjp_src` (a `grad_out` or `out` of another shape than the output).
    """
    if porting:
        raise unexpected_keywords("segment_ranges_vjp_src", porting)
    rows, ranges, axis, be = _range_rows("segment_ranges_vjp_src", src, starts, stops, axis)
    grad_rows = segment_vjp_src(op, grad_out, rows, ranges.indptr, out, axis=axis, initial=initial)
    shape = be.asarray(src).shape
    if ranges.index is None:   # a slice: its rows' gradients in place, zeros around
        grad = be.xp.zeros(shape, grad_rows.dtype)
        key = (slice(None),) * axis + (slice(ranges.offset, ranges.offset + int(ranges.indptr[-1])),)
        grad[key] = grad_rows
        return grad
    return gather_vjp_src(grad_rows, ranges.index, shape, axis=axis)


def segment_ranges_jvp(op: OpLike, src: ArrayInput, starts: ArrayInput, stops: ArrayInput, out: ArrayInput,
                       src_dot: ArrayInput, *, axis: SupportsIndex = 0, initial: FillValue | None = None, **porting: object) -> Any:
    """Forward derivative of `segment_ranges`: `segment_jvp` over the rows (and their tangents) in range order.

    Parameters
    ----------
    op : str
        The op given to `segment_ranges`.
    src : array_like, shape B + (n,) + F
        The `src` given to `segment_ranges`.
    starts, stops : 1-D int arrays of length R
        The ranges given to `segment_ranges`.
    out : array_like, shape B + (R,) + F
        The result of `segment_ranges`.
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    axis, initial : optional
        As given to `segment_ranges`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Tangent of the output, float dtype.

    Raises
    ------
    TypeError, ValueError
        As `segment_ranges` and `segment_jvp` (a `src_dot` not shaped like `src`).
    """
    if porting:
        raise unexpected_keywords("segment_ranges_jvp", porting)
    rows, ranges, axis, be = _range_rows("segment_ranges_jvp", src, starts, stops, axis)
    check_given("src_dot", src_dot)
    dot = check_numeric(be.asarray(src_dot), "src_dot")
    _check_shape("segment_ranges_jvp: src_dot", dot, "src", be.asarray(src).shape)
    return segment_jvp(op, rows, ranges.indptr, out, ranges.rows_of(dot, axis, be), axis=axis, initial=initial)


def _range_rows(name, src, starts, stops, axis):
    check_given("src", src)
    be = backend_of(src=src, starts=starts, stops=stops)
    src = be.asarray(src)
    axis = normalize_axis(axis, src.ndim, 1)
    ranges = ranges_index(starts, stops, src.shape[axis], be)
    return ranges.rows_of(src, axis, be), ranges, axis, be


def _initial_dst(op, initial, out, src):
    """The dst of the scatter_into that `segment(..., initial=)` equals, for the ops whose derivatives read it
    (the reductions other than the counting ones, which divide by the count whatever they start from); None
    without `initial`."""
    op = get_op(op)
    if initial is None or op.counts or op.winner:
        return None
    be = backend_of(src=src, out=out)
    out = be.asarray(out)
    if not holds_numbers(out.dtype) or out.dtype == np.bool_:
        return None   # (scatter_vjp_src / scatter_jvp refuse such an out by its name)
    dtype = _float_dtype(out)
    return be.xp.full(out.shape, initial_for(initial, op, dtype, be.xp), dtype)


def _axis0(axis):
    return 0 if axis is None else axis


def _batched(name, src, indptr, axis, **given):
    """(flat pointer, axis, arrays) for a batched `indptr` (see `cyscatter._api.segment.batched_indptr`), else None.

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
    flat, batch, nseg, _ = batched_indptr(indptr, src_shape, be, rows=src_shape[k])
    out_shape = batch + (nseg,) + src_shape[k + 1:]
    for key, value in arrays.items():
        if key in ("src_dot", "out", "grad_out"):
            _check_shape(f"{name}: {key}", value, "src" if key == "src_dot" else "segment's output",
                         src_shape if key == "src_dot" else out_shape)
    return flat, k, arrays


def _segment_index(name, src, indptr, axis, **shaped_like_out):
    """``segment_ids`` of a 1-D `indptr` checked against `src`; the arrays of `shaped_like_out` (out, grad_out),
    when given, must have segment's output shape B + (S,) + F (the scatter rules would read another S off them)."""
    axis = _axis0(axis)
    check_given("src", src)
    be = backend_of(src=src, indptr=indptr)
    src_shape = shape_of(src)
    k = normalize_axis(axis, len(src_shape), 1)
    ptr = check_indptr(indptr, src_shape[k], be=be)
    out_shape = src_shape[:k] + (ptr.shape[0] - 1,) + src_shape[k + 1:]
    for key, value in shaped_like_out.items():
        if value is not None:
            _check_shape(f"{name}: {key}", be.asarray(value), "segment's output", out_shape)
    return segment_ids(ptr)
