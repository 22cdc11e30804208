# cython: language_level=3
"""CPU kernels of the NaN-skipping ops' per-element counts.

nanmean divides each output element by the number of its non-NaN entries, and a fill_value marks the elements
that have none. The entries per destination row are counted first (`row_counts`, a pass over the index that also
applies the index mode); the largest of them bounds every element's NaN count, which is then kept in the narrowest
unsigned integer that holds it (uint8 up to 255 entries per row): a count table 4x smaller than the output's
float32 one. The element counts are the row counts minus the NaN counts; `mean` divides by them without making
them, `element_counts` makes them where a fill_value or a caller needs them.

nanmean's sum pass (`nansum`, nansum's update of the core kernel bit for bit) learns from the update's own
compares whether a src row holds a NaN. While the output and count tables fit in half the last-level cache
(`cyscatter/_runtime/machine.py`), the NaN counts are taken in that pass (`nansum_count`): a row after one that held a NaN
is updated and counted in one loop from the same compares, other rows touch their counts only if they hold a
NaN. Larger tables are counted by a second pass over src (`count`), run only when the sum pass met a NaN: with
both tables out of cache, each entry's count row would miss as well as its output row. The other NaN-skipping
ops with a fill_value run their own scatter pass, then `count`.

Earlier ways, measured (benchmarks/NOTES.md v22, v23): a second scatter-add pass of a non-NaN mask cost 1.6-2.4x
mean's time whatever the data; the sum pass then a pass taking one off int32 element counts per NaN entry cost
1.3x without NaN and 2.2x at 10% NaN.
"""
cimport cython
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint64_t

from cyscatter.kernels cimport index_t, team_size, check_and_count, nan_add
from cyscatter.group_kernels cimport nan_value_t

cdef extern from "include/_cpu.h" nogil:
    Py_ssize_t cyscatter_rows_ahead(Py_ssize_t reach, Py_ssize_t row_bytes)
    void cyscatter_prefetch_w(const void* p)
    void cyscatter_prefetch_r(const void* p)
    int cyscatter_row_nanadd_f(float* dst, const float* src, Py_ssize_t width)
    int cyscatter_row_nanadd_d(double* dst, const double* src, Py_ssize_t width)

