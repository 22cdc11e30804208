# cython: language_level=3
"""CPU kernels for group reductions beyond the core scatter: CSR segments, sorted runs and arg-extremes.

Typed-memoryview loops on the canonical (outer, rows, inner) view, fused over dtypes, the op fixed at compile
time; they run without the GIL and return a status. The `def` wrappers at the bottom translate the registry's
op codes into tags and are the only entry points the Python layer uses.
"""
cimport cython
from cython.parallel cimport prange
from cython.view cimport contiguous
from libc.stdint cimport int32_t, int64_t, uint64_t

from cyscatter.kernels cimport (OpAdd, OpSub, OpMul, OpDiv, OpMax, OpMin, op_t, value_t, index_t,
                                OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, OP_NANADD, OP_NANMUL, OP_FMAX,
                                OP_FMIN, OpNanAdd, OpNanMul, OpFmax, OpFmin, MODE_RAISE, MODE_DROP,
                                scatter_reduce_rows, first_out_of_range, combine_rows, team_size)
from cyscatter.group_kernels cimport (extreme_t, nan_op_t, nan_value_t, count_t, combine, running, replaces_max,
                                      replaces_min)


# ---- CSR segments ----------------------------------------------------------------------------------------------

cdef Py_ssize_t first_bad_segment(const index_t[::1] indptr, Py_ssize_t n) noexcept nogil:
    """First segment s with indptr[s] > indptr[s + 1], or whose bounds leave [0, n]; -1 if all are valid."""
    cdef Py_ssize_t s
    for s in range(indptr.shape[0] - 1):
        if indptr[s] < 0 or indptr[s] > indptr[s + 1] or indptr[s + 1] > n:
            return s
    return -1


