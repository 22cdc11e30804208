"""A src read in place a chunk of converted rows at a time, for the families that walk src rows against per-group
tables (`Reverse.src_chunks`: the group reductions, argmax/argmin, the reverse rules that read src): a
float16/bfloat16 src is converted a cache-sized block at a time instead of into an n x F copy of the compute or
derivative dtype. Host arrays only: anything else (CuPy arrays) has no chunked source and is read whole."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from cyscatter import kernels, scan_kernels
from cyscatter._backends import host
from cyscatter._backends.scans import scan_groups

# the chunks of `row_chunks`, whose families hold several chunk-sized temporaries beside the converted rows
# (gathered group values, products): 1 MiB keeps them in cache; 4 MiB chunks made the float16 VJPs of var, div
# and logsumexp 1.4-1.6x slower than one whole conversion (200000 x 64 into 5000, one thread), 1 MiB 0.6-0.85x
ROW_CHUNK_BYTES = 1 << 20


def chunked_source(arr: Any, dtype: Any, outer: int, rows: int, inner: int, layout: bool = False,
                   contiguous: bool = False) -> host.StagedRows | None:
    """`arr` as a source read in place by chunks where reading it as `dtype` converts it (float16/bfloat16 to
    float32 for the kernels, to float64 for the reverse functions) or, with `layout`, lays it out (a
    Fortran-ordered or strided src of `dtype` whose row elements are apart): the scatter kernels' `rows_source`,
    or where no stage makes the conversion a `StagedRows` without a stage code, which only `converted_chunks`
    reads; None where there is nothing to convert or lay out, or it cannot be read so (nothing is copied here).

    `layout` is for the families whose chunked passes cost no more than one pass over a C-ordered copy (the
    moments, logsumexp, log_softmax); softmax takes exp twice by chunks and argmax gathers twice, which on a
    same-dtype src cost more than the copy (2.3x and 1.45x on 200000 x 64 float32, Fortran-ordered).
    `contiguous` chunks a C-ordered src of `dtype` too (each chunk a copy of its rows), for the families whose
    whole path holds several n x F temporaries and is no faster: logsumexp and log_softmax (0.78x and 0.87x the
    time, 6.7 and 55 MiB against 101 and 147 on 200000 x 64 float32; the moments were 1.09x slower)."""
    dtype = np.dtype(dtype)
    if type(arr) is not np.ndarray or (arr.dtype == dtype and not layout) \
            or outer * rows * inner < host.STAGE_MIN_ELEMENTS or not (arr.dtype.isnative and arr.flags.aligned):
        return None
    code = host._stage_code(arr.dtype, dtype)
    if arr.dtype == dtype or code is not None:
        source = host.rows_source(arr, dtype, outer, rows, inner)
        if type(source) is host.StagedRows:
            return source
        if contiguous and code == host._S.STAGE_COPY:   # read as it is: copied a chunk at a time instead
            return host.StagedRows(source, dtype, int(code), False)
        return None
    try:
        a3 = arr.reshape((outer, rows, inner), copy=False)
    except ValueError:
        return None
    return host.StagedRows(a3, dtype, None, False)


def row_chunks(source: host.StagedRows, plan: Any) -> Iterator[tuple[slice, Any, np.ndarray]]:
    """(slice(r0, r1), plan of rows [r0, r1), those rows of src in its dtype) over a `chunked_source`, in order,
    converted into one reused buffer (`host.converted_chunks`). The row plans are for passes after the whole
    index was checked (their errors would name positions within the chunk)."""
    for r0, r1, rows3 in host.converted_chunks(source, ROW_CHUNK_BYTES):
        yield slice(r0, r1), plan.rows(r0, r1), rows3


def whole_rows(source: host.StagedRows) -> np.ndarray:
    """A `chunked_source` converted whole: `rows_view`'s array."""
    return host.rows_view(source.array, source.dtype, *source.shape)