cdef extern from *:
    """
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* Whether any of w floats (doubles) is NaN: unordered compares OR-ed over the row, one branch at the end
       (the plain loop compiled to a scalar test per element, 24 ms against 9 ms for 1e6 rows of 64 float32). */
    #if defined(__SSE2__)
    #define CYSCATTER_HAS_NAN(name, T, V, LANES, LOAD, UNORD, OR, MASK, ZERO)                  \
        static inline int name(const T* s, Py_ssize_t w) {                                     \
            Py_ssize_t i = 0;                                                                  \
            V a = ZERO(), b = ZERO();                                                          \
            for (; i + 2 * LANES <= w; i += 2 * LANES) {                                       \
                V u = LOAD(s + i), v = LOAD(s + i + LANES);                                    \
                a = OR(a, UNORD(u, u));                                                        \
                b = OR(b, UNORD(v, v));                                                        \
            }                                                                                  \
            int m = MASK(OR(a, b));                                                            \
            for (; i < w; i++) m |= s[i] != s[i];                                              \
            return m;                                                                          \
        }
    CYSCATTER_HAS_NAN(cyscatter_has_nan_f, float, __m128, 4, _mm_loadu_ps, _mm_cmpunord_ps, _mm_or_ps,
                      _mm_movemask_ps, _mm_setzero_ps)
    CYSCATTER_HAS_NAN(cyscatter_has_nan_d, double, __m128d, 2, _mm_loadu_pd, _mm_cmpunord_pd, _mm_or_pd,
                      _mm_movemask_pd, _mm_setzero_pd)
    #else
    #define CYSCATTER_HAS_NAN(name, T)                                                         \
        static inline int name(const T* s, Py_ssize_t w) {                                     \
            int m = 0;                                                                         \
            for (Py_ssize_t i = 0; i < w; i++) m |= s[i] != s[i];                              \
            return m;                                                                          \
        }
    CYSCATTER_HAS_NAN(cyscatter_has_nan_f, float)
    CYSCATTER_HAS_NAN(cyscatter_has_nan_d, double)
    #endif
    /* c[f] += isnan(s[f]) over a row, for counts of 8, 16 and 32 bits, and with d not NULL also nansum's update
       d[f] += s[f] unless NaN (_cpu.h's cyscatter_row_nanadd_f/d, bit for bit) from the same compares, so src is
       loaded and compared once; whether the row held a NaN. Four unordered compares make four 32-bit masks
       (double: two compares of two, shuffled), saturating packs narrow the all-ones masks (-1) to the count
       width, and subtracting them adds one per NaN. Every count of the row is written, NaN or not: callers
       with rows that seldom hold a NaN test the row first. d is NULL or not at each call site, so the
       inlined branch on it folds away. */
    #if defined(__SSE2__)
    static inline __m128i cyscatter_nan4_f(float* d, const float* s, Py_ssize_t i) {
        __m128 v = _mm_loadu_ps(s + i), u = _mm_cmpunord_ps(v, v);
        if (d) {
            v = _mm_or_ps(_mm_andnot_ps(u, v), _mm_and_ps(u, _mm_set1_ps(-0.0f)));
            _mm_storeu_ps(d + i, _mm_add_ps(_mm_loadu_ps(d + i), v));
        }
        return _mm_castps_si128(u);
    }
    static inline __m128i cyscatter_nan4_d(double* d, const double* s, Py_ssize_t i) {
        __m128d v = _mm_loadu_pd(s + i), w = _mm_loadu_pd(s + i + 2);
        __m128d u = _mm_cmpunord_pd(v, v), x = _mm_cmpunord_pd(w, w);
        if (d) {
            const __m128d fill = _mm_set1_pd(-0.0);
            v = _mm_or_pd(_mm_andnot_pd(u, v), _mm_and_pd(u, fill));
            w = _mm_or_pd(_mm_andnot_pd(x, w), _mm_and_pd(x, fill));
            _mm_storeu_pd(d + i, _mm_add_pd(_mm_loadu_pd(d + i), v));
            _mm_storeu_pd(d + i + 2, _mm_add_pd(_mm_loadu_pd(d + i + 2), w));
        }
        return _mm_castps_si128(_mm_shuffle_ps(_mm_castpd_ps(u), _mm_castpd_ps(x), _MM_SHUFFLE(2, 0, 2, 0)));
    }
    #define CYSCATTER_PACK8(SUF, i)  _mm_packs_epi16(                                                     \
        _mm_packs_epi32(cyscatter_nan4_##SUF(d, s, i), cyscatter_nan4_##SUF(d, s, i + 4)),                 \
        _mm_packs_epi32(cyscatter_nan4_##SUF(d, s, i + 8), cyscatter_nan4_##SUF(d, s, i + 12)))
    #define CYSCATTER_PACK16(SUF, i) _mm_packs_epi32(cyscatter_nan4_##SUF(d, s, i), cyscatter_nan4_##SUF(d, s, i + 4))
    #define CYSCATTER_PACK32(SUF, i) cyscatter_nan4_##SUF(d, s, i)
    #define CYSCATTER_NAN_COUNT(T, SUF, BITS, CT, STEP, SUB, PACK)                                         \
        static inline int cyscatter_nan_count_##SUF##BITS(T* d, const T* s, CT* c, Py_ssize_t w) {        \
            Py_ssize_t i = 0;                                                                              \
            __m128i any = _mm_setzero_si128();                                                             \
            for (; i + STEP <= w; i += STEP) {                                                             \
                __m128i a = PACK(SUF, i);                                                                  \
                any = _mm_or_si128(any, a);                                                                \
                _mm_storeu_si128((__m128i*)(c + i), SUB(_mm_loadu_si128((const __m128i*)(c + i)), a));    \
            }                                                                                              \
            int found = _mm_movemask_epi8(any) != 0;                                                       \
            if (i < w && d)                                                                                \
                cyscatter_row_nanadd_##SUF(d + i, s + i, w - i);                                           \
            for (; i < w; i++) {                                                                           \
                found |= s[i] != s[i];                                                                     \
                c[i] += s[i] != s[i];                                                                      \
            }                                                                                              \
            return found;                                                                                  \
        }
    #else
    #define CYSCATTER_NAN_COUNT(T, SUF, BITS, CT, STEP, SUB, PACK)                                         \
        static inline int cyscatter_nan_count_##SUF##BITS(T* d, const T* s, CT* c, Py_ssize_t w) {        \
            int found = 0;                                                                                 \
            if (d)                                                                                         \
                cyscatter_row_nanadd_##SUF(d, s, w);                                                       \
            for (Py_ssize_t i = 0; i < w; i++) {                                                           \
                found |= s[i] != s[i];                                                                     \
                c[i] += s[i] != s[i];                                                                      \
            }                                                                                              \
            return found;                                                                                  \
        }
    #endif
    CYSCATTER_NAN_COUNT(float, f, 8, uint8_t, 16, _mm_sub_epi8, CYSCATTER_PACK8)
    CYSCATTER_NAN_COUNT(float, f, 16, uint16_t, 8, _mm_sub_epi16, CYSCATTER_PACK16)
    CYSCATTER_NAN_COUNT(float, f, 32, int32_t, 4, _mm_sub_epi32, CYSCATTER_PACK32)
    CYSCATTER_NAN_COUNT(double, d, 8, uint8_t, 16, _mm_sub_epi8, CYSCATTER_PACK8)
    CYSCATTER_NAN_COUNT(double, d, 16, uint16_t, 8, _mm_sub_epi16, CYSCATTER_PACK16)
    CYSCATTER_NAN_COUNT(double, d, 32, int32_t, 4, _mm_sub_epi32, CYSCATTER_PACK32)
    """
    int cyscatter_nan_count_f8(float* d, const float* s, uint8_t* c, Py_ssize_t w) noexcept nogil
    int cyscatter_nan_count_f16(float* d, const float* s, uint16_t* c, Py_ssize_t w) noexcept nogil
    int cyscatter_nan_count_f32(float* d, const float* s, int32_t* c, Py_ssize_t w) noexcept nogil
    int cyscatter_nan_count_d8(double* d, const double* s, uint8_t* c, Py_ssize_t w) noexcept nogil
    int cyscatter_nan_count_d16(double* d, const double* s, uint16_t* c, Py_ssize_t w) noexcept nogil
    int cyscatter_nan_count_d32(double* d, const double* s, int32_t* c, Py_ssize_t w) noexcept nogil
    int cyscatter_has_nan_f(const float* s, Py_ssize_t w) noexcept nogil
    int cyscatter_has_nan_d(const double* s, Py_ssize_t w) noexcept nogil