cdef Py_ssize_t segment_reduce_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] indptr,
                                    value_t[:, :, ::contiguous] out) noexcept nogil:
    """out[o, s, :] = op-reduction of src[o, indptr[s]:indptr[s + 1], :] onto the start value in out[o, s, :].

    Rows are combined in order, so the result equals the core scatter with the matching sorted index, bit for
    bit. Returns -1, or the first invalid segment (checked before anything is written).
    """
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2]
    cdef Py_ssize_t nseg = indptr.shape[0] - 1
    cdef Py_ssize_t o, s, p, bad
    cdef value_t acc
    bad = first_bad_segment(indptr, n)
    if bad >= 0:
        return bad
    for o in range(outer):
        for s in range(nseg):
            if inner == 1:   # the common graph case: keep the running value in a register
                acc = out[o, s, 0]
                for p in range(indptr[s], indptr[s + 1]):
                    acc = running(op, acc, src[o, p, 0])
                out[o, s, 0] = acc
            elif indptr[s + 1] > indptr[s]:
                # the core's row update, one call per segment: vectorised, no branch per element (NOTES.md v16)
                combine_rows(op, &out[o, s, 0], &src[o, indptr[s], 0], indptr[s + 1] - indptr[s],
                             src.strides[1] // sizeof(value_t), inner)
    return -1


cdef extern from "include/_cpu.h" nogil:   # the core's fmax/fmin rules on whole rows, in SSE2 (see _cpu.h)
    void cyscatter_row_fmax_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_fmin_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_fmax_d(double* dst, const double* src, Py_ssize_t width)
    void cyscatter_row_fmin_d(double* dst, const double* src, Py_ssize_t width)
    float cyscatter_nan_to_f(float x, float fill)     # nansum/nanprod's element rule as a bitwise select
    double cyscatter_nan_to_d(double x, double fill)
    void cyscatter_row_nanadd_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_nanmul_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_nanadd_d(double* dst, const double* src, Py_ssize_t width)
    void cyscatter_row_nanmul_d(double* dst, const double* src, Py_ssize_t width)

cdef enum:
    SEGMENT_CHUNK = 256   # features per stack buffer of the NaN-skipping segment kernel


cdef inline void _nan_update_row(nan_op_t op, nan_value_t* acc, const nan_value_t* x,
                                 Py_ssize_t width) noexcept nogil:
    """acc[f] = op(acc[f], x[f]) for a NaN-skipping op, as `combine` (the same bits), in the core's SSE2 rows
    (`_cpu.h`) for float and double."""
    cdef Py_ssize_t f
    if nan_value_t is float:
        if nan_op_t is OpNanAdd:
            cyscatter_row_nanadd_f(acc, x, width)
        elif nan_op_t is OpNanMul:
            cyscatter_row_nanmul_f(acc, x, width)
        elif nan_op_t is OpFmax:
            cyscatter_row_fmax_f(acc, x, width)
        else:
            cyscatter_row_fmin_f(acc, x, width)
    elif nan_value_t is double:
        if nan_op_t is OpNanAdd:
            cyscatter_row_nanadd_d(acc, x, width)
        elif nan_op_t is OpNanMul:
            cyscatter_row_nanmul_d(acc, x, width)
        elif nan_op_t is OpFmax:
            cyscatter_row_fmax_d(acc, x, width)
        else:
            cyscatter_row_fmin_d(acc, x, width)
    else:
        for f in range(width):
            acc[f] = combine(op, acc[f], x[f])


cdef inline void _nan_update_count_row(nan_op_t op, nan_value_t* acc, count_t* cnt, const nan_value_t* x,
                                       Py_ssize_t width) noexcept nogil:
    """`_nan_update_row` that also adds 1 to cnt[f] for each non-NaN x[f]; float nansum/nanprod in one loop (the
    int32 mask work vectorises with float lanes), the others row by row then the counts."""
    cdef Py_ssize_t f
    if nan_value_t is float and (nan_op_t is OpNanAdd or nan_op_t is OpNanMul):
        for f in range(width):
            if nan_op_t is OpNanAdd:
                acc[f] = acc[f] + cyscatter_nan_to_f(x[f], -0.0)
            else:
                acc[f] = acc[f] * cyscatter_nan_to_f(x[f], 1)
            cnt[f] = cnt[f] + (x[f] == x[f])
    else:
        _nan_update_row(op, acc, x, width)
        for f in range(width):
            cnt[f] = cnt[f] + (x[f] == x[f])


cdef Py_ssize_t segment_reduce_counted_rows(nan_op_t op, const nan_value_t[:, :, ::contiguous] src,
                                            const index_t[::1] indptr, nan_value_t[:, :, ::contiguous] out,
                                            count_t[:, :, ::contiguous] counts, bint counting) noexcept nogil:
    """`segment_reduce_rows` of a NaN-skipping op (the same result, bit for bit: the same element update, rows in
    order) that, when `counting`, also adds to counts[o, s, f] the non-NaN entries of each output element (NumPy's
    isnan; complex: either part), so an element whose entries are all NaN counts 0.

    One pass: a segment's running values and counts are kept for SEGMENT_CHUNK features at a time in stack
    buffers, which alias nothing, so the row updates and the count vectorise. Returns -1, or the first
    invalid segment (checked before anything is written).
    """
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2]
    cdef Py_ssize_t nseg = indptr.shape[0] - 1
    cdef Py_ssize_t stride = src.strides[1] // sizeof(nan_value_t)
    cdef Py_ssize_t o, s, p, f, f0, width, rows, bad
    cdef nan_value_t x
    cdef nan_value_t acc[SEGMENT_CHUNK]
    cdef count_t cnt[SEGMENT_CHUNK]
    cdef const nan_value_t* row
    cdef nan_value_t* dst
    cdef count_t* total
    bad = first_bad_segment(indptr, n)
    if bad >= 0:
        return bad
    for o in range(outer):
        for s in range(nseg):
            rows = indptr[s + 1] - indptr[s]
            if rows == 0:
                continue
            dst = &out[o, s, 0]
            f0 = 0
            while f0 < inner:
                width = min(<Py_ssize_t>SEGMENT_CHUNK, inner - f0)
                row = &src[o, indptr[s], f0]
                for f in range(width):
                    acc[f] = dst[f0 + f]
                if counting:
                    for f in range(width):
                        cnt[f] = 0
                    for p in range(rows):
                        _nan_update_count_row(op, acc, cnt, row + p * stride, width)
                    total = &counts[o, s, f0]
                    for f in range(width):
                        total[f] += cnt[f]
                else:
                    for p in range(rows):
                        _nan_update_row(op, acc, row + p * stride, width)
                for f in range(width):
                    dst[f0 + f] = acc[f]
                f0 += width
    return -1


