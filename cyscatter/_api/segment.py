"""Sorted-segment (CSR) reductions, their gather counterpart, and the sorted-run path of scatter.

A CSR pointer ``indptr`` of length S + 1 cuts the rows of `src` along `axis` into S consecutive segments:
segment s holds rows ``indptr[s]:indptr[s + 1]``. `segment` equals `scatter` with the index
``segment_ids(indptr)`` (the same op, dtypes, identity and update order, so the same bits) without an index.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.gather import gather
from cyscatter._api.scatter import scatter, scatter_into
from cyscatter._arrays.integers import prod
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._backends import host
from cyscatter._backends.reduce import divide, finish_fresh
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.index import check_table_bytes, sized_by
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import fill_for
from cyscatter._registry.ops import ORDER_STATS, get_op

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, FillValue, OpLike


def check_indptr(indptr, rows: int | None = None, arg: str = "indptr", be=host, rows_of: str = "src"):
    """`indptr` as a contiguous int32/int64 vector of backend `be`, validated; `rows` (if given) is what it must
    end at.

    Raises TypeError for a non-integer pointer and ValueError for a wrong shape, a first entry other than 0,
    a last entry other than `rows`, or a decreasing step (naming the segment and its bounds). On the GPU the
    checks read a few scalars back to the host (a synchronisation) so that a bad pointer raises here.
    """
    xp = be.xp
    ptr = be.asarray(indptr)
    if ptr.dtype == np.bool_ or ptr.dtype.kind not in "iu":
        raise TypeError(f"{arg} must hold integers, got dtype {ptr.dtype}")
    if ptr.ndim != 1 or ptr.size == 0:
        raise ValueError(f"{arg} must be 1-D with at least one entry (S + 1 for S segments), got shape "
                         f"{ptr.shape}")
    if ptr[0] != 0:
        raise ValueError(f"{arg}[0] = {ptr[0]} must be 0")
    if rows is not None and ptr[-1] != rows:
        raise ValueError(f"{arg}[-1] = {ptr[-1]} must equal the number of rows of {rows_of} along axis, {rows}")
    if ptr.dtype not in (np.int32, np.int64):
        if ptr.dtype == np.uint64 and ptr.max() > np.iinfo(np.int64).max:
            raise ValueError(f"{arg} holds {ptr.max()}, larger than any row count")
        ptr = ptr.astype(np.int64)
    steps = xp.diff(ptr)
    if steps.size and steps.min() < 0:
        s = int(xp.argmax(steps < 0))
        raise ValueError(f"{arg} must not decrease, but {arg}[{s}] = {ptr[s]} > {arg}[{s + 1}] = {ptr[s + 1]}")
    return xp.ascontiguousarray(ptr)


def segment_ids(indptr: ArrayInput, **porting: object) -> Any:
    """The scatter index equivalent to a CSR pointer: ``ids[k] = s`` for the rows k of segment s.

    Parameters
    ----------
    indptr : 1-D int array of length S + 1
        CSR pointer: starts at 0, never decreases.

    Returns
    -------
    ids : ndarray of int64, shape (indptr[-1],)
        A NumPy or CuPy array, as `indptr` is (a list gives NumPy).
    """
    if porting:
        raise unexpected_keywords("segment_ids", porting)
    be = backend_of(indptr=indptr)
    xp = be.xp
    ptr = check_indptr(indptr, be=be)
    check_table_bytes((int(ptr[-1]),), np.int64, "indptr[-1]", int(ptr[-1]))
    # row k lies in the segment whose end is the first end after k (equal ends: empty segments, skipped);
    # searchsorted rather than repeat, whose CuPy version takes no array of counts
    with sized_by("indptr[-1]", int(ptr[-1])):
        return xp.searchsorted(ptr[1:], xp.arange(int(ptr[-1]), dtype=ptr.dtype), side="right").astype(np.int64)


@fill_doc
def segment(src: ArrayInput, indptr: ArrayInput, op: OpLike = "add", *, axis: SupportsIndex | None = None,
            fill_value: FillValue | None = None, initial: FillValue | None = None, **porting: object) -> Any:
    """Reduce consecutive segments of rows: ``out[b, s, f] = op-reduction of src[b, indptr[s]:indptr[s+1], f]``.

    pytorch_scatter's ``segment_csr`` and NumPy's ``op.reduceat(src, indptr[:-1])``, but an empty segment gets
    the op's identity (or `fill_value`) as `scatter` does, where ``reduceat`` copies the next row. The result
    equals ``scatter(src, segment_ids(indptr), op, dim_size=S, axis=axis)`` bit for bit, NaNs made from two
    NaNs aside (their sign is not specified; see `scatter`): rows are combined in order (``np.add.reduceat``
    sums pairwise, so its float sums can differ in the last bits). On CuPy arrays it runs as that scatter (the
    GPU kernels; float sums then in the order the atomics take), after checking `indptr` on the device.

    The NaN-skipping ops follow numpy_groupies' ``func="nansum"`` etc. (and ``np.fmax.reduceat`` on non-empty
    segments): a NaN entry (complex: either part) is absent, an element whose entries are all NaN is an empty
    segment's (the identity, or `fill_value`), and nanmean divides by each element's non-NaN entries. The kernel
    counts those as it reduces, where nanmean or a `fill_value` needs them.

    Parameters
    ----------
    src : array_like, shape B + (n,) + F
        Values; the n rows along `axis` are cut into segments.
    {indptr}
    {op_median}
    axis : int, optional
        The axis of `src` holding the rows; the dims before it are batch dims B. Negative counts from the end.
        Default: ``indptr.ndim - 1`` (0 for a 1-D `indptr`).
    fill_value : scalar, optional
        Value of the empty segments (default: the op's identity, 0 for mean); for a NaN-skipping op (nansum,
        nanprod, nanmean, fmax/nanmax, fmin/nanmin), of the output elements whose entries are all NaN too.
    initial : scalar, optional
        The value each segment's reduction starts from instead of the op's identity, as ``torch.segment_reduce``'s
        `initial`: an empty segment (or an all-NaN element of a NaN-skipping op) gets it, a max segment is
        ``max(initial, rows...)``, a sum ``initial + rows...`` in row order; mean, sqrt_n and nanmean divide
        ``initial + sum`` by the count (or its square root) as torch does, ``initial`` alone for an empty
        segment; set/first: the empty segments' value. `fill_value`, when also given, still decides the empty
        segments. Cast to the result dtype by `fill_value`'s rule.

    Returns
    -------
    out : ndarray, shape B + (S,) + F
        The dtype of `src`, except float64 for integer `src` with div, mean and nanmean.

    Raises
    ------
    TypeError
        Unknown op type, non-integer `indptr`, an unsupported dtype (bool, object; complex for max/min), an
        `initial` or `fill_value` the result dtype cannot take.
    ValueError
        Unknown op name, an `axis` that does not fit (or differs from ``indptr.ndim - 1`` for a batched
        `indptr`), an `indptr` without entries, whose batch dims do not fit src's, that does not start at 0,
        does not end at n, or decreases (the message names the segment and batch row).

    Notes
    -----
    {semantics}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.segment(np.array([1., 2., 3., 4.]), np.array([0, 2, 2, 4]), "add")
    array([3., 0., 7.])
    >>> cs.segment(np.array([[1, 5], [3, 4], [2, 6]]), np.array([0, 1, 3]), "max")
    array([[1, 5],
           [3, 6]])
    >>> cs.segment(np.array([[1, 2, 3], [4, 5, 6]]), np.array([[0, 1, 3], [0, 3, 3]]))   # one pointer per row
    array([[ 1,  5],
           [15,  0]])
    """
    if porting:
        raise unexpected_keywords("segment", porting)
    stat = type(op) is str and op in ORDER_STATS   # median / nanmedian: a sort, as the equivalent scatter
    op = op if stat else get_op(op)
    be = backend_of(src=src, indptr=indptr)
    if len(shape_of(indptr)) > 1:
        src = be.asarray(src)
        axis = segment_axis(indptr, axis, src.ndim)
        flat, batch, nseg, _ = batched_indptr(indptr, src.shape, be, rows=src.shape[axis])
        out = segment(merge_batch(src, axis), flat, op, axis=0, fill_value=fill_value, initial=initial)
        return out.reshape(batch + (nseg,) + src.shape[axis + 1:])
    axis = 0 if axis is None else axis
    if stat and initial is not None:
        raise ValueError(f"initial has no meaning for op {op!r} (an order statistic starts from no value); use "
                         f"fill_value for the empty segments")
    if not stat and op.winner and initial is not None and fill_value is None:   # an assignment starts from nothing
        fill_value = initial
    # a backend without segment kernels (the GPU), and the assignments (set, first: the scatter's winner pass and
    # gather), run the equivalent scatter
    if stat or be.segment_reduce is None or op.winner:
        return _segment_by_scatter(be, src, indptr, op, axis, fill_value, None if stat or op.winner else initial)
    src = be.asarray(src)
    result_dtype = op.result_dtype(src.dtype)
    axis = normalize_axis(axis, src.ndim, 1)
    rows = src.shape[axis]
    ptr = check_indptr(indptr, rows, be=be)
    fill = fill_for(fill_value, result_dtype, be.xp)
    start = op.identity(result_dtype) if initial is None else initial_for(initial, op, result_dtype, be.xp)
    batch, feat = src.shape[:axis], src.shape[axis + 1:]
    nseg = ptr.size - 1
    outer, inner = prod(batch), prod(feat)
    work3 = be.fresh_table((outer, nseg, inner), op.compute_dtype(result_dtype), start)
    src3 = be.rows_source(src, work3.dtype, outer, rows, inner)   # read a chunk of rows at a time where it can
    # the counts to finish with: the segment lengths, or where nanmean or a fill_value needs them the non-NaN
    # entries per output element (an all-NaN element is empty), counted by the kernel as it reduces
    counts = be.segment_reduce(op, src3, ptr, work3, op.counts or fill is not None)
    return finish_fresh(op, work3, counts, fill, result_dtype, be).reshape(batch + (nseg,) + feat)


def initial_for(initial, op, result_dtype, xp=np):
    """`initial` as a scalar of the compute dtype, by `fill_for`'s rule (its errors name `initial`)."""
    try:
        value = fill_for(initial, result_dtype, xp)
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).replace("fill_value=", "initial=", 1)) from None
    return value.astype(op.compute_dtype(result_dtype))[()]