cdef enum:
    LINE = 16          # a cache line of float32: the unit of the threads' feature columns
    CACHE_BYTES = 64
    MAX_PARTS = 256    # threads one call may use (more are not given more work)

# The machine's thresholds, as kernels.pyx's (cyscatter._runtime.machine sets them): tables up to `_l2_share` bytes
# need no prefetch (a quarter of the L2); rows are fetched `_prefetch_bytes` of rows ahead.
cdef Py_ssize_t _l2_share = 256 * 1024
cdef Py_ssize_t _prefetch_bytes = 4096


cdef inline bint _has_nan(const nan_value_t* s, Py_ssize_t w) noexcept nogil:
    """Whether a contiguous run of w values holds a NaN (a complex value: either part)."""
    if nan_value_t is float:
        return cyscatter_has_nan_f(s, w) != 0
    elif nan_value_t is double:
        return cyscatter_has_nan_d(s, w) != 0
    elif nan_value_t is cython.floatcomplex:
        return cyscatter_has_nan_f(<const float*>s, 2 * w) != 0
    else:
        return cyscatter_has_nan_d(<const double*>s, 2 * w) != 0


cdef inline bint _nansum_row(nan_value_t* d, const nan_value_t* s, Py_ssize_t width) noexcept nogil:
    """d[f] = nan_add(d[f], s[f]) over a contiguous row (the core kernel's nansum update, bit for bit); whether
    the row held a NaN, found by the same compares."""
    cdef Py_ssize_t f
    cdef bint found = False
    if nan_value_t is float:
        return cyscatter_row_nanadd_f(d, s, width) != 0
    elif nan_value_t is double:
        return cyscatter_row_nanadd_d(d, s, width) != 0
    else:
        for f in range(width):
            found |= s[f] != s[f]
            d[f] = nan_add(d[f], s[f])
        return found


