"""A reduction on the canonical view, counted where the op needs counts: the entries per destination row (mean,
fill values) or per element (the NaN-skipping ops), then the divide, fill and cast that finish a fresh output.
Runs on either backend through its `run_scatter`; the host counts NaN entries in its own kernels."""
from __future__ import annotations

import numpy as np

from cyscatter import kernels, nan_kernels
from cyscatter._arrays.dtypes import parts
from cyscatter._backends import host
from cyscatter._backends.host import StagedRows, converted_chunks, run_scatter_runs
from cyscatter._backends.host import run_scatter as run_scatter_host
from cyscatter._registry.ops import get_op
from cyscatter._runtime import machine as _machine

HOST_RUNNERS = (run_scatter_host, run_scatter_runs)   # the scatter runners of host (NumPy) arrays


def _runner(be, indices_are_sorted: bool):
    """The scatter kernel to run: the sorted-run one for a hinted host call (same result, faster), else the
    backend's (the GPU's atomics gain nothing from the hint)."""
    return run_scatter_runs if indices_are_sorted and be.xp is np else be.run_scatter


def new_counts(op, shape3, xp=np, fill=None, n: int = 0):
    """Zeroed counts for a call of `op` on an (outer, size, inner) output, or None when nothing needs them.

    Entries per destination row (int64, length size) for mean and a fill_value; for the NaN-skipping ops
    (`Op.skips_nan`) non-NaN entries per output element (shape3; int32 for fewer than 2**31 entries `n`: half
    the traffic of the counting pass), so an element whose entries are all NaN counts as an empty group.
    """
    if not (op.counts or fill is not None):
        return None
    if op.skips_nan:
        return ElementCounts(shape3, np.dtype(np.int32 if n < 2**31 - 1 else np.int64), xp)
    return xp.zeros(shape3[1], np.int64)


class ElementCounts:
    """Zeroed element counts (outer, size, inner) of a NaN-skipping op, allocated when first asked for: on host
    arrays only once src shows a NaN (without one the entries per row are the counts, `_run_counted_host`)."""
    ndim = 3

    def __init__(self, shape, dtype, xp, array=None):
        self.shape, self.dtype, self.xp, self._array = shape, dtype, xp, array

    @classmethod
    def holding(cls, counts):
        """Counts made by the caller (zeroed, any backend) as they are."""
        return cls(counts.shape, counts.dtype, np if isinstance(counts, np.ndarray) else None, counts)

    @property
    def contiguous(self) -> bool:
        return self._array is None or self._array.flags.c_contiguous

    def array(self):
        if self._array is None:
            self._array = self.xp.zeros(self.shape, self.dtype)
        return self._array


MASK_ELEMENTS = 1 << 20   # src elements whose NaN mask (at most 8 MiB) one pass of `count_not_nan` holds