def _segment_by_scatter(be, src, indptr, op, axis, fill_value, initial=None):
    """`segment` as the equivalent scatter, on a backend without segment kernels (the GPU: the sorted order of the
    ids is not exploited there); with `initial`, a scatter_into of the sums (or of the op) into a table that
    starts there, divided and filled as `finish_fresh` does."""
    src = be.asarray(src)
    axis = normalize_axis(axis, src.ndim, 1)
    ptr = check_indptr(indptr, src.shape[axis], be=be)
    ids = segment_ids(ptr)
    if initial is None:
        return scatter(src, ids, op, dim_size=ptr.size - 1, axis=axis, fill_value=fill_value)
    xp = be.xp
    result_dtype = op.result_dtype(src.dtype)
    compute = op.compute_dtype(result_dtype)
    start = initial_for(initial, op, result_dtype, xp)
    fill = fill_for(fill_value, result_dtype, xp)
    batch, feat, nseg = src.shape[:axis], src.shape[axis + 1:], ptr.size - 1
    work3 = xp.full((prod(batch), nseg, prod(feat)), start, compute)
    # mean, sqrt_n, nanmean: (initial + sum) / divisor
    sums = get_op("nansum" if op.skips_nan else "add") if op.counts else op
    scatter_into(work3.reshape(batch + (nseg,) + feat), src.astype(compute, copy=False), ids, sums, axis=axis)
    counts = None
    if op.counts or fill is not None:
        if op.skips_nan:   # the non-NaN entries of each element
            counts = scatter((src == src).astype(np.int64), ids, "add", dim_size=nseg, axis=axis).reshape(work3.shape)
        else:
            counts = xp.diff(ptr).astype(np.int64)
    empty = None if fill is None else (counts == 0)
    if op.counts:
        divide(op, work3, counts, be)
    if empty is not None:
        if empty.ndim == 3:
            work3[empty] = fill.astype(compute)[()]
        else:
            work3[:, empty] = fill.astype(compute)[()]
    work = work3.reshape(batch + (nseg,) + feat)
    return work.astype(result_dtype, copy=False)