cdef inline bint _count_row(nan_value_t* d, const nan_value_t* s, nan_count_t* c, Py_ssize_t width) noexcept nogil:
    """c[f] += 1 where s[f] is NaN, for a whole row without a branch per element or line (rows that hold a NaN
    at all mostly hold several: a test per 16-feature line, tried first, mispredicted often enough at 10% NaN
    to cost 3x the whole-row update); with `d` not NULL also nansum's update of `d` by `s`, from the same
    compares. Whether `s` held a NaN."""
    cdef Py_ssize_t f
    cdef bint found = False
    if nan_value_t is float and nan_count_t is uint8_t:
        return cyscatter_nan_count_f8(d, s, c, width) != 0
    elif nan_value_t is float and nan_count_t is uint16_t:
        return cyscatter_nan_count_f16(d, s, c, width) != 0
    elif nan_value_t is float and nan_count_t is int32_t:
        return cyscatter_nan_count_f32(d, s, c, width) != 0
    elif nan_value_t is double and nan_count_t is uint8_t:
        return cyscatter_nan_count_d8(d, s, c, width) != 0
    elif nan_value_t is double and nan_count_t is uint16_t:
        return cyscatter_nan_count_d16(d, s, c, width) != 0
    elif nan_value_t is double and nan_count_t is int32_t:
        return cyscatter_nan_count_d32(d, s, c, width) != 0
    else:
        if d != NULL:
            _nansum_row(d, s, width)
        for f in range(width):
            found |= s[f] != s[f]
            c[f] += s[f] != s[f]
        return found


cdef inline bint _update(nan_value_t* d, const nan_value_t* s, nan_count_t* c, Py_ssize_t width,
                         bint expect_nan) noexcept nogil:
    """One entry's row: nansum's update of `d` by `s` (`d` NULL: none), and `c` += isnan(`s`) when `s` holds a
    NaN (`c` NULL: none); whether it did. `expect_nan` (the last row held one): update and count in one loop,
    else count only after the update found a NaN, so that rows without NaN never touch their counts."""
    if c != NULL and expect_nan:
        return _count_row(d, s, c, width)
    if not (_nansum_row(d, s, width) if d != NULL else _has_nan(s, width)):
        return False
    if c != NULL:
        _count_row(<nan_value_t*>NULL, s, c, width)
    return True