# ---- scatter along runs of equal index entries -------------------------------------------------------------------

cdef Py_ssize_t scatter_runs_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                  value_t[:, :, ::contiguous] out, int64_t* counts, int mode) noexcept nogil:
    """The core scatter-reduce (same arguments, result and status), faster when equal entries are adjacent.

    Each run of equal index entries is reduced in a register and stored once. The updates keep their order,
    so the result is exact for ANY index; a sorted one only makes the runs long.
    """
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = out.shape[1]
    cdef Py_ssize_t o, k, start
    cdef index_t j
    cdef value_t acc
    if inner != 1 or outer == 0:   # rows wider than one element gain nothing from a register
        return scatter_reduce_rows(op, src, index, out, counts, mode)
    for o in range(outer):
        k = 0
        while k < n:
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:   # a negative j wraps to a huge unsigned value
                if mode == MODE_DROP:
                    k += 1
                    continue
                return k
            start = k
            acc = out[o, j, 0]
            while k < n and index[k] == j:
                acc = running(op, acc, src[o, k, 0])
                k += 1
            out[o, j, 0] = acc
            if counts != NULL and o == 0:
                counts[j] += k - start
    return -1


# ---- arg-extremes ------------------------------------------------------------------------------------------------

cdef Py_ssize_t scatter_arg_rows(extreme_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                 value_t[:, :, ::contiguous] best, int64_t[:, :, ::contiguous] arg,
                                 int mode) noexcept nogil:
    """arg[o, j, f] = the first position k (index[k] == j) whose src[o, k, f] wins max/min; best holds the winner.

    `arg` must start at n (no member yet): the first member always enters, later ones only when strictly
    better, so ties keep the smallest position. Returns -1 or (MODE_RAISE) the first bad index position,
    found before anything is written.
    """
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = best.shape[1]
    cdef Py_ssize_t o, k, f
    cdef index_t j
    cdef bint better
    if mode == MODE_RAISE:
        k = first_out_of_range(index, size)
        if k >= 0:
            return k
    for o in range(outer):
        for k in range(n):
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:
                continue
            for f in range(inner):
                if extreme_t is OpMax:
                    better = replaces_max(best[o, j, f], src[o, k, f])
                else:
                    better = replaces_min(best[o, j, f], src[o, k, f])
                if better or arg[o, j, f] == n:
                    best[o, j, f] = src[o, k, f]
                    arg[o, j, f] = k
    return -1


# ---- Python entry points ---------------------------------------------------------------------------------------
# The loops run without bounds checks, so the wrappers check every extent they rely on: an entry point reachable
# by import must not let a wrong shape write outside an array.

cdef int _check_rows(str kernel, Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner, Py_ssize_t index_len,
                     str index_name, tuple tables) except -1:
    """src is (outer, n, inner) and its index (or CSR pointer) `index_len` long; each (name, shape, rows) table
    must be (outer, rows, inner) (rows < 0: any)."""
    if index_len != n:
        raise ValueError(f"{kernel}: {index_name} has {index_len} entries for {n} rows of src")
    for name, shape, rows in tables:
        if shape[0] != outer or shape[2] != inner or (rows >= 0 and shape[1] != rows):
            want = f"({outer}, {rows if rows >= 0 else 'size'}, {inner})"
            raise ValueError(f"{kernel}: {name} shape {shape} does not fit src shape {(outer, n, inner)}: "
                             f"expected {want}")
    return 0


cdef tuple _shape3(const value_t[:, :, ::contiguous] a):
    return (a.shape[0], a.shape[1], a.shape[2])


cdef int _check_opcode(int opcode, str kernel) except -1:
    if not (OP_ADD <= opcode <= OP_MIN or OP_NANADD <= opcode <= OP_FMIN):
        raise ValueError(f"{kernel}: unknown op code {opcode}")
    return 0