@fill_doc
def gather_segment(src: ArrayInput, indptr: ArrayInput, *, axis: SupportsIndex | None = None, **porting: object) -> Any:
    """Broadcast each segment's row back to its members: ``out[b, k, f] = src[b, s, f]`` for k in segment s.

    The gather counterpart (and adjoint) of `segment`: pytorch_scatter's ``gather_csr``, NumPy's
    ``np.repeat(src, np.diff(indptr), axis)``. On CuPy arrays: ``gather(src, segment_ids(indptr), axis=axis)``.

    Parameters
    ----------
    src : array_like, shape B + (S,) + F
        One row per segment (any dtype).
    {indptr}
    axis : int, optional
        The axis of `src` holding the S segment rows. Default: ``indptr.ndim - 1`` (0 for a 1-D `indptr`).

    Returns
    -------
    out : ndarray, shape B + (indptr[-1],) + F
        Each segment's row repeated for its members, dtype of `src`.

    Raises
    ------
    TypeError
        Non-integer `indptr`.
    ValueError
        An `axis` that does not fit, an `indptr` without entries, does not start at 0, decreases, or has a
        length other than S + 1; batched, batch dims that do not fit src's or rows ending at different
        ``indptr[b, -1]`` (the output must be rectangular; pytorch_scatter's ``gather_csr`` reads the last).

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.gather_segment(np.array([10, 20, 30]), np.array([0, 2, 2, 3]))
    array([10, 10, 30])
    """
    if porting:
        raise unexpected_keywords("gather_segment", porting)
    be = backend_of(src=src, indptr=indptr)
    src = be.asarray(src)
    if not src.dtype.isnative:   # native results, as gather's
        src = src.astype(src.dtype.newbyteorder("="))
    axis = segment_axis(indptr, axis, src.ndim)
    batched = batched_indptr(indptr, src.shape, be, segments=src.shape[axis])
    if batched is not None:
        flat, batch, _, rows = batched
        return gather_segment(merge_batch(src, axis), flat, axis=0).reshape(batch + (rows,) + src.shape[axis + 1:])
    ptr = check_indptr(indptr, be=be)
    if ptr.size - 1 != src.shape[axis]:
        raise ValueError(f"indptr has {ptr.size} entries, so it describes {ptr.size - 1} segments, but src has "
                         f"{src.shape[axis]} rows along axis {axis}")
    if be.repeat_segments is None:   # an array library without a repeat by an array of counts (CuPy's)
        return gather(src, segment_ids(ptr), axis=axis)
    check_table_bytes(src.shape[:axis] + (int(ptr[-1]),) + src.shape[axis + 1:], src.dtype, "indptr[-1]",
                      int(ptr[-1]))
    with sized_by("indptr[-1]", int(ptr[-1])):
        return be.repeat_segments(src, ptr, axis)


