# cython: language_level=3
"""CPU kernels of cyscatter: typed-memoryview loops, fused over dtypes, the op fixed at compile time.

The kernels run without the GIL and never raise; the `def` wrappers at the bottom are the only entry points the
Python layer uses, and they translate op codes into the compile-time op tags.
"""
cimport cython
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport signbit
from cython.view cimport contiguous
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from cpython.mem cimport PyMem_RawMalloc, PyMem_RawCalloc, PyMem_RawFree
from cpython.ref cimport Py_INCREF
from cpython.pyport cimport PY_SSIZE_T_MAX

cdef extern from "include/_cdiv.h" nogil:
    double complex cyscatter_cdiv(double complex a, double complex b)
    float complex cyscatter_cdivf(float complex a, float complex b)
    double complex cyscatter_cmul(double complex a, double complex b)
    float complex cyscatter_cmulf(float complex a, float complex b)

cdef extern from "include/_halfconv.h" nogil:
    void cyscatter_f16_to_f32(const uint16_t* src, float* dst, Py_ssize_t n)

cdef extern from "include/_halfround.h" nogil:
    int cyscatter_f32_to_f16(const float* src, uint16_t* dst, Py_ssize_t n)
    void cyscatter_f32_to_bf16(const float* src, uint16_t* dst, Py_ssize_t n)