cdef inline bint _update_row(nan_value_t* d, const nan_value_t* s, nan_count_t* c, Py_ssize_t width,
                             bint expect_nan) noexcept nogil:
    # constant widths let the C compiler unroll the SSE loops of common rows completely (as kernels.pyx does;
    # W1's 64-feature rows took 1.4x nansum's time with the width a variable)
    if width == 64:
        return _update(d, s, c, 64, expect_nan)
    elif width == 32:
        return _update(d, s, c, 32, expect_nan)
    elif width == 16:
        return _update(d, s, c, 16, expect_nan)
    elif width == 8:
        return _update(d, s, c, 8, expect_nan)
    elif width == 4:
        return _update(d, s, c, 4, expect_nan)
    elif width == 1:
        return _update(d, s, c, 1, expect_nan)
    return _update(d, s, c, width, expect_nan)


cdef inline void _prefetch_row(const void* p, Py_ssize_t nbytes) noexcept nogil:
    """Every cache line of [p, p + nbytes), for writing: a row that does not start on a line touches one more
    (NumPy's large buffers start 16 bytes past a page boundary)."""
    cdef size_t line = (<size_t>p) & ~(<size_t>CACHE_BYTES - 1), end = (<size_t>p) + <size_t>nbytes
    while line < end:
        cyscatter_prefetch_w(<const void*>line)
        line += CACHE_BYTES


cdef Py_ssize_t nan_pass(const nan_value_t* src, Py_ssize_t outer_stride, Py_ssize_t row_stride,
                         Py_ssize_t feature_stride, const index_t* index, Py_ssize_t n, nan_value_t* out,
                         Py_ssize_t out_outer_stride, Py_ssize_t out_row_stride, Py_ssize_t out_feature_stride,
                         nan_count_t* counts, Py_ssize_t size, Py_ssize_t inner, Py_ssize_t o0, Py_ssize_t o1,
                         Py_ssize_t f0, Py_ssize_t f1) noexcept nogil:
    cdef Py_ssize_t o, k, f, width = f1 - f0, found = 0
    cdef Py_ssize_t row_bytes = width * <Py_ssize_t>sizeof(nan_value_t)
    cdef Py_ssize_t count_bytes = width * <Py_ssize_t>sizeof(nan_count_t)
    # destination rows are random: fetched ~4 KB of rows ahead as the core kernels do (NOTES.md), the count rows
    # only while the src rows hold NaN (the last one did), so that src without NaN never touches the counts
    cdef Py_ssize_t ahead = cyscatter_rows_ahead(_prefetch_bytes, row_bytes)
    cdef bint fetch_out = out != NULL and size * inner * <Py_ssize_t>sizeof(nan_value_t) > _l2_share
    cdef bint fetch_counts = counts != NULL and size * inner * <Py_ssize_t>sizeof(nan_count_t) > _l2_share
    # the src stream too for rows of 1-4 cache lines, as the core scatter (NOTES.md v6)
    cdef bint fetch_src = out != NULL and CACHE_BYTES <= row_bytes <= 4 * CACHE_BYTES
    cdef bint nan_row = False
    cdef index_t j
    cdef const nan_value_t* s
    cdef nan_value_t* d = NULL
    cdef nan_count_t* c
    cdef nan_value_t x
    if width <= 0:
        return 0
    if ahead >= n:
        fetch_out = fetch_counts = fetch_src = False
    for o in range(o0, o1):
        s = src + o * outer_stride + f0 * feature_stride
        c = counts + o * size * inner + f0 if counts != NULL else NULL
        if out != NULL:
            d = out + o * out_outer_stride + f0 * out_feature_stride
        if feature_stride != 1 or (out != NULL and out_feature_stride != 1):
            for k in range(n):
                j = index[k]
                if <uint64_t>j >= <uint64_t>size:
                    continue
                for f in range(width):
                    x = s[k * row_stride + f * feature_stride]
                    if out != NULL:
                        d[j * out_row_stride + f * out_feature_stride] = nan_add(
                            d[j * out_row_stride + f * out_feature_stride], x)
                    if x != x:
                        found += 1
                        if c != NULL:
                            c[j * inner + f] += 1
            continue
        for k in range(n):
            if k + ahead < n:
                if fetch_src:
                    _prefetch_row(s + (k + ahead) * row_stride, row_bytes)
                j = index[k + ahead]
                if <uint64_t>j < <uint64_t>size:
                    if fetch_out:
                        _prefetch_row(d + j * out_row_stride, row_bytes)
                    if fetch_counts and nan_row:
                        _prefetch_row(c + j * inner, count_bytes)
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:
                continue
            nan_row = _update_row(d + j * out_row_stride if out != NULL else NULL, s + k * row_stride,
                                  c + j * inner if c != NULL else NULL, width, nan_row)
            found += nan_row
    return found