def segment_reduce(int opcode, const value_t[:, :, ::contiguous] src, const index_t[::1] indptr,
                   value_t[:, :, ::contiguous] out):
    """Run the CSR segment kernel for `opcode` (an OpCode); returns -1 or the first invalid segment."""
    cdef Py_ssize_t status = -1
    cdef OpAdd add
    cdef OpSub sub
    cdef OpMul mul
    cdef OpDiv div
    cdef OpMax mx
    cdef OpMin mn
    cdef OpNanAdd nanadd
    cdef OpNanMul nanmul
    cdef OpFmax fmx
    cdef OpFmin fmn
    _check_opcode(opcode, "segment_reduce")
    _check_rows("segment_reduce", src.shape[0], src.shape[1], src.shape[2], src.shape[1], "src", (
        ("out", _shape3(out), max(indptr.shape[0] - 1, 0)),))
    with nogil:
        if opcode == OP_ADD:
            status = segment_reduce_rows(add, src, indptr, out)
        elif opcode == OP_SUB:
            status = segment_reduce_rows(sub, src, indptr, out)
        elif opcode == OP_MUL:
            status = segment_reduce_rows(mul, src, indptr, out)
        elif opcode == OP_DIV:
            status = segment_reduce_rows(div, src, indptr, out)
        elif opcode == OP_MAX:
            status = segment_reduce_rows(mx, src, indptr, out)
        elif opcode == OP_MIN:
            status = segment_reduce_rows(mn, src, indptr, out)
        elif opcode == OP_NANADD:
            status = segment_reduce_rows(nanadd, src, indptr, out)
        elif opcode == OP_NANMUL:
            status = segment_reduce_rows(nanmul, src, indptr, out)
        elif opcode == OP_FMAX:
            status = segment_reduce_rows(fmx, src, indptr, out)
        elif opcode == OP_FMIN:
            status = segment_reduce_rows(fmn, src, indptr, out)
    return status


def segment_reduce_counted(int opcode, const nan_value_t[:, :, ::contiguous] src, const index_t[::1] indptr,
                           nan_value_t[:, :, ::contiguous] out, count_t[:, :, ::contiguous] counts,
                           bint counting=True):
    """The CSR segment kernel of a NaN-skipping `opcode` (OP_NANADD, OP_NANMUL, OP_FMAX, OP_FMIN) on float or
    complex values, adding the non-NaN entries of each output element to `counts` (same shape as `out`) when
    `counting` (else `counts` is not read: any int32 array); returns -1 or the first invalid segment."""
    cdef Py_ssize_t status = -1
    cdef OpNanAdd nanadd
    cdef OpNanMul nanmul
    cdef OpFmax fmx
    cdef OpFmin fmn
    if not OP_NANADD <= opcode <= OP_FMIN:
        raise ValueError(f"segment_reduce_counted takes a NaN-skipping op code, got {opcode}")
    _check_rows("segment_reduce_counted", src.shape[0], src.shape[1], src.shape[2], src.shape[1], "src", (
        ("out", _shape3(out), max(indptr.shape[0] - 1, 0)),) + ((
        ("counts", (counts.shape[0], counts.shape[1], counts.shape[2]), max(indptr.shape[0] - 1, 0)),)
        if counting else ()))
    with nogil:
        if opcode == OP_NANADD:
            status = segment_reduce_counted_rows(nanadd, src, indptr, out, counts, counting)
        elif opcode == OP_NANMUL:
            status = segment_reduce_counted_rows(nanmul, src, indptr, out, counts, counting)
        elif opcode == OP_FMAX:
            status = segment_reduce_counted_rows(fmx, src, indptr, out, counts, counting)
        else:
            status = segment_reduce_counted_rows(fmn, src, indptr, out, counts, counting)
    return status