cdef extern from "include/_stage.h" nogil:
    ctypedef void (*cyscatter_stage_fn)(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs,
                                        Py_ssize_t cs, void* dst) noexcept nogil
    void cyscatter_stage_half(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_bfloat(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_f4_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_i1_i8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_i2_i8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_i4_i8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_u1_i8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_u2_i8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_u4_i8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_i1_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_i2_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_i4_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_i8_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_u1_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_u2_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_u4_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_u8_f8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_copy4(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_copy8(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)
    void cyscatter_stage_copy16(const char* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t rs, Py_ssize_t cs, void* dst)

cdef extern from "include/_layout.h" nogil:
    int cyscatter_layout_has_avx2()
    int cyscatter_layout_has_avx512()
    int cyscatter_layout_use512
    int cyscatter_layout_add(const char* src, Py_ssize_t f_begin, Py_ssize_t f_end, Py_ssize_t n, Py_ssize_t fs,
                              const void* index, int wide, void* table, Py_ssize_t ts, Py_ssize_t size, int kind)
    void cyscatter_layout_transpose(const void* src, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t ss, void* dst,
                                    Py_ssize_t ds, Py_ssize_t item)
    int cyscatter_layout_zero(const char* p, Py_ssize_t rows, Py_ssize_t row_bytes, Py_ssize_t stride)
    void* cyscatter_layout_take(size_t bytes)
    void cyscatter_layout_give(void* data)
    void cyscatter_layout_gather(const void* table, Py_ssize_t ts, Py_ssize_t f_begin, Py_ssize_t f_end,
                                 Py_ssize_t n, const void* index, int wide, void* out, Py_ssize_t os,
                                 Py_ssize_t size, Py_ssize_t item, int stream)

cdef extern from "include/_gather_apart.h" nogil:
    int cyscatter_gather_apart_small_ok()
    void cyscatter_gather_apart_small(const char* src, Py_ssize_t rs, const void* index, int wide, Py_ssize_t n,
                                      char* out, Py_ssize_t os, Py_ssize_t f0, Py_ssize_t f1, uint64_t size,
                                      int item)

cdef extern from "include/_convscatter.h" nogil:
    ctypedef Py_ssize_t (*cyscatter_convscatter_fn)(const char* src, Py_ssize_t rs, const void* index,
                                                    Py_ssize_t n, void* table, Py_ssize_t trs, Py_ssize_t size,
                                                    Py_ssize_t width, Py_ssize_t ahead, int64_t* counts, int raise_,
                                                    Py_ssize_t lo, Py_ssize_t hi)
    cyscatter_convscatter_fn cyscatter_convscatter(int conv, int op, int index_bytes)

cdef extern from "include/_cpu.h" nogil:
    Py_ssize_t cyscatter_rows_ahead(Py_ssize_t reach, Py_ssize_t row_bytes)
    int cyscatter_omp_max_threads()
    int cyscatter_have_openmp()
    int cyscatter_has_avx2()

cdef extern from "include/_csrsum.h" nogil:
    void cyscatter_rowsum_f(float* acc, const float* src, Py_ssize_t s_row, Py_ssize_t rows, Py_ssize_t inner)
    void cyscatter_rowsum_d(double* acc, const double* src, Py_ssize_t s_row, Py_ssize_t rows, Py_ssize_t inner)
    void cyscatter_prefetch_w(const void* p)
    void cyscatter_prefetch_r(const void* p)
    bint cyscatter_is_constant(Py_ssize_t x)
    bint cyscatter_can_stream()
    void cyscatter_stream_copy(void* dst, const void* src, size_t nbytes)
    void cyscatter_stream_fence()
    void cyscatter_row_max_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_min_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_max_d(double* dst, const double* src, Py_ssize_t width)
    void cyscatter_row_min_d(double* dst, const double* src, Py_ssize_t width)
    void cyscatter_row_fmax_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_fmin_f(float* dst, const float* src, Py_ssize_t width)
    void cyscatter_row_fmax_d(double* dst, const double* src, Py_ssize_t width)
    void cyscatter_row_fmin_d(double* dst, const double* src, Py_ssize_t width)
    int cyscatter_row_nanadd_f(float* dst, const float* src, Py_ssize_t width)
    int cyscatter_row_nanmul_f(float* dst, const float* src, Py_ssize_t width)
    int cyscatter_row_nanadd_d(double* dst, const double* src, Py_ssize_t width)
    int cyscatter_row_nanmul_d(double* dst, const double* src, Py_ssize_t width)

from cyscatter.kernels cimport (OpAdd, OpSub, OpMul, OpDiv, OpMax, OpMin, OpNanAdd, OpNanMul, OpFmax, OpFmin,
                                nan_to, nan_add, replaces_fmax, replaces_fmin, op_t, value_t, index_t, item_t, Layout,
                                OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, OP_NANADD, OP_NANMUL, OP_FMAX,
                                OP_FMIN, MODE_RAISE, MODE_DROP)

cdef extern from "numpy/arrayobject.h":
    # steals a reference to descr
    object PyArray_NewFromDescr(type subtype, cnp.dtype descr, int nd, cnp.npy_intp* dims,
                                cnp.npy_intp* strides, void* data, int flags, object obj)

import numpy as np

cnp.import_array()


cdef extern from *:
    """
    #ifndef CYSCATTER_DEBUG
    #define CYSCATTER_DEBUG 0
    #endif
    """
    int CYSCATTER_DEBUG

# True in a debug build (CYSCATTER_DEBUG=1 at build time): every memoryview access is bounds-checked, and a bad
# one is reported as an unraisable IndexError (the kernels are noexcept) instead of touching foreign memory.
BOUNDS_CHECKED = bool(CYSCATTER_DEBUG)


# ---- max / min element rules ----------------------------------------------------------------------------------
# NaN wins (NumPy's maximum/minimum) and -0.0 < +0.0, so the result does not depend on the order of the updates
# (np.maximum.at returns whichever zero came last; we deliberately do not).

cdef inline bint _replaces_max(value_t cur, value_t new) noexcept nogil:
    # bitwise & and | rather than `and`/`or`: no data-dependent branches, so the row loop can use selects
    if value_t is float or value_t is double:
        return ((new > cur) | ((new != new) & (cur == cur))
                | ((new == 0) & (cur == 0) & (signbit(cur) != 0) & (signbit(new) == 0)))
    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return new > cur
    else:
        return False


cdef inline bint _replaces_min(value_t cur, value_t new) noexcept nogil:
    if value_t is float or value_t is double:
        return ((new < cur) | ((new != new) & (cur == cur))
                | ((new == 0) & (cur == 0) & (signbit(new) != 0) & (signbit(cur) == 0)))
    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return new < cur
    else:
        return False


cdef inline void _extreme_row(op_t op, value_t* dst, const value_t* src, Py_ssize_t width) noexcept nogil:
    """dst = max (OpMax) or min (any other tag) of dst and src, elementwise, under the rules above; float rows
    use the SSE2 MAXPS/MINPS rows of `_cpu.h` (NOTES.md v10, v14)."""
    cdef Py_ssize_t f
    if value_t is float:
        if op_t is OpMax:
            cyscatter_row_max_f(dst, src, width)
        else:
            cyscatter_row_min_f(dst, src, width)
    elif value_t is double:
        if op_t is OpMax:
            cyscatter_row_max_d(dst, src, width)
        else:
            cyscatter_row_min_d(dst, src, width)
    elif op_t is OpMax:
        for f in range(width):
            dst[f] = src[f] if _replaces_max(dst[f], src[f]) else dst[f]   # a select, not a branch
    else:
        for f in range(width):
            dst[f] = src[f] if _replaces_min(dst[f], src[f]) else dst[f]   # a select, not a branch


# ---- threads ---------------------------------------------------------------------------------------------------
# Small calls run on one thread: starting the OpenMP team costs microseconds.
cdef enum:
    MAX_THREADS = 256
    CACHE_LINE = 64

cdef Py_ssize_t _min_work = 32768  # element updates per thread below which a call uses fewer threads
cdef int _default_threads = 0      # 0: OpenMP's default (OMP_NUM_THREADS, else the number of cores)
cdef int _prefetch_rows = -1       # distance, in index entries, of the row prefetch (-1: auto, 0: off)
cdef int _lean_vectors = 1
# float/double sums of several rows into one (segments here, the fused gather-scatter's CSR rows) keep the row
# in AVX2 registers (`_csrsum.h`); `_tune_registers` switches it off so that the tests compare the two loops
cdef bint _rows_registers = cyscatter_has_avx2() != 0


cdef bint registers_on() noexcept nogil:
    return _rows_registers
cdef int _stream = -1              # gather output with non-temporal stores (-1: auto, for outputs > 64 MB)
cdef int _src_ahead = -1           # src-row prefetch distance in a scatter (-1: auto, 0: off)
cdef int _scatter_split = 0        # 0 auto, 1 destination ranges, 2 feature columns (for the benchmarks)
cdef int _partition = -1           # destination-partitioned scatter: -1 auto, 0 off, 1 wherever possible
cdef Py_ssize_t _block_bytes = 256 * 1024   # destination block of one partition (a quarter of the L2)
# Machine-dependent thresholds, set at import by cyscatter._runtime.machine.apply (the rules and their figures are
# there); these initial values are the conservative ones of an unknown machine.
cdef size_t _stream_min_bytes = 0           # smallest gather output written with streaming stores (0: never)
cdef Py_ssize_t _l2_share = 256 * 1024      # tables up to this size are not prefetched (a quarter of the L2)
cdef Py_ssize_t _prefetch_bytes = 4096      # how far ahead the row prefetch reaches, in bytes of rows
cdef Py_ssize_t _partition_min_bytes = 4 << 20   # tables and srcs up to this size are not partitioned


# GNU OpenMP keeps its thread pool across fork() but not the pool's threads: a child forked after the parent
# started a team waits forever on the first team it starts (libgomp has no fork handler). So a child forked
# after a team ran here runs every call on one thread, which takes no pool; `_after_fork_in_child` (registered
# with os.register_at_fork by cyscatter._runtime.threads) sets the cap. A child of a parent that never started a team
# keeps its threads.
cdef bint _teams_started = False
cdef bint _forked_after_teams = False


cdef inline int _threads_for(int requested, Py_ssize_t work) noexcept nogil:
    """Threads for a call of `work` element updates: `requested` (0: default), fewer for small work, one in a
    child forked after a team ran."""
    cdef int t = requested if requested > 0 else _default_threads
    if _forked_after_teams:
        return 1
    if t <= 0:
        t = cyscatter_omp_max_threads()
    if work // _min_work < t:
        t = <int>(work // _min_work)
    return max(1, min(t, MAX_THREADS))


cdef inline int _team_size(int requested, Py_ssize_t work) noexcept nogil:
    """`_threads_for`, noting that a team of several threads is about to start."""
    global _teams_started
    cdef int t = _threads_for(requested, work)
    if t > 1 and not _teams_started:
        _teams_started = True
    return t


cdef int team_size(int requested, Py_ssize_t work) noexcept nogil:
    return _team_size(requested, work)


def _after_fork_in_child():
    """Called in a child process right after fork(): one thread per call from now on if a team ran before."""
    global _forked_after_teams
    if _teams_started:
        _forked_after_teams = True


def _teams_have_started():
    """True once a call of this process ran on several threads (what makes a forked child single-threaded)."""
    return bool(_teams_started)


cdef inline Py_ssize_t _prefetch_distance(Py_ssize_t row_bytes, Py_ssize_t rows, Py_ssize_t n) noexcept nogil:
    """Index entries to look ahead when prefetching table rows of `row_bytes` bytes (0: no prefetch).

    Measured (NOTES.md): rows that miss L2 gain 1.3-3x from a prefetch about 4 KB of rows ahead (16 rows of
    256 B, 64 of 4 B; `_prefetch_bytes`, which a calibration of the machine may change, the bounds scaling with
    it); a table that fits in a quarter of the L2 only pays for the extra instructions.
    """
    cdef Py_ssize_t ahead = _prefetch_rows
    if ahead < 0:
        if rows * row_bytes <= _l2_share:
            return 0
        ahead = cyscatter_rows_ahead(_prefetch_bytes, row_bytes)
    return ahead if ahead < n else 0


cdef inline Py_ssize_t _share(Py_ssize_t total, int parts, Py_ssize_t part) noexcept nogil:
    """Start of part `part` when [0, total) is cut into `parts` near-equal pieces."""
    return (total * part) // parts


cdef inline Py_ssize_t _first_error(const Py_ssize_t* status, int parts) noexcept nogil:
    cdef Py_ssize_t best = -1
    cdef int t
    for t in range(parts):
        if status[t] >= 0 and (best < 0 or status[t] < best):
            best = status[t]
    return best


# ---- scatter-reduce --------------------------------------------------------------------------------------------

cdef inline void _combine_n(op_t op, value_t* dst, const value_t* src, Py_ssize_t width) noexcept nogil:
    cdef Py_ssize_t f
    cdef value_t row[16]   # a cache line of the narrowest value type (4 bytes)
    cdef value_t one = 1
    if (not (op_t is OpMax or op_t is OpMin or op_t is OpFmax or op_t is OpFmin) and cyscatter_is_constant(width)
            and width * <Py_ssize_t>sizeof(value_t) <= CACHE_LINE):
        # src never overlaps dst (the Python layer copies src when they may share memory), but the C compiler
        # cannot know, and updates a short fixed-width row one scalar at a time. Reading src into a local first
        # tells it: the row is combined in vectors, 2-3x faster in a cached table. Only for rows of at most a
        # cache line of a width fixed at compile time: longer rows are vectorised with a run-time overlap test
        # already, and a copy of a variable width costs more than it gains (NOTES.md v16)
        for f in range(width):
            row[f] = src[f]
        src = row
    if op_t is OpAdd:
        for f in range(width):
            dst[f] = dst[f] + src[f]
    elif op_t is OpSub:
        for f in range(width):
            dst[f] = dst[f] - src[f]
    elif op_t is OpMul:
        if value_t is cython.doublecomplex:
            for f in range(width):
                dst[f] = cyscatter_cmul(dst[f], src[f])
        elif value_t is cython.floatcomplex:
            for f in range(width):
                dst[f] = cyscatter_cmulf(dst[f], src[f])
        else:
            for f in range(width):
                dst[f] = dst[f] * src[f]
    elif op_t is OpDiv:
        # integer division is never requested (NumPy true division: the Python layer widens to float64);
        # pruning it here keeps a C integer division by zero out of the binary altogether
        if value_t is int32_t or value_t is int64_t or value_t is uint64_t:
            pass
        elif value_t is cython.doublecomplex:
            for f in range(width):
                dst[f] = cyscatter_cdiv(dst[f], src[f])
        elif value_t is cython.floatcomplex:
            for f in range(width):
                dst[f] = cyscatter_cdivf(dst[f], src[f])
        else:
            for f in range(width):
                dst[f] = dst[f] / src[f]
    elif op_t is OpNanAdd:
        if value_t is float:   # SSE2 rows (_cpu.h)
            cyscatter_row_nanadd_f(dst, src, width)
        elif value_t is double:
            cyscatter_row_nanadd_d(dst, src, width)
        else:
            for f in range(width):
                dst[f] = nan_add(dst[f], src[f])
    elif op_t is OpNanMul:
        # complex: a NaN entry leaves dst as it is (a product with 1+0j is not exact: it can flip a zero's sign
        # or make a NaN part of dst spread to the other part)
        if value_t is cython.doublecomplex:
            for f in range(width):
                dst[f] = cyscatter_cmul(dst[f], src[f]) if src[f] == src[f] else dst[f]
        elif value_t is cython.floatcomplex:
            for f in range(width):
                dst[f] = cyscatter_cmulf(dst[f], src[f]) if src[f] == src[f] else dst[f]
        elif value_t is float:
            cyscatter_row_nanmul_f(dst, src, width)
        elif value_t is double:
            cyscatter_row_nanmul_d(dst, src, width)
        else:
            for f in range(width):
                dst[f] = dst[f] * nan_to(src[f], one)
    elif op_t is OpFmax:
        if value_t is float:   # SSE2 rows, as max's (_cpu.h)
            cyscatter_row_fmax_f(dst, src, width)
        elif value_t is double:
            cyscatter_row_fmax_d(dst, src, width)
        else:
            for f in range(width):
                dst[f] = src[f] if replaces_fmax(dst[f], src[f]) else dst[f]   # a select, not a branch
    elif op_t is OpFmin:
        if value_t is float:
            cyscatter_row_fmin_f(dst, src, width)
        elif value_t is double:
            cyscatter_row_fmin_d(dst, src, width)
        else:
            for f in range(width):
                dst[f] = src[f] if replaces_fmin(dst[f], src[f]) else dst[f]
    else:
        _extreme_row(op, dst, src, width)


cdef inline void _combine_row(op_t op, value_t* dst, const value_t* src, Py_ssize_t width) noexcept nogil:
    # constant widths let the C compiler unroll (and vectorise) common rows completely
    if width == 1:
        _combine_n(op, dst, src, 1)
    elif width == 2:
        _combine_n(op, dst, src, 2)
    elif width == 4:
        _combine_n(op, dst, src, 4)
    elif width == 8:
        _combine_n(op, dst, src, 8)
    elif width == 16:
        _combine_n(op, dst, src, 16)
    elif width == 32:
        _combine_n(op, dst, src, 32)
    elif width == 64:
        _combine_n(op, dst, src, 64)
    else:
        _combine_n(op, dst, src, width)


cdef void combine_rows(op_t op, value_t* dst, const value_t* src, Py_ssize_t rows, Py_ssize_t stride,
                       Py_ssize_t width) noexcept nogil:
    cdef Py_ssize_t p
    if op_t is OpAdd and (value_t is double or value_t is float):
        # several rows into one: the row in registers, each element's sum still in row order (the same bits);
        # one-element rows keep the scalar loop, which the masked vector loads would slow
        if _rows_registers and rows > 1 and width > 1:
            if value_t is double:
                cyscatter_rowsum_d(dst, src, stride, rows, width)
            else:
                cyscatter_rowsum_f(dst, src, stride, rows, width)
            return
    for p in range(rows):
        _combine_row(op, dst, src + p * stride, width)


cdef Py_ssize_t _scatter_part(op_t op, const value_t* src, const index_t* index, value_t* out, const Layout* L,
                              Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f0, Py_ssize_t f1, Py_ssize_t lo,
                              Py_ssize_t hi, int64_t* counts, int mode) noexcept nogil:
    """Apply, in index order, the entries whose destination row is in [lo, hi), to batch slices [o0, o1) and
    features [f0, f1). Counts (when asked) are taken on batch slice 0 by the part holding feature 0.

    Returns -1, or (MODE_RAISE) the first position k whose index is outside [0, size); every part of one call
    scans the whole index, so all parts report the same position.
    """
    cdef Py_ssize_t o, k, n = L.n, width = f1 - f0, line
    cdef Py_ssize_t lines = (width * <Py_ssize_t>sizeof(value_t) + CACHE_LINE - 1) // CACHE_LINE
    cdef Py_ssize_t ahead = _prefetch_distance(width * <Py_ssize_t>sizeof(value_t), L.size, n)
    # the src stream too, for rows of 1-4 cache lines (NOTES.md v6: +18% on sorted and skewed indices,
    # neutral at 4 lines, -15% at 8 lines of f64, no use under a line where hardware prefetch suffices)
    cdef Py_ssize_t src_ahead = _src_ahead
    if src_ahead < 0:
        src_ahead = ahead if CACHE_LINE <= width * <Py_ssize_t>sizeof(value_t) <= 4 * CACHE_LINE else 0
    cdef uint64_t span = <uint64_t>(hi - lo), size = <uint64_t>L.size
    cdef Py_ssize_t srs = L.entry_row_stride, ors = L.table_row_stride
    cdef index_t j, fetched = -1
    cdef const value_t* s
    cdef value_t* d
    cdef int64_t* cnt
    if (width == 1 or ahead == 0) and counts == NULL and lo == 0 and <uint64_t>hi == size and _lean_vectors:
        return _scatter_lean(op, src, index, out, L, o0, o1, f0, width, ahead, mode)
    for o in range(o0, o1):
        s = src + o * L.entry_outer_stride + f0
        d = out + o * L.table_outer_stride + f0
        cnt = counts if (o == 0 and f0 == 0) else NULL
        for k in range(n):
            if src_ahead and k + src_ahead < n:
                for line in range(lines):
                    cyscatter_prefetch_r(<const char*>(s + (k + src_ahead) * srs) + line * CACHE_LINE)
            if ahead and k + ahead < n:
                j = index[k + ahead]
                if <uint64_t>(j - lo) < span and j != fetched:   # runs of one row (sorted index): fetch once
                    fetched = j
                    for line in range(lines):
                        cyscatter_prefetch_w(<char*>(d + j * ors) + line * CACHE_LINE)
                    if cnt != NULL:
                        cyscatter_prefetch_w(cnt + j)
            j = index[k]
            if <uint64_t>(j - lo) >= span:
                if mode == MODE_RAISE and <uint64_t>j >= size:   # a negative j wraps to a huge unsigned value
                    return k
                continue
            if cnt != NULL:
                cnt[j] += 1
            _combine_row(op, d + j * ors, s + k * srs, width)
    return -1


cdef Py_ssize_t _scatter_lean(op_t op, const value_t* src, const index_t* index, value_t* out, const Layout* L,
                              Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f, Py_ssize_t width, Py_ssize_t ahead,
                              int mode) noexcept nogil:
    """_scatter_part for every destination row and no counts, when rows hold one element or the table is small
    enough to need no prefetch: the fewest instructions per entry, so that out-of-order execution keeps many
    updates in flight (NOTES.md v7, v15). One loop per common width, so that the row update is unrolled."""
    if width == 1:
        return _scatter_elements(op, src, index, out, L, o0, o1, f, ahead, mode)
    elif width == 2:
        return _scatter_rows_lean(op, src, index, out, L, o0, o1, f, 2, mode)
    elif width == 4:
        return _scatter_rows_lean(op, src, index, out, L, o0, o1, f, 4, mode)
    elif width == 8:
        return _scatter_rows_lean(op, src, index, out, L, o0, o1, f, 8, mode)
    elif width == 16:
        return _scatter_rows_lean(op, src, index, out, L, o0, o1, f, 16, mode)
    elif width == 32:
        return _scatter_rows_lean(op, src, index, out, L, o0, o1, f, 32, mode)
    elif width == 64:
        return _scatter_rows_lean(op, src, index, out, L, o0, o1, f, 64, mode)
    return _scatter_rows_lean(op, src, index, out, L, o0, o1, f, width, mode)


cdef inline Py_ssize_t _scatter_rows_lean(op_t op, const value_t* src, const index_t* index, value_t* out,
                                          const Layout* L, Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f,
                                          Py_ssize_t width, int mode) noexcept nogil:
    cdef Py_ssize_t o, k, n = L.n, srs = L.entry_row_stride, ors = L.table_row_stride
    cdef uint64_t size = <uint64_t>L.size
    cdef index_t j
    cdef const value_t* s
    cdef value_t* d
    for o in range(o0, o1):
        s = src + o * L.entry_outer_stride + f
        d = out + o * L.table_outer_stride + f
        for k in range(n):
            j = index[k]
            if <uint64_t>j >= size:
                if mode == MODE_RAISE:
                    return k
                continue
            _combine_n(op, d + j * ors, s + k * srs, width)
    return -1


cdef Py_ssize_t _scatter_elements(op_t op, const value_t* src, const index_t* index, value_t* out,
                                  const Layout* L, Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f, Py_ssize_t ahead,
                                  int mode) noexcept nogil:
    """One element per row, with the destination prefetched `ahead` entries early when the table misses L2."""
    cdef Py_ssize_t o, k, n = L.n, srs = L.entry_row_stride, ors = L.table_row_stride
    cdef Py_ssize_t stop = n - ahead if ahead else n
    cdef uint64_t size = <uint64_t>L.size
    cdef index_t j, jp
    cdef const value_t* s
    cdef value_t* d
    for o in range(o0, o1):
        s = src + o * L.entry_outer_stride + f
        d = out + o * L.table_outer_stride + f
        for k in range(n):
            if k < stop and ahead:
                jp = index[k + ahead]
                cyscatter_prefetch_w(d + (jp if <uint64_t>jp < size else 0) * ors)
            j = index[k]
            if <uint64_t>j >= size:
                if mode == MODE_RAISE:
                    return k
                continue
            _combine_n(op, d + j * ors, s + k * srs, 1)
    return -1


cdef Py_ssize_t scatter_reduce_layout(op_t op, const value_t* src, const index_t* index, value_t* out,
                                      const Layout* L, int64_t* counts, int mode,
                                      int num_threads) noexcept nogil:
    """out[o, index[k], :] = op(out[o, index[k], :], src[o, k, :]); counts[index[k]] += 1 when counts != NULL.

    Threads never share a destination element, so no atomics are needed and each element sees its updates in
    index order: batch slices are split among threads when there are enough of them, else feature columns
    (whole cache lines) when rows are wide, else destination row ranges; rows narrower than a cache line stay
    on one thread.
    """
    cdef Py_ssize_t outer = L.outer, inner = L.inner, size = L.size
    cdef int parts = _team_size(num_threads, outer * L.n * max(inner, 1)), t, split = 0
    cdef Py_ssize_t status[MAX_THREADS]
    cdef Py_ssize_t block = CACHE_LINE // sizeof(value_t), lead = 0, done
    if outer == 0 or inner == 0:
        return check_and_count(index, L.n, size, counts, mode)   # nothing to write
    if counts != NULL and (inner == 1 or _prefetch_distance(inner * <Py_ssize_t>sizeof(value_t), size, L.n) == 0):
        # the lean loops (one-element rows, tables that need no prefetch) take no counts: a pass of its own
        # costs less than the general loop would (W2-sized mean 153 -> 55 ms, NOTES.md v17); rows that need
        # prefetch count inside their loop, where it was measured free
        done = scatter_reduce_layout(op, src, index, out, L, NULL, mode, num_threads)
        return done if done >= 0 else check_and_count(index, L.n, size, counts, mode)
    if _partitions(L, inner * <Py_ssize_t>sizeof(value_t), parts):
        done = _scatter_partitioned(op, src, index, out, L, counts, mode, parts)
        if done != NOT_DONE:
            return done
    if parts == 1:
        return _scatter_part(op, src, index, out, L, 0, max(outer, 1), 0, inner, 0, size, counts, mode)
    # Measured (NOTES.md, CPU time of both threads against one): column blocks cost little once each thread
    # gets >= 256 B of a row, less wide blocks make each thread stream most of src anyway; row ranges cost
    # one unpredictable branch per entry and are even worse for rows under a cache line, kept on one thread.
    if outer >= parts:
        split = 0
    elif inner >= parts * 2 * block and (_scatter_split == 2 or
                                         (_scatter_split == 0 and inner * <Py_ssize_t>sizeof(value_t) >= parts * 256)):
        split = 2
        # features before the first cache-line boundary of a row go with the first block
        lead = ((CACHE_LINE - (<size_t>out) % CACHE_LINE) % CACHE_LINE) // sizeof(value_t)
    elif _scatter_split == 1 or inner * <Py_ssize_t>sizeof(value_t) >= CACHE_LINE:
        split = 1
    else:
        return _scatter_part(op, src, index, out, L, 0, outer, 0, inner, 0, size, counts, mode)
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        if split == 0:
            status[t] = _scatter_part(op, src, index, out, L, _share(outer, parts, t),
                                      _share(outer, parts, t + 1), 0, inner, 0, size, counts, mode)
        elif split == 2:
            status[t] = _scatter_part(op, src, index, out, L, 0, outer,
                                      _feature_cut(inner, parts, t, block, lead),
                                      _feature_cut(inner, parts, t + 1, block, lead), 0, size, counts, mode)
        else:
            status[t] = _scatter_part(op, src, index, out, L, 0, outer, 0, inner, _share(size, parts, t),
                                      _share(size, parts, t + 1), counts, mode)
    return _first_error(status, parts)


# ---- destination-partitioned scatter -----------------------------------------------------------------------
# A large table (the output) takes one cache miss per entry and row line, read and later written back. A stable
# counting sort of the entries by destination block (a few hundred KB of rows) first lets each block stay in L2
# while all of its entries are applied, in index order, so the result is bitwise the same; the misses move to
# the src rows, which are only read. Blocks are disjoint, so threads take whole blocks without atomics. Extra
# memory: 8 B per entry (entry position and row, packed) plus a histogram per thread, from PyMem_Raw* (no GIL
# needed, and tracemalloc sees it); when it cannot be allocated the direct loop runs instead.

cdef enum:
    NOT_DONE = -2                     # internal status: the partitioned kernel declined, run the direct loop


cdef inline bint _partitions(const Layout* L, Py_ssize_t row_bytes, int parts) noexcept nogil:
    """Whether scatter_reduce_layout sorts the entries by destination block first.

    Measured (NOTES.md v9): on one thread random src-row reads cost as much as the destination misses they
    replace (W1 f32 74 vs 48 ms), so never; on two threads it beats the column split that wide rows would
    otherwise get (512 B rows: 1.16-1.33x) but not the row-range split of narrower rows (0.88-1.13x). Tables
    and srcs up to `_partition_min_bytes` (half the last-level cache) are left to the direct loop, which keeps
    them cached: on an EPYC with an 8 MiB L3, partitioned / direct at 2 threads, 512 B rows, 4e5 entries, 1.18-
    1.35 for 0.5-2 MB tables, 1.08 at 3 MB, 0.98 at 4 MB, 0.87 at 5 MB, 0.72 at 8 MB (NOTES.md v27).
    """
    cdef Py_ssize_t least = _partition_min_bytes
    if _partition == 0 or L.outer != 1 or (L.n >> 32) != 0 or (L.size >> 32) != 0 or row_bytes < CACHE_LINE:
        return False
    if _partition == 1:
        return True
    return (parts >= 2 and row_bytes >= parts * 256 and L.size * row_bytes > least
            and L.n * row_bytes > least)


cdef Py_ssize_t _bucket_counts(const index_t* index, Py_ssize_t k0, Py_ssize_t k1, uint64_t size, int shift,
                               Py_ssize_t* hist, int mode, bint* unsorted) noexcept nogil:
    """hist[b] += entries of [k0, k1) in block b; -1 or the first out-of-range position (MODE_RAISE)."""
    cdef Py_ssize_t k
    cdef index_t j, prev = 0
    cdef bint descents = False
    for k in range(k0, k1):
        j = index[k]
        if <uint64_t>j >= size:
            if mode == MODE_RAISE:
                return k
            continue
        descents |= j < prev
        prev = j
        hist[j >> shift] += 1
    unsorted[0] = descents
    return -1


cdef void _bucket_fill(const index_t* index, Py_ssize_t k0, Py_ssize_t k1, uint64_t size, int shift,
                       Py_ssize_t* next_slot, uint64_t* perm) noexcept nogil:
    """perm[next_slot[block]++] = (k << 32) | row for the valid entries of [k0, k1), in index order."""
    cdef Py_ssize_t k
    cdef index_t j
    for k in range(k0, k1):
        j = index[k]
        if <uint64_t>j < size:
            perm[next_slot[j >> shift]] = (<uint64_t>k << 32) | <uint64_t>j
            next_slot[j >> shift] += 1


cdef void _apply_sorted(op_t op, const value_t* src, value_t* out, const Layout* L, const uint64_t* perm,
                        Py_ssize_t i0, Py_ssize_t i1, int64_t* counts) noexcept nogil:
    """Apply the entries perm[i0:i1] (grouped by destination block, index order inside each row)."""
    cdef Py_ssize_t i, k, j, line, width = L.inner
    cdef Py_ssize_t srs = L.entry_row_stride, ors = L.table_row_stride
    cdef Py_ssize_t lines = (width * <Py_ssize_t>sizeof(value_t) + CACHE_LINE - 1) // CACHE_LINE
    cdef Py_ssize_t ahead = _src_ahead if _src_ahead >= 0 else 16
    cdef uint64_t e
    for i in range(i0, i1):
        if ahead and i + ahead < i1:
            e = perm[i + ahead]
            for line in range(lines):
                cyscatter_prefetch_r(<const char*>(src + <Py_ssize_t>(e >> 32) * srs) + line * CACHE_LINE)
            cyscatter_prefetch_w(out + <Py_ssize_t>(e & 0xFFFFFFFFu) * ors)
        e = perm[i]
        k = <Py_ssize_t>(e >> 32)
        j = <Py_ssize_t>(e & 0xFFFFFFFFu)
        if counts != NULL:
            counts[j] += 1
        _combine_row(op, out + j * ors, src + k * srs, width)


cdef Py_ssize_t _scatter_partitioned(op_t op, const value_t* src, const index_t* index, value_t* out,
                                     const Layout* L, int64_t* counts, int mode, int parts) noexcept nogil:
    """scatter_reduce_layout for one batch slice by destination blocks; NOT_DONE when it declines (memory, or
    an index already in order, which the direct loop reads block by block anyway)."""
    cdef Py_ssize_t n = L.n, row_bytes = L.inner * <Py_ssize_t>sizeof(value_t)
    cdef uint64_t size = <uint64_t>L.size
    cdef int shift = 0, t
    cdef Py_ssize_t nb, stride, b, c, pos, err
    cdef Py_ssize_t status[MAX_THREADS]
    cdef Py_ssize_t cut[MAX_THREADS + 1]
    cdef bint unsorted[MAX_THREADS]
    cdef bint any_unsorted = False
    while shift < 30 and (row_bytes << (shift + 1)) <= _block_bytes:
        shift += 1
    nb = <Py_ssize_t>((size - 1) >> shift) + 1
    stride = nb
    # one histogram per thread, then where each block starts (nb + 1 values)
    cdef Py_ssize_t* hist = <Py_ssize_t*>PyMem_RawCalloc(parts * stride + nb + 1, sizeof(Py_ssize_t))
    cdef Py_ssize_t* starts = hist + parts * stride if hist != NULL else NULL
    cdef uint64_t* perm = NULL
    if hist == NULL:
        return NOT_DONE
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        unsorted[t] = False
        status[t] = _bucket_counts(index, _share(n, parts, t), _share(n, parts, t + 1), size, shift,
                                   hist + t * stride, mode, &unsorted[t])
    err = _first_error(status, parts)
    for t in range(parts):
        any_unsorted |= unsorted[t]
    if err >= 0 or not any_unsorted:
        PyMem_RawFree(hist)
        return err if err >= 0 else NOT_DONE
    # slots in (block, thread) order: a block's entries from an earlier chunk come first, keeping index order
    pos = 0
    for b in range(nb):
        starts[b] = pos
        for t in range(parts):
            c = hist[t * stride + b]
            hist[t * stride + b] = pos
            pos += c
    starts[nb] = pos
    perm = <uint64_t*>PyMem_RawMalloc(max(pos, 1) * sizeof(uint64_t))
    if perm == NULL:
        PyMem_RawFree(hist)
        return NOT_DONE
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _bucket_fill(index, _share(n, parts, t), _share(n, parts, t + 1), size, shift, hist + t * stride, perm)
    # each thread a run of whole blocks holding about 1/parts of the entries
    b = 0
    cut[0] = 0
    for t in range(1, parts):
        while b < nb and starts[b] < _share(pos, parts, t):
            b += 1
        cut[t] = starts[b]
    cut[parts] = pos
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _apply_sorted(op, src, out, L, perm, cut[t], cut[t + 1], counts)
    PyMem_RawFree(perm)
    PyMem_RawFree(hist)
    return -1


cdef Py_ssize_t check_and_count(const index_t* index, Py_ssize_t n, Py_ssize_t size, int64_t* counts,
                                 int mode) noexcept nogil:
    cdef Py_ssize_t k
    cdef index_t j
    for k in range(n):
        j = index[k]
        if <uint64_t>j >= <uint64_t>size:
            if mode == MODE_RAISE:
                return k
            continue
        if counts != NULL:
            counts[j] += 1
    return -1


cdef inline Py_ssize_t _feature_cut(Py_ssize_t inner, int parts, Py_ssize_t part, Py_ssize_t block,
                                    Py_ssize_t lead) noexcept nogil:
    """Feature column where part `part` starts: whole cache lines per part (the first takes the lead-in)."""
    cdef Py_ssize_t blocks
    if part == 0:
        return 0
    if part == parts:
        return inner
    blocks = (inner - lead) // block
    return min(inner, lead + ((blocks * part) // parts) * block)


cdef inline void _view_layout(Layout* L, const Py_ssize_t* entry_shape, const Py_ssize_t* entry_strides,
                              Py_ssize_t size, const Py_ssize_t* table_strides, size_t item) noexcept nogil:
    """Layout of memoryview operands: the entry side's (outer, n, inner) shape, the table's row count."""
    L.outer, L.n, L.inner, L.size = entry_shape[0], entry_shape[1], entry_shape[2], size
    L.entry_outer_stride, L.entry_row_stride = entry_strides[0] // item, entry_strides[1] // item
    L.table_outer_stride, L.table_row_stride = table_strides[0] // item, table_strides[1] // item


cdef Py_ssize_t scatter_reduce_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                    value_t[:, :, ::contiguous] out, int64_t* counts, int mode) noexcept nogil:
    """scatter_reduce_layout on memoryviews, on one thread (the entry point for cimporting code)."""
    cdef Layout L
    _view_layout(&L, src.shape, src.strides, out.shape[1], out.strides, sizeof(value_t))
    if L.n == 0:
        return -1
    return scatter_reduce_layout(op, &src[0, 0, 0] if L.outer and L.inner else NULL, &index[0],
                                 &out[0, 0, 0] if L.outer and L.inner and L.size else NULL, &L, counts, mode, 1)


cdef Py_ssize_t first_out_of_range(const index_t[::1] index, Py_ssize_t size) noexcept nogil:
    """Position of the first entry outside [0, size), or -1."""
    return _first_out_of_range(&index[0] if index.shape[0] else NULL, index.shape[0], size)


cdef inline index_t _index_max(const index_t* index) noexcept nogil:
    if index_t is int32_t:
        return 2147483647
    else:
        return 9223372036854775807


cdef inline bint _any_out_of_range(const index_t* index, Py_ssize_t n, index_t last) noexcept nogil:
    # j is in [0, last] exactly when neither j nor last - j is negative: a sign test on an or of differences,
    # which SSE2 vectorises (it has no unsigned 64-bit compare, so `<uint64_t>j >= size` stayed scalar: the scan
    # is now 1.6x faster on int64, 4.4x on int32)
    cdef Py_ssize_t k
    cdef index_t acc = 0
    for k in range(n):
        acc |= index[k] | (last - index[k])
    return acc < 0


cdef inline Py_ssize_t _first_out_of_range(const index_t* index, Py_ssize_t n, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t k
    cdef uint64_t usize = <uint64_t>size
    cdef index_t last
    cdef bint bad = False
    if size <= 0:
        return 0 if n else -1
    # the largest valid entry, in the index's own type (an int32 index cannot exceed 2**31 - 1)
    last = <index_t>(size - 1) if size - 1 <= <Py_ssize_t>_index_max(index) else _index_max(index)
    # an unbranched scan of blocks (vectorisable), then the exact position inside the first bad block
    for k in range(0, n - n % 256, 256):
        bad = _any_out_of_range(index + k, 256, last)
        if bad:
            break
    if not bad:
        k = n - n % 256
    for k in range(k, n):
        if <uint64_t>index[k] >= usize:
            return k
    return -1


# ---- gather ----------------------------------------------------------------------------------------------------

cdef inline void _gather_loop(const item_t* src, const index_t* index, item_t* out, const Layout* L,
                              Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t k0, Py_ssize_t k1, Py_ssize_t width,
                              Py_ssize_t ahead, bint stream) noexcept nogil:
    cdef Py_ssize_t o, k, line
    cdef uint64_t size = <uint64_t>L.size
    cdef Py_ssize_t lines = (width * <Py_ssize_t>sizeof(item_t) + CACHE_LINE - 1) // CACHE_LINE
    cdef Py_ssize_t trs = L.table_row_stride, ers = L.entry_row_stride
    cdef index_t j
    cdef const item_t* s
    cdef item_t* d
    for o in range(o0, o1):
        s = src + o * L.table_outer_stride
        d = out + o * L.entry_outer_stride
        for k in range(k0, k1):
            if ahead and k + ahead < k1:
                j = index[k + ahead]
                if <uint64_t>j < size:
                    for line in range(lines):
                        cyscatter_prefetch_r(<const char*>(s + j * trs) + line * CACHE_LINE)
            j = index[k]
            if <uint64_t>j < size:
                if stream:
                    cyscatter_stream_copy(d + k * ers, s + j * trs, width * sizeof(item_t))
                else:
                    memcpy(d + k * ers, s + j * trs, width * sizeof(item_t))
    if stream:
        cyscatter_stream_fence()


cdef void _gather_part(const item_t* src, const index_t* index, item_t* out, const Layout* L, Py_ssize_t o0,
                       Py_ssize_t o1, Py_ssize_t k0, Py_ssize_t k1, bint stream) noexcept nogil:
    """out[o, k, :] = src[o, index[k], :] for o in [o0, o1), k in [k0, k1); entries out of range are skipped.

    One loop per common row width, chosen once per call: a fixed width turns the row copy into a few moves
    instead of a call into memcpy, and a per-entry choice of width cost 2-4x on narrow rows (NOTES.md v16).
    """
    cdef Py_ssize_t width = L.inner
    cdef Py_ssize_t ahead = _prefetch_distance(width * <Py_ssize_t>sizeof(item_t), L.size, k1 - k0)
    if stream:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, width, ahead, True)
    elif width == 1:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, 1, ahead, False)
    elif width == 2:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, 2, ahead, False)
    elif width == 4:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, 4, ahead, False)
    elif width == 8:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, 8, ahead, False)
    elif width == 16:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, 16, ahead, False)
    elif width == 32:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, 32, ahead, False)
    else:
        _gather_loop(src, index, out, L, o0, o1, k0, k1, width, ahead, False)