cdef inline Py_ssize_t _cut(Py_ssize_t total, int parts, int part) noexcept nogil:
    """Start of part `part` of [0, total) in whole lines of LINE features."""
    return min(total, ((total * part) // parts + LINE - 1) // LINE * LINE)


def _set_machine(Py_ssize_t l2_share, Py_ssize_t prefetch_bytes=4096):
    """The machine-dependent thresholds (see cyscatter._runtime.machine): no row prefetch for tables up to `l2_share`
    bytes; rows fetched `prefetch_bytes` of rows ahead (kept within 256 B - 64 KiB)."""
    global _l2_share, _prefetch_bytes
    _l2_share = max(0, l2_share)
    _prefetch_bytes = min(65536, max(256, prefetch_bytes))


def row_counts(const index_t[::1] index not None, int64_t[::1] rows not None, int mode):
    """rows[index[k]] += 1 for the entries in [0, len(rows)) (`check_and_count`); -1, or under MODE_RAISE the
    first position k outside it. nanmean's entries per row, and the largest of them bounds its NaN counts."""
    cdef Py_ssize_t status = -1
    if index.shape[0] == 0:
        return status
    with nogil:
        status = check_and_count(&index[0], index.shape[0], rows.shape[0], &rows[0] if rows.shape[0] else NULL,
                                 mode)
    return status


cdef Py_ssize_t _run(const nan_value_t[:, :, :] src, const index_t[::1] index, nan_value_t* d, Py_ssize_t doo,
                     Py_ssize_t dor, Py_ssize_t dof, nan_count_t* counts, Py_ssize_t size,
                     int num_threads) noexcept nogil:
    """`nan_pass` on threads: batch slices split among them, else feature columns (whole lines), so that each
    element has one writer and the result does not depend on the thread count."""
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], total = 0
    cdef Py_ssize_t item = sizeof(nan_value_t)
    cdef Py_ssize_t so = src.strides[0] // item, sr = src.strides[1] // item, sf = src.strides[2] // item
    cdef Py_ssize_t found[MAX_PARTS]
    cdef int parts, t
    if outer == 0 or n == 0 or inner == 0 or size == 0:
        return 0
    parts = min(MAX_PARTS, team_size(num_threads, outer * n * inner))
    if outer < parts and inner < 2 * LINE:
        parts = 1
    if parts == 1:
        return nan_pass(&src[0, 0, 0], so, sr, sf, &index[0], n, d, doo, dor, dof, counts, size, inner, 0, outer, 0,
                        inner)
    for t in prange(parts, num_threads=parts, schedule='static', chunksize=1):
        if outer >= parts:
            found[t] = nan_pass(&src[0, 0, 0], so, sr, sf, &index[0], n, d, doo, dor, dof, counts, size, inner,
                                (outer * t) // parts, (outer * (t + 1)) // parts, 0, inner)
        else:
            found[t] = nan_pass(&src[0, 0, 0], so, sr, sf, &index[0], n, d, doo, dor, dof, counts, size, inner, 0,
                                outer, _cut(inner, parts, t), _cut(inner, parts, t + 1))
    for t in range(parts):
        total += found[t]
    return total


def _check(what, src, index, table):
    if index.shape[0] != src.shape[1] or table.shape[0] != src.shape[0] or table.shape[2] != src.shape[2]:
        table_name = "counts" if what == "count" else "out"
        raise ValueError(f"{what}: src {tuple(src.shape[:3])}, index ({index.shape[0]},) and {table_name} "
                         f"{tuple(table.shape[:3])} do not match")


def nansum(const nan_value_t[:, :, :] src not None, const index_t[::1] index not None,
           nan_value_t[:, :, :] out not None, int num_threads=0):
    """out[o, index[k], f] = nansum's update of it by src[o, k, f] (the core kernel's, bit for bit), in index
    order, for `src` (outer, n, inner) and `out` (outer, size, inner) of any strides and `index` the planned flat
    index (n,) (entries outside [0, size) skipped: `row_counts` applied the call's index mode). Returns 0 when
    src held no NaN in an entry in range, else a positive number: whether `count` has anything to count."""
    _check("nansum", src, index, out)
    cdef Py_ssize_t item = sizeof(nan_value_t), total
    cdef uint8_t* none = NULL
    with nogil:
        total = _run(src, index, &out[0, 0, 0] if out.shape[0] * out.shape[1] * out.shape[2] else NULL,
                     out.strides[0] // item, out.strides[1] // item, out.strides[2] // item, none, out.shape[1],
                     num_threads)
    return total


def nansum_count(const nan_value_t[:, :, :] src not None, const index_t[::1] index not None,
                 nan_value_t[:, :, :] out not None, nan_count_t[:, :, ::1] counts not None, int num_threads=0):
    """`nansum` and `count` in one pass: the NaN rows' counts are updated as the sums are. Cheaper than the two
    passes when the output and count tables stay in cache together (no second read of src); with a table out of
    cache, each entry's count row then misses too (W1: 1.5x the two passes' time, benchmarks/NOTES.md v23)."""
    _check("nansum_count", src, index, out)
    _check("count", src, index, counts)
    if out.shape[1] != counts.shape[1]:
        raise ValueError(f"nansum_count: out has {out.shape[1]} rows and counts {counts.shape[1]}: they do not "
                         "match")
    cdef Py_ssize_t item = sizeof(nan_value_t), total
    with nogil:
        total = _run(src, index, &out[0, 0, 0] if out.shape[0] * out.shape[1] * out.shape[2] else NULL,
                     out.strides[0] // item, out.strides[1] // item, out.strides[2] // item,
                     &counts[0, 0, 0] if counts.shape[0] * counts.shape[1] * counts.shape[2] else NULL,
                     out.shape[1], num_threads)
    return total


def count(const nan_value_t[:, :, :] src not None, const index_t[::1] index not None,
          nan_count_t[:, :, ::1] counts not None, int num_threads=0):
    """counts[o, index[k], f] += 1 for every NaN src[o, k, f] (`nan_pass` without `out`), `counts` (outer, size,
    inner) C-contiguous, the rest as `nansum`. Only rows that hold a NaN touch their count rows. Returns 0 when no
    NaN was found (`counts` untouched), else a positive number."""
    _check("count", src, index, counts)
    cdef Py_ssize_t total
    with nogil:
        total = _run(src, index, NULL, 0, 0, 0, &counts[0, 0, 0] if counts.shape[0] * counts.shape[1] *
                     counts.shape[2] else NULL, counts.shape[1], num_threads)
    return total


def any_nan(const nan_value_t[:, :, :] src not None):
    """Whether `src` (outer, n, inner, any strides) holds a NaN (a complex value: either part), stopping at the
    first row that does: whether a NaN count table is needed at all. Reads src, allocates nothing."""
    cdef Py_ssize_t o, k, f, width = src.shape[2]
    cdef bint found = False, unit = width <= 1 or src.strides[2] == sizeof(nan_value_t)
    if width == 0:
        return False
    with nogil:
        for o in range(src.shape[0]):
            for k in range(src.shape[1]):
                if unit:
                    found = _has_nan(&src[o, k, 0], width)
                else:   # rows whose elements are apart (the scatter kernels read such a src in place)
                    for f in range(width):
                        if src[o, k, f] != src[o, k, f]:
                            found = True
                            break
                if found:
                    break
            if found:
                break
    return found


cdef tuple _extents(Py_ssize_t* shape):
    return (shape[0], shape[1], shape[2])


def _match(what, Py_ssize_t rows=-1, Py_ssize_t size=-1, **tables):
    """ValueError unless the 3-d `tables` agree and `rows` (the length of a row-count vector, -1: none) is
    `size`."""
    first = next(iter(tables.values()))
    if rows != size or any(shape != first for shape in tables.values()):
        listed = ", ".join(f"{name} {shape}" for name, shape in tables.items())
        raise ValueError(f"{what}: {listed}" + (f" and rows ({rows},)" if rows >= 0 else "") + " do not match")


ctypedef fused element_count_t:
    int32_t
    int64_t


def element_counts(const int64_t[::1] rows not None, const nan_count_t[:, :, ::1] nan not None,
                   element_count_t[:, :, ::1] counts not None):
    """counts[o, j, f] = rows[j] - nan[o, j, f]: the non-NaN entries of each element from the entries of its row
    and its NaN entries (a NumPy subtract of the mixed types cast in buffers, 2-3x slower)."""
    cdef Py_ssize_t o, j, f, outer = nan.shape[0], size = nan.shape[1], inner = nan.shape[2]
    cdef int64_t r
    _match("element_counts", rows.shape[0], size, nan=(outer, size, inner), counts=_extents(counts.shape))
    with nogil:
        for o in range(outer):
            for j in range(size):
                r = rows[j]
                for f in range(inner):
                    counts[o, j, f] = <element_count_t>(r - nan[o, j, f])


ctypedef fused real_t:
    float
    double


def divide(real_t[:, :, ::1] out not None, const element_count_t[:, :, ::1] counts not None):
    """out /= max(counts, 1) element by element, `counts` left as it is (nanmean's finish, one pass; NumPy's
    clamp then divide of a float by an integer array cast in buffers took 2x)."""
    cdef Py_ssize_t o, j, f, outer = out.shape[0], size = out.shape[1], inner = out.shape[2]
    cdef element_count_t c
    _match("divide", out=(outer, size, inner), counts=_extents(counts.shape))
    with nogil:
        for o in range(outer):
            for j in range(size):
                for f in range(inner):
                    c = counts[o, j, f]
                    out[o, j, f] = out[o, j, f] / <real_t>(c if c > 1 else 1)


def mean(real_t[:, :, ::1] out not None, const int64_t[::1] rows not None, const nan_count_t[:, :, ::1] nan not None):
    """out[o, j, f] /= max(rows[j] - nan[o, j, f], 1): nanmean's finish from the entries of each row and the NaN
    entries of each element, without making the element counts."""
    cdef Py_ssize_t o, j, f, outer = out.shape[0], size = out.shape[1], inner = out.shape[2]
    cdef int64_t r
    cdef int32_t r32, c32
    _match("mean", rows.shape[0], size, out=(outer, size, inner), nan=_extents(nan.shape))
    with nogil:
        for o in range(outer):
            for j in range(size):
                r = rows[j]
                if r <= 1:   # at most one entry: the sum is the mean (or the identity)
                    continue
                if nan_count_t is int64_t:
                    for f in range(inner):
                        out[o, j, f] = out[o, j, f] / <real_t>max(r - nan[o, j, f], 1)
                else:
                    # a count below 2**31 (the narrow types hold one): int32 arithmetic vectorises, int64's did
                    # not (3.7x the time)
                    r32 = <int32_t>r
                    for f in range(inner):
                        c32 = r32 - <int32_t>nan[o, j, f]
                        out[o, j, f] = out[o, j, f] / <real_t>(c32 if c32 > 1 else 1)
