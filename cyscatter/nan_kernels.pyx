# cython: language_level=3
"""CPU kernel of the NaN-skipping ops' per-element counts.

nanmean divides each output element by the number of its non-NaN entries, and a fill_value marks the elements
that have none. The sum pass (the scatter-reduce kernel with the NaN-skipping op) counts the entries of each
destination row as mean's does, at no extra cost; this kernel then takes one off for every NaN entry. Each src
row is tested as a whole (SSE2 compares) some rows ahead of its update, and only the count rows of src rows that
hold a NaN are prefetched and updated: src without NaN costs one sequential read of src, and the count traffic is
that of the rows with NaN entries. (A second scatter-add pass of a non-NaN mask, the earlier way, cost 1.6-2.4x
mean's time whatever the data; figures in benchmarks/bench_nan.py.)
"""
cimport cython
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint64_t

from cyscatter.kernels cimport index_t, team_size

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
    /* c[f] -= isnan(s[f]) over a row: the all-ones compare mask is -1 as an integer, so it is added */
    static inline void cyscatter_uncount_f(const float* s, int32_t* c, Py_ssize_t w) {
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        for (; i + 4 <= w; i += 4) {
            __m128 v = _mm_loadu_ps(s + i);
            __m128i x = _mm_loadu_si128((const __m128i*)(c + i));
            _mm_storeu_si128((__m128i*)(c + i), _mm_add_epi32(x, _mm_castps_si128(_mm_cmpunord_ps(v, v))));
        }
    #endif
        for (; i < w; i++) c[i] -= s[i] != s[i];
    }
    static inline void cyscatter_uncount_d(const double* s, int32_t* c, Py_ssize_t w) {
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        for (; i + 4 <= w; i += 4) {
            __m128d u = _mm_loadu_pd(s + i), v = _mm_loadu_pd(s + i + 2);
            __m128 m = _mm_shuffle_ps(_mm_castpd_ps(_mm_cmpunord_pd(u, u)), _mm_castpd_ps(_mm_cmpunord_pd(v, v)),
                                      _MM_SHUFFLE(2, 0, 2, 0));   /* the four 64-bit masks as 32-bit ones */
            __m128i x = _mm_loadu_si128((const __m128i*)(c + i));
            _mm_storeu_si128((__m128i*)(c + i), _mm_add_epi32(x, _mm_castps_si128(m)));
        }
    #endif
        for (; i < w; i++) c[i] -= s[i] != s[i];
    }
    static inline void cyscatter_nan_prefetch_w(const void* p) { __builtin_prefetch(p, 1, 3); }
    """
    void cyscatter_uncount_f(const float* s, int32_t* c, Py_ssize_t w) noexcept nogil
    void cyscatter_uncount_d(const double* s, int32_t* c, Py_ssize_t w) noexcept nogil
    int cyscatter_has_nan_f(const float* s, Py_ssize_t w) noexcept nogil
    int cyscatter_has_nan_d(const double* s, Py_ssize_t w) noexcept nogil
    void cyscatter_nan_prefetch_w(const void* p) noexcept nogil

cdef enum:
    LINE = 16          # a cache line of float32: the unit of the threads' feature columns
    RING = 64          # entries whose has-NaN flags are kept between the look-ahead and the update
    CACHE_BYTES = 64
    MAX_PARTS = 256    # threads one call may use (more are not given more work)


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


cdef inline void _uncount_row(const nan_value_t* s, count_t* c, Py_ssize_t width) noexcept nogil:
    """c[f] -= 1 where s[f] is NaN, for a whole row without a branch per element or line: rows that hold a NaN
    at all mostly hold several (a test per 16-feature line, tried first, mispredicted often enough at 10% NaN
    to cost 3x the whole-row update)."""
    cdef Py_ssize_t f
    if nan_value_t is float and count_t is int32_t:
        cyscatter_uncount_f(s, c, width)
    elif nan_value_t is double and count_t is int32_t:
        cyscatter_uncount_d(s, c, width)
    else:
        for f in range(width):
            c[f] -= s[f] != s[f]


cdef Py_ssize_t uncount_nan(const nan_value_t* src, Py_ssize_t outer_stride, Py_ssize_t row_stride,
                            Py_ssize_t feature_stride, const index_t* index, Py_ssize_t n, count_t* counts,
                            Py_ssize_t size, Py_ssize_t inner, Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f0,
                            Py_ssize_t f1) noexcept nogil:
    cdef Py_ssize_t o, k, f, line, width = f1 - f0, found = 0
    cdef Py_ssize_t lines = (width * <Py_ssize_t>sizeof(count_t) + CACHE_BYTES - 1) // CACHE_BYTES
    # rows of counts are random: fetched ~4 KB of rows ahead, as the scatter kernels' destination rows, but only
    # the rows whose src row holds a NaN (found by testing the src row at the look-ahead)
    cdef Py_ssize_t ahead = min(RING - 1, max(8, 4096 // max(width * <Py_ssize_t>sizeof(count_t), 1)))
    cdef unsigned char flag[RING]
    cdef index_t j
    cdef const nan_value_t* s
    cdef count_t* c
    if width <= 0:
        return 0
    for o in range(o0, o1):
        s = src + o * outer_stride + f0 * feature_stride
        c = counts + o * size * inner + f0
        if feature_stride != 1:
            for k in range(n):
                j = index[k]
                if <uint64_t>j >= <uint64_t>size:
                    continue
                for f in range(width):
                    if s[k * row_stride + f * feature_stride] != s[k * row_stride + f * feature_stride]:
                        c[j * inner + f] -= 1
                        found = 1
            continue
        for k in range(min(ahead, n)):
            flag[k] = _has_nan(s + k * row_stride, width)
        for k in range(n):
            if k + ahead < n:
                flag[(k + ahead) % RING] = _has_nan(s + (k + ahead) * row_stride, width)
                j = index[k + ahead]
                if flag[(k + ahead) % RING] and <uint64_t>j < <uint64_t>size:
                    for line in range(lines):
                        cyscatter_nan_prefetch_w(<char*>(c + j * inner) + line * CACHE_BYTES)
            if not flag[k % RING]:
                continue
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:
                continue
            found += 1
            _uncount_row(s + k * row_stride, c + j * inner, width)
    return found


cdef inline Py_ssize_t _cut(Py_ssize_t total, int parts, int part) noexcept nogil:
    """Start of part `part` of [0, total) in whole lines of LINE features."""
    return min(total, ((total * part) // parts + LINE - 1) // LINE * LINE)


def uncount(const nan_value_t[:, :, :] src not None, const index_t[::1] index not None,
            count_t[:, :, ::1] counts not None, int num_threads=0):
    """counts[o, index[k], f] -= 1 for every NaN src[o, k, f] (`uncount_nan`); `src` (outer, n, inner) of any
    strides, `index` the planned flat index (n,), `counts` (outer, size, inner). Threads split the batch slices,
    else the feature columns; each count has one writer, so the result does not depend on the thread count.
    Returns 0 when src holds no NaN in an entry in range (`counts` untouched), else a positive number."""
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = counts.shape[1]
    cdef Py_ssize_t item = sizeof(nan_value_t), total = 0
    cdef Py_ssize_t found[MAX_PARTS]
    cdef int parts, t
    if index.shape[0] != n or counts.shape[0] != outer or counts.shape[2] != inner:
        raise ValueError(f"uncount: src {(outer, n, inner)}, index ({index.shape[0]},) and counts "
                         f"{(counts.shape[0], size, counts.shape[2])} do not match")
    if outer == 0 or n == 0 or inner == 0 or size == 0:
        return 0
    cdef const nan_value_t* s = &src[0, 0, 0]
    cdef Py_ssize_t so = src.strides[0] // item, sr = src.strides[1] // item, sf = src.strides[2] // item
    parts = min(MAX_PARTS, team_size(num_threads, outer * n * inner))
    if outer < parts and inner < 2 * LINE:
        parts = 1
    with nogil:
        if parts == 1:
            total = uncount_nan(s, so, sr, sf, &index[0], n, &counts[0, 0, 0], size, inner, 0, outer, 0, inner)
        else:
            for t in prange(parts, num_threads=parts, schedule='static', chunksize=1):
                if outer >= parts:
                    found[t] = uncount_nan(s, so, sr, sf, &index[0], n, &counts[0, 0, 0], size, inner,
                                           (outer * t) // parts, (outer * (t + 1)) // parts, 0, inner)
                else:
                    found[t] = uncount_nan(s, so, sr, sf, &index[0], n, &counts[0, 0, 0], size, inner, 0, outer,
                                           _cut(inner, parts, t), _cut(inner, parts, t + 1))
            for t in range(parts):
                total += found[t]
    return total
