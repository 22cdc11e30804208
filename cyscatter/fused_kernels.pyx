# cython: language_level=3
"""CPU kernels of the fused gather-scatter (message passing in one pass) and of its reverse functions.

Typed-memoryview entry points fused over dtypes, the op fixed at compile time; the loops run on raw pointers
without the GIL, own whole rows per thread (no atomics, bitwise the same on any thread count) and return a status.
See ``fused_kernels.pxd`` for what each kernel computes; the `def` wrappers at the bottom are what the Python
layer (`cyscatter._api.gather_scatter`) calls.
"""
cimport cython
from cython.parallel cimport prange
from cython.view cimport contiguous
from libc.math cimport signbit
from libc.stdlib cimport malloc, free
from libc.stdint cimport int32_t, int64_t, uint16_t, uint64_t
from cpython.pyport cimport PY_SSIZE_T_MAX

from cyscatter.kernels cimport (OpAdd, OpSub, OpMul, OpDiv, OpMax, OpMin, op_t, value_t,
                                OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, combine_rows, first_bad_group,
                                registers_on, team_size)
from cyscatter.fused_kernels cimport real_t
from cyscatter.group_kernels cimport nan_op_t, nan_value_t, count_t
from cyscatter.kernels cimport OpNanAdd, OpNanMul, OpFmax, OpFmin, OP_NANADD, OP_NANMUL, OP_FMAX, OP_FMIN

import numpy as np

cdef extern from "include/_cpu.h" nogil:
    void cyscatter_prefetch_r(const void* p)

cdef extern from "include/_fused.h" nogil:
    void cyscatter_add_row_f(float* acc, const float* x, Py_ssize_t n)
    void cyscatter_add_row_d(double* acc, const double* x, Py_ssize_t n)
    void cyscatter_axpy_row_f(float* acc, const float* x, float w, Py_ssize_t n)
    void cyscatter_axpy_row_d(double* acc, const double* x, double w, Py_ssize_t n)
    void cyscatter_scale_row_f(float* dst, const float* x, float w, Py_ssize_t n)
    void cyscatter_scale_row_d(double* dst, const double* x, double w, Py_ssize_t n)
    void cyscatter_sel_axpy_row_f(int sel, float* acc, const float* x, const float* o, const float* share, float w,
                                  Py_ssize_t n)
    void cyscatter_sel_axpy_row_d(int sel, double* acc, const double* x, const double* o, const double* share,
                                  double w, Py_ssize_t n)
    void cyscatter_sel_count_row_f(int sel, float* count, const float* x, const float* o, float w, Py_ssize_t n)
    void cyscatter_sel_count_row_d(int sel, double* count, const double* x, const double* o, double w, Py_ssize_t n)
    void cyscatter_sel_tangent_row_f(int sel, float* count, float* acc, const float* x, const float* o,
                                     const float* t, float w, int with_tw, float tw, Py_ssize_t n)
    void cyscatter_sel_tangent_row_d(int sel, double* count, double* acc, const double* x, const double* o,
                                     const double* t, double w, int with_tw, double tw, Py_ssize_t n)
    void cyscatter_nan_bits_row_f(const float* x, uint64_t* b, Py_ssize_t n)
    void cyscatter_nan_bits_row_d(const double* x, uint64_t* b, Py_ssize_t n)
    void cyscatter_bits_count_row_f(float* count, const uint64_t* b, Py_ssize_t p, Py_ssize_t n)
    void cyscatter_bits_count_row_d(double* count, const uint64_t* b, Py_ssize_t p, Py_ssize_t n)
    void cyscatter_bits_tangent_row_f(float* count, float* acc, const uint64_t* b, Py_ssize_t p, const float* t,
                                      float w, Py_ssize_t n)
    void cyscatter_bits_tangent_row_d(double* count, double* acc, const uint64_t* b, Py_ssize_t p, const double* t,
                                      double w, Py_ssize_t n)
    float cyscatter_dot_row_f(int sel, const float* g, const float* x, const float* o, float w, Py_ssize_t n)
    double cyscatter_dot_row_d(int sel, const double* g, const double* x, const double* o, double w, Py_ssize_t n)

cdef extern from "include/_csrsum.h" nogil:
    void cyscatter_csrsum_f(const float* src, Py_ssize_t s_row, const int64_t* indptr, const int64_t* cols,
                            Py_ssize_t m, const int64_t* ids, const float* w, float* out, Py_ssize_t o_row,
                            Py_ssize_t inner, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t ahead)
    void cyscatter_csrsum_d(const double* src, Py_ssize_t s_row, const int64_t* indptr, const int64_t* cols,
                            Py_ssize_t m, const int64_t* ids, const double* w, double* out, Py_ssize_t o_row,
                            Py_ssize_t inner, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t ahead)
    void cyscatter_csrsum_hf(const uint16_t* src, Py_ssize_t s_row, const int64_t* indptr, const int64_t* cols,
                             Py_ssize_t m, const int64_t* ids, const float* w, float* out, Py_ssize_t o_row,
                             Py_ssize_t inner, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t ahead)
    void cyscatter_csrsum_bf(const uint16_t* src, Py_ssize_t s_row, const int64_t* indptr, const int64_t* cols,
                             Py_ssize_t m, const int64_t* ids, const float* w, float* out, Py_ssize_t o_row,
                             Py_ssize_t inner, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t ahead)

cdef extern from "include/_halfconv.h" nogil:
    void cyscatter_widen_row_f(int bfloat, const uint16_t* src, float* dst, Py_ssize_t n)
    void cyscatter_widen_row_d(int bfloat, const uint16_t* src, double* dst, Py_ssize_t n)
    float cyscatter_widen_one_f(int bfloat, uint16_t h)
    int cyscatter_widen_has_f16c()

cdef enum:
    MAX_THREADS = 256
    CHUNK = 256          # features per stack buffer (scaled rows of non-add ops, tie counts)
    CACHE_LINE = 64

# Edges to look ahead when prefetching src rows (-1: auto, 0: off); `_tune` sets it for the benchmarks.
cdef Py_ssize_t _prefetch_edges = -1
# Gathered tables up to this size are not prefetched: a quarter of the L2 (cyscatter._runtime.machine sets it).
cdef Py_ssize_t _l2_share = 256 * 1024
# How far ahead the src-row prefetch reaches, in bytes of rows (cyscatter._runtime.machine sets it; 4 KB measured).
cdef Py_ssize_t _prefetch_bytes = 4096


cdef struct Geo:
    # the canonical views as raw pointers: strides in items; `heads` weights per edge, each over `chunk` features
    Py_ssize_t outer, inner, heads, chunk
    Py_ssize_t s_outer, s_row      # the gathered side (rows addressed by cols)
    Py_ssize_t o_outer, o_row      # the side owned row by row (out, result)
    Py_ssize_t x_outer, x_row      # the reverse kernels' src rows, in src's own items