cdef bint _streams(const void* out, const Layout* L, size_t item) noexcept nogil:
    """Write the gather output with non-temporal stores: it is far larger than the caches (so the lines would
    be evicted unread anyway) and every row is 16-byte aligned."""
    cdef size_t row = L.inner * item, total = L.outer * L.n * row
    if _stream == 0 or not cyscatter_can_stream():
        return False
    if (row % 16 or (<size_t>out) % 16 or (L.entry_row_stride * item) % 16
            or (L.entry_outer_stride * item) % 16):
        return False
    return _stream == 1 or (_stream_min_bytes > 0 and total >= _stream_min_bytes)


cdef Py_ssize_t gather_layout(const item_t* src, const index_t* index, item_t* out, const Layout* L,
                              int mode, int num_threads) noexcept nogil:
    """out[o, k, :] = src[o, index[k], :]. Returns -1 or (MODE_RAISE) the first bad position, before writing.

    Each output row is written by one thread: batch slices are split when there are enough, else entries.
    """
    cdef Py_ssize_t outer = L.outer, n = L.n, k
    cdef int parts = _team_size(num_threads, outer * n * max(L.inner, 1) * sizeof(item_t) // 4), t
    cdef bint stream
    if mode == MODE_RAISE:
        k = _first_out_of_range(index, n, L.size)
        if k >= 0:
            return k
    if L.inner == 0 or outer == 0 or n == 0:
        return -1
    stream = _streams(out, L, sizeof(item_t))
    if parts == 1:
        _gather_part(src, index, out, L, 0, outer, 0, n, stream)
    elif outer >= parts:
        for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
            _gather_part(src, index, out, L, _share(outer, parts, t), _share(outer, parts, t + 1), 0, n, stream)
    else:
        for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
            _gather_part(src, index, out, L, 0, outer, _share(n, parts, t), _share(n, parts, t + 1), stream)
    return -1


cdef Py_ssize_t gather_rows(const item_t[:, :, ::contiguous] src, const index_t[::1] index, item_t[:, :, ::contiguous] out,
                            int mode) noexcept nogil:
    """gather_layout on memoryviews, on one thread (the entry point for cimporting code)."""
    cdef Layout L
    _view_layout(&L, out.shape, out.strides, src.shape[1], src.strides, sizeof(item_t))
    if L.n == 0 or L.outer == 0 or L.inner == 0:
        return first_out_of_range(index, L.size) if mode == MODE_RAISE else -1
    return gather_layout(&src[0, 0, 0] if L.size else NULL, &index[0], &out[0, 0, 0], &L, mode, 1)


# ---- reverse-mode helpers --------------------------------------------------------------------------------------

cdef void group_exclusive_products(const value_t[:, :, ::contiguous] src, const int64_t[::1] order,
                                   const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials) noexcept nogil:
    """partials[o, k, :] = product of src[o, k', :] over the other members k' of k's group, in group order.

    Groups are order[indptr[g]:indptr[g + 1]]. Prefix times suffix products: exact with zeros, no division.
    """
    cdef Py_ssize_t outer = src.shape[0], inner = src.shape[2], ngroups = indptr.shape[0] - 1
    cdef Py_ssize_t o, g, p, f, pos
    cdef value_t acc
    if inner == 0:
        return
    for o in range(outer):
        for g in range(ngroups):
            for f in range(inner):
                acc = 1
                for p in range(indptr[g + 1] - 1, indptr[g] - 1, -1):
                    pos = order[p]
                    partials[o, pos, f] = acc
                    acc = acc * src[o, pos, f]
                acc = 1
                for p in range(indptr[g], indptr[g + 1]):
                    pos = order[p]
                    partials[o, pos, f] = partials[o, pos, f] * acc
                    acc = acc * src[o, pos, f]


cdef void group_exclusive_products_jvp(const value_t[:, :, ::contiguous] src,
                                       const value_t[:, :, ::contiguous] tangent, const int64_t[::1] order,
                                       const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials,
                                       value_t[:, :, ::contiguous] partials_dot) noexcept nogil:
    """`group_exclusive_products` and its derivative along `tangent`, in dual-number arithmetic.

    partials_dot[o, k, :] = sum over the other members m of k's group of tangent[m] times the product of the
    members other than k and m: the second derivatives of a group product applied to `tangent`, exact with zeros.
    """
    cdef Py_ssize_t outer = src.shape[0], inner = src.shape[2], ngroups = indptr.shape[0] - 1
    cdef Py_ssize_t o, g, p, f, pos
    cdef value_t acc, acc_dot, s
    if inner == 0:
        return
    for o in range(outer):
        for g in range(ngroups):
            for f in range(inner):
                acc = 1
                acc_dot = 0
                for p in range(indptr[g + 1] - 1, indptr[g] - 1, -1):
                    pos = order[p]
                    partials[o, pos, f] = acc
                    partials_dot[o, pos, f] = acc_dot
                    s = src[o, pos, f]
                    acc_dot = acc_dot * s + acc * tangent[o, pos, f]
                    acc = acc * s
                acc = 1
                acc_dot = 0
                for p in range(indptr[g], indptr[g + 1]):
                    pos = order[p]
                    partials_dot[o, pos, f] = partials_dot[o, pos, f] * acc + partials[o, pos, f] * acc_dot
                    partials[o, pos, f] = partials[o, pos, f] * acc
                    s = src[o, pos, f]
                    acc_dot = acc_dot * s + acc * tangent[o, pos, f]
                    acc = acc * s


# ---- Python entry points ---------------------------------------------------------------------------------------
# They take ndarrays and check them with the NumPy C API (cheaper per call than typed memoryviews, which matters
# for small inputs), then dispatch on the dtype codes to the fused kernels.

cdef enum ValueCode:
    V_FLOAT32, V_FLOAT64, V_INT32, V_INT64, V_UINT64, V_COMPLEX64, V_COMPLEX128, V_NONE


cdef ValueCode _value_code(cnp.ndarray a):
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(a)
    if not cnp.PyArray_ISNOTSWAPPED(a):
        return V_NONE
    if cnp.PyArray_ISFLOAT(a):
        return V_FLOAT32 if size == 4 else V_FLOAT64 if size == 8 else V_NONE
    if cnp.PyArray_ISSIGNED(a):
        return V_INT32 if size == 4 else V_INT64 if size == 8 else V_NONE
    if cnp.PyArray_ISUNSIGNED(a) and not cnp.PyArray_ISBOOL(a):
        return V_UINT64 if size == 8 else V_NONE
    if cnp.PyArray_ISCOMPLEX(a):
        return V_COMPLEX64 if size == 8 else V_COMPLEX128 if size == 16 else V_NONE
    return V_NONE


cdef int _index_width(cnp.ndarray index) except -1:
    """4 or 8: the byte width of a C-contiguous, native int32/int64 index vector (TypeError otherwise)."""
    if (cnp.PyArray_NDIM(index) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(index) or not cnp.PyArray_ISNOTSWAPPED(index)
            or not cnp.PyArray_ISSIGNED(index) or cnp.PyArray_ITEMSIZE(index) not in (4, 8)):
        raise TypeError(f"kernel index must be a contiguous native int32/int64 vector, got {(<object>index).dtype} "
                        f"{(<object>index).shape}")
    return cnp.PyArray_ITEMSIZE(index)


cdef int _rows3(cnp.ndarray a, Py_ssize_t item, Py_ssize_t* outer_stride, Py_ssize_t* row_stride,
                str arg) except -1:
    """Strides of a 3-d canonical operand in items; its inner dim must be unit-strided (or at most 1 long)."""
    cdef cnp.npy_intp* strides = cnp.PyArray_STRIDES(a)
    if cnp.PyArray_NDIM(a) != 3:
        raise ValueError(f"kernel {arg} must be 3-d (outer, rows, inner), got shape {(<object>a).shape}")
    if cnp.PyArray_SIZE(a) == 0:   # nothing is addressed: NumPy gives empty arrays arbitrary strides
        outer_stride[0] = row_stride[0] = 0
        return 0
    if (strides[2] != item and cnp.PyArray_DIM(a, 2) > 1) or strides[0] % item or strides[1] % item \
            or (<size_t>cnp.PyArray_DATA(a)) % item:
        raise ValueError(f"kernel {arg} must have aligned strides and a unit inner stride, got {(<object>a).strides}")
    outer_stride[0] = strides[0] // item
    row_stride[0] = strides[1] // item
    return 0


cdef int _layout(cnp.ndarray entries, cnp.ndarray table, cnp.ndarray index, Py_ssize_t item,
                 Layout* L) except -1:
    """Fill `L` from the entry-side and table-side operands, checking that their shapes agree."""
    _rows3(entries, item, &L.entry_outer_stride, &L.entry_row_stride, "entry operand")
    _rows3(table, item, &L.table_outer_stride, &L.table_row_stride, "table operand")
    L.outer = cnp.PyArray_DIM(entries, 0)
    L.n = cnp.PyArray_DIM(entries, 1)
    L.inner = cnp.PyArray_DIM(entries, 2)
    L.size = cnp.PyArray_DIM(table, 1)
    if cnp.PyArray_DIM(table, 0) != L.outer or cnp.PyArray_DIM(table, 2) != L.inner \
            or cnp.PyArray_DIM(index, 0) != L.n:
        raise ValueError(f"kernel operands disagree: {(<object>entries).shape} and {(<object>table).shape} with index {(<object>index).shape}")
    return 0


cdef Py_ssize_t _scatter_op(int opcode, const value_t* src, const index_t* index, value_t* out, const Layout* L,
                            int64_t* counts, int mode, int threads) noexcept nogil:
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
    if opcode == OP_ADD:
        return scatter_reduce_layout(add, src, index, out, L, counts, mode, threads)
    elif opcode == OP_NANADD:
        return scatter_reduce_layout(nanadd, src, index, out, L, counts, mode, threads)
    elif opcode == OP_NANMUL:
        return scatter_reduce_layout(nanmul, src, index, out, L, counts, mode, threads)
    elif opcode == OP_FMAX:
        return scatter_reduce_layout(fmx, src, index, out, L, counts, mode, threads)
    elif opcode == OP_FMIN:
        return scatter_reduce_layout(fmn, src, index, out, L, counts, mode, threads)
    elif opcode == OP_SUB:
        return scatter_reduce_layout(sub, src, index, out, L, counts, mode, threads)
    elif opcode == OP_MUL:
        return scatter_reduce_layout(mul, src, index, out, L, counts, mode, threads)
    elif opcode == OP_DIV:
        return scatter_reduce_layout(div, src, index, out, L, counts, mode, threads)
    elif opcode == OP_MAX:
        return scatter_reduce_layout(mx, src, index, out, L, counts, mode, threads)
    else:
        return scatter_reduce_layout(mn, src, index, out, L, counts, mode, threads)


cdef Py_ssize_t _scatter_value(int opcode, ValueCode code, const void* src, const index_t* index, void* out,
                               const Layout* L, int64_t* counts, int mode, int threads) noexcept nogil:
    if code == V_FLOAT32:
        return _scatter_op(opcode, <const float*>src, index, <float*>out, L, counts, mode, threads)
    elif code == V_FLOAT64:
        return _scatter_op(opcode, <const double*>src, index, <double*>out, L, counts, mode, threads)
    elif code == V_INT32:
        return _scatter_op(opcode, <const int32_t*>src, index, <int32_t*>out, L, counts, mode, threads)
    elif code == V_INT64:
        return _scatter_op(opcode, <const int64_t*>src, index, <int64_t*>out, L, counts, mode, threads)
    elif code == V_UINT64:
        return _scatter_op(opcode, <const uint64_t*>src, index, <uint64_t*>out, L, counts, mode, threads)
    elif code == V_COMPLEX64:
        return _scatter_op(opcode, <const float complex*>src, index, <float complex*>out, L, counts, mode,
                           threads)
    else:
        return _scatter_op(opcode, <const double complex*>src, index, <double complex*>out, L, counts, mode,
                           threads)


def scatter_reduce(int opcode, cnp.ndarray src not None, cnp.ndarray index not None, cnp.ndarray out not None,
                   cnp.ndarray counts=None, int mode=MODE_RAISE, int num_threads=0):
    """Run the scatter-reduce kernel for `opcode` (an OpCode) on canonical (outer, rows, inner) arrays of one
    kernel dtype; `counts` (int64, one per destination row) counts the entries. Returns -1 or the first bad
    index position."""
    cdef Layout L
    cdef ValueCode code = _value_code(src)
    cdef int width = _index_width(index)
    cdef int64_t* counts_ptr = NULL
    cdef Py_ssize_t status
    cdef void* src_ptr = cnp.PyArray_DATA(src)
    cdef void* out_ptr = cnp.PyArray_DATA(out)
    cdef void* index_ptr = cnp.PyArray_DATA(index)
    if code == V_NONE or _value_code(out) != code:
        raise TypeError(f"scatter kernel has no loop for src {(<object>src).dtype} into out {(<object>out).dtype}")
    if not (OP_ADD <= opcode <= OP_MIN or OP_NANADD <= opcode <= OP_FMIN):
        raise ValueError(f"unknown op code {opcode}")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("kernel out is read-only")
    _layout(src, out, index, cnp.PyArray_ITEMSIZE(src), &L)
    if counts is not None:
        if (cnp.PyArray_TYPE(counts) != cnp.NPY_INT64 or cnp.PyArray_NDIM(counts) != 1
                or not cnp.PyArray_IS_C_CONTIGUOUS(counts) or cnp.PyArray_DIM(counts, 0) != L.size
                or not cnp.PyArray_ISWRITEABLE(counts)):
            raise ValueError(f"kernel counts must be a writeable contiguous int64 vector of length {L.size}")
        counts_ptr = <int64_t*>cnp.PyArray_DATA(counts)
    with nogil:
        if width == 4:
            status = _scatter_value(opcode, code, src_ptr, <const int32_t*>index_ptr, out_ptr, &L, counts_ptr,
                                    mode, num_threads)
        else:
            status = _scatter_value(opcode, code, src_ptr, <const int64_t*>index_ptr, out_ptr, &L, counts_ptr,
                                    mode, num_threads)
    return status


# ---- staged scatter: src converted and laid out a block at a time ----------------------------------------------
# A src the kernels cannot read as it is (float16/bfloat16 accumulating in float32, a dtype= or small-integer
# widening, a Fortran-ordered or otherwise strided src, features-first data with one-element rows) used to be
# converted whole into an n x F array of the kernel's dtype first. Here blocks of rows that fit a share of the L2
# are converted into one buffer and scattered from it while cached; the blocks go in index order, so every
# destination element sees its updates in the same order as before: the same bits. Features-first data (inner
# == 1, outer > 1) is read as rows of the transposed problem (n rows of `outer` elements) into a transposed
# table, copied in from and back to `out`: one pass over the index instead of one per outer row.

cpdef enum StageCode:
    STAGE_COPY = 0     # src already has the kernel's dtype: layout only
    STAGE_HALF = 1     # float16 -> float32
    STAGE_BFLOAT = 2   # bfloat16 -> float32
    STAGE_F4 = 3       # float32 -> float64
    STAGE_I1 = 4       # int8 -> int64 / float64, and so on
    STAGE_I2 = 5
    STAGE_I4 = 6
    STAGE_I8 = 7
    STAGE_U1 = 8
    STAGE_U2 = 9
    STAGE_U4 = 10
    STAGE_U8 = 11

cdef Py_ssize_t _stage_bytes = 1 << 20   # the staging buffer
# rows scattered between prefetches of the next block (0: whole blocks, no prefetch). Measured on the project's
# EPYC VM (200000 x 64 rows into 5000, one thread): whole blocks 3.1-3.2 ms for float16, slices of 256 rows
# 3.5; 1 MiB blocks 3.1, 512 KiB 4.0, 256 KiB 4.2 (the kernel's row prefetch stops at a block's end)
cdef Py_ssize_t _stage_step = 0
cdef bint _stage_bands = True            # one thread, blocks read down their columns: L1 bands (below)
cdef Py_ssize_t _stage_band_bytes = 8 * 1024   # a band of the one-thread loop


cdef cyscatter_stage_fn _stage_fn(int code, ValueCode value, Py_ssize_t item) noexcept:
    """The converter from source `code` to the kernel dtype `value`, or NULL when there is none."""
    cdef cyscatter_stage_fn f = NULL
    if code == STAGE_COPY:
        if item == 4:
            f = cyscatter_stage_copy4
        elif item == 8:
            f = cyscatter_stage_copy8
        elif item == 16:
            f = cyscatter_stage_copy16
    elif value == V_FLOAT32:
        if code == STAGE_HALF:
            f = cyscatter_stage_half
        elif code == STAGE_BFLOAT:
            f = cyscatter_stage_bfloat
    elif value == V_FLOAT64:
        if code == STAGE_F4:
            f = cyscatter_stage_f4_f8
        elif code == STAGE_I1:
            f = cyscatter_stage_i1_f8
        elif code == STAGE_I2:
            f = cyscatter_stage_i2_f8
        elif code == STAGE_I4:
            f = cyscatter_stage_i4_f8
        elif code == STAGE_I8:
            f = cyscatter_stage_i8_f8
        elif code == STAGE_U1:
            f = cyscatter_stage_u1_f8
        elif code == STAGE_U2:
            f = cyscatter_stage_u2_f8
        elif code == STAGE_U4:
            f = cyscatter_stage_u4_f8
        elif code == STAGE_U8:
            f = cyscatter_stage_u8_f8
    elif value == V_INT64:
        if code == STAGE_I1:
            f = cyscatter_stage_i1_i8
        elif code == STAGE_I2:
            f = cyscatter_stage_i2_i8
        elif code == STAGE_I4:
            f = cyscatter_stage_i4_i8
        elif code == STAGE_U1:
            f = cyscatter_stage_u1_i8
        elif code == STAGE_U2:
            f = cyscatter_stage_u2_i8
        elif code == STAGE_U4:
            f = cyscatter_stage_u4_i8
    return f


cdef struct Staging:
    cyscatter_stage_fn stage
    const char* src
    Py_ssize_t item                    # bytes of one src element
    Py_ssize_t outer, n, width         # src blocks: outer slices of n rows of `width` elements
    Py_ssize_t outer_stride, row_stride, col_stride   # in bytes, any sign
    Py_ssize_t rows_per, cols_per      # elements of one block


cdef void _prefetch_src(const Staging* S, Py_ssize_t o, Py_ssize_t k0, Py_ssize_t k1, Py_ssize_t f0,
                        Py_ssize_t w) noexcept nogil:
    """Prefetch src rows [k0, k1), columns [f0, f0 + w) of slice o where the elements of a row are adjacent (the
    conversion of a block read down its columns prefetches as it goes: `_stage.h`)."""
    cdef const char* base = S.src + o * S.outer_stride + f0 * S.col_stride
    cdef Py_ssize_t r, b, nbytes
    if k1 <= k0:
        return
    if S.col_stride == S.item:
        nbytes = w * S.item
        for r in range(k0, k1):
            b = 0
            while b < nbytes:
                cyscatter_prefetch_r(base + r * S.row_stride + b)
                b += CACHE_LINE
            cyscatter_prefetch_r(base + r * S.row_stride + nbytes - 1)


cdef Py_ssize_t _scatter_staged_tiles(int opcode, const Staging* S, const index_t* index, value_t* out,
                                      Py_ssize_t size, Py_ssize_t table_outer, Py_ssize_t table_row,
                                      int64_t* counts, int mode, int threads, value_t* buf) noexcept nogil:
    """Scatter the blocks of `S` in order, each converted into `buf`; table strides in elements. Counts are
    taken on the first outer slice and column block only. -1 or the first bad index position.

    On one thread a block is scattered a slice of rows at a time, each slice prefetching the same number of rows
    of the next block, so that reading src from memory overlaps the scatter of the cached block instead of
    stalling its conversion; several threads take a whole block each call, to split it among them."""
    cdef Layout L
    cdef Py_ssize_t o, f0, k0, w, m, q, e, status, step, nxt
    cdef bint one = _threads_for(threads, S.rows_per * S.cols_per) == 1
    L.outer = 1
    L.size = size
    L.table_outer_stride = 0
    L.table_row_stride = table_row
    for o in range(S.outer):
        f0 = 0
        while f0 < S.width:
            w = min(S.cols_per, S.width - f0)
            k0 = 0
            while k0 < S.n:
                m = min(S.rows_per, S.n - k0)
                S.stage(S.src + o * S.outer_stride + k0 * S.row_stride + f0 * S.col_stride, m, w,
                        S.row_stride, S.col_stride, buf)
                # slices of a few hundred rows: the row prefetch of the kernel stops short of a slice's end, so
                # much shorter slices leave many table rows unprefetched
                step = _stage_step if one and _stage_step > 0 else m
                nxt = min(S.rows_per, S.n - k0 - m)   # rows of the next block (0: none)
                q = 0
                while q < m:
                    e = min(step, m - q)
                    if step < m and q < nxt:
                        _prefetch_src(S, o, k0 + m + q, k0 + m + min(q + e, nxt), f0, w)
                    L.n, L.inner = e, w
                    L.entry_row_stride, L.entry_outer_stride = w, e * w
                    status = _scatter_op(opcode, <const value_t*>(buf + q * w), index + k0 + q,
                                         out + o * table_outer + f0, &L,
                                         counts if o == 0 and f0 == 0 else NULL, mode, threads)
                    if status >= 0:
                        return status + k0 + q
                    q += e
                k0 += m
            f0 += w
    return -1


cdef Py_ssize_t _scatter_staged_bands(op_t op, const Staging* S, const index_t* index, value_t* out,
                                      Py_ssize_t size, Py_ssize_t table_outer, Py_ssize_t table_row,
                                      int64_t* counts, int mode, value_t* buf) noexcept nogil:
    """The one-thread staged scatter: bands of rows small enough for L1 converted into `buf` and combined at once,
    the table rows prefetched ahead across bands (as `_scatter_part` does within a call). -1 or the first bad
    index position."""
    cdef Py_ssize_t o, f0, k0, k, w, m, line, lines, ahead
    cdef uint64_t usize = <uint64_t>size
    cdef index_t j, jp
    cdef value_t* d
    cdef int64_t* cnt
    for o in range(S.outer):
        f0 = 0
        while f0 < S.width:
            w = min(S.cols_per, S.width - f0)
            lines = (w * <Py_ssize_t>sizeof(value_t) + CACHE_LINE - 1) // CACHE_LINE
            ahead = _prefetch_distance(w * <Py_ssize_t>sizeof(value_t), size, S.n)
            d = out + o * table_outer + f0
            cnt = counts if o == 0 and f0 == 0 else NULL
            k0 = 0
            while k0 < S.n:
                m = min(S.rows_per, S.n - k0)
                S.stage(S.src + o * S.outer_stride + k0 * S.row_stride + f0 * S.col_stride, m, w,
                        S.row_stride, S.col_stride, buf)
                for k in range(k0, k0 + m):
                    if ahead and k + ahead < S.n:
                        jp = index[k + ahead]
                        if <uint64_t>jp < usize:
                            for line in range(lines):
                                cyscatter_prefetch_w(<char*>(d + jp * table_row) + line * CACHE_LINE)
                    j = index[k]
                    if <uint64_t>j >= usize:
                        if mode == MODE_RAISE:
                            return k
                        continue
                    if cnt != NULL:
                        cnt[j] += 1
                    _combine_row(op, d + j * table_row, buf + (k - k0) * w, w)
                k0 += m
            f0 += w
    return -1


cdef Py_ssize_t _staged_bands_op(int opcode, const Staging* S, const index_t* index, value_t* out,
                                 Py_ssize_t size, Py_ssize_t table_outer, Py_ssize_t table_row, int64_t* counts,
                                 int mode, value_t* buf) noexcept nogil:
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
    if opcode == OP_ADD:
        return _scatter_staged_bands(add, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_NANADD:
        return _scatter_staged_bands(nanadd, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_NANMUL:
        return _scatter_staged_bands(nanmul, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_FMAX:
        return _scatter_staged_bands(fmx, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_FMIN:
        return _scatter_staged_bands(fmn, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_SUB:
        return _scatter_staged_bands(sub, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_MUL:
        return _scatter_staged_bands(mul, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_DIV:
        return _scatter_staged_bands(div, S, index, out, size, table_outer, table_row, counts, mode, buf)
    elif opcode == OP_MAX:
        return _scatter_staged_bands(mx, S, index, out, size, table_outer, table_row, counts, mode, buf)
    else:
        return _scatter_staged_bands(mn, S, index, out, size, table_outer, table_row, counts, mode, buf)


cdef Py_ssize_t _scatter_staged(int opcode, Staging* S, const index_t* index, value_t* out, const Layout* T,
                                int64_t* counts, int mode, int threads, bint transpose) noexcept nogil:
    """Size the blocks, allocate the buffer (and for `transpose` the transposed table) and scatter; -3 when the
    memory cannot be had (the caller then converts the whole src as before)."""
    cdef Py_ssize_t item = sizeof(value_t), budget = max(_stage_bytes, 4 * CACHE_LINE), o, j
    cdef Py_ssize_t outer = T.outer, size = T.size, status
    cdef value_t* table = NULL
    cdef value_t* buf
    # one thread, a block read down its columns (Fortran order, features first): bands that stay in L1 between
    # their transposition and their scatter (`_scatter_staged_bands`). Measured (200000 x 64 float32 into 5000):
    # Fortran 4.8-5.1 ms against 5.3-5.4 in blocks, features-first max 6.1-6.6 against 6.4-6.7; but blocks of
    # rows read along the rows lose (float16 4.2-4.7 against 2.9, float32 -> float64 6.7-7.9 against 5.0)
    cdef bint bands = (_stage_bands and S.row_stride == S.item and S.col_stride != S.item
                       and _threads_for(threads, T.outer * T.n * T.inner) == 1)
    if bands:
        budget = max(_stage_band_bytes, 4 * CACHE_LINE)
    S.cols_per = S.width
    if S.width * item * 8 > budget:   # very wide rows: blocks of columns, whole cache lines each
        S.cols_per = max(CACHE_LINE // item, (budget // (8 * item)) // (CACHE_LINE // item) * (CACHE_LINE // item))
    S.rows_per = max(1, budget // (S.cols_per * item))
    buf = <value_t*>PyMem_RawMalloc(S.rows_per * S.cols_per * item)
    if buf == NULL:
        return -3
    if not transpose:
        if bands:
            status = _staged_bands_op(opcode, S, index, out, size, T.table_outer_stride, T.table_row_stride,
                                      counts, mode, buf)
        else:
            status = _scatter_staged_tiles(opcode, S, index, out, size, T.table_outer_stride,
                                           T.table_row_stride, counts, mode, threads, buf)
        PyMem_RawFree(buf)
        return status
    table = <value_t*>PyMem_RawMalloc(max(size * outer, 1) * item)
    if table == NULL:
        PyMem_RawFree(buf)
        return -3
    for o in range(outer):
        for j in range(size):
            table[j * outer + o] = out[o * T.table_outer_stride + j * T.table_row_stride]
    if bands:
        status = _staged_bands_op(opcode, S, index, table, size, 0, outer, counts, mode, buf)
    else:
        status = _scatter_staged_tiles(opcode, S, index, table, size, 0, outer, counts, mode, threads, buf)
    for o in range(outer):
        for j in range(size):
            out[o * T.table_outer_stride + j * T.table_row_stride] = table[j * outer + o]
    PyMem_RawFree(table)
    PyMem_RawFree(buf)
    return status


cdef Py_ssize_t _scatter_staged_value(int opcode, ValueCode code, Staging* S, const index_t* index, void* out,
                                      const Layout* T, int64_t* counts, int mode, int threads,
                                      bint transpose) noexcept nogil:
    if code == V_FLOAT32:
        return _scatter_staged(opcode, S, index, <float*>out, T, counts, mode, threads, transpose)
    elif code == V_FLOAT64:
        return _scatter_staged(opcode, S, index, <double*>out, T, counts, mode, threads, transpose)
    elif code == V_INT32:
        return _scatter_staged(opcode, S, index, <int32_t*>out, T, counts, mode, threads, transpose)
    elif code == V_INT64:
        return _scatter_staged(opcode, S, index, <int64_t*>out, T, counts, mode, threads, transpose)
    elif code == V_UINT64:
        return _scatter_staged(opcode, S, index, <uint64_t*>out, T, counts, mode, threads, transpose)
    elif code == V_COMPLEX64:
        return _scatter_staged(opcode, S, index, <float complex*>out, T, counts, mode, threads, transpose)
    else:
        return _scatter_staged(opcode, S, index, <double complex*>out, T, counts, mode, threads, transpose)


# ---- same-dtype sums read down their columns: AVX2 tiles (`_layout.h`) -----------------------------------------
# Features-first data (one-element rows under `outer` batch slices, the entries adjacent) and a Fortran-ordered
# src (rows of `inner` elements, the entries adjacent) are the same memory pattern: `width` feature streams of n
# adjacent entries, added into a table whose features are adjacent (a transposed copy of out for features-first
# data, out itself for a Fortran src). Tiles are transposed in registers instead of staged through a buffer.

cdef int _layout_kind(ValueCode code) noexcept nogil:
    """The `_layout.h` element kind of an add in `code`, or -1."""
    if code == V_FLOAT32:
        return 0
    elif code == V_INT32:
        return 1
    elif code == V_FLOAT64:
        return 2
    elif code == V_INT64 or code == V_UINT64:
        return 3
    elif code == V_COMPLEX64:
        return 4
    return -1


cdef int _layout_add_parts(const char* src, Py_ssize_t outer, Py_ssize_t outer_stride, Py_ssize_t width,
                           Py_ssize_t n, Py_ssize_t fs, const void* index, int wide, char* table,
                           Py_ssize_t table_outer, Py_ssize_t ts, Py_ssize_t size, Py_ssize_t item, int kind,
                           int threads) noexcept nogil:
    """The features of every slice split among the threads in whole tiles (each table element has one writer,
    its updates in index order); table strides in elements, src strides in bytes. Returns 1 when an entry
    outside [0, size) was skipped, else 0."""
    cdef Py_ssize_t per = 32 // item, tiles = (width + per - 1) // per, o, t, lo, hi
    cdef int parts = _team_size(threads, outer * n * width), bad = 0
    cdef int skipped[MAX_THREADS]
    if parts > tiles:
        parts = <int>max(1, tiles)
    if parts == 1:
        for o in range(outer):
            bad |= cyscatter_layout_add(src + o * outer_stride, 0, width, n, fs, index, wide,
                                        table + o * table_outer * item, ts, size, kind)
        return bad
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        lo = min(width, tiles * t // parts * per)
        hi = min(width, tiles * (t + 1) // parts * per)
        skipped[t] = 0
        for o in range(outer):
            skipped[t] = skipped[t] | cyscatter_layout_add(src + o * outer_stride, lo, hi, n, fs, index, wide,
                                                           table + o * table_outer * item, ts, size, kind)
    for t in range(parts):
        bad |= skipped[t]
    return bad


cdef bint _layout_check_after = True   # the bounds check of the transposed sum after its pass (see below)


def _tune_layout_check_after(on=None):
    """Benchmark knob: whether a transposed same-dtype sum under mode='raise' checks its index after the tile
    pass (which reports a skipped entry) instead of in a pass of its own before it; returns the setting."""
    global _layout_check_after
    if on is not None:
        _layout_check_after = on
    return _layout_check_after


cdef Py_ssize_t _scatter_layout_add(cnp.ndarray src, const void* index, int wide, cnp.ndarray out,
                                    const Layout* T, int64_t* counts, int mode, int threads,
                                    bint transpose) noexcept:
    """A sum of `src` (outer, n, inner) whose entries are adjacent into `out`, or -2 when this path does not
    serve it (no AVX2, another kernel dtype, entries not adjacent, rows shorter than a tile). Returns -1, the
    first bad index position (MODE_RAISE: checked before anything is written) or -3 (no memory)."""
    cdef cnp.npy_intp* strides = cnp.PyArray_STRIDES(src)
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(src), width, k, status = -1, o, j
    cdef int kind = _layout_kind(_value_code(out))
    cdef const char* s = <const char*>cnp.PyArray_DATA(src)
    cdef char* d = <char*>cnp.PyArray_DATA(out)
    cdef char* table
    cdef bint check_after = _layout_check_after and transpose and counts == NULL and mode == MODE_RAISE
    width = T.outer if transpose else T.inner
    if (kind < 0 or not cyscatter_layout_has_avx2() or strides[1] != item or width < 32 // item
            or (<size_t>s) % item):
        return -2
    with nogil:
        # the transposed problem adds into a private table: its bounds check waits until after that pass (which
        # says whether it skipped an entry), one pass over the index fewer; out is written only after the check
        if mode == MODE_RAISE and not check_after:
            status = (_first_out_of_range(<const int64_t*>index, T.n, T.size) if wide
                      else _first_out_of_range(<const int32_t*>index, T.n, T.size))
            if status >= 0:
                return status
        if counts != NULL:
            for k in range(T.n):
                j = (<const int64_t*>index)[k] if wide else (<const int32_t*>index)[k]
                if <uint64_t>j < <uint64_t>T.size:
                    counts[j] += 1
        if not transpose:
            _layout_add_parts(s, T.outer, strides[0], width, T.n, strides[2], index, wide, d, T.table_outer_stride,
                              T.table_row_stride, T.size, item, kind, threads)
            return -1
        # the transposed table (size, outer), rows on cache lines
        table = <char*>cyscatter_layout_take(T.size * width * item)
        if table == NULL:
            return -3
        if T.table_row_stride == 1 and cyscatter_layout_zero(d, width, T.size * item, T.table_outer_stride * item):
            memset(table, 0, T.size * width * item)   # a fresh sum (scan 0.04 ms, transposition 0.03, 5000 x 64)
        elif T.table_row_stride == 1:
            cyscatter_layout_transpose(d, width, T.size, T.table_outer_stride, table, width, item)
        else:
            for o in range(width):
                for j in range(T.size):
                    memcpy(table + (j * width + o) * item, d + (o * T.table_outer_stride + j * T.table_row_stride) * item,
                           item)
        if _layout_add_parts(s, 1, 0, width, T.n, strides[0], index, wide, table, 0, width, T.size, item, kind,
                             threads) and check_after:
            cyscatter_layout_give(table)
            return (_first_out_of_range(<const int64_t*>index, T.n, T.size) if wide
                    else _first_out_of_range(<const int32_t*>index, T.n, T.size))
        if T.table_row_stride == 1:
            cyscatter_layout_transpose(table, T.size, width, width, d, T.table_outer_stride, item)
        else:
            for o in range(width):
                for j in range(T.size):
                    memcpy(d + (o * T.table_outer_stride + j * T.table_row_stride) * item, table + (j * width + o) * item,
                           item)
        cyscatter_layout_give(table)
    return -1


def _tune_layout_avx512(on=None):
    """Test and benchmark knob: whether the 4-byte transposed sums may take the AVX-512 tiles where the CPU has
    them (off: the AVX2 tiles); returns whether they would now run."""
    global cyscatter_layout_use512
    if on is not None:
        cyscatter_layout_use512 = 1 if on else 0
    return bool(cyscatter_layout_has_avx512())


def layout_add_ready(dtype, Py_ssize_t width):
    """Whether a same-dtype sum of `dtype` read down `width` feature columns (features-first, Fortran-ordered)
    has the AVX2 tile kernel here (the Python layer then sends it to `scatter_staged` instead of one slice at a
    time)."""
    cdef cnp.ndarray probe = np.empty(0, dtype)
    return (bool(cyscatter_layout_has_avx2()) and _layout_kind(_value_code(probe)) >= 0
            and width >= 32 // cnp.PyArray_ITEMSIZE(probe))


cdef bint _convert_rows = True   # the row-converting loops of `_convscatter.h` where they apply


def _tune_convert_rows(on=None):
    """Test and benchmark knob: whether a staged scatter may convert each row as it combines it
    (`_scatter_converted`; off: the blocks and bands above); returns the setting."""
    global _convert_rows
    if on is not None:
        _convert_rows = on
    return _convert_rows


cdef Py_ssize_t _converted_part(cyscatter_convscatter_fn fn, const Staging* S, const void* index, char* out,
                                const Layout* T, Py_ssize_t kernel_item, Py_ssize_t o0, Py_ssize_t o1,
                                Py_ssize_t f0, Py_ssize_t f1, Py_ssize_t lo, Py_ssize_t hi, int64_t* counts,
                                bint raise_) noexcept nogil:
    """The entries whose destination row is in [lo, hi), for batch slices [o0, o1) and features [f0, f1), as
    `_scatter_part`: counts taken on slice 0 by the part holding feature 0; -1 or the first bad position."""
    cdef Py_ssize_t o, status, ahead = _prefetch_distance((f1 - f0) * kernel_item, T.size, S.n)
    for o in range(o0, o1):
        status = fn(S.src + o * S.outer_stride + f0 * S.item, S.row_stride, index, S.n,
                    out + (o * T.table_outer_stride + f0) * kernel_item, T.table_row_stride, T.size, f1 - f0,
                    ahead, counts if o == 0 and f0 == 0 else NULL, raise_, lo, hi)
        if status >= 0:
            return status
    return -1


cdef Py_ssize_t _scatter_converted(int opcode, int stage_code, ValueCode code, const Staging* S,
                                  const void* index, int index_bytes, void* out, const Layout* T, int64_t* counts,
                                  int mode, int threads) noexcept nogil:
    """Rows of adjacent elements, float16/bfloat16 -> float32 or float32 -> float64, add/sub/mul/div/max/min: each
    row converted in registers as it is combined (`_convscatter.h`), src read once at its own width and no buffer
    between; NOT_DONE where that loop does not apply (other ops, dtypes or layouts, a CPU without AVX2/F16C).

    Several threads split the call as `scatter_reduce_layout` splits a same-dtype one (batch slices, else feature
    columns in whole cache lines for wide rows, else destination row ranges for rows of a cache line or more,
    else one thread), so each table element has one writer and its updates in index order: the same bits as
    one thread. The destination-partitioned scheme is not used here (its sort would need a converting apply)."""
    cdef cyscatter_convscatter_fn fn = NULL
    cdef Py_ssize_t kernel_item = 8 if code == V_FLOAT64 else 4
    cdef Py_ssize_t outer = S.outer, inner = S.width, size = T.size, block = CACHE_LINE // kernel_item, lead = 0
    cdef Py_ssize_t status[MAX_THREADS]
    # CYSCATTER_CONV_* (`_convscatter.h`)
    cdef int op = (0 if opcode == OP_ADD else 1 if opcode == OP_MAX else 2 if opcode == OP_MIN else
                   3 if opcode == OP_SUB else 4 if opcode == OP_MUL else 5 if opcode == OP_DIV else -1)
    cdef int parts, t, split
    cdef bint raise_ = mode == MODE_RAISE
    if not _convert_rows or op < 0 or (S.col_stride != S.item and S.width != 1):
        return NOT_DONE
    if not ((code == V_FLOAT32 and (stage_code == STAGE_HALF or stage_code == STAGE_BFLOAT))
            or (code == V_FLOAT64 and stage_code == STAGE_F4)):
        return NOT_DONE
    fn = cyscatter_convscatter(stage_code, op, index_bytes)
    if fn == NULL:
        return NOT_DONE
    parts = _team_size(threads, outer * S.n * inner)
    if parts == 1:
        return _converted_part(fn, S, index, <char*>out, T, kernel_item, 0, outer, 0, inner, 0, size, counts,
                               raise_)
    if outer >= parts:
        split = 0
    elif inner >= parts * 2 * block and (_scatter_split == 2 or
                                         (_scatter_split == 0 and inner * kernel_item >= parts * 256)):
        split = 2
        lead = ((CACHE_LINE - (<size_t>out) % CACHE_LINE) % CACHE_LINE) // kernel_item
    elif _scatter_split == 1 or inner * kernel_item >= CACHE_LINE:
        split = 1
    else:
        return _converted_part(fn, S, index, <char*>out, T, kernel_item, 0, outer, 0, inner, 0, size, counts,
                               raise_)
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        if split == 0:
            status[t] = _converted_part(fn, S, index, <char*>out, T, kernel_item, _share(outer, parts, t),
                                        _share(outer, parts, t + 1), 0, inner, 0, size, counts, raise_)
        elif split == 2:
            status[t] = _converted_part(fn, S, index, <char*>out, T, kernel_item, 0, outer,
                                        _feature_cut(inner, parts, t, block, lead),
                                        _feature_cut(inner, parts, t + 1, block, lead), 0, size, counts, raise_)
        else:
            status[t] = _converted_part(fn, S, index, <char*>out, T, kernel_item, 0, outer, 0, inner,
                                        _share(size, parts, t), _share(size, parts, t + 1), counts, raise_)
    return _first_error(status, parts)


def scatter_staged(int opcode, int stage_code, cnp.ndarray src not None, cnp.ndarray index not None,
                   cnp.ndarray out not None, cnp.ndarray counts=None, int mode=MODE_RAISE, int num_threads=0,
                   bint transpose=False):
    """`scatter_reduce` from a src (outer, n, inner) of any strides, whose dtype `stage_code` (a StageCode)
    converts to out's kernel dtype, a block of rows at a time (see above); `transpose` (inner == 1) scatters the
    transposed problem. Returns -1, the first bad index position, or -3 when the buffers could not be
    allocated (nothing written then)."""
    cdef Layout T
    cdef Staging S
    cdef ValueCode code = _value_code(out)
    cdef int width = _index_width(index)
    cdef int64_t* counts_ptr = NULL
    cdef Py_ssize_t status, item = cnp.PyArray_ITEMSIZE(src), d
    cdef cnp.npy_intp* strides = cnp.PyArray_STRIDES(src)
    cdef void* out_ptr = cnp.PyArray_DATA(out)
    cdef void* index_ptr = cnp.PyArray_DATA(index)
    if code == V_NONE or cnp.PyArray_NDIM(src) != 3 or cnp.PyArray_NDIM(out) != 3:
        raise TypeError(f"staged scatter takes 3-d src and out of a kernel dtype, got {(<object>src).dtype} "
                        f"{(<object>src).shape} into {(<object>out).dtype} {(<object>out).shape}")
    S.stage = _stage_fn(stage_code, code, cnp.PyArray_ITEMSIZE(out))
    if S.stage == NULL or (stage_code == STAGE_COPY and not cnp.PyArray_EquivArrTypes(src, out)):
        raise TypeError(f"no staging from {(<object>src).dtype} (code {stage_code}) to {(<object>out).dtype}")
    if not (OP_ADD <= opcode <= OP_MIN or OP_NANADD <= opcode <= OP_FMIN):
        raise ValueError(f"unknown op code {opcode}")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("kernel out is read-only")
    if (<size_t>cnp.PyArray_DATA(src)) % item or any(strides[d] % item for d in range(3)):
        raise ValueError(f"staged src must be aligned, got strides {(<object>src).strides}")
    _rows3(out, cnp.PyArray_ITEMSIZE(out), &T.table_outer_stride, &T.table_row_stride, "out")
    T.outer, T.n, T.inner, T.size = (cnp.PyArray_DIM(src, 0), cnp.PyArray_DIM(src, 1), cnp.PyArray_DIM(src, 2),
                                     cnp.PyArray_DIM(out, 1))
    if cnp.PyArray_DIM(out, 0) != T.outer or cnp.PyArray_DIM(out, 2) != T.inner or cnp.PyArray_DIM(index, 0) != T.n:
        raise ValueError(f"kernel operands disagree: {(<object>src).shape} and {(<object>out).shape} with index "
                         f"{(<object>index).shape}")
    if transpose and T.inner != 1:
        raise ValueError("a transposed staged scatter needs one-element rows")
    if counts is not None:
        if (cnp.PyArray_TYPE(counts) != cnp.NPY_INT64 or cnp.PyArray_NDIM(counts) != 1
                or not cnp.PyArray_IS_C_CONTIGUOUS(counts) or cnp.PyArray_DIM(counts, 0) != T.size
                or not cnp.PyArray_ISWRITEABLE(counts)):
            raise ValueError(f"kernel counts must be a writeable contiguous int64 vector of length {T.size}")
        counts_ptr = <int64_t*>cnp.PyArray_DATA(counts)
    if T.outer == 0 or T.inner == 0 or T.n == 0 or T.size == 0:
        # nothing to convert: the plain kernel checks (and counts) the index alone
        return scatter_reduce(opcode, np.empty((T.outer, T.n, T.inner), out.dtype), index, out, counts, mode,
                              num_threads)
    if stage_code == STAGE_COPY and opcode == OP_ADD:
        status = _scatter_layout_add(src, index_ptr, width == 8, out, &T, counts_ptr, mode, num_threads, transpose)
        if status != -2:
            return status
    S.src = <const char*>cnp.PyArray_DATA(src)
    S.item = item
    if transpose:
        S.outer, S.n, S.width = 1, T.n, T.outer
        S.outer_stride, S.row_stride, S.col_stride = 0, strides[1], strides[0]
    else:
        S.outer, S.n, S.width = T.outer, T.n, T.inner
        S.outer_stride, S.row_stride, S.col_stride = strides[0], strides[1], strides[2]
        with nogil:
            status = _scatter_converted(opcode, stage_code, code, &S, index_ptr, width, out_ptr, &T, counts_ptr,
                                        mode, num_threads)
        if status != NOT_DONE:
            return status
    with nogil:
        if width == 4:
            status = _scatter_staged_value(opcode, code, &S, <const int32_t*>index_ptr, out_ptr, &T, counts_ptr,
                                           mode, num_threads, transpose)
        else:
            status = _scatter_staged_value(opcode, code, &S, <const int64_t*>index_ptr, out_ptr, &T, counts_ptr,
                                           mode, num_threads, transpose)
    return status


cpdef enum RoundFlag:
    ROUND_OVERFLOW = 1    # a finite value rounded to inf
    ROUND_UNDERFLOW = 2   # a nonzero value below float16's smallest normal (rounded or not)


cdef Py_ssize_t _rounding_size(str name, cnp.ndarray src, cnp.ndarray out, int out_type, str out_name) except -1:
    """The element count of a rounding loop's operands: aligned C-contiguous native float32 `src`, a writeable
    `out` of `out_type` and the same size; ValueError otherwise."""
    cdef Py_ssize_t n = cnp.PyArray_SIZE(src)
    if (cnp.PyArray_TYPE(src) != cnp.NPY_FLOAT32 or cnp.PyArray_TYPE(out) != out_type
            or not cnp.PyArray_ISNOTSWAPPED(src) or not cnp.PyArray_ISNOTSWAPPED(out)
            or not cnp.PyArray_IS_C_CONTIGUOUS(src) or not cnp.PyArray_IS_C_CONTIGUOUS(out)
            or not cnp.PyArray_ISALIGNED(src) or not cnp.PyArray_ISALIGNED(out)
            or not cnp.PyArray_ISWRITEABLE(out) or cnp.PyArray_SIZE(out) != n):
        raise ValueError(f"{name} takes aligned C-contiguous native float32 src and a writeable {out_name} out "
                         f"of the same size, got {(<object>src).dtype} {(<object>src).shape} into "
                         f"{(<object>out).dtype} {(<object>out).shape}")
    return n


def round_half(cnp.ndarray src not None, cnp.ndarray out not None):
    """out = src (float32) rounded to float16 (`out`'s dtype), the same bits as NumPy's astype for every input
    (`_halfround.h`): the result of every float16 call, from its float32 table. Both C-contiguous of one size.
    Returns the RoundFlag bits met, for the caller to redo the cast with NumPy where its error state would act
    on one (NumPy's cast raises the floating-point errors; this loop does not)."""
    cdef Py_ssize_t n = _rounding_size("round_half", src, out, cnp.NPY_FLOAT16, "float16")
    cdef int flags
    with nogil:
        flags = cyscatter_f32_to_f16(<const float*>cnp.PyArray_DATA(src), <uint16_t*>cnp.PyArray_DATA(out), n)
    return flags


def round_bfloat(cnp.ndarray src not None, cnp.ndarray out not None):
    """out = src (float32) rounded to bfloat16, the same bits as ml_dtypes' astype (`_halfround.h`); `out` is the
    uint16 view of the bfloat16 result (NumPy knows bfloat16 only as ml_dtypes' own type). Both C-contiguous of
    one size."""
    cdef Py_ssize_t n = _rounding_size("round_bfloat", src, out, cnp.NPY_UINT16, "uint16")
    with nogil:
        cyscatter_f32_to_bf16(<const float*>cnp.PyArray_DATA(src), <uint16_t*>cnp.PyArray_DATA(out), n)


def stage_rows(int stage_code, cnp.ndarray src not None, cnp.ndarray out not None):
    """out = src converted to out's kernel dtype by `stage_code` (a StageCode), exactly as NumPy's astype: one
    chunk of the families that read a converted src a block of rows at a time instead of converting it whole
    (segment kernels, gather_scatter, the group kernels). src (outer, n, inner) of any strides, aligned; out a
    C-contiguous array of the same shape."""
    cdef cyscatter_stage_fn fn
    cdef ValueCode code = _value_code(out)
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(src), o, d, outer, n, inner, slab
    cdef cnp.npy_intp* strides = cnp.PyArray_STRIDES(src)
    cdef const char* s
    cdef char* t
    if (code == V_NONE or cnp.PyArray_NDIM(src) != 3 or cnp.PyArray_NDIM(out) != 3
            or not cnp.PyArray_IS_C_CONTIGUOUS(out) or not cnp.PyArray_ISWRITEABLE(out)
            or any(cnp.PyArray_DIM(src, d) != cnp.PyArray_DIM(out, d) for d in range(3))):
        raise ValueError(f"stage_rows takes a 3-d src and a writeable C-contiguous out of a kernel dtype and the "
                         f"same shape, got {(<object>src).dtype} {(<object>src).shape} into {(<object>out).dtype} "
                         f"{(<object>out).shape}")
    fn = _stage_fn(stage_code, code, cnp.PyArray_ITEMSIZE(out))
    if fn == NULL or (stage_code == STAGE_COPY and not cnp.PyArray_EquivArrTypes(src, out)):
        raise TypeError(f"no staging from {(<object>src).dtype} (code {stage_code}) to {(<object>out).dtype}")
    if (<size_t>cnp.PyArray_DATA(src)) % item or any(strides[d] % item for d in range(3)):
        raise ValueError(f"staged src must be aligned, got strides {(<object>src).strides}")
    outer, n, inner = cnp.PyArray_DIM(src, 0), cnp.PyArray_DIM(src, 1), cnp.PyArray_DIM(src, 2)
    if outer == 0 or n == 0 or inner == 0:
        return
    s, t = <const char*>cnp.PyArray_DATA(src), <char*>cnp.PyArray_DATA(out)
    slab = n * inner * cnp.PyArray_ITEMSIZE(out)
    with nogil:
        for o in range(outer):
            fn(s + o * strides[0], n, inner, strides[1], strides[2], t + o * slab)


cdef Py_ssize_t _gather_items(Py_ssize_t item, const void* src, const index_t* index, void* out,
                              const Layout* L, int mode, int threads) noexcept nogil:
    if item == 8:
        return gather_layout(<const uint64_t*>src, index, <uint64_t*>out, L, mode, threads)
    elif item == 4:
        return gather_layout(<const uint32_t*>src, index, <uint32_t*>out, L, mode, threads)
    elif item == 2:
        return gather_layout(<const uint16_t*>src, index, <uint16_t*>out, L, mode, threads)
    else:
        return gather_layout(<const uint8_t*>src, index, <uint8_t*>out, L, mode, threads)


cdef Py_ssize_t _move_unit(cnp.ndarray a):
    """Widest of 8/4/2/1 bytes that divides the item size, the address and every stride of `a`."""
    cdef Py_ssize_t unit = 8, d
    cdef size_t bits = cnp.PyArray_ITEMSIZE(a) | <size_t>cnp.PyArray_DATA(a)
    for d in range(cnp.PyArray_NDIM(a)):
        bits |= <size_t>cnp.PyArray_STRIDE(a, d)
    while unit > 1 and bits % unit:
        unit //= 2
    return unit


cdef Py_ssize_t _gather_columns(const char* src, const void* index, int wide, char* out, const Layout* L,
                                Py_ssize_t item, int mode, int threads) noexcept nogil:
    """The gather of one-element rows under `outer` slices (index along the last axis of features-first data):
    src transposed once into a (size, outer) table, then tiles of table rows transposed in registers into the
    output rows (`_layout.h`), instead of one pass over the index per slice. -2 when it does not serve the call
    (no AVX2, other item sizes, strided rows, a table much larger than the output), else as gather_layout."""
    cdef Py_ssize_t per = 32 // item, width = L.outer, k, tiles, lo, hi, os = L.entry_outer_stride * item
    cdef char* table
    cdef int parts, t, stream
    if (not (item == 4 or item == 8) or L.inner != 1 or width < per or L.n < 2 * per
            or L.entry_row_stride != 1 or L.table_row_stride != 1 or L.size > 4 * L.n
            or not cyscatter_layout_has_avx2()):
        return -2
    if mode == MODE_RAISE:
        k = (_first_out_of_range(<const int64_t*>index, L.n, L.size) if wide
             else _first_out_of_range(<const int32_t*>index, L.n, L.size))
        if k >= 0:
            return k
    table = <char*>cyscatter_layout_take(L.size * width * item)
    if table == NULL:
        return -2
    cyscatter_layout_transpose(src, width, L.size, L.table_outer_stride, table, width, item)
    stream = _streams(out, L, item) and (<size_t>out) % 32 == 0 and os % 32 == 0
    tiles = (width + per - 1) // per
    parts = _team_size(threads, L.outer * L.n * item // 4)
    if parts > tiles:
        parts = <int>tiles
    if parts <= 1:
        cyscatter_layout_gather(table, width, 0, width, L.n, index, wide, out, os, L.size, item, stream)
    else:
        for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
            lo = min(width, tiles * t // parts * per)
            hi = min(width, tiles * (t + 1) // parts * per)
            cyscatter_layout_gather(table, width, lo, hi, L.n, index, wide, out, os, L.size, item, stream)
    cyscatter_layout_give(table)
    return -1


def gather(cnp.ndarray src not None, cnp.ndarray index not None, cnp.ndarray out not None, int mode=MODE_RAISE,
           int num_threads=0):
    """Run the gather kernel: out[o, k, :] = src[o, index[k], :] on canonical arrays of one dtype (moved as
    bytes); returns -1 or the first bad index position (nothing written then)."""
    cdef Layout L
    cdef int width = _index_width(index)
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(src), unit, status
    cdef void* src_ptr = cnp.PyArray_DATA(src)
    cdef void* out_ptr = cnp.PyArray_DATA(out)
    cdef void* index_ptr = cnp.PyArray_DATA(index)
    if not cnp.PyArray_EquivArrTypes(src, out):
        raise TypeError(f"gather kernel needs one dtype, got src {(<object>src).dtype} and out {(<object>out).dtype}")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("kernel out is read-only")
    unit = min(_move_unit(src), _move_unit(out))
    _layout(out, src, index, item, &L) if unit == item else _layout_bytes(out, src, index, item, unit, &L)
    with nogil:
        status = -2
        if unit == item and L.n > 0 and L.outer > 0:
            status = _gather_columns(<const char*>src_ptr, index_ptr, width == 8, <char*>out_ptr, &L, item, mode,
                                     num_threads)
        if status != -2:
            pass
        elif width == 4:
            status = _gather_items(unit, src_ptr, <const int32_t*>index_ptr, out_ptr, &L, mode, num_threads)
        else:
            status = _gather_items(unit, src_ptr, <const int64_t*>index_ptr, out_ptr, &L, mode, num_threads)
    return status


cdef int _layout_bytes(cnp.ndarray entries, cnp.ndarray table, cnp.ndarray index, Py_ssize_t item,
                       Py_ssize_t unit, Layout* L) except -1:
    """_layout for items moved as `unit`-byte words (item sizes that are not a machine word)."""
    cdef cnp.npy_intp* es = cnp.PyArray_STRIDES(entries)
    cdef cnp.npy_intp* ts = cnp.PyArray_STRIDES(table)
    if cnp.PyArray_NDIM(entries) != 3 or cnp.PyArray_NDIM(table) != 3:
        raise ValueError("kernel operands must be 3-d (outer, rows, inner)")
    # empty operands address nothing, and NumPy gives them arbitrary strides
    if (es[2] != item and cnp.PyArray_DIM(entries, 2) > 1 and cnp.PyArray_SIZE(entries)) \
            or (ts[2] != item and cnp.PyArray_DIM(table, 2) > 1 and cnp.PyArray_SIZE(table)):
        raise ValueError("kernel operands need a unit inner stride")
    L.entry_outer_stride, L.entry_row_stride = es[0] // unit, es[1] // unit
    L.table_outer_stride, L.table_row_stride = ts[0] // unit, ts[1] // unit
    L.outer, L.n, L.size = cnp.PyArray_DIM(entries, 0), cnp.PyArray_DIM(entries, 1), cnp.PyArray_DIM(table, 1)
    L.inner = cnp.PyArray_DIM(entries, 2) * (item // unit)
    if cnp.PyArray_DIM(table, 0) != L.outer or cnp.PyArray_DIM(table, 2) != cnp.PyArray_DIM(entries, 2) \
            or cnp.PyArray_DIM(index, 0) != L.n:
        raise ValueError(f"kernel operands disagree: {(<object>entries).shape} and {(<object>table).shape} with index {(<object>index).shape}")
    return 0


# ---- gather into rows whose elements are apart (a Fortran-ordered gather_into dst) ----------------------------
# out[o, k, f] = src[o, index[k], f] written in place where out's entries are adjacent and its features apart
# (Fortran order), instead of gathering into a C-ordered copy and copying that back (a dst-sized temporary and
# two extra passes over it). Items of 4 and 8 bytes read from rows of adjacent features go through the AVX2
# tiles of the features-first gather (`cyscatter_layout_gather`: rows loaded, transposed in registers, stored
# as runs of entries of each feature column), items of 1 and 2 bytes through 64-bit words transposed the same
# way (`_gather_apart.h`); the remaining features, other item sizes and other strides a blocked loop: a band
# of entries whose src rows stay in L1, written one feature column at a time.

cdef enum:
    APART_BAND_BYTES = 16384        # src rows of one band of entries (within L1 with the output runs)
    TILES_AVX2 = 1                  # 4- and 8-byte items, V = 32 / item features a tile (`_layout.h`)
    TILES_WORDS = 2                 # 1- and 2-byte items, V = 8 / item features a tile (`_gather_apart.h`)


cdef inline Py_ssize_t _apart_tile(int tiles, Py_ssize_t item) noexcept nogil:
    """Features of one tile (1: no tiles)."""
    return 32 // item if tiles == TILES_AVX2 else 8 // item if tiles == TILES_WORDS else 1


cdef void _gather_apart_band(const char* src, Py_ssize_t ss1, Py_ssize_t ss2, const index_t* index,
                             Py_ssize_t k0, Py_ssize_t k1, char* out, Py_ssize_t os1, Py_ssize_t os2,
                             Py_ssize_t f0, Py_ssize_t f1, uint64_t size, const item_t* word,
                             Py_ssize_t words) noexcept nogil:
    """Entries [k0, k1), features [f0, f1), each item `words` words of item_t (`word` only picks the type);
    strides in bytes; entries outside [0, size) skipped."""
    cdef Py_ssize_t f, k, w
    cdef index_t j
    cdef const item_t* s
    cdef item_t* d
    for f in range(f0, f1):
        for k in range(k0, k1):
            j = index[k]
            if <uint64_t>j >= size:
                continue
            s = <const item_t*>(src + j * ss1 + f * ss2)
            d = <item_t*>(out + k * os1 + f * os2)
            for w in range(words):
                d[w] = s[w]


cdef void _gather_apart_slice(const char* src, const Py_ssize_t* ss, const index_t* index, Py_ssize_t n,
                              char* out, const Py_ssize_t* os, Py_ssize_t f0, Py_ssize_t f1, Py_ssize_t size,
                              Py_ssize_t item, Py_ssize_t unit, int tiles, int stream) noexcept nogil:
    """Features [f0, f1) of one batch slice (strides in bytes: ss/os [1] entries, [2] features); `tiles`: 0
    none, TILES_AVX2 or TILES_WORDS for the features of whole tiles; `stream`: the AVX2 tiles store with
    non-temporal writes."""
    cdef Py_ssize_t per = _apart_tile(tiles, item), mid = f0, band, k0
    if tiles:
        mid = f0 + (f1 - f0) // per * per
    if mid > f0 and tiles == TILES_AVX2:
        cyscatter_layout_gather(src, ss[1] // item, f0, mid, n, index, sizeof(index_t) == 8, out, os[2], size,
                                item, stream)
    elif mid > f0:
        cyscatter_gather_apart_small(src, ss[1], index, sizeof(index_t) == 8, n, out, os[2], f0, mid,
                                     <uint64_t>size, <int>item)
    if mid == f1:
        return
    band = max(16, APART_BAND_BYTES // max(1, (f1 - mid) * item))
    k0 = 0
    while k0 < n:
        if unit == 8:
            _gather_apart_band(src, ss[1], ss[2], index, k0, min(n, k0 + band), out, os[1], os[2], mid, f1,
                               <uint64_t>size, <const uint64_t*>NULL, item // unit)
        elif unit == 4:
            _gather_apart_band(src, ss[1], ss[2], index, k0, min(n, k0 + band), out, os[1], os[2], mid, f1,
                               <uint64_t>size, <const uint32_t*>NULL, item // unit)
        elif unit == 2:
            _gather_apart_band(src, ss[1], ss[2], index, k0, min(n, k0 + band), out, os[1], os[2], mid, f1,
                               <uint64_t>size, <const uint16_t*>NULL, item // unit)
        else:
            _gather_apart_band(src, ss[1], ss[2], index, k0, min(n, k0 + band), out, os[1], os[2], mid, f1,
                               <uint64_t>size, <const uint8_t*>NULL, item // unit)
        k0 += band


cdef Py_ssize_t _gather_apart(const char* src, const Py_ssize_t* ss, const index_t* index, char* out,
                              const Py_ssize_t* os, Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner,
                              Py_ssize_t size, Py_ssize_t item, Py_ssize_t unit, int mode,
                              int threads) noexcept nogil:
    """-1, or (MODE_RAISE) the first bad position, found before anything is written. Threads take batch slices
    when there are enough, else features (whole tiles on the tile path): one writer per output element."""
    cdef Py_ssize_t k, o, per, chunks, lo, hi
    cdef bint adjacent
    cdef int parts, t, stream, tiles = 0
    if mode == MODE_RAISE:
        k = _first_out_of_range(index, n, size)
        if k >= 0:
            return k
    if outer == 0 or n == 0 or inner == 0:
        return -1
    adjacent = unit == item and os[1] == item and ss[2] == item
    if adjacent and (item == 4 or item == 8) and ss[1] % item == 0 and cyscatter_layout_has_avx2():
        tiles = TILES_AVX2
    elif adjacent and (item == 1 or item == 2) and cyscatter_gather_apart_small_ok():
        tiles = TILES_WORDS
    per = _apart_tile(tiles, item)
    if inner < per or n < 2 * per:
        tiles, per = 0, 1
    # as `_streams`: an output far past the caches, its feature columns 32-byte aligned for the tiles' stores
    stream = (tiles == TILES_AVX2 and _stream != 0 and cyscatter_can_stream() and (<size_t>out) % 32 == 0 and os[2] % 32 == 0
              and os[0] % 32 == 0 and (_stream == 1 or (_stream_min_bytes > 0
                                                         and <size_t>(outer * n * inner * item) >= _stream_min_bytes)))
    chunks = (inner + per - 1) // per
    parts = _team_size(threads, outer * n * inner * item // 4)
    if parts > 1 and outer < parts and parts > chunks:
        parts = <int>chunks
    if parts <= 1:
        for o in range(outer):
            _gather_apart_slice(src + o * ss[0], ss, index, n, out + o * os[0], os, 0, inner, size, item, unit,
                                tiles, stream)
    elif outer >= parts:
        for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
            for o in range(_share(outer, parts, t), _share(outer, parts, t + 1)):
                _gather_apart_slice(src + o * ss[0], ss, index, n, out + o * os[0], os, 0, inner, size, item,
                                    unit, tiles, stream)
    else:
        for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
            lo = min(inner, _share(chunks, parts, t) * per)
            hi = min(inner, _share(chunks, parts, t + 1) * per)
            for o in range(outer):
                _gather_apart_slice(src + o * ss[0], ss, index, n, out + o * os[0], os, lo, hi, size, item,
                                    unit, tiles, stream)
    return -1


def gather_apart(cnp.ndarray src not None, cnp.ndarray index not None, cnp.ndarray out not None,
                 int mode=MODE_RAISE, int num_threads=0):
    """The gather kernel for an `out` (outer, n, inner) of any strides, its row elements apart (a Fortran-ordered
    gather_into dst), written in place: out[o, k, :] = src[o, index[k], :], one dtype moved as bytes, src of any
    strides. Returns -1 or the first bad index position (nothing written then)."""
    cdef int width = _index_width(index)
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(src), unit, status, d
    cdef Py_ssize_t ss[3]
    cdef Py_ssize_t os[3]
    cdef const char* s = <const char*>cnp.PyArray_DATA(src)
    cdef char* o = <char*>cnp.PyArray_DATA(out)
    cdef void* index_ptr = cnp.PyArray_DATA(index)
    cdef Py_ssize_t outer, n, inner, size
    if not cnp.PyArray_EquivArrTypes(src, out):
        raise TypeError(f"gather kernel needs one dtype, got src {(<object>src).dtype} and out {(<object>out).dtype}")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("kernel out is read-only")
    if cnp.PyArray_NDIM(src) != 3 or cnp.PyArray_NDIM(out) != 3:
        raise ValueError("kernel operands must be 3-d (outer, rows, inner)")
    outer, n, inner, size = (cnp.PyArray_DIM(out, 0), cnp.PyArray_DIM(out, 1), cnp.PyArray_DIM(out, 2),
                             cnp.PyArray_DIM(src, 1))
    if cnp.PyArray_DIM(src, 0) != outer or cnp.PyArray_DIM(src, 2) != inner or cnp.PyArray_DIM(index, 0) != n:
        raise ValueError(f"kernel operands disagree: {(<object>out).shape} and {(<object>src).shape} with index "
                         f"{(<object>index).shape}")
    unit = min(_move_unit(src), _move_unit(out))
    for d in range(3):
        ss[d], os[d] = cnp.PyArray_STRIDE(src, d), cnp.PyArray_STRIDE(out, d)
    with nogil:
        if width == 4:
            status = _gather_apart(s, ss, <const int32_t*>index_ptr, o, os, outer, n, inner, size, item, unit,
                                   mode, num_threads)
        else:
            status = _gather_apart(s, ss, <const int64_t*>index_ptr, o, os, outer, n, inner, size, item, unit,
                                   mode, num_threads)
    return status


def check_index(cnp.ndarray index not None, Py_ssize_t size):
    """Position of the first index entry outside [0, size), or -1 (run before an in-place write)."""
    cdef int width = _index_width(index)
    cdef Py_ssize_t n = cnp.PyArray_DIM(index, 0), status
    cdef void* ptr = cnp.PyArray_DATA(index)
    with nogil:
        if width == 4:
            status = _first_out_of_range(<const int32_t*>ptr, n, size)
        else:
            status = _first_out_of_range(<const int64_t*>ptr, n, size)
    return status


cdef Py_ssize_t first_bad_group(Py_ssize_t n, const int64_t[::1] order, const int64_t[::1] indptr) noexcept nogil:
    """First group g whose bounds leave [0, len(order)] or decrease, or len(indptr) - 1 when an entry of `order`
    outside [0, n) is reached; -1 when the groups are safe to walk."""
    cdef Py_ssize_t g, p, ngroups = indptr.shape[0] - 1
    for g in range(ngroups):
        if indptr[g] < 0 or indptr[g] > indptr[g + 1] or indptr[g + 1] > order.shape[0]:
            return g
    for g in range(ngroups):
        for p in range(indptr[g], indptr[g + 1]):
            if <uint64_t>order[p] >= <uint64_t>n:
                return ngroups
    return -1


cdef tuple _shape3(const value_t[:, :, ::contiguous] a):
    return (a.shape[0], a.shape[1], a.shape[2])


cdef int _check_groups(tuple shape, tuple others, const int64_t[::1] order, const int64_t[::1] indptr) except -1:
    """The kernels of group products index `partials` by `order` and `order` by `indptr` without bounds checks:
    refuse any argument that would make them read or write outside the arrays."""
    cdef Py_ssize_t bad, n = shape[1]
    for name, other in others:
        if other != shape:
            raise ValueError(f"{name} shape {other} != src shape {shape}")
    with nogil:
        bad = first_bad_group(n, order, indptr)
    if bad == indptr.shape[0] - 1:
        raise ValueError(f"order holds an entry outside [0, {shape[1]}), the rows of src")
    if bad >= 0:
        raise ValueError(f"indptr[{bad}:{bad + 2}] = [{indptr[bad]}, {indptr[bad + 1]}] is not a group of order "
                         f"(bounds must not decrease and must lie in [0, {order.shape[0]}])")
    return 0


def exclusive_products_jvp(const value_t[:, :, ::contiguous] src, const value_t[:, :, ::contiguous] tangent,
                           const int64_t[::1] order, const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials,
                           value_t[:, :, ::contiguous] partials_dot):
    """Fill `partials` as `exclusive_products` does and `partials_dot` with their derivative along `tangent`.

    Raises ValueError, before writing anything, for operands whose shapes differ or groups that leave them."""
    _check_groups(_shape3(src), (("tangent", _shape3(tangent)), ("partials", _shape3(partials)),
                                 ("partials_dot", _shape3(partials_dot))), order, indptr)
    with nogil:
        group_exclusive_products_jvp(src, tangent, order, indptr, partials, partials_dot)


def exclusive_products(const value_t[:, :, ::contiguous] src, const int64_t[::1] order, const int64_t[::1] indptr,
                       value_t[:, :, ::contiguous] partials):
    """Fill `partials` with each element's product of the other members of its group (see the cdef kernel):
    group g is ``order[indptr[g]:indptr[g + 1]]``, entries of ``range(src.shape[1])``.

    Raises ValueError, before writing anything, for `partials` of another shape than `src` or groups that leave
    the arrays."""
    _check_groups(_shape3(src), (("partials", _shape3(partials)),), order, indptr)
    with nogil:
        group_exclusive_products(src, order, indptr, partials)


def set_num_threads(int n):
    """Default thread count of the kernels (0 restores OpenMP's default: OMP_NUM_THREADS, else all cores)."""
    global _default_threads
    if n < 0:
        raise ValueError(f"number of threads must be >= 0, got {n}")
    _default_threads = n


def get_num_threads():
    """Threads a large call uses by default (1 when the extension was built without OpenMP)."""
    return _threads_for(0, _min_work * MAX_THREADS) if cyscatter_have_openmp() else 1


def _set_machine(size_t stream_min_bytes, Py_ssize_t l2_share, Py_ssize_t block_bytes,
                 Py_ssize_t prefetch_bytes=4096, Py_ssize_t partition_min_bytes=4 << 20):
    """The machine-dependent thresholds (see cyscatter._runtime.machine): streaming-store gathers from
    `stream_min_bytes` of output (0: never), no row prefetch for tables up to `l2_share` bytes, destination
    blocks of `block_bytes`, row prefetches `prefetch_bytes` of rows ahead (kept within 256 B - 64 KiB), the
    partitioned scatter for tables and srcs past `partition_min_bytes`."""
    global _stream_min_bytes, _l2_share, _block_bytes, _prefetch_bytes, _partition_min_bytes
    _stream_min_bytes = stream_min_bytes
    _l2_share = max(0, l2_share)
    _block_bytes = max(CACHE_LINE, block_bytes)
    _prefetch_bytes = min(65536, max(256, prefetch_bytes))
    _partition_min_bytes = max(0, partition_min_bytes)


def _machine():
    """The thresholds `_set_machine` set, as a dict."""
    return {"stream_min_bytes": _stream_min_bytes, "l2_share": _l2_share, "block_bytes": _block_bytes,
            "prefetch_bytes": _prefetch_bytes, "partition_min_bytes": _partition_min_bytes}


def _tune(prefetch_rows=None, scatter_split=None, min_work=None, src_ahead=None, lean_vectors=None,
          stream=None, partition=None, block_bytes=None, stage_bytes=None, stage_step=None, stage_bands=None,
          stage_band_bytes=None):
    """Benchmark and test knobs: prefetch distances in index entries for table rows and for a scatter's src
    rows (-1 auto, 0 off); scatter split 0 auto, 1 rows, 2 columns; element updates per thread below which
    fewer threads run (1 lets tests thread tiny inputs); the one-element-row loop (0 off); non-temporal
    stores for gather outputs (-1 auto, 0 off, 1 whenever aligned); the destination-partitioned scatter (-1
    auto, 0 off, 1 wherever possible) and its block size in bytes; the staged scatter's block buffer in bytes
    and its rows per slice between prefetches (0: whole blocks, no prefetch)."""
    global _prefetch_rows, _scatter_split, _min_work, _src_ahead, _lean_vectors, _stream, _partition
    global _block_bytes, _stage_bytes, _stage_step, _stage_bands, _stage_band_bytes
    if stage_bands is not None:
        _stage_bands = stage_bands
    if stage_band_bytes is not None:
        _stage_band_bytes = max(4 * CACHE_LINE, stage_band_bytes)
    if stage_step is not None:
        _stage_step = max(0, stage_step)
    if stage_bytes is not None:
        _stage_bytes = max(4 * CACHE_LINE, stage_bytes)
    if partition is not None:
        _partition = partition
    if block_bytes is not None:
        _block_bytes = max(CACHE_LINE, block_bytes)
    if stream is not None:
        _stream = stream
    if lean_vectors is not None:
        _lean_vectors = lean_vectors
    if src_ahead is not None:
        _src_ahead = src_ahead
    if min_work is not None:
        _min_work = max(1, min_work)
    if prefetch_rows is not None:
        _prefetch_rows = prefetch_rows
    if scatter_split is not None:
        _scatter_split = scatter_split
    return {"prefetch_rows": _prefetch_rows, "scatter_split": _scatter_split, "min_work": _min_work,
            "src_ahead": _src_ahead, "lean_vectors": _lean_vectors, "stream": _stream, "partition": _partition,
            "block_bytes": _block_bytes, "stage_bytes": _stage_bytes, "stage_step": _stage_step,
            "stage_bands": _stage_bands, "stage_band_bytes": _stage_band_bytes}


# ---- mean ------------------------------------------------------------------------------------------------------

ctypedef fused real_t:
    float
    double


cdef void _divide_rows(real_t* out, const int64_t* counts, const Layout* L, Py_ssize_t r0,
                       Py_ssize_t r1) noexcept nogil:
    """out[o, j, :] /= counts[j] for rows j in [r0, r1) with more than one entry (true division, as NumPy)."""
    cdef Py_ssize_t o, j, f
    cdef real_t c
    cdef real_t* row
    for o in range(L.outer):
        for j in range(r0, r1):
            if counts[j] > 1:
                c = <real_t>counts[j]
                row = out + o * L.table_outer_stride + j * L.table_row_stride
                for f in range(L.inner):
                    row[f] = row[f] / c


cdef void _divide_by_counts(real_t* out, const int64_t* counts, const Layout* L, int num_threads) noexcept nogil:
    cdef int parts = _team_size(num_threads, L.outer * L.size * L.inner), t
    if parts == 1:
        _divide_rows(out, counts, L, 0, L.size)
        return
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _divide_rows(out, counts, L, _share(L.size, parts, t), _share(L.size, parts, t + 1))


def divide_by_counts(cnp.ndarray out not None, cnp.ndarray counts not None, int num_threads=0):
    """Turn group sums into means in place: out[o, j, :] /= max(counts[j], 1), for float32/float64 `out`
    (outer, size, inner); returns False (nothing done) for other dtypes."""
    cdef Layout L
    cdef ValueCode code = _value_code(out)
    cdef void* out_ptr = cnp.PyArray_DATA(out)
    cdef const int64_t* counts_ptr
    if code != V_FLOAT32 and code != V_FLOAT64:
        return False
    if (cnp.PyArray_TYPE(counts) != cnp.NPY_INT64 or cnp.PyArray_NDIM(counts) != 1
            or not cnp.PyArray_IS_C_CONTIGUOUS(counts) or cnp.PyArray_DIM(counts, 0) != cnp.PyArray_DIM(out, 1)
            or not cnp.PyArray_ISWRITEABLE(out)):
        raise ValueError("divide_by_counts needs a writeable 3-d out and int64 counts, one per row")
    _rows3(out, cnp.PyArray_ITEMSIZE(out), &L.table_outer_stride, &L.table_row_stride, "out")
    L.outer, L.size, L.inner = cnp.PyArray_DIM(out, 0), cnp.PyArray_DIM(out, 1), cnp.PyArray_DIM(out, 2)
    counts_ptr = <const int64_t*>cnp.PyArray_DATA(counts)
    with nogil:
        if code == V_FLOAT32:
            _divide_by_counts(<float*>out_ptr, counts_ptr, &L, num_threads)
        else:
            _divide_by_counts(<double*>out_ptr, counts_ptr, &L, num_threads)
    return True


# ---- fast paths of the public functions ---------------------------------------------------------------------
# The common call (C-contiguous ndarrays of a kernel dtype, a 1-D int32/int64 index, axis 0, mode "raise") costs
# a few microseconds in the Python layer; these do the same checks in C. They return None when the call needs
# the general path, which then also raises any error with its full message (nothing is written before that).

cdef bint _plain(object a):
    """An aligned, native, C-contiguous ndarray with at least one dim."""
    return (type(a) is cnp.ndarray and cnp.PyArray_NDIM(<cnp.ndarray>a) >= 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a) and cnp.PyArray_ISALIGNED(<cnp.ndarray>a)
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a))


cdef bint _plain_index(object a, Py_ssize_t n):
    """A native, aligned, contiguous 1-d int32/int64 ndarray of length `n` (any length for n < 0)."""
    return (type(a) is cnp.ndarray and cnp.PyArray_NDIM(<cnp.ndarray>a) == 1
            and (n < 0 or cnp.PyArray_DIM(<cnp.ndarray>a, 0) == n)
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a) and cnp.PyArray_ISALIGNED(<cnp.ndarray>a)
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a) and cnp.PyArray_ISSIGNED(<cnp.ndarray>a)
            and cnp.PyArray_ITEMSIZE(<cnp.ndarray>a) in (4, 8))


cdef bint _disjoint(cnp.ndarray a, cnp.ndarray b):
    cdef char* pa = <char*>cnp.PyArray_DATA(a)
    cdef char* pb = <char*>cnp.PyArray_DATA(b)
    return pa + cnp.PyArray_NBYTES(a) <= pb or pb + cnp.PyArray_NBYTES(b) <= pa


cdef void _rows_layout(cnp.ndarray src, Py_ssize_t size, Layout* L) noexcept:
    """Layout of a scatter from C-contiguous `src` (n, *F) into a C-contiguous (size, *F) table."""
    cdef Py_ssize_t d
    L.outer = 1
    L.n = cnp.PyArray_DIM(src, 0)
    L.size = size
    L.inner = 1
    for d in range(1, cnp.PyArray_NDIM(src)):
        L.inner *= cnp.PyArray_DIM(src, d)
    L.entry_outer_stride = L.n * L.inner
    L.table_outer_stride = size * L.inner
    L.entry_row_stride = L.table_row_stride = L.inner


cdef inline index_t _larger(index_t a, index_t b) noexcept nogil:
    return b if b > a else a


cdef Py_ssize_t _extent(const index_t* index, Py_ssize_t n) noexcept nogil:
    """The size that `index` addresses: its largest entry + 1 (0 for no entry), or -1 when an entry is negative
    or the size would reach 2**62 (past the dim_size the Python gate admits: the general path decides those)."""
    cdef Py_ssize_t k, body = n - n % 4
    cdef index_t signs = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0
    # four independent max chains: a single chain waits on each compare-select in turn, measured 2.7x slower
    # on int32 and int64 alike (SSE2 has no 64-bit vector compare, so the int64 loop stays scalar). The or of
    # all entries is negative exactly when one of them is, so no entry needs a branch of its own
    for k in range(0, body, 4):
        signs |= index[k] | index[k + 1] | index[k + 2] | index[k + 3]
        t0 = _larger(t0, index[k])
        t1 = _larger(t1, index[k + 1])
        t2 = _larger(t2, index[k + 2])
        t3 = _larger(t3, index[k + 3])
    for k in range(body, n):
        signs |= index[k]
        t0 = _larger(t0, index[k])
    t0 = _larger(_larger(t0, t1), _larger(t2, t3))
    if signs < 0 or <int64_t>t0 >= (<int64_t>1 << 62) - 1:
        return -1
    return <Py_ssize_t>t0 + 1 if n else 0


cdef Py_ssize_t _inferred_size(cnp.ndarray index) noexcept:
    """`_extent` of a `_plain_index` array, with the GIL released."""
    cdef Py_ssize_t n = cnp.PyArray_DIM(index, 0), size
    cdef const void* ptr = cnp.PyArray_DATA(index)
    cdef bint wide = cnp.PyArray_ITEMSIZE(index) == 8
    with nogil:
        if wide:
            size = _extent(<const int64_t*>ptr, n)
        else:
            size = _extent(<const int32_t*>ptr, n)
    return size


cdef enum:
    _SCAN_ENTRIES = 65536   # above this many index entries the size is inferred by NumPy's maximum


cdef Py_ssize_t _numpy_extent(cnp.ndarray index):
    """The largest entry + 1 by NumPy's (SIMD) maximum, or -1 past the sizes `_extent` admits (at most 2**62 - 1
    rows; a negative maximum means every entry is negative, reported by the general path)."""
    cdef object top = np.maximum.reduce(index)
    if top < 0 or top >= (1 << 62) - 1:
        return -1
    return <Py_ssize_t>top + 1


cdef Py_ssize_t _run_scatter(int opcode, cnp.ndarray src, cnp.ndarray index, cnp.ndarray out, const Layout* L,
                             int threads):
    cdef ValueCode code = _value_code(src)
    cdef void* src_ptr = cnp.PyArray_DATA(src)
    cdef void* out_ptr = cnp.PyArray_DATA(out)
    cdef void* index_ptr = cnp.PyArray_DATA(index)
    cdef bint wide = cnp.PyArray_ITEMSIZE(index) == 8
    cdef Py_ssize_t status
    with nogil:
        if wide:
            status = _scatter_value(opcode, code, src_ptr, <const int64_t*>index_ptr, out_ptr, L, NULL,
                                    MODE_RAISE, threads)
        else:
            status = _scatter_value(opcode, code, src_ptr, <const int32_t*>index_ptr, out_ptr, L, NULL,
                                    MODE_RAISE, threads)
    return status


# ---- fresh outputs ------------------------------------------------------------------------------------------

cdef enum:
    ALIGN_MIN_BYTES = 4096   # smaller outputs are allocated as usual (their rows sit in L1 anyway)


cdef cnp.ndarray _fresh_table(int nd, cnp.npy_intp* dims, int typenum, object identity):
    """A new C-ordered array holding `identity`; when it holds at least a page, its first element sits on a
    cache-line boundary (a view of a slightly larger buffer, which is its `base`): narrow rows too, which never
    straddle a line, since the table may be read along its other axes (features-first data's output rows).

    NumPy's large blocks start 16 bytes past a page, so a row of 64 B straddles two cache lines and one of
    256 B five: a random row update then misses on one line more than it needs (rows of up to 16 B never
    straddle). Measured (NOTES.md v19), 1e6 random rows, one thread, allocating scatter: 16 float32 into 1e6
    rows 70.8 -> 30.8 ms, into 1e5 23.6 -> 12.7; 32 float32 into 1e5 48.3 -> 24.7; W1 0.92-1.01x.
    """
    cdef cnp.dtype descr = cnp.PyArray_DescrFromType(typenum)
    cdef cnp.npy_intp nbytes = descr.itemsize, padded
    cdef cnp.ndarray buf, out
    cdef char* data
    cdef int d
    cdef bint zero = identity == 0, empty = False
    for d in range(nd):
        if dims[d] < 0:
            raise ValueError(f"table dims must be non-negative, got {[dims[k] for k in range(nd)]}")
        empty = empty or dims[d] == 0
    for d in range(nd):
        if empty:   # no bytes, whatever the other dims (NumPy accepts such shapes)
            nbytes = 0
            break
        if nbytes > (PY_SSIZE_T_MAX - CACHE_LINE) // dims[d]:
            # unchecked, the product wraps and a small buffer would be taken for a huge array
            raise ValueError(f"a table of shape {tuple([dims[k] for k in range(nd)])} and dtype {descr} is too big "
                             f"for any array (more than 2**63 - 1 bytes)")
        nbytes *= dims[d]
    # zeros come from calloc: large outputs get zero pages from the OS as the kernel first touches them
    if nbytes < ALIGN_MIN_BYTES:
        out = cnp.PyArray_ZEROS(nd, dims, typenum, 0) if zero else cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    else:
        padded = nbytes + CACHE_LINE
        buf = cnp.PyArray_ZEROS(1, &padded, cnp.NPY_UINT8, 0) if zero else cnp.PyArray_EMPTY(1, &padded,
                                                                                               cnp.NPY_UINT8, 0)
        data = <char*>cnp.PyArray_DATA(buf)
        data += (CACHE_LINE - <size_t>data % CACHE_LINE) % CACHE_LINE
        Py_INCREF(descr)   # PyArray_NewFromDescr steals a reference
        out = PyArray_NewFromDescr(cnp.ndarray, descr, nd, dims, NULL, data, cnp.NPY_ARRAY_CARRAY, None)
        cnp.set_array_base(out, buf)
    if not zero:
        cnp.PyArray_FillWithScalar(out, identity)
    return out


def half_to_float(const uint16_t[::1] src, float[::1] dst):
    """dst[i] = the float32 value of the float16 whose bits are src[i], exactly (NumPy's cast, bit for bit, NaN
    payloads included), vectorised, with the GIL released."""
    if src.shape[0] != dst.shape[0]:
        raise ValueError(f"src has {src.shape[0]} elements but dst {dst.shape[0]}")
    cdef Py_ssize_t n = src.shape[0]
    if n == 0:
        return
    with nogil:
        cyscatter_f16_to_f32(&src[0], &dst[0], n)


def _tune_registers(on=None):
    """Whether float/double sums of several rows into one (segments, the fused gather-scatter's CSR rows) keep the
    row in AVX2 registers (None: leave it); returns the previous setting. Switching it on where the CPU has no
    AVX2 is ignored."""
    global _rows_registers
    previous = bool(_rows_registers)
    if on is not None:
        _rows_registers = bool(on) and cyscatter_has_avx2() != 0
    return previous


def unit_inner_view(cnp.ndarray a3):
    """`a3` (3-d, rows of at most one element) viewed with an inner stride of one item: the same memory, the view
    NumPy's ``as_strided`` makes, without its Python frames (the `[:, :, ::contiguous]` kernels are given rows
    whose elements are adjacent)."""
    cdef cnp.npy_intp strides[3]
    cdef int flags = cnp.NPY_ARRAY_ALIGNED | (cnp.NPY_ARRAY_WRITEABLE if cnp.PyArray_ISWRITEABLE(a3) else 0)
    if cnp.PyArray_NDIM(a3) != 3 or cnp.PyArray_DIM(a3, 2) > 1:
        raise ValueError(f"unit_inner_view takes a 3-d array of rows of at most one element, got shape "
                         f"{(<object>a3).shape}")
    strides[0], strides[1], strides[2] = cnp.PyArray_STRIDE(a3, 0), cnp.PyArray_STRIDE(a3, 1), a3.itemsize
    descr = a3.dtype
    Py_INCREF(descr)   # PyArray_NewFromDescr steals a reference
    out = PyArray_NewFromDescr(cnp.ndarray, descr, 3, cnp.PyArray_DIMS(a3), strides, cnp.PyArray_DATA(a3), flags,
                               None)
    cnp.set_array_base(out, a3)
    return out


def fresh_table(shape, dtype, identity):
    """A new C-ordered array of `shape` and `dtype` holding `identity`, rows along the last axis, cache-line
    aligned as `_fresh_table` says: the accumulator of an allocating scatter."""
    cdef cnp.npy_intp dims[32]
    cdef int d, nd = len(shape)
    if nd > 32:
        return np.full(shape, identity, dtype)
    for d in range(nd):
        dims[d] = shape[d]
    return _fresh_table(nd, dims, np.dtype(dtype).num, identity)


def scatter_simple(src, index, int opcode, identity, dim_size, int num_threads):
    """`scatter(src, index, op, dim_size=dim_size)` for the common case, or None (see above).

    `identity` is the op's identity in src's dtype (from the registry), None when the op/dtype pair needs the
    general path. `dim_size` None: the largest index entry + 1 (0 for an empty index), as the general path
    infers it; an index with a negative entry goes to the general path, which reports it.
    """
    cdef Layout L
    cdef cnp.npy_intp dims[32]
    cdef Py_ssize_t d, size
    cdef cnp.ndarray s, out
    if identity is None or not (dim_size is None or type(dim_size) is int) or not _plain(src):
        return None
    s = <cnp.ndarray>src
    if _value_code(s) == V_NONE or not _plain_index(index, cnp.PyArray_DIM(s, 0)) or cnp.PyArray_NDIM(s) > 32:
        return None
    # the inferring scan is the only extra pass: the kernel below still range-checks each entry as it goes. Past
    # 64k entries NumPy's SIMD maximum (AVX2 where the CPU has it) beats the scalar int64 scan of this SSE2
    # build by 3x; a negative entry is then left to the kernel's range check, which sends the call to the
    # general path as the scan would
    if dim_size is not None:
        size = dim_size
    elif cnp.PyArray_DIM(<cnp.ndarray>index, 0) > _SCAN_ENTRIES:
        size = _numpy_extent(<cnp.ndarray>index)
    else:
        size = _inferred_size(<cnp.ndarray>index)
    if size < 0:
        return None
    dims[0] = size
    for d in range(1, cnp.PyArray_NDIM(s)):
        dims[d] = cnp.PyArray_DIM(s, d)
    _rows_layout(s, size, &L)
    try:
        out = _fresh_table(cnp.PyArray_NDIM(s), dims, cnp.PyArray_TYPE(s), identity)
    except (ValueError, MemoryError):   # the general path raises them again, naming dim_size
        return None
    if _run_scatter(opcode, s, <cnp.ndarray>index, out, &L, num_threads) >= 0:
        return None
    return out


def scatter_into_simple(dst, src, index, int opcode, bint allowed, int num_threads):
    """`scatter_into(dst, src, index, op)` for the common case (same dtype, no overlap): True when done, else
    None with `dst` untouched. `allowed`: the registry accepts the op for this dtype."""
    cdef Layout L
    cdef Py_ssize_t d, k
    cdef cnp.ndarray s, t, i
    if not allowed or not _plain(src) or not _plain(dst):
        return None
    s, t = <cnp.ndarray>src, <cnp.ndarray>dst
    if (_value_code(s) == V_NONE or not cnp.PyArray_EquivArrTypes(s, t) or not cnp.PyArray_ISWRITEABLE(t)
            or not _plain_index(index, cnp.PyArray_DIM(s, 0)) or cnp.PyArray_NDIM(s) != cnp.PyArray_NDIM(t)):
        return None
    i = <cnp.ndarray>index
    for d in range(1, cnp.PyArray_NDIM(s)):
        if cnp.PyArray_DIM(s, d) != cnp.PyArray_DIM(t, d):
            return None
    if not _disjoint(s, t) or not _disjoint(i, t):
        return None
    _rows_layout(s, cnp.PyArray_DIM(t, 0), &L)
    k = check_index(i, L.size)   # in place: the whole index is checked before dst is touched
    if k >= 0:
        return None
    _run_scatter(opcode, s, i, t, &L, num_threads)
    return True


def gather_simple(src, index, int num_threads):
    """`gather(src, index)` for the common case (a numeric C-contiguous src, axis 0), or None."""
    cdef Layout L
    cdef cnp.npy_intp dims[32]
    cdef Py_ssize_t d, unit, status
    cdef cnp.ndarray s, i, out
    cdef void* src_ptr
    cdef void* out_ptr
    cdef void* index_ptr
    if not _plain(src) or not cnp.PyArray_ISNUMBER(<cnp.ndarray>src) or cnp.PyArray_NDIM(<cnp.ndarray>src) > 32:
        return None
    if not _plain_index(index, -1):   # checks ndim before reading a length (a 0-d index has none)
        return None
    s, i = <cnp.ndarray>src, <cnp.ndarray>index
    dims[0] = cnp.PyArray_DIM(i, 0)
    for d in range(1, cnp.PyArray_NDIM(s)):
        dims[d] = cnp.PyArray_DIM(s, d)
    out = cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(s), dims, cnp.PyArray_TYPE(s))
    _rows_layout(s, cnp.PyArray_DIM(s, 0), &L)
    L.n, L.size = dims[0], cnp.PyArray_DIM(s, 0)   # entries: the output rows; table: src's rows
    unit = min(_move_unit(s), _move_unit(out))
    L.inner = L.inner * cnp.PyArray_ITEMSIZE(s) // unit
    L.entry_row_stride = L.table_row_stride = L.inner
    L.entry_outer_stride, L.table_outer_stride = L.n * L.inner, L.size * L.inner
    src_ptr, out_ptr, index_ptr = cnp.PyArray_DATA(s), cnp.PyArray_DATA(out), cnp.PyArray_DATA(i)
    with nogil:
        if cnp.PyArray_ITEMSIZE(i) == 8:
            status = _gather_items(unit, src_ptr, <const int64_t*>index_ptr, out_ptr, &L, MODE_RAISE, num_threads)
        else:
            status = _gather_items(unit, src_ptr, <const int32_t*>index_ptr, out_ptr, &L, MODE_RAISE, num_threads)
    return None if status >= 0 else out