def scatter_runs(int opcode, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                 value_t[:, :, ::contiguous] out, int64_t[::1] counts=None, int mode=MODE_RAISE):
    """`kernels.scatter_reduce` with runs of equal entries reduced in a register; same result and status."""
    cdef int64_t* counts_ptr = NULL
    cdef Py_ssize_t status = -1
    cdef OpAdd add
    cdef OpSub sub
    cdef OpMul mul
    cdef OpDiv div
    cdef OpMax mx
    cdef OpMin mn
    cdef OpNanAdd nanadd
    cdef OpNanMul nanmul
    cdef OpFmax fmx
    cdef OpFmin fmn
    _check_opcode(opcode, "scatter_runs")
    _check_rows("scatter_runs", src.shape[0], src.shape[1], src.shape[2], index.shape[0], "index", (
        ("out", _shape3(out), -1),))
    if counts is not None and counts.shape[0] != out.shape[1]:
        raise ValueError(f"scatter_runs: counts has {counts.shape[0]} entries for {out.shape[1]} rows of out")
    if counts is not None and counts.shape[0] > 0:
        counts_ptr = &counts[0]
    with nogil:
        if opcode == OP_ADD:
            status = scatter_runs_rows(add, src, index, out, counts_ptr, mode)
        elif opcode == OP_SUB:
            status = scatter_runs_rows(sub, src, index, out, counts_ptr, mode)
        elif opcode == OP_MUL:
            status = scatter_runs_rows(mul, src, index, out, counts_ptr, mode)
        elif opcode == OP_DIV:
            status = scatter_runs_rows(div, src, index, out, counts_ptr, mode)
        elif opcode == OP_MAX:
            status = scatter_runs_rows(mx, src, index, out, counts_ptr, mode)
        elif opcode == OP_MIN:
            status = scatter_runs_rows(mn, src, index, out, counts_ptr, mode)
        elif opcode == OP_NANADD:
            status = scatter_runs_rows(nanadd, src, index, out, counts_ptr, mode)
        elif opcode == OP_NANMUL:
            status = scatter_runs_rows(nanmul, src, index, out, counts_ptr, mode)
        elif opcode == OP_FMAX:
            status = scatter_runs_rows(fmx, src, index, out, counts_ptr, mode)
        elif opcode == OP_FMIN:
            status = scatter_runs_rows(fmn, src, index, out, counts_ptr, mode)
    return status


def scatter_arg(int opcode, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                value_t[:, :, ::contiguous] best, int64_t[:, :, ::contiguous] arg, int mode=MODE_RAISE):
    """Run the arg-extreme kernel for OP_MAX or OP_MIN; returns -1 or the first bad index position."""
    cdef Py_ssize_t status = -1
    cdef OpMax mx
    cdef OpMin mn
    if opcode not in (OP_MAX, OP_MIN):
        raise ValueError(f"scatter_arg takes OP_MAX or OP_MIN, got op code {opcode}")
    _check_rows("scatter_arg", src.shape[0], src.shape[1], src.shape[2], index.shape[0], "index", (
        ("best", _shape3(best), -1), ("arg", (arg.shape[0], arg.shape[1], arg.shape[2]), best.shape[1])))
    with nogil:
        if opcode == OP_MAX:
            status = scatter_arg_rows(mx, src, index, best, arg, mode)
        else:
            status = scatter_arg_rows(mn, src, index, best, arg, mode)
    return status

# ---- several aggregations in one pass (scatter_multi) -------------------------------------------------------------
# One read of each src row updates every table asked for: the sums (add, mean, and var/std's means), the maxima
# and the minima, and counts the entries; a second kernel sums the squared deviations from the group means that
# the first pass gave (var/std, the two-pass algorithm of scatter_var). The tables of one destination row lie side
# by side in one work row (outer, size, width), so an entry touches one run of adjacent cache lines, not three.
# Each element sees its updates in index order with the core's rules (NaN wins max/min, -0.0 < +0.0, the SSE2
# row selects of _cpu.h), so every table equals the single-op scatter's bits. Threads take disjoint feature
# columns (whole cache lines), so they share no destination element.

cdef extern from "include/_cpu.h" nogil:
    void cyscatter_row_max_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_min_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_max_d(double* dst, const double* src, Py_ssize_t width)
    void cyscatter_row_min_d(double* dst, const double* src, Py_ssize_t width)
    void cyscatter_prefetch_w(const void* p)

ctypedef fused multi_real_t:
    float
    double

ctypedef fused multi_index_t:
    int32_t
    int64_t