def count_not_nan(run_scatter, src3, plan, element_counts, threads: int = 0) -> None:
    """element_counts[o, flat[k], f] += 1 for each non-NaN src3[o, k, f] (NumPy's isnan; complex: either part),
    on any backend: a second add pass through the same scatter kernel, of the mask in the counts' dtype, made
    for a slice of index entries at a time (the extra memory is bounded, not O(n)). The host runs
    `_count_host` instead."""
    step = max(1, MASK_ELEMENTS // max(1, src3.shape[0] * src3.shape[2]))
    for lo in range(0, plan.n, step):
        part = src3[:, lo:lo + step]
        flat = plan.flat[lo:lo + step]
        # the entries are planned already: skipping any still out of range is the plan's own rule
        sub = type(plan)(flat, flat.shape, (plan.size,), "drop" if plan.drops else "raise", (flat,))
        # (C order: a Fortran-ordered or transposed src gives a mask of its layout, whose rows the kernel refuses)
        mask = (part == part).astype(element_counts.dtype, order="C")
        run_scatter(get_op("add"), mask, sub, element_counts, None, threads)


NAN_COUNT_DTYPES = (np.uint8, np.uint16, np.int32, np.int64)


class NanCounts:
    """Counts of a NaN-skipping op on host arrays, kept apart: `rows` the entries per destination row (int64,
    (size,)) and `nan` the NaN entries per element (the narrowest unsigned type, (outer, size, inner)). The
    element counts ``rows[j] - nan[o, j, f]`` are made only when asked for (`elements`): nanmean's divide reads
    the two parts directly (`nan_kernels.mean`)."""
    ndim = 3

    def __init__(self, rows, nan, dtype):
        self.rows, self.nan, self.dtype = rows, nan, dtype

    def elements(self):
        """The element counts, (outer, size, inner) of `dtype` (int32, or int64 past 2**31 - 1 entries)."""
        counts = np.empty(self.nan.shape, self.dtype)
        nan_kernels.element_counts(self.rows, self.nan, counts)
        return counts

    def divide(self, op, work3, threads: int = 0) -> None:
        """`divide` of `work3` by these counts: one pass for float32/float64 C-contiguous sums."""
        if work3.dtype in (np.float32, np.float64) and work3.flags.c_contiguous:
            nan_kernels.mean(work3, self.rows, self.nan)
        else:
            divide(op, work3, self.elements(), host, threads)


def _run_counted_host(run_scatter, op, src3, plan, work3, element_counts, threads: int = 0, split: bool = False):
    """`run_counted` on host arrays (`cyscatter/nan_kernels.pyx`): the entries of each destination row are
    counted first (applying the index mode); each element's NaN entries are counted in the narrowest unsigned
    type that the largest row count fits, in nansum's pass while the tables fit the cache (`_machine`), else by
    a second pass over src run only when the sum pass met a NaN (other ops scatter first, then count). Without
    any NaN the row counts are the counts, and `element_counts` (an `ElementCounts`) is never
    allocated; else it receives the row counts minus the NaN counts, or with `split` the two are returned apart
    (`NanCounts`)."""
    rows = np.zeros(plan.size, np.int64)
    if plan.n:
        status = nan_kernels.row_counts(plan.flat, rows, plan.kernel_mode)
        if status >= 0:
            raise plan.error(status)
    # integers and bools have no NaN; any other dtype reaching here is one the kernel takes (or refuses loudly)
    if src3.dtype.kind in "biu" or not plan.n:
        run_scatter(op, src3, plan, work3, None, threads)
        return rows
    most = int(rows.max()) if rows.size else 0
    narrow = next(t for t in NAN_COUNT_DTYPES if most <= np.iinfo(t).max)
    nansum = op.opcode == kernels.OpCode.OP_NANADD
    fused = work3.size * (work3.itemsize + np.dtype(narrow).itemsize) <= _machine.ACTIVE.fused_count_bytes
    if isinstance(src3, StagedRows):
        nan, found = _count_by_blocks(run_scatter, op, src3, plan, work3, narrow, nansum, fused, threads)
        return _counted(rows, nan, found, element_counts, split)
    if not nansum:
        run_scatter(op, src3, plan, work3, None, threads)
        if not nan_kernels.any_nan(src3):   # no NaN count table for a src without one (a read, as a count pass)
            return rows
    elif not fused and not nan_kernels.nansum(src3, plan.flat, work3, threads):
        return rows
    # cache-line aligned (a 64-byte row of uint8 counts at NumPy's 16-byte offset spans two lines)
    nan = kernels.fresh_table(work3.shape, narrow, 0)
    if fused and nansum:
        found = nan_kernels.nansum_count(src3, plan.flat, work3, nan, threads)
    else:
        found = nan_kernels.count(src3, plan.flat, nan, threads)
    return _counted(rows, nan, found, element_counts, split)


def _counted(rows, nan, found: bool, element_counts, split: bool):
    """What `_run_counted_host` returns from its row counts and NaN counts (`found`: a NaN was met)."""
    if not found:
        return rows
    if split:
        return NanCounts(rows, nan, element_counts.dtype)
    nan_kernels.element_counts(rows, nan, element_counts.array())
    return element_counts.array()


def _count_by_blocks(run_scatter, op, source: StagedRows, plan, work3, narrow, nansum: bool, fused: bool,
                     threads: int):
    """(NaN counts, whether a NaN was met) of a src read in place a block of converted rows at a time (float16 /
    bfloat16, a Fortran-ordered or strided src), by the passes `_run_counted_host` makes over a whole src: the
    sums (nansum's own, else the staged scatter kernel's), then the NaN counts, in one pass where the tables fit
    the cache (`fused`). Each element still gets its entries in index order, so the results are those of the whole-array
    passes; the NaN count table is the only memory beyond the output and one block."""
    nan = kernels.fresh_table(work3.shape, narrow, 0)
    found = False
    if nansum and fused:
        for r0, r1, rows3 in converted_chunks(source):
            found = nan_kernels.nansum_count(rows3, plan.flat[r0:r1], work3, nan, threads) > 0 or found
        return nan, found
    if nansum:
        for r0, r1, rows3 in converted_chunks(source):
            found = nan_kernels.nansum(rows3, plan.flat[r0:r1], work3, threads) > 0 or found
        if not found:
            return nan, False
    else:
        run_scatter(op, source, plan, work3, None, threads)
    for r0, r1, rows3 in converted_chunks(source):
        found = nan_kernels.count(rows3, plan.flat[r0:r1], nan, threads) > 0 or found
    return nan, found


def run_counted(run_scatter, op, src3, plan, work3, counts, threads: int = 0, split: bool = False):
    """`run_scatter` of `op`, counting into `counts` (zeros from `new_counts`) when given; returns the counts to
    finish with: `counts`, or for a NaN-skipping op on host arrays whose src holds no NaN the entries per row
    (int64, size), which mean's row rules then apply to; with `split` (a caller that finishes with
    `finish_fresh`), host element counts may come as `NanCounts`."""
    if counts is not None and counts.ndim == 3:
        lazy = counts if isinstance(counts, ElementCounts) else ElementCounts.holding(counts)
        # (nanlast / nanfirst move float16 and bfloat16 as they are, which the NaN-count kernels do not take)
        if run_scatter in HOST_RUNNERS and lazy.xp is np and lazy.contiguous and (
                not op.winner or src3.dtype.kind in "biu" or src3.dtype.char in "fdFD"):
            return _run_counted_host(run_scatter, op, src3, plan, work3, lazy, threads, split)
        counts = lazy.array()
        run_scatter(op, src3, plan, work3, None, threads)
        count_not_nan(run_scatter, src3, plan, counts, threads)
    else:
        run_scatter(op, src3, plan, work3, counts, threads)
    return counts


def counts3(counts):
    """`counts` broadcastable against an (outer, size, inner) output: element counts as they are, row counts as
    (1, size, 1)."""
    return counts if counts.ndim == 3 else counts[None, :, None]


def _reduce_into(be, op, src3, plan, work3, indices_are_sorted: bool = False, threads: int = 0) -> None:
    """Apply `op` from the canonical `src3` into an existing `work3` (outer, size, inner) on backend `be`.

    For mean the group means are added to the rows that have a group (NNlib's ``scatter!(mean)``), and so are
    sqrt_n's ``sum / sqrt(count)``; for nanmean the means of the non-NaN entries to the elements that have one.
    """
    xp = be.xp
    run_scatter = _runner(be, indices_are_sorted)
    if op.counts:
        counts = new_counts(op, work3.shape, xp, n=plan.n)
        sums = be.fresh_table(work3.shape, op.compute_dtype(work3.dtype), op.identity(work3.dtype))
        counts = run_counted(run_scatter, op, src3, plan, sums, counts, threads)
        reached = xp.broadcast_to(counts3(counts) > 0, work3.shape)
        divide(op, sums, counts, be, threads)
        if xp is np:   # one masked pass (CuPy's ufuncs take no `where`)
            np.add(work3, sums, out=work3, where=reached)
        else:
            xp.add(work3, sums, out=sums)   # in the buffer of sums: no second dst-sized temporary
            xp.copyto(work3, sums, where=reached)
    else:
        run_scatter(op, src3, plan, work3, threads=threads)


def divide(op, work3, counts, be=host, threads: int = 0) -> None:
    """Divide the sums `work3` (outer, size, inner) of the counting op `op` by its divisor (`Op.divisor`), in place,
    on backend `be`: one kernel pass where the backend has one (`divide_by_counts`, `divide_by_element_counts`).
    Element counts (outer, size, inner) of a NaN-skipping op are otherwise clamped to 1 in place, so no
    counts-sized temporary is made. Complex sums divide their real and imaginary parts by the real divisor,
    deliberately unlike np.mean's division by c + 0j: each part is correctly rounded (that complex division rounds
    complex64 quotients through a reciprocal, 1 ulp off in 40% of means) and an infinite part does not make the
    other NaN (inf+3j over 3: inf+1j, np.mean's inf+nanj)."""
    xp = be.xp
    if counts.ndim == 3:
        if be.divide_by_element_counts(work3, counts):
            return
        xp.maximum(counts, 1, out=counts)
        for part in parts(work3):
            xp.divide(part, counts, out=part, dtype=part.dtype, casting="unsafe")
        return
    if op.sqrt_counts or not be.divide_by_counts(work3, counts, threads):
        divisor = op.divisor(counts, work3.dtype, xp)
        for part in parts(work3):
            part /= divisor


def finish_fresh(op, work3, counts, fill, result_dtype, be=host, threads: int = 0):
    """The result from an accumulator `work3` that started at the identity (mutated; may be returned), on backend
    `be`.

    Mean divides by the group counts; `fill` (from `fill_for`) replaces rows whose count is 0 (elements, for
    the NaN-skipping ops' element counts); then the compute dtype is cast to `result_dtype`. `counts` (from
    `new_counts`) may be None when neither needs it.
    """
    if counts is not None and counts.ndim == 3:   # element counts (NaN-skipping ops): no counts-sized temporary
        split = isinstance(counts, NanCounts)
        empty = None if fill is None else (counts.elements() if split else counts) == 0
        if op.counts and split:
            counts.divide(op, work3, threads)
        elif op.counts:
            divide(op, work3, counts, be, threads)
        if empty is not None:
            work3[empty] = fill[()]
        return be.rounded(work3, result_dtype)
    if op.counts:
        divide(op, work3, counts, be, threads)
    if fill is not None:
        work3[:, counts == 0] = fill[()]
    return be.rounded(work3, result_dtype)