# ---- batched pointers (pytorch_scatter's indptr of shape B + (S + 1,)) -------------------------------------------

def segment_axis(indptr, axis, ndim: int, array: str = "src") -> int:
    """The axis the CSR rows lie along: ``indptr.ndim - 1`` (pytorch_scatter's rule), which `axis`, if given, must
    equal for a batched `indptr`; `axis` (default 0) for a 1-D one."""
    k = max(len(shape_of(indptr)), 1) - 1
    if k and ndim <= k:
        raise ValueError(f"indptr has shape {shape_of(indptr)}: {k} batch dims, its segments along axis {k}, so "
                         f"{array} needs more than {k} dims, got {ndim}")
    if axis is None:
        return normalize_axis(k, ndim, 1, array=array)
    axis = normalize_axis(axis, ndim, 1, array=array)
    if k and axis != k:
        raise ValueError(f"indptr has shape {shape_of(indptr)}, so its segments lie along axis {k} "
                         f"(indptr.ndim - 1, as pytorch_scatter's segment_csr), but axis={axis} was given")
    return axis


def batched_indptr(indptr, shape: tuple, be=host, *, rows: int | None = None, rows_of: str = "src",
                   segments: int | None = None):
    """A batched `indptr` of shape B' + (S + 1,) translated into one 1-D pointer, or None for a 1-D `indptr`.

    `shape` is the array's shape B + (r,) + F with len(B) == len(B'); each dim of B' must be 1 (broadcast, as
    pytorch_scatter expands it) or that of B. Row b of the pointer cuts rows ``b * n .. (b + 1) * n`` of the
    array reshaped to ``(prod(B) * n,) + F`` (n = `rows`, or for a gather the common last entry), so one call of
    the 1-D path along axis 0 serves every batch row: one vectorised translation, no loop over the batch.

    Returns (flat pointer (int64, length prod(B) * S + 1), B, S, n). Raises as `check_indptr` does, naming the
    batch position of the first bad row; `segments` (a gather's rows) must equal S. The arrays are of backend `be`.
    """
    xp = be.xp
    ptr = be.asarray(indptr)
    if ptr.ndim <= 1:
        return None
    if ptr.dtype == np.bool_ or ptr.dtype.kind not in "iu":
        raise TypeError(f"indptr must hold integers, got dtype {ptr.dtype}")
    k = ptr.ndim - 1
    batch = tuple(shape[:k])
    if ptr.shape[-1] == 0:
        raise ValueError(f"indptr must have at least one entry along its last dim (S + 1 for S segments), got "
                         f"shape {ptr.shape}")
    if any(p not in (1, b) for p, b in zip(ptr.shape[:k], batch)):
        raise ValueError(f"indptr's batch dims {ptr.shape[:k]} must equal (or be 1 against) the first {k} dims "
                         f"of {rows_of}, {batch}")
    nseg = ptr.shape[-1] - 1
    if segments is not None and nseg != segments:
        raise ValueError(f"indptr has {nseg + 1} entries along its last dim, so it describes {nseg} segments, but "
                         f"{rows_of} has {segments} rows along axis {k}")
    if ptr.dtype == np.uint64 and ptr.size and ptr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"indptr holds {ptr.max()}, larger than any row count")
    ptr = xp.broadcast_to(ptr.astype(np.int64, copy=False), batch + (nseg + 1,)).reshape(-1, nseg + 1)

    def where(b: int) -> str:
        pos = tuple(int(i) for i in np.unravel_index(b, batch))
        return "indptr[" + ", ".join(map(str, pos)) + ", "

    if ptr.shape[0]:
        first = ptr[:, 0]
        if bool((first != 0).any()):
            b = int(xp.argmax(first != 0))
            raise ValueError(f"{where(b)}0] = {int(first[b])} must be 0 (batch row {b})")
        last = ptr[:, -1]
        if rows is None:
            rows = int(last[0])
        if bool((last != rows).any()):
            b = int(xp.argmax(last != rows))
            raise ValueError(f"{where(b)}-1] = {int(last[b])} must equal the number of rows of {rows_of} along "
                             f"axis {k}, {rows}" if segments is None else
                             f"{where(b)}-1] = {int(last[b])} differs from {where(0)}-1] = {rows}: every batch "
                             f"row must gather the same number of rows")
        steps = xp.diff(ptr, axis=1)
        if steps.size and bool((steps < 0).any()):
            b, s = (int(i) for i in np.unravel_index(int(xp.argmax((steps < 0).ravel())), steps.shape))
            raise ValueError(f"indptr must not decrease, but {where(b)}{s}] = {int(ptr[b, s])} > "
                             f"{where(b)}{s + 1}] = {int(ptr[b, s + 1])}")
    rows = 0 if rows is None else rows
    offsets = xp.arange(ptr.shape[0], dtype=np.int64)[:, None] * rows
    flat = xp.concatenate([xp.zeros(1, np.int64), (ptr[:, 1:] + offsets).ravel()])
    return flat, batch, nseg, rows


def merge_batch(arr, k: int):
    """`arr` of shape B + (r,) + F (len(B) == k) as ``(prod(B) * r,) + F``; `arr` is an array (or autograd box)."""
    shape = tuple(shape_of(arr))
    return arr.reshape((prod(shape[:k + 1]),) + shape[k + 1:])