cdef enum:
    MULTI_AHEAD = 8   # entries ahead whose work rows are prefetched (a random row per entry)


cdef Py_ssize_t _multi_part(const multi_real_t* src, const multi_index_t* index, multi_real_t* work,
                            int64_t* counts, Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner, Py_ssize_t size,
                            Py_ssize_t width, Py_ssize_t sum_at, Py_ssize_t max_at, Py_ssize_t min_at,
                            Py_ssize_t f0, Py_ssize_t f1, int mode) noexcept nogil:
    cdef Py_ssize_t o, k, f, j, ahead, line, cols = f1 - f0
    cdef Py_ssize_t step = 64 // sizeof(multi_real_t)
    cdef const multi_real_t* x
    cdef multi_real_t* row
    cdef multi_real_t* t
    if cols <= 0:
        return -1
    for o in range(outer):
        for k in range(n):
            j = <Py_ssize_t>index[k]
            if j < 0 or j >= size:
                if mode == MODE_RAISE:
                    return k
                continue
            if k + MULTI_AHEAD < n:
                ahead = <Py_ssize_t>index[k + MULTI_AHEAD]
                if 0 <= ahead < size:
                    line = 0
                    while line < width:   # (a loop of runtime step: range() would need the GIL)
                        cyscatter_prefetch_w(work + (o * size + ahead) * width + line)
                        line = line + step
            if counts != NULL and o == 0:
                counts[j] += 1
            x = src + (o * n + k) * inner + f0
            row = work + (o * size + j) * width + f0
            if sum_at >= 0:
                t = row + sum_at
                for f in range(cols):
                    t[f] = t[f] + x[f]
            if max_at >= 0:
                if multi_real_t is float:
                    cyscatter_row_max_f(row + max_at, x, cols)
                else:
                    cyscatter_row_max_d(row + max_at, x, cols)
            if min_at >= 0:
                if multi_real_t is float:
                    cyscatter_row_min_f(row + min_at, x, cols)
                else:
                    cyscatter_row_min_d(row + min_at, x, cols)
    return -1


cdef void _squares_part(const multi_real_t* src, const multi_index_t* index, multi_real_t* work,
                        Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner, Py_ssize_t size, Py_ssize_t f0,
                        Py_ssize_t f1) noexcept nogil:
    """work rows hold the means (features 0..inner) and the squares (inner..2 inner) of a destination row."""
    cdef Py_ssize_t o, k, f, j, ahead, line, cols = f1 - f0, width = 2 * inner
    cdef Py_ssize_t step = 64 // sizeof(multi_real_t)
    cdef const multi_real_t* x
    cdef const multi_real_t* m
    cdef multi_real_t* t
    cdef multi_real_t d
    if cols <= 0:
        return
    for o in range(outer):
        for k in range(n):
            j = <Py_ssize_t>index[k]
            if j < 0 or j >= size:   # (checked by the first pass: dropped here)
                continue
            if k + MULTI_AHEAD < n:
                ahead = <Py_ssize_t>index[k + MULTI_AHEAD]
                if 0 <= ahead < size:
                    line = 0
                    while line < width:   # (a loop of runtime step: range() would need the GIL)
                        cyscatter_prefetch_w(work + (o * size + ahead) * width + line)
                        line = line + step
            x = src + (o * n + k) * inner + f0
            m = work + (o * size + j) * width + f0
            t = work + (o * size + j) * width + inner + f0
            for f in range(cols):
                d = x[f] - m[f]
                t[f] = t[f] + d * d