def scan_rows(op: Any, source: host.StagedRows, plan: Any, ident: np.ndarray, reverse: bool, exclusive: bool,
              nan_is_identity: bool, result: np.ndarray, sized: Any) -> None:
    """The grouped scan (`host.group_scan`, value only) of a `chunked_source` into `result` ((outer, n, inner) of
    the result dtype): per batch slice, blocks of converted rows in scan order, the running table carried from
    block to block (`scan_kernels.scan`'s keep_table), so each element's running values are those of the one
    pass over src converted whole, and each block's outputs are cast into `result` as the whole output would
    be. `nan_is_identity`: a NaN-skipping scan's NaN entries made the identity first (`ScanView`)."""
    dtype = source.dtype
    outer, n, inner = source.shape
    _check_index(plan)
    step = max(1, ROW_CHUNK_BYTES // max(1, inner * dtype.itemsize))
    starts = range(0, n, step)
    flat, size = scan_groups(plan)
    with sized:   # the running table has a row per group met
        table = np.empty((size, inner), dtype)
    buf, out = np.empty((1, min(step, n), inner), dtype), np.empty((1, min(step, n), inner), dtype)
    for o in range(outer):
        table[...] = ident
        for r0 in reversed(starts) if reverse else starts:
            r1 = min(n, r0 + step)
            rows3, out3 = buf[:, :r1 - r0], out[:, :r1 - r0]
            _convert(source, o, r0, r1, rows3)
            if nan_is_identity:
                np.copyto(rows3, ident, where=np.isnan(rows3))
            status = scan_kernels.scan(op.opcode, rows3, flat[r0:r1], out3, table, ident.reshape(1), reverse,
                                       exclusive, plan.kernel_mode, keep_table=True)
            if status >= 0:
                raise plan.error(r0 + status)
            result[o:o + 1, r0:r1] = host.rounded(out3, result.dtype)   # F16C where NumPy's cast is slow


def _convert(source: host.StagedRows, o: int, r0: int, r1: int, rows3: np.ndarray) -> None:
    """Rows [r0, r1) of batch slice `o` of a `chunked_source` converted to its dtype into `rows3` (1, r1 - r0, F),
    as `rows_view` converts them whole."""
    if source.code is None:   # NumPy's own cast, the loop of astype
        np.copyto(rows3, source.array[o:o + 1, r0:r1], casting="unsafe")
    else:
        kernels.stage_rows(source.code, source.array[o:o + 1, r0:r1], rows3)


def _check_index(plan: Any) -> None:
    valid = plan.valid()
    if not plan.drops and not bool(valid.all()):   # the whole index checked first: the first bad entry named
        raise plan.error(int(np.argmin(valid)))


def _blocks(source: host.StagedRows, o: int, reverse: bool, wide: Any = None,
            nan_as: Any = None) -> Iterator[tuple[int, int, Any]]:
    """(r0, r1, rows3) over batch slice `o` of a `chunked_source` in scan order (`reverse`: last block first),
    converted to its dtype into one reused buffer, then widened to `wide` (exact: float32 to float64, as the
    reverse functions' whole conversion goes through the compute dtype); NaN entries made `nan_as` when given
    (a NaN-skipping scan's identity, as `ScanView` makes them)."""
    n, inner = source.shape[1], source.shape[2]
    width = max(source.dtype.itemsize, np.dtype(wide or source.dtype).itemsize, 8)   # int64 positions too
    step = max(1, ROW_CHUNK_BYTES // max(1, inner * width))
    buf = np.empty((1, min(step, n), inner), source.dtype)
    wbuf = None if wide is None else np.empty((1, min(step, n), inner), wide)
    starts = range(0, n, step)
    for r0 in reversed(starts) if reverse else starts:
        r1 = min(n, r0 + step)
        rows3 = buf[:, :r1 - r0]
        _convert(source, o, r0, r1, rows3)
        if wbuf is not None:
            np.copyto(wbuf[:, :r1 - r0], rows3)
            rows3 = wbuf[:, :r1 - r0]
        if nan_as is not None:
            np.copyto(rows3, nan_as, where=np.isnan(rows3))
        yield r0, r1, rows3


def scan_args(op: Any, source: host.StagedRows, plan: Any, ident: np.ndarray, reverse: bool, exclusive: bool,
              sized: Any, nan_is_identity: bool = False) -> np.ndarray:
    """The positions arg3 (outer, n, inner) int64 of a max/min `host.group_scan` with `track` over a
    `chunked_source` (its dtype: float16/bfloat16 widen exactly, so every comparison is the one the whole
    float64 conversion makes), by blocks carrying the running table and holders (`scan_kernels.scan`'s
    keep_table and arg_offset): the same positions, with no n x F copy of src's values. `nan_is_identity`: a
    NaN-skipping scan's NaN entries made the identity first (`ScanView`)."""
    outer, n, inner = source.shape
    _check_index(plan)
    flat, size = scan_groups(plan)
    with sized:
        table = np.empty((size, inner), source.dtype)
        targ = np.empty((size, inner), np.int64)
        arg3 = np.empty((outer, n, inner), np.int64)
    out = None
    for o in range(outer):
        table[...] = ident
        targ[...] = -1
        for r0, r1, rows3 in _blocks(source, o, reverse, nan_as=ident if nan_is_identity else None):
            if out is None or out.shape[1] < rows3.shape[1]:   # a reversed scan meets the short last block first
                out = np.empty(rows3.shape, source.dtype)
            status = scan_kernels.scan(op.opcode, rows3, flat[r0:r1], out[:, :r1 - r0], table, ident.reshape(1),
                                       reverse, exclusive, plan.kernel_mode, arg3[o:o + 1, r0:r1], targ,
                                       keep_table=True, arg_offset=r0)
            if status >= 0:
                raise plan.error(r0 + status)
    return arg3


class _Running:
    """One scan's or linear recurrence's running table, carried across the blocks of one batch slice."""

    def __init__(self, flat: np.ndarray, size: int, inner: int, dtype: Any, plan: Any):
        self.flat, self.plan = flat, plan
        self.table = np.empty((size, inner), dtype)

    def scan(self, op: Any, rows3: np.ndarray, r0: int, reverse: bool, exclusive: bool) -> np.ndarray:
        out3 = np.empty(rows3.shape, rows3.dtype)
        ident = np.asarray(op.identity(rows3.dtype), rows3.dtype)
        status = scan_kernels.scan(op.opcode, rows3, self.flat[r0:r0 + rows3.shape[1]], out3, self.table,
                                   ident.reshape(1), reverse, exclusive, self.plan.kernel_mode, keep_table=True)
        if status >= 0:
            raise self.plan.error(r0 + status)
        return out3

    def linear(self, b3: np.ndarray, a3: np.ndarray, r0: int, reverse: bool, exclusive: bool) -> np.ndarray:
        out3 = np.empty(b3.shape, b3.dtype)
        status = scan_kernels.linear_scan(np.ascontiguousarray(b3), a3, self.flat[r0:r0 + b3.shape[1]], out3,
                                          self.table, reverse, exclusive, self.plan.kernel_mode, keep_table=True)
        if status >= 0:
            raise self.plan.error(r0 + status)
        return out3


def product_derivative(op: Any, source: host.StagedRows, plan: Any, d3: np.ndarray, reverse: bool,
                       exclusive: bool, vjp: bool, sized: Any, nan_is_identity: bool = False) -> np.ndarray:
    """The mul scan's VJP (`vjp`, d3 the cotangent) or JVP (d3 the tangent) over a `chunked_source`, in d3's
    dtype (float64): `scatter_scan_vjp`/`_jvp`'s formulas element by element (the exclusive product scan
    `before`, the linear recurrences), each block of src widened as the whole conversion would be, so the
    same bits, with the result the only n x F array. The VJP walks src twice (the recurrence runs against
    the scan's direction), the JVP once. `nan_is_identity`: nanprod's NaN entries read as 1 (`ScanView`)."""
    outer, n, inner = source.shape
    wide = d3.dtype
    _check_index(plan)
    flat, size = scan_groups(plan)
    with sized:
        first, second = (_Running(flat, size, inner, wide, plan) for _ in range(2))
        result = np.empty((outer, n, inner), wide)
    one, zero = wide.type(1), wide.type(0)
    nan_as = one if nan_is_identity else None
    for o in range(outer):
        first.table[...], second.table[...] = (zero, one) if vjp else (one, zero)
        if vjp:   # after (against the scan's direction) into result, then times before
            for r0, r1, x3 in _blocks(source, o, not reverse, wide, nan_as):
                g3 = d3[o:o + 1, r0:r1]
                if exclusive:
                    after = first.linear(g3, x3, r0, not reverse, True)
                else:
                    after = g3 + first.linear(x3 * g3, x3, r0, not reverse, True)
                result[o:o + 1, r0:r1] = after
            valid = plan.valid()
            for r0, r1, x3 in _blocks(source, o, reverse, wide, nan_as):
                before = second.scan(op, x3, r0, reverse, True)
                block = result[o:o + 1, r0:r1]
                np.copyto(block, np.where(valid[None, r0:r1, None], before * block, zero))
        else:
            for r0, r1, x3 in _blocks(source, o, reverse, wide, nan_as):
                before = first.scan(op, x3, r0, reverse, True)
                result[o:o + 1, r0:r1] = second.linear(before * d3[o:o + 1, r0:r1], x3, r0, reverse, exclusive)
    return result