cdef inline Py_ssize_t _ahead(Py_ssize_t row_bytes, Py_ssize_t table_rows) noexcept nogil:
    """Edges of look-ahead for the src-row prefetch: none while the gathered table fits in a quarter of the L2
    (`_l2_share`; the prefetch then
    only costs instructions), else about 4 KB of rows ahead, at least 4 and at most 32 edges. Measured (NOTES.md,
    fused gather-scatter): rows of 64 float32 from a 1e5-row table, 56 ms without prefetch, 29 / 23 / 21 ms 4 / 8
    / 16 edges ahead; rows of 64 float64 from 1e6 rows, 2.3 s without, 1.8 s 4 ahead, 1.1 s 8 ahead. The 4 KB
    (`_prefetch_bytes`) and the bounds scale together when a calibration of the machine changes it."""
    if _prefetch_edges >= 0:
        return _prefetch_edges
    if row_bytes * table_rows <= _l2_share:
        return 0
    return max(_prefetch_bytes // 1024, min(_prefetch_bytes // 128, _prefetch_bytes // max(row_bytes, 1)))


cdef inline void _prefetch_row(const void* row, Py_ssize_t row_bytes) noexcept nogil:
    cdef Py_ssize_t b = 0
    while b < row_bytes:
        cyscatter_prefetch_r(<const char*>row + b)
        b += CACHE_LINE


cdef inline bint _ties(real_t m, real_t o) noexcept nogil:
    """The value `m` is the one the forward pass kept in `o`: equal with the same sign of zero, or both NaN (an
    in-place scatter's initial dst as a candidate; the edges' messages are tested by `_fused.h`'s rows)."""
    return ((m == o) & (signbit(m) == signbit(o))) | ((m != m) & (o != o))


# Which messages of an output element its cotangent reaches in the reverse kernels, a tag type fixed at compile
# time as the op tags are (the test runs per element and edge): the `select` codes of the `def` entry points.
cdef struct SelectTied:      # 0, max/min: the message is the value the forward kept (`_ties`)
    char _tag
cdef struct SelectWon:       # 1, fmax/fmin: the same, but a NaN message never wins (nor ties a NaN output)
    char _tag
cdef struct SelectPresent:   # 2, nansum/nanmean: every non-NaN message (out is not read)
    char _tag

ctypedef fused select_t:
    SelectTied
    SelectWon
    SelectPresent


cdef inline int _code(select_t sel) noexcept nogil:
    """The selection as `_fused.h`'s constant (0 tied, 1 won, 2 present), folded by the C compiler."""
    if select_t is SelectPresent:
        return 2
    elif select_t is SelectWon:
        return 1
    else:
        return 0


# whole rows of the selections (`_fused.h`: SSE2 masks and blends; `cyscatter_selects_*` element by element)
cdef inline void _sel_axpy(int sel, real_t* acc, const real_t* x, const real_t* o, const real_t* share, real_t w,
                           Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cyscatter_sel_axpy_row_f(sel, acc, x, o, share, w, n)
    else:
        cyscatter_sel_axpy_row_d(sel, acc, x, o, share, w, n)


cdef inline void _sel_count(int sel, real_t* count, const real_t* x, const real_t* o, real_t w,
                            Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cyscatter_sel_count_row_f(sel, count, x, o, w, n)
    else:
        cyscatter_sel_count_row_d(sel, count, x, o, w, n)


cdef inline void _sel_tangent(int sel, real_t* count, real_t* acc, const real_t* x, const real_t* o,
                              const real_t* t, real_t w, bint with_tw, real_t tw, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cyscatter_sel_tangent_row_f(sel, count, acc, x, o, t, w, with_tw, tw, n)
    else:
        cyscatter_sel_tangent_row_d(sel, count, acc, x, o, t, w, with_tw, tw, n)


# A float16 / bfloat16 src (the `conv` codes, kernels.StageCode's: 1 float16, 2 bfloat16; 0: src of the value
# type) is read a row chunk at a time into a stack buffer of the value type, converted exactly, so that the
# reverse passes make no n x F converted copy and compare the values that copy would hold.
cdef enum:
    CONV_NONE = 0
    CONV_HALF = 1
    CONV_BFLOAT = 2


cdef inline void _widen(int conv, const uint16_t* s, real_t* d, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cyscatter_widen_row_f(conv == CONV_BFLOAT, s, d, n)
    else:
        cyscatter_widen_row_d(conv == CONV_BFLOAT, s, d, n)


cdef inline real_t _weight_at(const real_t* weight, const uint16_t* hweight, int wconv,
                              Py_ssize_t k) noexcept nogil:
    """Weight k of the real weights, or of the float16 / bfloat16 ones (`hweight`, `wconv`) widened exactly;
    1 without either (the unweighted rules)."""
    if weight != NULL:
        return weight[k]
    if hweight != NULL:
        return <real_t>cyscatter_widen_one_f(wconv == CONV_BFLOAT, hweight[k])
    return 1


cdef struct Src:
    # a reverse kernel's src: its first element (NULL where it is empty or no edge reads it), its `conv` code,
    # its rows per batch slice and its strides in its own items
    const void* ptr
    int conv
    Py_ssize_t rows, s_outer, s_row


cdef inline Src _real_src(const real_t[:, :, ::contiguous] a, Py_ssize_t m) noexcept nogil:
    """`a`, of the value type, as a `Src`; no first element where m (the edges reading it) is 0."""
    cdef Src x
    x.ptr = NULL
    if m and a.shape[0] and a.shape[1] and a.shape[2]:
        x.ptr = &a[0, 0, 0]
    x.conv, x.rows = CONV_NONE, a.shape[1]
    x.s_outer, x.s_row = a.strides[0] // sizeof(real_t), a.strides[1] // sizeof(real_t)
    return x


cdef inline Src _half_src(int conv, const uint16_t[:, :, ::contiguous] a, Py_ssize_t m) noexcept nogil:
    """`a`, the bits of a float16 or bfloat16 src, as a `Src`."""
    cdef Src x
    x.ptr = NULL
    if m and a.shape[0] and a.shape[1] and a.shape[2]:
        x.ptr = &a[0, 0, 0]
    x.conv, x.rows = conv, a.shape[1]
    x.s_outer, x.s_row = a.strides[0] // sizeof(uint16_t), a.strides[1] // sizeof(uint16_t)
    return x


cdef inline void _bits_count(real_t* count, const uint64_t* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cyscatter_bits_count_row_f(count, b, p, n)
    else:
        cyscatter_bits_count_row_d(count, b, p, n)


cdef inline void _bits_tangent(real_t* count, real_t* acc, const uint64_t* b, Py_ssize_t p, const real_t* t,
                               real_t w, Py_ssize_t n) noexcept nogil:
    if real_t is float:
        cyscatter_bits_tangent_row_f(count, acc, b, p, t, w, n)
    else:
        cyscatter_bits_tangent_row_d(count, acc, b, p, t, w, n)


cdef void _nan_bits(const real_t* src, Py_ssize_t outer, Py_ssize_t rows, Py_ssize_t inner, Py_ssize_t s_outer,
                    Py_ssize_t s_row, uint64_t* bits, Py_ssize_t words) noexcept nogil:
    """Row (o, r) of `bits` (C order, `words` per row): where src's row (o, r) is NaN, one bit per feature
    (`_fused.h`'s present selection from bits). Strides in items."""
    cdef Py_ssize_t o, r
    for o in range(outer):
        for r in range(rows):
            if real_t is float:
                cyscatter_nan_bits_row_f(src + o * s_outer + r * s_row, bits + (o * rows + r) * words, inner)
            else:
                cyscatter_nan_bits_row_d(src + o * s_outer + r * s_row, bits + (o * rows + r) * words, inner)


cdef inline Py_ssize_t _cut(const int64_t* indptr, Py_ssize_t rows, Py_ssize_t target) noexcept nogil:
    """First row r whose cost (edges before it plus r, one unit per row for its own overhead) reaches target."""
    cdef Py_ssize_t lo = 0, hi = rows, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if indptr[mid] + mid < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline int _team(int requested) noexcept nogil:
    """The kernels' thread count rule (`team_size`), the caller having sized `requested` to the work."""
    return team_size(requested, PY_SSIZE_T_MAX)


cdef void _cuts(const int64_t* indptr, Py_ssize_t rows, int parts, Py_ssize_t* cut) noexcept nogil:
    """Row ranges [cut[t], cut[t + 1]) of about equal edges + rows, one per thread."""
    cdef Py_ssize_t total = indptr[rows] - indptr[0] + rows
    cdef int t
    cut[0] = 0
    for t in range(1, parts):
        cut[t] = _cut(indptr, rows, indptr[0] + (total * t) // parts)
    cut[parts] = rows


# ---- CSR ---------------------------------------------------------------------------------------------------------

cdef Py_ssize_t check_csr(const int64_t[::1] indptr, const int64_t[::1] cols, Py_ssize_t table_rows) noexcept nogil:
    cdef Py_ssize_t rows = indptr.shape[0] - 1, m = cols.shape[0], r, p
    if rows < 0:
        return -2
    for r in range(rows):
        if indptr[r] < 0 or indptr[r] > indptr[r + 1] or indptr[r + 1] > m:
            return -2 - r
    for p in range(m):
        if <uint64_t>cols[p] >= <uint64_t>table_rows:   # a negative value wraps to a huge unsigned one
            return p
    return -1


cdef Py_ssize_t build_csr(const int64_t[::1] key, Py_ssize_t size, const int64_t[::1] other, Py_ssize_t other_size,
                          bint drop, int64_t[::1] indptr, int64_t[::1] edge_ids, int64_t[::1] cols) noexcept nogil:
    cdef Py_ssize_t n = key.shape[0], k, r, pos
    if other.shape[0] != n or indptr.shape[0] != size + 1 or edge_ids.shape[0] < n or cols.shape[0] < n:
        return n   # the Python layer never calls it so; a cimporting caller learns its arguments disagree
    for r in range(size + 1):
        indptr[r] = 0
    for k in range(n):
        if <uint64_t>key[k] >= <uint64_t>size or <uint64_t>other[k] >= <uint64_t>other_size:
            if drop:
                continue
            return k
        indptr[key[k] + 1] += 1
    for r in range(size):
        indptr[r + 1] += indptr[r]
    # indptr[r] is the next free slot of row r while filling; shifted back to row starts afterwards
    for k in range(n):
        if <uint64_t>key[k] >= <uint64_t>size or <uint64_t>other[k] >= <uint64_t>other_size:
            continue
        pos = indptr[key[k]]
        edge_ids[pos] = k
        cols[pos] = other[k]
        indptr[key[k]] = pos + 1
    for r in range(size, 0, -1):
        indptr[r] = indptr[r - 1]
    indptr[0] = 0
    return -1


# ---- forward -----------------------------------------------------------------------------------------------------

cdef inline void _add_scaled(value_t* acc, const value_t* x, value_t w, bint weighted, Py_ssize_t n) noexcept nogil:
    """acc += w * x (or + x): common widths spelled as constants, so the row is unrolled and vectorised."""
    cdef Py_ssize_t f
    if value_t is double:
        if weighted:
            if n == 16:
                cyscatter_axpy_row_d(acc, x, w, 16)
            elif n == 32:
                cyscatter_axpy_row_d(acc, x, w, 32)
            elif n == 64:
                cyscatter_axpy_row_d(acc, x, w, 64)
            else:
                cyscatter_axpy_row_d(acc, x, w, n)
        elif n == 16:
            cyscatter_add_row_d(acc, x, 16)
        elif n == 32:
            cyscatter_add_row_d(acc, x, 32)
        elif n == 64:
            cyscatter_add_row_d(acc, x, 64)
        else:
            cyscatter_add_row_d(acc, x, n)
    elif value_t is float:
        if weighted:
            if n == 16:
                cyscatter_axpy_row_f(acc, x, w, 16)
            elif n == 32:
                cyscatter_axpy_row_f(acc, x, w, 32)
            elif n == 64:
                cyscatter_axpy_row_f(acc, x, w, 64)
            else:
                cyscatter_axpy_row_f(acc, x, w, n)
        elif n == 16:
            cyscatter_add_row_f(acc, x, 16)
        elif n == 32:
            cyscatter_add_row_f(acc, x, 32)
        elif n == 64:
            cyscatter_add_row_f(acc, x, 64)
        else:
            cyscatter_add_row_f(acc, x, n)
    elif weighted:
        for f in range(n):
            acc[f] = acc[f] + w * x[f]
    else:
        for f in range(n):
            acc[f] = acc[f] + x[f]


cdef inline void _scale(value_t* dst, const value_t* x, value_t w, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t f
    if value_t is double:
        cyscatter_scale_row_d(dst, x, w, n)
    elif value_t is float:
        cyscatter_scale_row_f(dst, x, w, n)
    else:
        for f in range(n):
            dst[f] = w * x[f]


cdef inline void _half_messages(int wconv, const uint16_t* wrow, const real_t* x, real_t* buf, const Geo* G,
                                Py_ssize_t f0, Py_ssize_t n) noexcept nogil:
    """buf[f - f0] = w_f * x[f - f0] for the features [f0, f0 + n) (n <= CHUNK; x points at feature f0), w_f the
    weight of f's head read from the edge's row `wrow` of float16 / bfloat16 weights (`wconv`), widened exactly:
    the messages that the weight converted whole gives, each rounded to the value type."""
    cdef real_t wbuf[CHUNK]
    cdef Py_ssize_t h0 = f0 // G.chunk, a, b, f
    cdef real_t w
    if G.chunk == 1:   # a weight per feature
        _widen(wconv, wrow + f0, wbuf, n)
        for f in range(n):
            buf[f] = wbuf[f] * x[f]
        return
    _widen(wconv, wrow + h0, wbuf, (f0 + n - 1) // G.chunk + 1 - h0)
    a = f0
    while a < f0 + n:
        w = wbuf[a // G.chunk - h0]
        b = min(f0 + n, (a // G.chunk + 1) * G.chunk)
        for f in range(a - f0, b - f0):
            buf[f] = w * x[f]
        a = b


cdef void _forward_half_rows(op_t op, const real_t* src, const int64_t* indptr, const int64_t* cols, Py_ssize_t m,
                             const int64_t* edge_ids, const uint16_t* hweight, int wconv, real_t* out, const Geo* G,
                             Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t ahead) noexcept nogil:
    """`_forward_rows` with float16 / bfloat16 weights (`hweight`, `wconv`): the messages are formed a CHUNK of
    features at a time from the edge's weights widened exactly, then combined as `_forward_rows` combines them
    (a separate loop: the weighted float32 pass measured 1.4x slower with this branch inside it)."""
    cdef Py_ssize_t o, r, p, e, f, f0, n, row_bytes = G.inner * <Py_ssize_t>sizeof(real_t)
    cdef real_t* acc
    cdef const real_t* x
    cdef real_t buf[CHUNK]
    for o in range(G.outer):
        for r in range(r0, r1):
            acc = out + o * G.o_outer + r * G.o_row
            for p in range(indptr[r], indptr[r + 1]):
                if ahead and p + ahead < m:
                    _prefetch_row(src + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                    if edge_ids != NULL:
                        cyscatter_prefetch_r(hweight + edge_ids[p + ahead] * G.heads)
                x = src + o * G.s_outer + cols[p] * G.s_row
                e = edge_ids[p] if edge_ids != NULL else p
                f0 = 0
                while f0 < G.inner:
                    n = min(<Py_ssize_t>CHUNK, G.inner - f0)
                    _half_messages(wconv, hweight + e * G.heads, x + f0, buf, G, f0, n)
                    if op_t is OpAdd:   # acc + w * x, the message rounded first as `_add_scaled` does
                        for f in range(n):
                            acc[f0 + f] = acc[f0 + f] + buf[f]
                    else:
                        combine_rows(op, acc + f0, buf, 1, 0, n)
                    f0 += n


cdef void _forward_rows(op_t op, const value_t* src, const int64_t* indptr, const int64_t* cols, Py_ssize_t m,
                        const int64_t* edge_ids, const value_t* weight, value_t* out, const Geo* G,
                        Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t ahead) noexcept nogil:
    cdef Py_ssize_t o, r, p, e, h, f0, n, row_bytes = G.inner * <Py_ssize_t>sizeof(value_t)
    cdef value_t* acc
    cdef const value_t* x
    cdef value_t one = 1
    cdef value_t buf[CHUNK]
    if op_t is OpAdd and (value_t is double or value_t is float):
        if registers_on() and (weight == NULL or G.heads == 1):
            for o in range(G.outer):
                if value_t is double:
                    cyscatter_csrsum_d(src + o * G.s_outer, G.s_row, indptr, cols, m, edge_ids, weight,
                                       out + o * G.o_outer, G.o_row, G.inner, r0, r1, ahead)
                else:
                    cyscatter_csrsum_f(src + o * G.s_outer, G.s_row, indptr, cols, m, edge_ids, weight,
                                       out + o * G.o_outer, G.o_row, G.inner, r0, r1, ahead)
            return
    for o in range(G.outer):
        for r in range(r0, r1):
            acc = out + o * G.o_outer + r * G.o_row
            for p in range(indptr[r], indptr[r + 1]):
                if ahead and p + ahead < m:
                    _prefetch_row(src + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                    if edge_ids != NULL and weight != NULL:
                        # along the transposed CSR the weights are read in a permuted order: one miss per edge
                        cyscatter_prefetch_r(weight + edge_ids[p + ahead] * G.heads)
                x = src + o * G.s_outer + cols[p] * G.s_row
                if weight == NULL:
                    if op_t is OpAdd:
                        _add_scaled(acc, x, one, False, G.inner)
                    else:
                        combine_rows(op, acc, x, 1, 0, G.inner)
                    continue
                e = edge_ids[p] if edge_ids != NULL else p
                for h in range(G.heads):
                    if op_t is OpAdd:
                        _add_scaled(acc + h * G.chunk, x + h * G.chunk, weight[e * G.heads + h], True, G.chunk)
                    else:
                        # the message is rounded to the value type first, as gather(src) * weight would be
                        f0 = 0
                        while f0 < G.chunk:
                            n = min(<Py_ssize_t>CHUNK, G.chunk - f0)
                            _scale(buf, x + h * G.chunk + f0, weight[e * G.heads + h], n)
                            combine_rows(op, acc + h * G.chunk + f0, buf, 1, 0, n)
                            f0 += n


cdef inline void _geometry(Geo* G, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t heads, Py_ssize_t s_outer,
                           Py_ssize_t s_row, Py_ssize_t o_outer, Py_ssize_t o_row) noexcept nogil:
    G.outer, G.inner = outer, inner
    G.heads = heads if heads > 0 else 1
    G.chunk = inner // G.heads
    G.s_outer, G.s_row, G.o_outer, G.o_row = s_outer, s_row, o_outer, o_row
    G.x_outer, G.x_row = s_outer, s_row


cdef inline Py_ssize_t _check_call(const int64_t[::1] indptr, const int64_t[::1] cols, const Py_ssize_t* src_shape,
                                   const Py_ssize_t* out_shape, bint weighted, Py_ssize_t heads) noexcept nogil:
    """The drivers' status before any work: -2 - rows when the arrays do not fit together (the wrapper raises
    its own message), else `check_csr`'s."""
    cdef Py_ssize_t rows = out_shape[1]
    if indptr.shape[0] != rows + 1 or src_shape[0] != out_shape[0] or src_shape[2] != out_shape[2]:
        return -2 - rows
    if weighted and (heads < 1 or src_shape[2] % heads):
        return -2 - rows
    return check_csr(indptr, cols, src_shape[1])


cdef Py_ssize_t gather_scatter_csr(op_t op, const value_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                                   const int64_t[::1] cols, const int64_t* edge_ids, const value_t* weight,
                                   Py_ssize_t heads, value_t[:, :, ::contiguous] out, int num_threads) noexcept nogil:
    cdef Py_ssize_t status = _check_call(indptr, cols, src.shape, out.shape, weight != NULL, heads)
    if status != -1:
        return status
    _forward_csr(op, src, indptr, cols, edge_ids, weight, NULL, CONV_NONE, heads, out, num_threads)
    return -1


cdef void _forward_csr(op_t op, const value_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                       const int64_t[::1] cols, const int64_t* edge_ids, const value_t* weight,
                       const uint16_t* hweight, int wconv, Py_ssize_t heads, value_t[:, :, ::contiguous] out,
                       int num_threads) noexcept nogil:
    # `gather_scatter_csr` on operands already checked; with `hweight` (weight NULL), float16 / bfloat16 weights
    # (`wconv`, float and double values)
    cdef Py_ssize_t rows = out.shape[1], m = cols.shape[0], ahead
    cdef Py_ssize_t cut[MAX_THREADS + 1]
    cdef int parts = _team(num_threads), t
    cdef Geo G
    if src.shape[0] == 0 or src.shape[2] == 0 or m == 0:
        return
    _geometry(&G, src.shape[0], src.shape[2], heads, src.strides[0] // sizeof(value_t),
              src.strides[1] // sizeof(value_t), out.strides[0] // sizeof(value_t), out.strides[1] // sizeof(value_t))
    ahead = _ahead(G.inner * <Py_ssize_t>sizeof(value_t), src.shape[1])
    if hweight != NULL:
        if value_t is float or value_t is double:
            if parts == 1 or rows < 2:
                _forward_half_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, hweight, wconv,
                                   &out[0, 0, 0], &G, 0, rows, ahead)
                return
            _cuts(&indptr[0], rows, parts, cut)
            for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
                _forward_half_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, hweight, wconv,
                                   &out[0, 0, 0], &G, cut[t], cut[t + 1], ahead)
        return
    if parts == 1 or rows < 2:
        _forward_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, weight, &out[0, 0, 0], &G, 0, rows,
                      ahead)
        return
    _cuts(&indptr[0], rows, parts, cut)
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _forward_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, weight, &out[0, 0, 0], &G, cut[t],
                      cut[t + 1], ahead)


# ---- forward on a float16 / bfloat16 node table ------------------------------------------------------------------

cdef void _forward_conv_rows(op_t op, const uint16_t* src, int sconv, const int64_t* indptr, const int64_t* cols,
                             Py_ssize_t m, const int64_t* edge_ids, const real_t* weight, const uint16_t* hweight,
                             int wconv, real_t* out, int32_t* c32, int64_t* c64, Py_ssize_t c_outer,
                             Py_ssize_t c_row, const Geo* G, Py_ssize_t r0, Py_ssize_t r1,
                             Py_ssize_t ahead) noexcept nogil:
    # `_forward_rows` (and `_forward_nan_rows`: the non-NaN messages counted into c32 or c64 when one is given) on
    # a float16 / bfloat16 src (`sconv`): each edge's row is widened exactly a CHUNK of features at a time as it is
    # read, so that no S x F converted table is made. The weights are real (`weight`), float16 / bfloat16
    # (`hweight`, `wconv`) or none; the messages are rounded to the value type before they are combined, as there.
    cdef Py_ssize_t o, r, p, e, f, f0, n, a, b, h, row_bytes = G.inner * 2
    cdef real_t* acc
    cdef const uint16_t* x
    cdef const real_t* msg
    cdef real_t w
    cdef real_t xbuf[CHUNK]
    cdef real_t buf[CHUNK]
    cdef int32_t* n32
    cdef int64_t* n64
    if op_t is OpAdd and real_t is float:
        # float sums of one weight per edge (or none) in registers, as `_forward_rows` sums a float32 table
        if hweight == NULL and (weight == NULL or G.heads == 1) and registers_on() and cyscatter_widen_has_f16c():
            for o in range(G.outer):
                if sconv == CONV_BFLOAT:
                    cyscatter_csrsum_bf(src + o * G.s_outer, G.s_row, indptr, cols, m, edge_ids, weight,
                                        out + o * G.o_outer, G.o_row, G.inner, r0, r1, ahead)
                else:
                    cyscatter_csrsum_hf(src + o * G.s_outer, G.s_row, indptr, cols, m, edge_ids, weight,
                                        out + o * G.o_outer, G.o_row, G.inner, r0, r1, ahead)
            return
    for o in range(G.outer):
        for r in range(r0, r1):
            acc = out + o * G.o_outer + r * G.o_row
            n32 = c32 + o * c_outer + r * c_row if c32 != NULL else NULL
            n64 = c64 + o * c_outer + r * c_row if c64 != NULL else NULL
            for p in range(indptr[r], indptr[r + 1]):
                if ahead and p + ahead < m:
                    _prefetch_row(src + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                    if edge_ids != NULL and hweight != NULL:
                        cyscatter_prefetch_r(hweight + edge_ids[p + ahead] * G.heads)
                    elif edge_ids != NULL and weight != NULL:
                        cyscatter_prefetch_r(weight + edge_ids[p + ahead] * G.heads)
                x = src + o * G.s_outer + cols[p] * G.s_row
                e = edge_ids[p] if edge_ids != NULL else p
                f0 = 0
                while f0 < G.inner:
                    n = min(<Py_ssize_t>CHUNK, G.inner - f0)
                    _widen(sconv, x + f0, xbuf, n)
                    msg = buf
                    if hweight != NULL:
                        _half_messages(wconv, hweight + e * G.heads, xbuf, buf, G, f0, n)
                    elif weight != NULL:
                        a, h = f0, f0 // G.chunk
                        while a < f0 + n:
                            b = min(f0 + n, (h + 1) * G.chunk)
                            w = weight[e * G.heads + h]
                            for f in range(a - f0, b - f0):
                                buf[f] = w * xbuf[f]
                            a, h = b, h + 1
                    else:
                        msg = xbuf
                    if op_t is OpAdd:
                        for f in range(n):
                            acc[f0 + f] = acc[f0 + f] + msg[f]
                    else:
                        combine_rows(op, acc + f0, msg, 1, 0, n)
                    if n32 != NULL:
                        for f in range(n):
                            n32[f0 + f] += (msg[f] == msg[f])
                    elif n64 != NULL:
                        for f in range(n):
                            n64[f0 + f] += (msg[f] == msg[f])
                    f0 += n


cdef void _forward_conv_csr(op_t op, const uint16_t[:, :, ::contiguous] src, int sconv, const int64_t[::1] indptr,
                            const int64_t[::1] cols, const int64_t* edge_ids, const real_t* weight,
                            const uint16_t* hweight, int wconv, Py_ssize_t heads, real_t[:, :, ::contiguous] out,
                            int32_t* c32, int64_t* c64, Py_ssize_t c_outer, Py_ssize_t c_row,
                            int num_threads) noexcept nogil:
    # `_forward_conv_rows` over the destination rows, on operands already checked
    cdef Py_ssize_t rows = out.shape[1], m = cols.shape[0], ahead
    cdef Py_ssize_t cut[MAX_THREADS + 1]
    cdef int parts = _team(num_threads), t
    cdef Geo G
    if src.shape[0] == 0 or src.shape[2] == 0 or m == 0:
        return
    _geometry(&G, src.shape[0], src.shape[2], heads, src.strides[0] // sizeof(uint16_t),
              src.strides[1] // sizeof(uint16_t), out.strides[0] // sizeof(real_t), out.strides[1] // sizeof(real_t))
    ahead = _ahead(G.inner * <Py_ssize_t>sizeof(uint16_t), src.shape[1])
    if parts == 1 or rows < 2:
        _forward_conv_rows(op, &src[0, 0, 0], sconv, &indptr[0], &cols[0], m, edge_ids, weight, hweight, wconv,
                           &out[0, 0, 0], c32, c64, c_outer, c_row, &G, 0, rows, ahead)
        return
    _cuts(&indptr[0], rows, parts, cut)
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _forward_conv_rows(op, &src[0, 0, 0], sconv, &indptr[0], &cols[0], m, edge_ids, weight, hweight, wconv,
                           &out[0, 0, 0], c32, c64, c_outer, c_row, &G, cut[t], cut[t + 1], ahead)


# ---- forward of the NaN-skipping ops -----------------------------------------------------------------------------

cdef void _forward_nan_rows(nan_op_t op, const nan_value_t* src, const int64_t* indptr, const int64_t* cols,
                            Py_ssize_t m, const int64_t* edge_ids, const nan_value_t* weight, nan_value_t* out,
                            count_t* counts, Py_ssize_t c_outer, Py_ssize_t c_row, const Geo* G, Py_ssize_t r0,
                            Py_ssize_t r1, Py_ssize_t ahead) noexcept nogil:
    # `_forward_rows` for a NaN-skipping op, counting the non-NaN messages of each output element into `counts`
    # (NULL: not counted; strides c_outer, c_row in items) while the message is in registers or `buf`. NaN is
    # tested on the message w * x, the value that is scattered: a NaN weight, or inf * 0, makes a NaN message.
    cdef Py_ssize_t o, r, p, e, h, f, f0, n, row_bytes = G.inner * <Py_ssize_t>sizeof(nan_value_t)
    cdef nan_value_t* acc
    cdef count_t* cnt
    cdef const nan_value_t* x
    cdef nan_value_t buf[CHUNK]
    for o in range(G.outer):
        for r in range(r0, r1):
            acc = out + o * G.o_outer + r * G.o_row
            cnt = counts + o * c_outer + r * c_row if counts != NULL else NULL
            for p in range(indptr[r], indptr[r + 1]):
                if ahead and p + ahead < m:
                    _prefetch_row(src + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                    if edge_ids != NULL and weight != NULL:
                        cyscatter_prefetch_r(weight + edge_ids[p + ahead] * G.heads)
                x = src + o * G.s_outer + cols[p] * G.s_row
                if weight == NULL:
                    combine_rows(op, acc, x, 1, 0, G.inner)
                    if cnt != NULL:
                        for f in range(G.inner):
                            cnt[f] += (x[f] == x[f])
                    continue
                e = edge_ids[p] if edge_ids != NULL else p
                for h in range(G.heads):
                    f0 = 0
                    while f0 < G.chunk:   # the message rounded to the value type first, as in `_forward_rows`
                        n = min(<Py_ssize_t>CHUNK, G.chunk - f0)
                        _scale(buf, x + h * G.chunk + f0, weight[e * G.heads + h], n)
                        combine_rows(op, acc + h * G.chunk + f0, buf, 1, 0, n)
                        if cnt != NULL:
                            for f in range(n):
                                cnt[h * G.chunk + f0 + f] += (buf[f] == buf[f])
                        f0 += n


cdef void _forward_nan_half_rows(nan_op_t op, const real_t* src, const int64_t* indptr, const int64_t* cols,
                                 Py_ssize_t m, const int64_t* edge_ids, const uint16_t* hweight, int wconv,
                                 real_t* out, count_t* counts, Py_ssize_t c_outer, Py_ssize_t c_row, const Geo* G,
                                 Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t ahead) noexcept nogil:
    # `_forward_nan_rows` with float16 / bfloat16 weights (`hweight`, `wconv`), the messages formed as in
    # `_forward_half_rows`
    cdef Py_ssize_t o, r, p, e, f, f0, n, row_bytes = G.inner * <Py_ssize_t>sizeof(real_t)
    cdef real_t* acc
    cdef count_t* cnt
    cdef const real_t* x
    cdef real_t buf[CHUNK]
    for o in range(G.outer):
        for r in range(r0, r1):
            acc = out + o * G.o_outer + r * G.o_row
            cnt = counts + o * c_outer + r * c_row if counts != NULL else NULL
            for p in range(indptr[r], indptr[r + 1]):
                if ahead and p + ahead < m:
                    _prefetch_row(src + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                    if edge_ids != NULL:
                        cyscatter_prefetch_r(hweight + edge_ids[p + ahead] * G.heads)
                x = src + o * G.s_outer + cols[p] * G.s_row
                e = edge_ids[p] if edge_ids != NULL else p
                f0 = 0
                while f0 < G.inner:
                    n = min(<Py_ssize_t>CHUNK, G.inner - f0)
                    _half_messages(wconv, hweight + e * G.heads, x + f0, buf, G, f0, n)
                    combine_rows(op, acc + f0, buf, 1, 0, n)
                    if cnt != NULL:
                        for f in range(n):
                            cnt[f0 + f] += (buf[f] == buf[f])
                    f0 += n


cdef Py_ssize_t _forward_nan_half_csr(nan_op_t op, const nan_value_t[:, :, ::contiguous] src,
                                      const int64_t[::1] indptr, const int64_t[::1] cols, const int64_t* edge_ids,
                                      const uint16_t* hweight, int wconv, Py_ssize_t heads,
                                      nan_value_t[:, :, ::contiguous] out, count_t* counts, Py_ssize_t c_outer,
                                      Py_ssize_t c_row, int num_threads) noexcept nogil:
    """`gather_scatter_nan_csr` with float16 / bfloat16 weights (`hweight`, `wconv`; float and double values)."""
    cdef Py_ssize_t rows = out.shape[1], m = cols.shape[0], status, ahead
    cdef Py_ssize_t cut[MAX_THREADS + 1]
    cdef int parts = _team(num_threads), t
    cdef Geo G
    status = _check_call(indptr, cols, src.shape, out.shape, True, heads)
    if status != -1 or src.shape[0] == 0 or src.shape[2] == 0 or m == 0:
        return status
    _geometry(&G, src.shape[0], src.shape[2], heads, src.strides[0] // sizeof(nan_value_t),
              src.strides[1] // sizeof(nan_value_t), out.strides[0] // sizeof(nan_value_t),
              out.strides[1] // sizeof(nan_value_t))
    ahead = _ahead(G.inner * <Py_ssize_t>sizeof(nan_value_t), src.shape[1])
    if nan_value_t is float or nan_value_t is double:
        if parts == 1 or rows < 2:
            _forward_nan_half_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, hweight, wconv,
                                   &out[0, 0, 0], counts, c_outer, c_row, &G, 0, rows, ahead)
            return -1
        _cuts(&indptr[0], rows, parts, cut)
        for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
            _forward_nan_half_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, hweight, wconv,
                                   &out[0, 0, 0], counts, c_outer, c_row, &G, cut[t], cut[t + 1], ahead)
    return -1


cdef Py_ssize_t gather_scatter_nan_csr(nan_op_t op, const nan_value_t[:, :, ::contiguous] src,
                                       const int64_t[::1] indptr, const int64_t[::1] cols, const int64_t* edge_ids,
                                       const nan_value_t* weight, Py_ssize_t heads,
                                       nan_value_t[:, :, ::contiguous] out, count_t* counts, Py_ssize_t c_outer,
                                       Py_ssize_t c_row, int num_threads) noexcept nogil:
    cdef Py_ssize_t rows = out.shape[1], m = cols.shape[0], status, ahead
    cdef Py_ssize_t cut[MAX_THREADS + 1]
    cdef int parts = _team(num_threads), t
    cdef Geo G
    status = _check_call(indptr, cols, src.shape, out.shape, weight != NULL, heads)
    if status != -1 or src.shape[0] == 0 or src.shape[2] == 0 or m == 0:
        return status
    _geometry(&G, src.shape[0], src.shape[2], heads, src.strides[0] // sizeof(nan_value_t),
              src.strides[1] // sizeof(nan_value_t), out.strides[0] // sizeof(nan_value_t),
              out.strides[1] // sizeof(nan_value_t))
    ahead = _ahead(G.inner * <Py_ssize_t>sizeof(nan_value_t), src.shape[1])
    if parts == 1 or rows < 2:
        _forward_nan_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, weight, &out[0, 0, 0], counts,
                          c_outer, c_row, &G, 0, rows, ahead)
        return -1
    _cuts(&indptr[0], rows, parts, cut)
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _forward_nan_rows(op, &src[0, 0, 0], &indptr[0], &cols[0], m, edge_ids, weight, &out[0, 0, 0], counts,
                          c_outer, c_row, &G, cut[t], cut[t + 1], ahead)
    return -1


# ---- max / min reverse -------------------------------------------------------------------------------------------

cdef void _ties_rows(select_t sel, bint average, const void* src, int conv, const int64_t* indptr,
                     const int64_t* cols, Py_ssize_t m, const int64_t* edge_ids, const real_t* weight,
                     const uint16_t* hweight, int wconv, const real_t* out,
                     const real_t* grad_out, const real_t* tangent_src, const real_t* tangent_w,
                     const real_t* dst_init, real_t* result, const Geo* G, Py_ssize_t r0, Py_ssize_t r1,
                     Py_ssize_t ahead, const uint64_t* bits, Py_ssize_t words, Py_ssize_t src_rows) noexcept nogil:
    # `out`, `grad_out`, `dst_init` and `result` share the owned side's strides; `tangent_src` the gathered side's.
    # Features are walked one head at a time (a constant weight, no division per element), a chunk at a time.
    # `bits` (the present selection, no weight tangent; else NULL): src's NaN bits, `words` per row of
    # `src_rows` per outer index, read instead of src where an edge's weight is finite and not 0.
    # src rows are at G.x_* (in src's items; `conv`: float16 / bfloat16, widened a chunk at a time into `xbuf`).
    cdef Py_ssize_t o, r, p, e, f, f0, n, at, a, b, h, row_bytes = G.inner * <Py_ssize_t>sizeof(real_t)
    cdef Py_ssize_t item = 2 if conv != CONV_NONE else <Py_ssize_t>sizeof(real_t), xat
    cdef real_t w, tw
    cdef real_t count[CHUNK]
    cdef real_t acc[CHUNK]
    cdef real_t xbuf[CHUNK]
    cdef const real_t* x
    cdef const real_t* orow
    cdef const uint64_t* brow
    cdef bint tangents = tangent_src != NULL or tangent_w != NULL
    for o in range(G.outer):
        for r in range(r0, r1):
            orow = out + o * G.o_outer + r * G.o_row
            f0 = 0
            while f0 < G.inner:
                n = min(<Py_ssize_t>CHUNK, G.inner - f0)
                for f in range(n):
                    # an in-place scatter's initial value is a candidate too (its tangent is not carried here)
                    count[f] = 1 if dst_init != NULL and _ties(dst_init[o * G.o_outer + r * G.o_row + f0 + f],
                                                               orow[f0 + f]) else 0
                    acc[f] = 0
                for p in range(indptr[r], indptr[r + 1]):
                    if ahead and p + ahead < m:
                        if bits == NULL:
                            _prefetch_row(<const char*>src + (o * G.x_outer + cols[p + ahead] * G.x_row) * item,
                                          G.inner * item)
                        else:
                            _prefetch_row(bits + (o * src_rows + cols[p + ahead]) * words, words * 8)
                        if tangent_src != NULL:   # (tangent_src has src's strides)
                            _prefetch_row(tangent_src + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                        if edge_ids != NULL and weight != NULL:   # the weights in CSR order: a miss per edge
                            cyscatter_prefetch_r(weight + edge_ids[p + ahead] * G.heads)
                        elif edge_ids != NULL and hweight != NULL:
                            cyscatter_prefetch_r(hweight + edge_ids[p + ahead] * G.heads)
                    at = o * G.s_outer + cols[p] * G.s_row
                    xat = o * G.x_outer + cols[p] * G.x_row + f0
                    if conv == CONV_NONE:
                        x = <const real_t*>src + xat   # feature a at x[a - f0]
                    else:   # (never with `bits`)
                        _widen(conv, <const uint16_t*>src + xat, xbuf, n)
                        x = xbuf
                    e = edge_ids[p] if edge_ids != NULL else p
                    a, h = f0, f0 // G.chunk
                    while a < f0 + n:
                        b = min(f0 + n, (h + 1) * G.chunk)
                        w = _weight_at(weight, hweight, wconv, e * G.heads + h)
                        if bits != NULL and w != 0 and w - w == 0:   # (finite, not 0: w * x is NaN where x is)
                            brow = bits + (o * src_rows + cols[p]) * words
                            if not tangents:
                                _bits_count(count + (a - f0), brow, a, b - a)
                            else:
                                _bits_tangent(count + (a - f0), acc + (a - f0), brow, a, tangent_src + at + a, w,
                                              b - a)
                        elif not tangents:
                            _sel_count(_code(sel), count + (a - f0), x + (a - f0), orow + a, w, b - a)
                        else:
                            tw = tangent_w[e * G.heads + h] if tangent_w != NULL else 0
                            # (not 0 * x without a weight tangent: NaN where x is +-inf)
                            _sel_tangent(_code(sel), count + (a - f0), acc + (a - f0), x + (a - f0), orow + a,
                                         tangent_src + at + a if tangent_src != NULL else NULL, w,
                                         tangent_w != NULL, tw, b - a)
                        a, h = b, h + 1
                for f in range(f0, f0 + n):
                    if count[f - f0] == 0:
                        result[o * G.o_outer + r * G.o_row + f] = 0
                    elif grad_out != NULL:
                        result[o * G.o_outer + r * G.o_row + f] = grad_out[o * G.o_outer + r * G.o_row + f] / count[f - f0]
                    elif average:
                        result[o * G.o_outer + r * G.o_row + f] = acc[f - f0] / count[f - f0]
                    else:
                        result[o * G.o_outer + r * G.o_row + f] = acc[f - f0]
                f0 += n


cdef void extreme_ties_csr(bint is_max, const real_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                           const int64_t[::1] cols, const int64_t* edge_ids, const real_t* weight, Py_ssize_t heads,
                           const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] grad_out,
                           const real_t* tangent_src, const real_t* tangent_w, const real_t* dst_init,
                           real_t[:, :, ::contiguous] result, int num_threads) noexcept nogil:
    """The caller (the `def` wrapper, or a cimporting one) has checked the CSR and that out, grad_out and result
    share one shape and strides, and tangent_src src's."""
    cdef SelectTied tied = SelectTied(_tag=0)
    cdef Src x = _real_src(src, cols.shape[0])
    _shares_csr(tied, True, x, x.s_outer, x.s_row, indptr, cols, edge_ids, weight, NULL, CONV_NONE, heads, out,
                grad_out, tangent_src, tangent_w, dst_init, result, num_threads)


cdef void _shares_csr(select_t sel, bint average, Src src, Py_ssize_t t_outer, Py_ssize_t t_row,
                      const int64_t[::1] indptr, const int64_t[::1] cols, const int64_t* edge_ids, const real_t* weight,
                      const uint16_t* hweight, int wconv, Py_ssize_t heads,
                      const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] grad_out,
                      const real_t* tangent_src, const real_t* tangent_w, const real_t* dst_init,
                      real_t[:, :, ::contiguous] result, int num_threads) noexcept nogil:
    """`extreme_ties_csr` for the selection `sel`; without `average` tangent mode gives the sum (nansum). `t_outer`,
    `t_row`: tangent_src's strides in items."""
    cdef Py_ssize_t rows = out.shape[1], m = cols.shape[0], ahead
    cdef Py_ssize_t cut[MAX_THREADS + 1]
    cdef int parts = _team(num_threads), t
    cdef const real_t* g = NULL
    cdef Geo G
    if out.shape[0] == 0 or out.shape[2] == 0 or rows == 0:
        return
    _geometry(&G, out.shape[0], out.shape[2], heads, t_outer, t_row, out.strides[0] // sizeof(real_t),
              out.strides[1] // sizeof(real_t))
    G.x_outer, G.x_row = src.s_outer, src.s_row
    if tangent_src == NULL and tangent_w == NULL:
        g = &grad_out[0, 0, 0]
    # (tangent mode reads a tangent row at random with each src row)
    ahead = _ahead(G.inner * <Py_ssize_t>(2 if src.conv != CONV_NONE else sizeof(real_t)),
                   src.rows * (2 if tangent_src != NULL else 1))
    cdef uint64_t* bits = NULL
    cdef Py_ssize_t words = (G.inner + 63) // 64
    if select_t is SelectPresent:
        # src's NaN bits, once, when src is out of cache (prefetched) and read about once per row or more; without
        # the memory (malloc fails) the rows are read as before
        if src.conv == CONV_NONE and tangent_w == NULL and ahead and m >= src.rows > 0:
            bits = <uint64_t*>malloc(G.outer * src.rows * words * sizeof(uint64_t))
            if bits != NULL:
                _nan_bits(<const real_t*>src.ptr, G.outer, src.rows, G.inner, G.x_outer, G.x_row, bits, words)
    if m == 0 or parts == 1 or rows < 2:
        _ties_rows(sel, average, src.ptr, src.conv, &indptr[0], &cols[0] if m else NULL, m, edge_ids,
                   weight, hweight, wconv, &out[0, 0, 0], g, tangent_src, tangent_w, dst_init, &result[0, 0, 0], &G, 0, rows, ahead,
                   bits, words, src.rows)
    else:
        _cuts(&indptr[0], rows, parts, cut)
        for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
            _ties_rows(sel, average, src.ptr, src.conv, &indptr[0], &cols[0], m, edge_ids, weight, hweight, wconv,
                       &out[0, 0, 0],
                       g, tangent_src, tangent_w, dst_init, &result[0, 0, 0], &G, cut[t], cut[t + 1], ahead, bits,
                       words, src.rows)
    free(bits)


cdef void _back_rows(select_t sel, const void* src, int conv, const int64_t* indptr, const int64_t* cols,
                     Py_ssize_t m, const int64_t* edge_ids, const real_t* weight, const uint16_t* hweight,
                     int wconv, const real_t* out,
                     const real_t* share, real_t* result, const Geo* G, Py_ssize_t r0, Py_ssize_t r1,
                     Py_ssize_t ahead) noexcept nogil:
    # here the owned rows are the source rows (result's at G.o_*, src's at G.x_*), cols the destination rows
    # (G.s_*), whose out and share rows are read at random: prefetched `ahead` edges early, as the forward's src
    # rows. A float16 / bfloat16 src (`conv`) is widened CHUNK features at a time into `xbuf`.
    cdef Py_ssize_t o, s, p, e, f, at, h, lo, f0, n, row_bytes = G.inner * <Py_ssize_t>sizeof(real_t)
    cdef real_t w
    cdef real_t xbuf[CHUNK]
    cdef const real_t* x = NULL
    cdef const uint16_t* hx = NULL
    cdef const real_t* orow = NULL
    cdef real_t* res
    for o in range(G.outer):
        for s in range(r0, r1):
            if conv == CONV_NONE:
                x = <const real_t*>src + o * G.x_outer + s * G.x_row
            else:
                hx = <const uint16_t*>src + o * G.x_outer + s * G.x_row
            res = result + o * G.o_outer + s * G.o_row
            for f in range(G.inner):
                res[f] = 0
            for p in range(indptr[s], indptr[s + 1]):
                if ahead and p + ahead < m:
                    if select_t is not SelectPresent:   # (which reads no out)
                        _prefetch_row(out + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                    _prefetch_row(share + o * G.s_outer + cols[p + ahead] * G.s_row, row_bytes)
                    if edge_ids != NULL and weight != NULL:   # permuted weights: a miss per edge, as the forward's
                        cyscatter_prefetch_r(weight + edge_ids[p + ahead] * G.heads)
                    elif edge_ids != NULL and hweight != NULL:
                        cyscatter_prefetch_r(hweight + edge_ids[p + ahead] * G.heads)
                at = o * G.s_outer + cols[p] * G.s_row
                e = edge_ids[p] if edge_ids != NULL and (weight != NULL or hweight != NULL) else p
                for h in range(G.heads):
                    w = _weight_at(weight, hweight, wconv, e * G.heads + h)   # (1 * v is v exactly, NaN included)
                    lo = h * G.chunk
                    if conv == CONV_NONE:
                        if select_t is not SelectPresent:   # (out is NULL there)
                            orow = out + at + lo
                        _sel_axpy(_code(sel), res + lo, x + lo, orow, share + at + lo, w, G.chunk)
                        continue
                    f0 = lo
                    while f0 < lo + G.chunk:   # (the selections are per element: any split gives the same bits)
                        n = min(<Py_ssize_t>CHUNK, lo + G.chunk - f0)
                        _widen(conv, hx + f0, xbuf, n)
                        if select_t is not SelectPresent:
                            orow = out + at + f0
                        _sel_axpy(_code(sel), res + f0, xbuf, orow, share + at + f0, w, n)
                        f0 += n


cdef void extreme_back_csr(const real_t[:, :, ::contiguous] src, const int64_t[::1] indptr, const int64_t[::1] cols,
                           const int64_t* edge_ids, const real_t* weight, Py_ssize_t heads,
                           const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] share,
                           real_t[:, :, ::contiguous] result, int num_threads) noexcept nogil:
    """The caller has checked the transposed CSR, that src and result share shape and strides, out and share."""
    cdef SelectTied tied = SelectTied(_tag=0)
    _back_csr(tied, _real_src(src, 1), indptr, cols, edge_ids, weight, NULL, CONV_NONE, heads, out, share, result,
              num_threads)


cdef void _back_csr(select_t sel, Src src, const int64_t[::1] indptr,
                    const int64_t[::1] cols, const int64_t* edge_ids, const real_t* weight, const uint16_t* hweight,
                    int wconv, Py_ssize_t heads,
                    const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] share,
                    real_t[:, :, ::contiguous] result, int num_threads) noexcept nogil:
    """`extreme_back_csr` for the selection `sel`: src (its `Src`) has result's shape."""
    cdef Py_ssize_t rows = result.shape[1], m = cols.shape[0], ahead
    cdef Py_ssize_t cut[MAX_THREADS + 1]
    cdef int parts = _team(num_threads), t
    cdef Geo G
    if result.shape[0] == 0 or result.shape[2] == 0 or rows == 0:
        return
    _geometry(&G, result.shape[0], result.shape[2], heads, out.strides[0] // sizeof(real_t),
              out.strides[1] // sizeof(real_t), result.strides[0] // sizeof(real_t),
              result.strides[1] // sizeof(real_t))
    G.x_outer, G.x_row = src.s_outer, src.s_row
    ahead = _ahead(G.inner * <Py_ssize_t>sizeof(real_t), 2 * out.shape[1])   # two tables: out and share
    if m == 0 or out.shape[1] == 0 or parts == 1 or rows < 2:
        _back_rows(sel, src.ptr, src.conv, &indptr[0], &cols[0] if m else NULL, m, edge_ids, weight, hweight,
                   wconv, &out[0, 0, 0] if out.shape[1] else NULL, &share[0, 0, 0] if out.shape[1] else NULL,
                   &result[0, 0, 0], &G, 0, rows, ahead)
        return
    _cuts(&indptr[0], rows, parts, cut)
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _back_rows(sel, src.ptr, src.conv, &indptr[0], &cols[0], m, edge_ids, weight, hweight, wconv,
                   &out[0, 0, 0], &share[0, 0, 0], &result[0, 0, 0], &G, cut[t], cut[t + 1], ahead)



# ---- group products of a half-precision src (mul's and nanprod's reverse rules) ------------------------------------

cdef void _half_products(int conv, bint nan_as_one, const uint16_t* src, Py_ssize_t s_outer, Py_ssize_t s_row,
                         const int64_t* order, const int64_t* indptr, Py_ssize_t ngroups, real_t* partials,
                         Py_ssize_t p_outer, Py_ssize_t p_row, Py_ssize_t outer, Py_ssize_t inner) noexcept nogil:
    """`kernels.group_exclusive_products` on src's rows widened CHUNK features at a time (a NaN read as 1 where
    `nan_as_one`): per feature the same products in the same order (suffix, then prefix), so the same bits, with
    a row's features side by side instead of one feature down the group at a time. Strides in items."""
    cdef real_t acc[CHUNK]
    cdef real_t x[CHUNK]
    cdef real_t* prow
    cdef Py_ssize_t o, g, p, f, f0, n
    for o in range(outer):
        for g in range(ngroups):
            f0 = 0
            while f0 < inner:
                n = min(<Py_ssize_t>CHUNK, inner - f0)
                for f in range(n):
                    acc[f] = 1
                for p in range(indptr[g + 1] - 1, indptr[g] - 1, -1):
                    prow = partials + o * p_outer + order[p] * p_row + f0
                    _widen(conv, src + o * s_outer + order[p] * s_row + f0, x, n)
                    if nan_as_one:
                        for f in range(n):
                            if x[f] != x[f]:
                                x[f] = 1
                    for f in range(n):
                        prow[f] = acc[f]
                        acc[f] = acc[f] * x[f]
                for f in range(n):
                    acc[f] = 1
                for p in range(indptr[g], indptr[g + 1]):
                    prow = partials + o * p_outer + order[p] * p_row + f0
                    _widen(conv, src + o * s_outer + order[p] * s_row + f0, x, n)
                    if nan_as_one:
                        for f in range(n):
                            if x[f] != x[f]:
                                x[f] = 1
                    for f in range(n):
                        prow[f] = prow[f] * acc[f]
                        acc[f] = acc[f] * x[f]
                f0 += n

# ---- per-edge dots (SDDMM) ---------------------------------------------------------------------------------------

cdef void _dots_part(const value_t* g, const void* src, int conv, const int64_t* gather, const int64_t* scatter,
                     Py_ssize_t src_rows, Py_ssize_t out_rows, value_t* result, const value_t* out, int ties,
                     const value_t* weight, const uint16_t* hweight, int wconv, value_t* xrow, const Geo* G, Py_ssize_t e0, Py_ssize_t e1,
                     Py_ssize_t ahead) noexcept nogil:
    # g and out share G.o_*, src G.s_* (in its own items); result is (edges, heads) C-contiguous. The two rows an
    # edge reads are at random: prefetched `ahead` edges early (and out's row where a selection compares with it).
    # A float16 / bfloat16 src (`conv`; float and double values) is widened a head's row at a time into `xrow`
    # (G.chunk items), so that each dot sums the values and in the order of the converted src's.
    cdef Py_ssize_t e, s, d, o, h, f, a, item = 2 if conv != CONV_NONE else <Py_ssize_t>sizeof(value_t)
    cdef value_t acc, w
    cdef const value_t* x
    cdef const value_t* grow
    cdef const value_t* orow
    for e in range(e0, e1):
        if ahead and e + ahead < e1:
            s, d = gather[e + ahead], scatter[e + ahead]
            if <uint64_t>s < <uint64_t>src_rows and <uint64_t>d < <uint64_t>out_rows:
                for a in range(G.outer):
                    _prefetch_row(<const char*>src + (a * G.s_outer + s * G.s_row) * item, G.inner * item)
                    _prefetch_row(g + a * G.o_outer + d * G.o_row, G.inner * <Py_ssize_t>sizeof(value_t))
                    if ties:
                        _prefetch_row(out + a * G.o_outer + d * G.o_row, G.inner * <Py_ssize_t>sizeof(value_t))
        s, d = gather[e], scatter[e]
        if <uint64_t>s >= <uint64_t>src_rows or <uint64_t>d >= <uint64_t>out_rows:
            for h in range(G.heads):
                result[e * G.heads + h] = 0
            continue
        for h in range(G.heads):
            acc = 0
            w = 1
            if ties and weight != NULL:
                w = weight[e * G.heads + h]
            elif ties and hweight != NULL:
                if value_t is float or value_t is double:
                    w = _weight_at(<const value_t*>NULL, hweight, wconv, e * G.heads + h)
            for o in range(G.outer):
                x = <const value_t*>src + o * G.s_outer + s * G.s_row + h * G.chunk
                if value_t is float or value_t is double:
                    if conv != CONV_NONE:
                        _widen(conv, <const uint16_t*>src + o * G.s_outer + s * G.s_row + h * G.chunk, xrow,
                               G.chunk)
                        x = xrow
                grow = g + o * G.o_outer + d * G.o_row + h * G.chunk
                orow = out + o * G.o_outer + d * G.o_row + h * G.chunk if ties else NULL
                # float and double: `_fused.h`'s rows (partial sums, SSE2 selections); ties - 1 is its `sel`
                if value_t is float:
                    acc = acc + cyscatter_dot_row_f(ties - 1, grow, x, orow, w, G.chunk)
                elif value_t is double:
                    acc = acc + cyscatter_dot_row_d(ties - 1, grow, x, orow, w, G.chunk)
                else:
                    for f in range(G.chunk):
                        acc = acc + grow[f] * x[f]
            result[e * G.heads + h] = acc


cdef void edge_dots(const value_t[:, :, ::contiguous] g, const value_t[:, :, ::contiguous] src,
                    const int64_t[::1] gather, const int64_t[::1] scatter, value_t[:, ::1] result,
                    const value_t* out_ties, bint is_max, const value_t* weight, int num_threads) noexcept nogil:
    """`out_ties`, when given, has g's shape and strides."""
    _edge_dots(g, &src[0, 0, 0] if src.shape[0] and src.shape[1] and src.shape[2] else NULL, CONV_NONE,
               src.shape[1], src.strides[0] // sizeof(value_t), src.strides[1] // sizeof(value_t), gather, scatter,
               result, out_ties, 0 if out_ties == NULL else 1, weight, NULL, CONV_NONE, NULL, num_threads)


cdef void _edge_dots(const value_t[:, :, ::contiguous] g, const void* src, int conv, Py_ssize_t src_rows,
                     Py_ssize_t s_outer, Py_ssize_t s_row, const int64_t[::1] gather, const int64_t[::1] scatter,
                     value_t[:, ::1] result, const value_t* out, int ties, const value_t* weight,
                     const uint16_t* hweight, int wconv, value_t* xrows, int parts) noexcept nogil:
    """`edge_dots` on src's first element, `conv` code, rows and strides (in its own items); `ties` 0 (every
    feature) or 1 + a selection code (`out`, g's layout, then not NULL), whose messages take the real `weight` or
    the float16 / bfloat16 `hweight` (`wconv`). A `conv` src needs `xrows`: G.chunk items for each of the
    `parts` threads (the team is then exactly `parts`)."""
    cdef Py_ssize_t n = result.shape[0], heads = result.shape[1], chunk
    cdef int t
    cdef Geo G
    if n == 0 or heads == 0:
        return
    if g.shape[0] == 0 or g.shape[2] == 0 or g.shape[1] == 0 or src_rows == 0 or src == NULL:
        for t in range(n * heads):
            result[t // heads, t % heads] = 0
        return
    if xrows == NULL:
        parts = _team(parts)
    _geometry(&G, g.shape[0], g.shape[2], heads, s_outer, s_row, g.strides[0] // sizeof(value_t),
              g.strides[1] // sizeof(value_t))
    chunk = G.chunk
    # both tables are read at random (out too with a selection): their rows together set the look-ahead
    cdef Py_ssize_t ahead = _ahead(G.inner * <Py_ssize_t>sizeof(value_t), src_rows + (2 if ties else 1) * g.shape[1])
    if parts <= 1 or n < 2:
        _dots_part(&g[0, 0, 0], src, conv, &gather[0], &scatter[0], src_rows, g.shape[1], &result[0, 0], out, ties,
                   weight, hweight, wconv, xrows, &G, 0, n, ahead)
        return
    for t in prange(parts, nogil=True, num_threads=parts, schedule='static', chunksize=1):
        _dots_part(&g[0, 0, 0], src, conv, &gather[0], &scatter[0], src_rows, g.shape[1], &result[0, 0], out, ties,
                   weight, hweight, wconv, xrows + t * chunk if xrows != NULL else NULL, &G, (n * t) // parts,
                   (n * (t + 1)) // parts, ahead)


# ---- Python entry points -----------------------------------------------------------------------------------------

def _set_machine(Py_ssize_t l2_share, Py_ssize_t prefetch_bytes=4096):
    """The machine-dependent thresholds (see cyscatter._runtime.machine): no src-row prefetch for tables up to
    `l2_share` bytes; the prefetch `prefetch_bytes` of rows ahead (kept within 256 B - 64 KiB)."""
    global _l2_share, _prefetch_bytes
    _l2_share = max(0, l2_share)
    _prefetch_bytes = min(65536, max(256, prefetch_bytes))


def set_prefetch_edges(Py_ssize_t edges):
    """Edges of look-ahead of the src-row prefetch (-1: auto, 0: off); for benchmarks, via `cyscatter._tune`."""
    global _prefetch_edges
    _prefetch_edges = edges


def csr(const int64_t[::1] key, Py_ssize_t size, const int64_t[::1] other, Py_ssize_t other_size, bint drop):
    """(status, indptr, edge_ids, cols): the edges grouped stably by `key`, see `build_csr`; on a bad entry
    (status >= 0, mode raise) the arrays are None."""
    cdef Py_ssize_t status
    indptr = np.empty(size + 1, np.int64)
    edge_ids = np.empty(key.shape[0], np.int64)
    cols = np.empty(key.shape[0], np.int64)
    cdef int64_t[::1] indptr_v = indptr, ids_v = edge_ids, cols_v = cols
    with nogil:
        status = build_csr(key, size, other, other_size, drop, indptr_v, ids_v, cols_v)
    if status >= 0:
        return status, None, None, None
    m = int(indptr[size])
    return -1, indptr, edge_ids[:m], cols[:m]


cdef inline const int64_t* _ids(const int64_t[::1] edge_ids) noexcept nogil:
    return &edge_ids[0] if edge_ids.shape[0] > 0 else NULL


# ---- argument checks of the entry points ---------------------------------------------------------------------
# The `def` functions are importable, so they check what the kernels assume (a crash is never an answer): views
# that the kernels walk with one set of strides must share shape and strides, edge ids must address the weights.

cdef Py_ssize_t _max_id(const int64_t[::1] ids) noexcept nogil:
    """Largest entry (-1 for none), or -2 when one is negative."""
    cdef Py_ssize_t k, top = -1
    for k in range(ids.shape[0]):
        if ids[k] < 0:
            return -2
        if ids[k] > top:
            top = ids[k]
    return top


cdef int _edges_ok(str fun, const int64_t[::1] indptr, const int64_t[::1] cols, const int64_t[::1] edge_ids,
                   Py_ssize_t table_rows, Py_ssize_t owned_rows, Py_ssize_t weight_rows, bint weighted,
                   Py_ssize_t heads, Py_ssize_t inner) except -1:
    cdef Py_ssize_t status, top
    with nogil:
        status = check_csr(indptr, cols, table_rows)
        top = _max_id(edge_ids) if edge_ids.shape[0] else cols.shape[0] - 1
    if status != -1 or indptr.shape[0] != owned_rows + 1:
        raise ValueError(f"{fun}: the CSR does not fit the operands (status {status})")
    if edge_ids.shape[0] not in (0, cols.shape[0]) or top < -1:
        raise ValueError(f"{fun}: edge_ids must be empty or one non-negative id per CSR entry")
    if weighted and (heads < 1 or inner % heads or top >= weight_rows):
        raise ValueError(f"{fun}: the weight rows ({weight_rows} x {heads}) do not fit the edges and features")
    return 0


cdef bint _same_layout(object a, object b):
    return a.shape == b.shape and (a.size == 0 or a.strides == b.strides)


def forward(int opcode, const value_t[:, :, ::contiguous] src, const int64_t[::1] indptr, const int64_t[::1] cols,
            const int64_t[::1] edge_ids, const value_t[:, ::1] weight, bint weighted,
            value_t[:, :, ::contiguous] out, int num_threads, const uint16_t[:, ::1] half_weight=None,
            int weight_code=0):
    """Run `gather_scatter_csr` for `opcode`; `edge_ids` empty: the CSR order is the edge order. Returns its
    status (-1, a bad column position, or -2 - a bad row). `weight_code` 1 (float16) or 2 (bfloat16), float32 or
    float64 values only: the weights are `half_weight`'s bits (`weight` is not read), each edge's widened exactly
    as it is read, so the result has the bits of the weight converted whole first."""
    cdef Py_ssize_t status = -1
    cdef const value_t* w = &weight[0, 0] if weighted and weight.shape[0] > 0 else NULL
    cdef Py_ssize_t heads = weight.shape[1] if weighted else 1
    cdef const int64_t* ids = _ids(edge_ids)
    cdef const uint16_t* hw = NULL
    if weight_code:
        _check_conv("forward", weight_code)
        if value_t is not float and value_t is not double:
            raise TypeError("forward: float16/bfloat16 weights take float32 or float64 values")
        if half_weight is None or not weighted:
            raise ValueError("forward: a weight_code needs half_weight and weighted")
        w, heads = NULL, half_weight.shape[1]
        if half_weight.shape[0] > 0 and heads > 0:
            hw = &half_weight[0, 0]
    cdef OpAdd add
    cdef OpSub sub
    cdef OpMul mul
    cdef OpDiv div
    cdef OpMax mx
    cdef OpMin mn
    if src.shape[0] != out.shape[0] or src.shape[2] != out.shape[2]:
        raise ValueError("forward: src and out disagree in batch or feature size")
    _edges_ok("forward", indptr, cols, edge_ids, src.shape[1], out.shape[1],
              half_weight.shape[0] if weight_code else weight.shape[0], weighted, heads, src.shape[2])
    cdef int code = weight_code
    with nogil:   # `_edges_ok` and the shapes above checked what `gather_scatter_csr` would check again
        if opcode == OP_ADD:
            _forward_csr(add, src, indptr, cols, ids, w, hw, code, heads, out, num_threads)
        elif opcode == OP_SUB:
            _forward_csr(sub, src, indptr, cols, ids, w, hw, code, heads, out, num_threads)
        elif opcode == OP_MUL:
            _forward_csr(mul, src, indptr, cols, ids, w, hw, code, heads, out, num_threads)
        elif opcode == OP_DIV:
            _forward_csr(div, src, indptr, cols, ids, w, hw, code, heads, out, num_threads)
        elif opcode == OP_MAX:
            _forward_csr(mx, src, indptr, cols, ids, w, hw, code, heads, out, num_threads)
        elif opcode == OP_MIN:
            _forward_csr(mn, src, indptr, cols, ids, w, hw, code, heads, out, num_threads)
    return status


def forward_nan(int opcode, const nan_value_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                const int64_t[::1] cols, const int64_t[::1] edge_ids, const nan_value_t[:, ::1] weight, bint weighted,
                nan_value_t[:, :, ::contiguous] out, count_t[:, :, ::contiguous] counts, bint counting,
                int num_threads, const uint16_t[:, ::1] half_weight=None, int weight_code=0):
    """`gather_scatter_nan_csr` for a NaN-skipping `opcode` (OP_NANADD, OP_NANMUL, OP_FMAX, OP_FMIN) on float or
    complex values; `counting`: add each output element's non-NaN messages to `counts` (out's shape). Returns
    the kernel's status, as `forward`. `half_weight` and `weight_code` as in `forward`."""
    cdef Py_ssize_t status = -1
    cdef const nan_value_t* w = &weight[0, 0] if weighted and weight.shape[0] > 0 else NULL
    cdef Py_ssize_t heads = weight.shape[1] if weighted else 1
    cdef const int64_t* ids = _ids(edge_ids)
    cdef const uint16_t* hw = NULL
    cdef int code = weight_code
    if weight_code:
        _check_conv("forward_nan", weight_code)
        if nan_value_t is not float and nan_value_t is not double:
            raise TypeError("forward_nan: float16/bfloat16 weights take float32 or float64 values")
        if half_weight is None or not weighted:
            raise ValueError("forward_nan: a weight_code needs half_weight and weighted")
        w, heads = NULL, half_weight.shape[1]
        if half_weight.shape[0] > 0 and heads > 0:
            hw = &half_weight[0, 0]
    cdef count_t* c = NULL
    cdef Py_ssize_t c_outer = 0, c_row = 0
    cdef OpNanAdd nanadd
    cdef OpNanMul nanmul
    cdef OpFmax fmx
    cdef OpFmin fmn
    if not OP_NANADD <= opcode <= OP_FMIN:
        raise ValueError(f"forward_nan takes a NaN-skipping op code, got {opcode}")
    if src.shape[0] != out.shape[0] or src.shape[2] != out.shape[2]:
        raise ValueError("forward_nan: src and out disagree in batch or feature size")
    if counting:
        if (counts.shape[0], counts.shape[1], counts.shape[2]) != (out.shape[0], out.shape[1], out.shape[2]):
            raise ValueError("forward_nan: counts must have out's shape")
        if out.shape[0] and out.shape[1] and out.shape[2]:
            c = &counts[0, 0, 0]
            c_outer, c_row = counts.strides[0] // sizeof(count_t), counts.strides[1] // sizeof(count_t)
    _edges_ok("forward_nan", indptr, cols, edge_ids, src.shape[1], out.shape[1],
              half_weight.shape[0] if weight_code else weight.shape[0], weighted, heads, src.shape[2])
    if hw != NULL:
        with nogil:
            if opcode == OP_NANADD:
                status = _forward_nan_half_csr(nanadd, src, indptr, cols, ids, hw, code, heads, out, c, c_outer,
                                               c_row, num_threads)
            elif opcode == OP_NANMUL:
                status = _forward_nan_half_csr(nanmul, src, indptr, cols, ids, hw, code, heads, out, c, c_outer,
                                               c_row, num_threads)
            elif opcode == OP_FMAX:
                status = _forward_nan_half_csr(fmx, src, indptr, cols, ids, hw, code, heads, out, c, c_outer,
                                               c_row, num_threads)
            else:
                status = _forward_nan_half_csr(fmn, src, indptr, cols, ids, hw, code, heads, out, c, c_outer,
                                               c_row, num_threads)
        return status
    with nogil:
        if opcode == OP_NANADD:
            status = gather_scatter_nan_csr(nanadd, src, indptr, cols, ids, w, heads, out, c, c_outer, c_row,
                                            num_threads)
        elif opcode == OP_NANMUL:
            status = gather_scatter_nan_csr(nanmul, src, indptr, cols, ids, w, heads, out, c, c_outer, c_row,
                                            num_threads)
        elif opcode == OP_FMAX:
            status = gather_scatter_nan_csr(fmx, src, indptr, cols, ids, w, heads, out, c, c_outer, c_row,
                                            num_threads)
        else:
            status = gather_scatter_nan_csr(fmn, src, indptr, cols, ids, w, heads, out, c, c_outer, c_row,
                                            num_threads)
    return status


def forward_half_src(int opcode, int src_code, const uint16_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                     const int64_t[::1] cols, const int64_t[::1] edge_ids, const real_t[:, ::1] weight, bint weighted,
                     real_t[:, :, ::contiguous] out, int num_threads, const uint16_t[:, ::1] half_weight=None,
                     int weight_code=0, counts=None):
    """`forward` (or, for a NaN-skipping `opcode`, `forward_nan`) on a float16 (`src_code` 1) or bfloat16 (2) src
    given as its bits (uint16): each edge's row is widened exactly to out's dtype as it is read, so the result has
    the bits of the call on src converted whole first, without that S x F copy. `counts` (int32 or int64, out's
    shape, unit inner stride; NaN-skipping ops only) gets each output element's non-NaN messages added.
    `half_weight` and `weight_code` as in `forward`. Returns -1 (the arguments are checked before the kernel
    runs: a misfit raises ValueError)."""
    cdef const real_t* w = &weight[0, 0] if weighted and weight.shape[0] > 0 else NULL
    cdef Py_ssize_t heads = weight.shape[1] if weighted else 1
    cdef const int64_t* ids = _ids(edge_ids)
    cdef const uint16_t* hw = NULL
    cdef int32_t[:, :, ::contiguous] c32v
    cdef int64_t[:, :, ::contiguous] c64v
    cdef int32_t* c32 = NULL
    cdef int64_t* c64 = NULL
    cdef Py_ssize_t c_outer = 0, c_row = 0
    cdef int sconv = src_code, wconv = weight_code
    _check_conv("forward_half_src", src_code)
    if weight_code:
        _check_conv("forward_half_src", weight_code)
        if half_weight is None or not weighted:
            raise ValueError("forward_half_src: a weight_code needs half_weight and weighted")
        w, heads = NULL, half_weight.shape[1]
        if half_weight.shape[0] > 0 and heads > 0:
            hw = &half_weight[0, 0]
    if not OP_ADD <= opcode <= OP_FMIN or (OP_MIN < opcode < OP_NANADD):
        raise ValueError(f"forward_half_src: unknown op code {opcode}")
    if src.shape[0] != out.shape[0] or src.shape[2] != out.shape[2]:
        raise ValueError("forward_half_src: src and out disagree in batch or feature size")
    if counts is not None:
        if opcode < OP_NANADD:
            raise ValueError("forward_half_src: only the NaN-skipping ops count their messages")
        if counts.shape != (out.shape[0], out.shape[1], out.shape[2]):
            raise ValueError("forward_half_src: counts must have out's shape")
        if counts.dtype == np.int32:
            c32v = counts
            if out.shape[0] and out.shape[1] and out.shape[2]:
                c32 = &c32v[0, 0, 0]
                c_outer, c_row = c32v.strides[0] // 4, c32v.strides[1] // 4
        elif counts.dtype == np.int64:
            c64v = counts
            if out.shape[0] and out.shape[1] and out.shape[2]:
                c64 = &c64v[0, 0, 0]
                c_outer, c_row = c64v.strides[0] // 8, c64v.strides[1] // 8
        else:
            raise TypeError(f"forward_half_src: counts must be int32 or int64, got {counts.dtype}")
    _edges_ok("forward_half_src", indptr, cols, edge_ids, src.shape[1], out.shape[1],
              half_weight.shape[0] if weight_code else weight.shape[0], weighted, heads, src.shape[2])
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
    with nogil:
        if opcode == OP_ADD:
            _forward_conv_csr(add, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer, c_row,
                              num_threads)
        elif opcode == OP_SUB:
            _forward_conv_csr(sub, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer, c_row,
                              num_threads)
        elif opcode == OP_MUL:
            _forward_conv_csr(mul, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer, c_row,
                              num_threads)
        elif opcode == OP_DIV:
            _forward_conv_csr(div, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer, c_row,
                              num_threads)
        elif opcode == OP_MAX:
            _forward_conv_csr(mx, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer, c_row,
                              num_threads)
        elif opcode == OP_MIN:
            _forward_conv_csr(mn, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer, c_row,
                              num_threads)
        elif opcode == OP_NANADD:
            _forward_conv_csr(nanadd, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer,
                              c_row, num_threads)
        elif opcode == OP_NANMUL:
            _forward_conv_csr(nanmul, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer,
                              c_row, num_threads)
        elif opcode == OP_FMAX:
            _forward_conv_csr(fmx, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer,
                              c_row, num_threads)
        else:
            _forward_conv_csr(fmn, src, sconv, indptr, cols, ids, w, hw, wconv, heads, out, c32, c64, c_outer,
                              c_row, num_threads)
    return -1


# the `select` codes of the entry points, by `Op.selection`
SELECT_CODES = {"tied": 0, "won": 1, "present": 2}


cdef int _check_select(int select) except -1:
    if not 0 <= select <= 2:
        raise ValueError(f"select must be 0 (tied), 1 (won) or 2 (present), got {select}")
    return 0


cdef int _half_weight(str fun, const uint16_t[:, ::1] half_weight, int weight_code, bint weighted,
                      const uint16_t** hw, Py_ssize_t* rows, Py_ssize_t* heads) except -1:
    """With a `weight_code` (1 float16, 2 bfloat16), the weights are `half_weight`'s bits: `hw`, `rows` and `heads`
    are set from them (each weight widened exactly as the kernel reads it: the bits of the weight converted whole
    first); without one nothing is set."""
    if not weight_code:
        return 0
    _check_conv(fun, weight_code)
    if half_weight is None or not weighted:
        raise ValueError(f"{fun}: a weight_code needs half_weight and weighted")
    rows[0], heads[0] = half_weight.shape[0], half_weight.shape[1]
    if rows[0] > 0 and heads[0] > 0:
        hw[0] = &half_weight[0, 0]
    return 0


def extreme_ties(bint is_max, const real_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                 const int64_t[::1] cols, const int64_t[::1] edge_ids, const real_t[:, ::1] weight, bint weighted,
                 const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] grad_out,
                 const real_t[:, :, ::contiguous] tangent_src, bint use_tangent_src,
                 const real_t[:, ::1] tangent_w, bint use_tangent_w, real_t[:, :, ::contiguous] result,
                 int num_threads, const real_t[:, :, ::contiguous] dst_init=None, int select=0, bint average=True,
                 const uint16_t[:, ::1] half_weight=None, int weight_code=0):
    """`extreme_ties_csr`: share mode (grad_out) unless a tangent is used; `dst_init` (out's layout): the initial
    values of an in-place scatter, counted as candidates. `select`: the messages counted (0 tied, 1 won: no NaN,
    2 present: the non-NaN ones); without `average` tangent mode gives the sum. `half_weight` and `weight_code`
    as in `forward` (`weight` is then not read)."""
    cdef const uint16_t[:, :, ::contiguous] no_bits = _NO_HALF_SRC
    return _ties_call("extreme_ties", is_max, CONV_NONE, src, no_bits, indptr, cols, edge_ids, weight, weighted, out,
                      grad_out, tangent_src, use_tangent_src, tangent_w, use_tangent_w, result, num_threads,
                      dst_init, select, average, half_weight, weight_code)


cdef object _ties_call(str fun, bint is_max, int code, const real_t[:, :, ::contiguous] src,
                       const uint16_t[:, :, ::contiguous] hsrc, const int64_t[::1] indptr, const int64_t[::1] cols,
                       const int64_t[::1] edge_ids, const real_t[:, ::1] weight, bint weighted,
                       const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] grad_out,
                       const real_t[:, :, ::contiguous] tangent_src, bint use_tangent_src,
                       const real_t[:, ::1] tangent_w, bint use_tangent_w, real_t[:, :, ::contiguous] result,
                       int num_threads, const real_t[:, :, ::contiguous] dst_init, int select, bint average,
                       const uint16_t[:, ::1] half_weight, int weight_code):
    """`extreme_ties` and `extreme_ties_half`: src of the value type, or (`code`) the float16 / bfloat16 bits
    `hsrc`; src and tangent_src of one shape, each with its own row strides."""
    cdef SelectTied tied = SelectTied(_tag=0)
    cdef SelectWon won = SelectWon(_tag=0)
    cdef SelectPresent present = SelectPresent(_tag=0)
    cdef Py_ssize_t s_shape[3]
    cdef Py_ssize_t k
    for k in range(3):
        s_shape[k] = hsrc.shape[k] if code else src.shape[k]
    _check_select(select)
    if not (_same_layout(out, grad_out) and _same_layout(out, result)) or s_shape[0] != out.shape[0] \
            or s_shape[2] != out.shape[2] or (use_tangent_src and not (
                _same_shape(tangent_src, hsrc) if code else _same_shape(tangent_src, src))):
        raise ValueError(f"{fun}: out, grad_out and result must share shape and strides, src and tangent_src fit "
                         "them")
    cdef const real_t* dst_ptr = NULL
    if dst_init is not None and not _same_layout(out, dst_init):
        raise ValueError(f"{fun}: dst_init must share out's shape and strides")
    if dst_init is not None and out.shape[0] and out.shape[1] and out.shape[2]:
        dst_ptr = &dst_init[0, 0, 0]
    cdef const real_t* w = &weight[0, 0] if weighted and weight is not None and weight.shape[0] else NULL
    cdef const uint16_t* hw = NULL
    cdef Py_ssize_t w_rows = weight.shape[0] if weighted and weight is not None else 0
    cdef Py_ssize_t heads = weight.shape[1] if weighted and weight is not None else 1
    _half_weight(fun, half_weight, weight_code, weighted, &hw, &w_rows, &heads)
    if weight_code:
        w = NULL
    if use_tangent_w and (not weighted or tangent_w.shape[0] != w_rows or tangent_w.shape[1] != heads):
        raise ValueError(f"{fun}: tangent_w must have the weight's shape")
    _edges_ok(fun, indptr, cols, _NO_EDGE_IDS if edge_ids is None else edge_ids, s_shape[1], out.shape[1], w_rows,
              weighted, heads, s_shape[2])
    cdef const int64_t* ids = NULL if edge_ids is None else _ids(edge_ids)
    cdef const real_t* t_src = NULL
    cdef const real_t* t_w = &tangent_w[0, 0] if use_tangent_w and tangent_w.shape[0] else NULL
    cdef Py_ssize_t t_outer = 0, t_row = 0
    if use_tangent_src and tangent_src.shape[0] and tangent_src.shape[1] and tangent_src.shape[2]:
        t_src = &tangent_src[0, 0, 0]
        t_outer, t_row = tangent_src.strides[0] // sizeof(real_t), tangent_src.strides[1] // sizeof(real_t)
    if (use_tangent_src or use_tangent_w) and t_src == NULL and t_w == NULL:
        # tangents asked for, but no edge carries one (no src rows or no weight rows): they are all 0, not
        # grad_out's shares (the kernels tell the modes apart by the pointers)
        if result.shape[0] and result.shape[1] and result.shape[2]:
            result[:, :, :] = 0
        return None
    cdef Src x = _half_src(code, hsrc, cols.shape[0]) if code else _real_src(src, cols.shape[0])
    with nogil:
        if select == 0:
            _shares_csr(tied, average, x, t_outer, t_row, indptr, cols, ids, w, hw, weight_code, heads, out,
                        grad_out, t_src, t_w, dst_ptr, result, num_threads)
        elif select == 1:
            _shares_csr(won, average, x, t_outer, t_row, indptr, cols, ids, w, hw, weight_code, heads, out,
                        grad_out, t_src, t_w, dst_ptr, result, num_threads)
        else:
            _shares_csr(present, average, x, t_outer, t_row, indptr, cols, ids, w, hw, weight_code, heads, out,
                        grad_out, t_src, t_w, dst_ptr, result, num_threads)
    return None


def extreme_back(const real_t[:, :, ::contiguous] src, const int64_t[::1] indptr, const int64_t[::1] cols,
                 const int64_t[::1] edge_ids, const real_t[:, ::1] weight, bint weighted,
                 const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] share,
                 real_t[:, :, ::contiguous] result, int num_threads, int select=0,
                 const uint16_t[:, ::1] half_weight=None, int weight_code=0):
    """`extreme_back_csr` on the transposed CSR (cols: destination rows), for the selection `select` (as in
    `extreme_ties`); `half_weight` and `weight_code` as there."""
    cdef const uint16_t[:, :, ::contiguous] no_bits = _NO_HALF_SRC
    return _back_call("extreme_back", CONV_NONE, src, no_bits, indptr, cols, edge_ids, weight, weighted, out, share,
                      result, num_threads, select, half_weight, weight_code)


cdef object _back_call(str fun, int code, const real_t[:, :, ::contiguous] src,
                       const uint16_t[:, :, ::contiguous] hsrc, const int64_t[::1] indptr, const int64_t[::1] cols,
                       const int64_t[::1] edge_ids, const real_t[:, ::1] weight, bint weighted,
                       const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] share,
                       real_t[:, :, ::contiguous] result, int num_threads, int select,
                       const uint16_t[:, ::1] half_weight, int weight_code):
    """`extreme_back` and `extreme_back_half` (src of the value type, or the bits `hsrc` with a `code`)."""
    cdef SelectTied tied = SelectTied(_tag=0)
    cdef SelectWon won = SelectWon(_tag=0)
    cdef SelectPresent present = SelectPresent(_tag=0)
    cdef Py_ssize_t s_shape[3]
    cdef Py_ssize_t k
    for k in range(3):
        s_shape[k] = hsrc.shape[k] if code else src.shape[k]
    _check_select(select)
    if not (_same_shape(hsrc, result) if code else _same_shape(src, result)) or not _same_layout(out, share) \
            or s_shape[0] != out.shape[0] or s_shape[2] != out.shape[2]:
        raise ValueError(f"{fun}: src and result must share shape (each its own row strides), out and share "
                         "shape and strides")
    if np.may_share_memory(np.asarray(result), np.asarray(hsrc) if code else np.asarray(src)) or \
            np.may_share_memory(np.asarray(result), np.asarray(share)):
        raise ValueError(f"{fun}: result must not overlap src or share (its rows are written as they are read)")
    cdef const real_t* w = &weight[0, 0] if weighted and weight is not None and weight.shape[0] else NULL
    cdef const uint16_t* hw = NULL
    cdef Py_ssize_t w_rows = weight.shape[0] if weighted and weight is not None else 0
    cdef Py_ssize_t heads = weight.shape[1] if weighted and weight is not None else 1
    _half_weight(fun, half_weight, weight_code, weighted, &hw, &w_rows, &heads)
    if weight_code:
        w = NULL
    _edges_ok(fun, indptr, cols, _NO_EDGE_IDS if edge_ids is None else edge_ids, out.shape[1], s_shape[1], w_rows,
              weighted, heads, s_shape[2])
    cdef const int64_t* ids = NULL if edge_ids is None else _ids(edge_ids)
    cdef Src x = _half_src(code, hsrc, 1) if code else _real_src(src, 1)
    with nogil:
        if select == 0:
            _back_csr(tied, x, indptr, cols, ids, w, hw, weight_code, heads, out, share, result, num_threads)
        elif select == 1:
            _back_csr(won, x, indptr, cols, ids, w, hw, weight_code, heads, out, share, result, num_threads)
        else:
            _back_csr(present, x, indptr, cols, ids, w, hw, weight_code, heads, out, share, result, num_threads)
    return None


_NO_EDGE_IDS = np.zeros(0, np.int64)
_NO_HALF_SRC = np.zeros((0, 0, 0), np.uint16)   # the `hsrc` of a src of the value type


cdef bint _same_shape(object a, object b):
    return a.shape == b.shape


cdef int _check_conv(str fun, int code) except -1:
    if code != CONV_HALF and code != CONV_BFLOAT:
        raise ValueError(f"{fun}: code must be 1 (float16) or 2 (bfloat16), got {code}")
    return 0


def extreme_ties_half(int code, const uint16_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                      const int64_t[::1] cols, const real_t[:, :, ::contiguous] out,
                      const real_t[:, :, ::contiguous] grad_out, const real_t[:, :, ::contiguous] tangent_src,
                      bint use_tangent_src, real_t[:, :, ::contiguous] result, int num_threads,
                      const real_t[:, :, ::contiguous] dst_init=None, int select=0, bint average=True,
                      const int64_t[::1] edge_ids=None, const real_t[:, ::1] weight=None,
                      const real_t[:, ::1] tangent_w=None, const uint16_t[:, ::1] half_weight=None,
                      int weight_code=0):
    """`extreme_ties` on a float16 (`code` 1) or bfloat16 (2) src given as its bits (uint16): each row is widened
    exactly to out's dtype as the kernel reads it, so the result has the bits of `extreme_ties` on src converted
    whole first, without that copy. `tangent_src` (when used) has src's shape, any row strides. `edge_ids`,
    `weight` (or `half_weight` with its `weight_code`) and `tangent_w` (None: none) as in `extreme_ties`."""
    _check_conv("extreme_ties_half", code)
    return _ties_call("extreme_ties_half", True, code, out, src, indptr, cols, edge_ids, weight,
                      weight is not None or half_weight is not None, out, grad_out, tangent_src, use_tangent_src,
                      tangent_w, tangent_w is not None, result, num_threads, dst_init, select, average, half_weight,
                      weight_code)


def extreme_back_half(int code, const uint16_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                      const int64_t[::1] cols, const real_t[:, :, ::contiguous] out,
                      const real_t[:, :, ::contiguous] share, real_t[:, :, ::contiguous] result, int num_threads,
                      int select=0, const int64_t[::1] edge_ids=None, const real_t[:, ::1] weight=None,
                      const uint16_t[:, ::1] half_weight=None, int weight_code=0):
    """`extreme_back` on a float16 (`code` 1) or bfloat16 (2) src given as its bits (uint16), each row widened
    exactly to result's dtype as it is read (the bits of `extreme_back` on src converted first). `edge_ids` and
    `weight` or `half_weight` (None: none) as there."""
    _check_conv("extreme_back_half", code)
    return _back_call("extreme_back_half", code, result, src, indptr, cols, edge_ids, weight,
                      weight is not None or half_weight is not None, out, share, result, num_threads, select,
                      half_weight, weight_code)


def exclusive_products_half(int code, const uint16_t[:, :, ::contiguous] src, const int64_t[::1] order,
                            const int64_t[::1] indptr, real_t[:, :, ::contiguous] partials, bint nan_as_one=False):
    """`kernels.exclusive_products` of a float16 (`code` 1) or bfloat16 (2) src given as its bits (uint16), each
    row widened exactly to partials' dtype as it is read, a NaN read as 1 where `nan_as_one` (nanprod): the bits
    of `exclusive_products` on src converted (and its NaNs replaced) whole first, without that copy. Entries
    that no group holds are left as they are. Raises ValueError, before writing anything, for partials of another
    shape than src or groups that leave the arrays."""
    cdef Py_ssize_t bad
    _check_conv("exclusive_products_half", code)
    if not _same_shape(src, partials):
        raise ValueError(f"exclusive_products_half: partials shape {(<object>partials).shape} != src shape "
                         f"{(<object>src).shape}")
    with nogil:
        bad = first_bad_group(src.shape[1], order, indptr)
    if bad == indptr.shape[0] - 1:
        raise ValueError(f"exclusive_products_half: order holds an entry outside [0, {src.shape[1]}), the rows of "
                         "src")
    if bad >= 0:
        raise ValueError(f"exclusive_products_half: indptr[{bad}:{bad + 2}] is not a group of order (bounds must "
                         f"not decrease and must lie in [0, {order.shape[0]}])")
    if src.shape[0] == 0 or src.shape[1] == 0 or src.shape[2] == 0 or indptr.shape[0] < 2:
        return
    with nogil:
        _half_products(code, nan_as_one, &src[0, 0, 0], src.strides[0] // sizeof(uint16_t),
                       src.strides[1] // sizeof(uint16_t), &order[0] if order.shape[0] else NULL, &indptr[0],
                       indptr.shape[0] - 1, &partials[0, 0, 0], partials.strides[0] // sizeof(real_t),
                       partials.strides[1] // sizeof(real_t), src.shape[0], src.shape[2])

cdef int _dots_ok(str fun, object g, tuple src_shape, object gather, object scatter, object result, object out,
                  int ties, Py_ssize_t w_rows, Py_ssize_t heads, bint weighted, bint real) except -1:
    if not 0 <= ties <= 3:
        raise ValueError(f"{fun}: ties must be 0 to 3, got {ties}")
    if ties and out is None:
        raise TypeError(f"{fun}: the selections (ties {ties}) compare with out, got None")
    if ties and not real:
        raise TypeError(f"{fun}: the selections (ties {ties}) take float32 or float64 values")
    if gather.shape[0] != result.shape[0] or scatter.shape[0] != result.shape[0] or result.shape[1] < 1 or \
            g.shape[2] % result.shape[1] or g.shape[0] != src_shape[0] or g.shape[2] != src_shape[2] or \
            (ties and not _same_layout(g, out)) or (weighted and (w_rows != result.shape[0] or
                                                                   heads != result.shape[1])):
        raise ValueError(f"{fun}: the edges, heads and operands do not fit")
    return 0


def dots(const value_t[:, :, ::contiguous] g, const value_t[:, :, ::contiguous] src, const int64_t[::1] gather,
         const int64_t[::1] scatter, value_t[:, ::1] result, const value_t[:, :, ::contiguous] out, int ties,
         const value_t[:, ::1] weight, bint weighted, int num_threads, const uint16_t[:, ::1] half_weight=None,
         int weight_code=0):
    """`edge_dots`; `ties` 0 (every feature) or 1 + a selection code of `extreme_ties` (the features whose
    message, from `out` and, when `weighted`, `weight` (or `half_weight` with its `weight_code`, float32 or
    float64 values), is selected: 1 tied, 2 won, 3 present)."""
    cdef const uint16_t* hw = NULL
    cdef Py_ssize_t w_rows = weight.shape[0] if weighted else 0, heads = weight.shape[1] if weighted else 1
    if weight_code and value_t is not float and value_t is not double:
        raise TypeError("dots: float16/bfloat16 weights take float32 or float64 values")
    _half_weight("dots", half_weight, weight_code, weighted, &hw, &w_rows, &heads)
    _dots_ok("dots", g, (src.shape[0], src.shape[1], src.shape[2]), gather, scatter, result, out, ties, w_rows,
             heads, weighted, value_t is float or value_t is double)
    cdef const value_t* o = &out[0, 0, 0] if ties and out.shape[0] and out.shape[1] and out.shape[2] else NULL
    cdef const value_t* w = &weight[0, 0] if weighted and not weight_code and weight.shape[0] else NULL
    with nogil:
        _edge_dots(g, &src[0, 0, 0] if src.shape[0] and src.shape[1] and src.shape[2] else NULL, CONV_NONE,
                   src.shape[1], src.strides[0] // sizeof(value_t), src.strides[1] // sizeof(value_t), gather,
                   scatter, result, o, ties if o != NULL else 0, w, hw, weight_code, NULL, num_threads)


def dots_half(int code, const real_t[:, :, ::contiguous] g, const uint16_t[:, :, ::contiguous] src,
              const int64_t[::1] gather, const int64_t[::1] scatter, real_t[:, ::1] result,
              const real_t[:, :, ::contiguous] out, int ties, const real_t[:, ::1] weight, bint weighted,
              int num_threads, const uint16_t[:, ::1] half_weight=None, int weight_code=0):
    """`dots` on a float16 (`code` 1) or bfloat16 (2) src given as its bits (uint16), each head's row widened
    exactly to g's dtype as it is read: the bits of `dots` on src converted whole first, without that copy."""
    cdef const uint16_t* hw = NULL
    cdef Py_ssize_t w_rows = weight.shape[0] if weighted else 0, heads = weight.shape[1] if weighted else 1
    _check_conv("dots_half", code)
    _half_weight("dots_half", half_weight, weight_code, weighted, &hw, &w_rows, &heads)
    _dots_ok("dots_half", g, (src.shape[0], src.shape[1], src.shape[2]), gather, scatter, result, out, ties, w_rows,
             heads, weighted, True)
    cdef const real_t* o = &out[0, 0, 0] if ties and out.shape[0] and out.shape[1] and out.shape[2] else NULL
    cdef const real_t* w = &weight[0, 0] if weighted and not weight_code and weight.shape[0] else NULL
    cdef int parts = _team(num_threads)
    cdef real_t[:, ::1] xrows = np.empty((parts, max(g.shape[2] // result.shape[1], 1)),
                                         np.float32 if real_t is float else np.float64)
    with nogil:
        _edge_dots(g, &src[0, 0, 0] if src.shape[0] and src.shape[1] and src.shape[2] else NULL, code, src.shape[1],
                   src.strides[0] // sizeof(uint16_t), src.strides[1] // sizeof(uint16_t), gather, scatter, result, o,
                   ties if o != NULL else 0, w, hw, weight_code, &xrows[0, 0], parts)