cdef inline Py_ssize_t _column_cut(Py_ssize_t inner, int parts, int t, Py_ssize_t block) noexcept nogil:
    """The first feature of thread t's columns: whole blocks (cache lines) shared out evenly."""
    cdef Py_ssize_t blocks = (inner + block - 1) // block
    return min(inner, (blocks * t // parts) * block)


def multi_reduce(const multi_real_t[:, :, ::1] src, const multi_index_t[::1] index, multi_real_t[:, :, ::1] work,
                 Py_ssize_t sum_at, Py_ssize_t max_at, Py_ssize_t min_at, int64_t[::1] counts,
                 int mode=MODE_RAISE, int num_threads=0):
    """One pass over src (outer, n, inner): for each entry k with j = index[k], work[o, j, sum_at + f] += src,
    work[o, j, max_at + f] = max(.., src), work[o, j, min_at + f] = min(.., src) (an offset < 0: no such table),
    counts[j] += 1. `work` is (outer, size, width), each table's inner features inside its rows. Returns -1, or
    under MODE_RAISE the first entry out of [0, size) (the caller raises; the tables are then partly updated)."""
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = counts.shape[0]
    cdef Py_ssize_t width = work.shape[2], at
    cdef Py_ssize_t status[64]
    cdef Py_ssize_t block = 64 // sizeof(multi_real_t), first = -1
    cdef int parts, t
    cdef multi_real_t* w_ptr
    if index.shape[0] != n:
        raise ValueError(f"multi_reduce: index has {index.shape[0]} entries for {n} rows of src")
    if work.shape[0] != outer or work.shape[1] != size:
        raise ValueError(f"multi_reduce: work shape {(work.shape[0], work.shape[1], width)} does not fit "
                         f"({outer}, {size}, width)")
    for at in (sum_at, max_at, min_at):
        if at >= 0 and at + inner > width:
            raise ValueError(f"multi_reduce: a table at {at} of {inner} features overruns work rows of {width}")
    if n == 0:
        return -1
    if outer == 0 or inner == 0 or size == 0:   # nothing to write: the entries are still checked and counted
        return _count_only(index, counts, size, mode)
    w_ptr = &work[0, 0, 0]
    parts = min(team_size(num_threads, outer * n * inner), max(1, inner // block), 64)
    if parts <= 1:
        return _multi_part(&src[0, 0, 0], &index[0], w_ptr, &counts[0], outer, n, inner, size, width, sum_at,
                           max_at, min_at, 0, inner, mode)
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        status[t] = _multi_part(&src[0, 0, 0], &index[0], w_ptr, &counts[0] if t == 0 else NULL, outer, n, inner,
                                size, width, sum_at, max_at, min_at, _column_cut(inner, parts, t, block),
                                _column_cut(inner, parts, t + 1, block), mode)
    for t in range(parts):
        if status[t] >= 0 and (first < 0 or status[t] < first):
            first = status[t]
    return first


cdef Py_ssize_t _count_only(const multi_index_t[::1] index, int64_t[::1] counts, Py_ssize_t size, int mode):
    cdef Py_ssize_t k, j
    for k in range(index.shape[0]):
        j = <Py_ssize_t>index[k]
        if j < 0 or j >= size:
            if mode == MODE_RAISE:
                return k
            continue
        counts[j] += 1
    return -1


def multi_squares(const multi_real_t[:, :, ::1] src, const multi_index_t[::1] index, multi_real_t[:, :, ::1] work,
                  int num_threads=0):
    """work[o, j, inner + f] += (src[o, k, f] - work[o, j, f])**2 for each entry k with j = index[k], in index
    order (entries out of range skipped: `multi_reduce` has checked them); `work` is (outer, size, 2 * inner):
    the means, then the sums of squares."""
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = work.shape[1]
    cdef Py_ssize_t block = 64 // sizeof(multi_real_t)
    cdef int parts, t
    if index.shape[0] != n:
        raise ValueError(f"multi_squares: index has {index.shape[0]} entries for {n} rows of src")
    if work.shape[0] != outer or work.shape[2] != 2 * inner:
        raise ValueError(f"multi_squares: work shape {(work.shape[0], size, work.shape[2])} does not fit "
                         f"({outer}, size, {2 * inner})")
    if n == 0 or outer == 0 or inner == 0 or size == 0:
        return
    parts = min(team_size(num_threads, outer * n * inner), max(1, inner // block), 64)
    if parts <= 1:
        _squares_part(&src[0, 0, 0], &index[0], &work[0, 0, 0], outer, n, inner, size, 0, inner)
        return
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _squares_part(&src[0, 0, 0], &index[0], &work[0, 0, 0], outer, n, inner, size,
                      _column_cut(inner, parts, t, block), _column_cut(inner, parts, t + 1, block))
