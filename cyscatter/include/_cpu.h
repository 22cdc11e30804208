/* What the CPU kernels need beyond C99, with portable fallbacks: the OpenMP thread count (one thread when the
 * extension is built without OpenMP) and a software prefetch for writing (a no-op on other compilers). */
#ifndef CYSCATTER_CPU_H
#define CYSCATTER_CPU_H

#include <stddef.h>

#ifdef _OPENMP
#include <omp.h>
static inline int cyscatter_omp_max_threads(void) { return omp_get_max_threads(); }
static inline int cyscatter_have_openmp(void) { return 1; }
#else
static inline int cyscatter_omp_max_threads(void) { return 1; }
static inline int cyscatter_have_openmp(void) { return 0; }
#endif

/* Index entries to look ahead when prefetching random rows of `row_bytes` bytes, `reach` bytes of rows ahead
 * (4096 unless a calibration of the machine changed it): at least reach / 256 entries and at most reach / 64,
 * 16 and 64 for 4 KB (NOTES.md: rows that miss L2 gain 1.3-3x from it). */
static inline ptrdiff_t cyscatter_rows_ahead(ptrdiff_t reach, ptrdiff_t row_bytes) {
    ptrdiff_t ahead = reach / (row_bytes > 0 ? row_bytes : 1);
    if (ahead < reach / 256) ahead = reach / 256;
    return ahead < reach / 64 ? ahead : reach / 64;
}

/* Whether the CPU runs AVX2 (the kernels built for it by target attributes; the package's baseline is SSE2),
 * asked once */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
static inline int cyscatter_has_avx2(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") != 0;
    }
    return known;
}
#else
static inline int cyscatter_has_avx2(void) { return 0; }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define cyscatter_prefetch_w(p) __builtin_prefetch((const void *)(p), 1, 3)
#define cyscatter_prefetch_r(p) __builtin_prefetch((const void *)(p), 0, 3)
/* 1 when the compiler knows `x` at this point (after inlining): lets an inline kernel pick code that only pays
 * for widths fixed at compile time */
#define cyscatter_is_constant(x) __builtin_constant_p(x)
#else
#define cyscatter_prefetch_w(p) ((void)(p))
#define cyscatter_prefetch_r(p) ((void)(p))
#define cyscatter_is_constant(x) 0
#endif

/* Copy `bytes` (a multiple of 16) to a 16-byte aligned `dst` with non-temporal stores, which skip reading the
 * destination lines into the cache first: for outputs far larger than the last-level cache. Callers check
 * cyscatter_can_stream() and finish with cyscatter_stream_fence(). */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline int cyscatter_can_stream(void) { return 1; }
static inline void cyscatter_stream_copy(void *dst, const void *src, size_t bytes) {
    char *d = (char *)dst;
    const char *s = (const char *)src;
    for (size_t i = 0; i < bytes; i += 16)
        _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
}
static inline void cyscatter_stream_fence(void) { _mm_sfence(); }
#else
#include <string.h>
static inline int cyscatter_can_stream(void) { return 0; }
static inline void cyscatter_stream_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
static inline void cyscatter_stream_fence(void) { }
#endif

/* max/min of two floats with NumPy's NaN rule (a NaN wins) and -0.0 < +0.0, written as selects and bitwise
 * and/or (for equal values: on zeros they pick the right sign, otherwise the bits are equal), so that GCC
 * vectorises the row loops with SSE2 alone; a `signbit` test instead compiles to branches for double, which
 * mispredict on random data (4.6x slower scatter-max, NOTES.md v10). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#define CYSCATTER_BITWISE(name, T, U, OP)                                                       \
    static inline T name(T a, T b) {                                                          \
        U x, y; T r;                                                                          \
        memcpy(&x, &a, sizeof x); memcpy(&y, &b, sizeof y); x = x OP y;                       \
        memcpy(&r, &x, sizeof r); return r;                                                   \
    }
CYSCATTER_BITWISE(cyscatter_and_d, double, uint64_t, &)
CYSCATTER_BITWISE(cyscatter_or_d, double, uint64_t, |)
CYSCATTER_BITWISE(cyscatter_and_f, float, uint32_t, &)
CYSCATTER_BITWISE(cyscatter_or_f, float, uint32_t, |)
#define CYSCATTER_EXTREME(name, T, CMP, TIE)                                                  \
    static inline T name(T cur, T nw) {                                                       \
        T r = (nw CMP cur) ? nw : ((nw == cur) ? TIE(cur, nw) : cur);                         \
        return ((nw != nw) & (cur == cur)) ? nw : r;                                          \
    }
CYSCATTER_EXTREME(cyscatter_max_d, double, >, cyscatter_and_d)
CYSCATTER_EXTREME(cyscatter_min_d, double, <, cyscatter_or_d)
CYSCATTER_EXTREME(cyscatter_max_f, float, >, cyscatter_and_f)
CYSCATTER_EXTREME(cyscatter_min_f, float, <, cyscatter_or_f)
/* fmax/fmin (NumPy's np.fmax/np.fmin, the NaN-skipping ops): the same rules, except that a NaN loses: a NaN
 * new value keeps the one held, a NaN held takes the new value (NaN only when both are). */
#define CYSCATTER_FEXTREME(name, T, CMP, TIE)                                                 \
    static inline T name(T cur, T nw) {                                                       \
        T r = (nw CMP cur) ? nw : ((nw == cur) ? TIE(cur, nw) : cur);                         \
        return (cur != cur) ? nw : r;                                                         \
    }
CYSCATTER_FEXTREME(cyscatter_fmax_d, double, >, cyscatter_and_d)
CYSCATTER_FEXTREME(cyscatter_fmin_d, double, <, cyscatter_or_d)
CYSCATTER_FEXTREME(cyscatter_fmax_f, float, >, cyscatter_and_f)
CYSCATTER_FEXTREME(cyscatter_fmin_f, float, <, cyscatter_or_f)

/* x, or fill where x is NaN (nansum's and nanprod's element rule), as a bitwise select on a compare mask: the
 * ternary Cython writes compiled to a branch in the narrow-row loops, mispredicted on data with scattered NaN
 * (scatter-nansum 2.8x add's time for one-element rows and 5x for four, 10% NaN; NOTES.md v22). */
#define CYSCATTER_NAN_TO(name, T, U)                                                          \
    static inline T name(T x, T fill) {                                                       \
        U a, b, m = (U)0 - (U)(x == x);                                                       \
        memcpy(&a, &x, sizeof a); memcpy(&b, &fill, sizeof b); a = (a & m) | (b & ~m);        \
        memcpy(&x, &a, sizeof x); return x;                                                   \
    }
CYSCATTER_NAN_TO(cyscatter_nan_to_d, double, uint64_t)
CYSCATTER_NAN_TO(cyscatter_nan_to_f, float, uint32_t)

/* The same rules on whole rows, four floats or two doubles at a time. MAXPS/MINPS alone already return the
 * second operand when either operand is a NaN or both are zeros, so only two fixes remain: equal values take
 * the bitwise and (max) / or (min) of the two (the sign of zero; other equal values have equal bits), and a NaN
 * already held stays. About half the instructions GCC makes of the scalar selects above, which are
 * compute-bound on a sorted or cached scatter-max (NOTES.md v14); bitwise the same results. */
#if defined(__SSE2__)
#define CYSCATTER_EXTREME_ROW(name, T, V, W, MINMAX, TIE_MAX, SUF, scalar)                         \
    static inline void name(T *dst, const T *src, ptrdiff_t width) {                                \
        ptrdiff_t f = 0, whole = width - width % W;                                                 \
        for (; f < whole; f += W) {                                                                 \
            V cur = _mm_loadu_##SUF(dst + f), nw = _mm_loadu_##SUF(src + f);                        \
            V a = _mm_##MINMAX##_##SUF(cur, nw);                                                    \
            V eq = _mm_cmpeq_##SUF(cur, nw);                                                        \
            a = TIE_MAX ? _mm_andnot_##SUF(_mm_andnot_##SUF(cur, eq), a)                            \
                        : _mm_or_##SUF(a, _mm_and_##SUF(eq, cur));                                  \
            V held = _mm_cmpunord_##SUF(cur, cur);                                                  \
            _mm_storeu_##SUF(dst + f, _mm_or_##SUF(_mm_and_##SUF(held, cur), _mm_andnot_##SUF(held, a))); \
        }                                                                                           \
        for (; f < width; f++)                                                                      \
            dst[f] = scalar(dst[f], src[f]);                                                        \
    }
CYSCATTER_EXTREME_ROW(cyscatter_row_max_f, float, __m128, 4, max, 1, ps, cyscatter_max_f)
CYSCATTER_EXTREME_ROW(cyscatter_row_min_f, float, __m128, 4, min, 0, ps, cyscatter_min_f)
CYSCATTER_EXTREME_ROW(cyscatter_row_max_d, double, __m128d, 2, max, 1, pd, cyscatter_max_d)
CYSCATTER_EXTREME_ROW(cyscatter_row_min_d, double, __m128d, 2, min, 0, pd, cyscatter_min_d)
/* fmax/fmin rows: MAXPS(new, cur) returns cur when either is a NaN or both are zeros, so a NaN new value already
 * loses; equal values take the bitwise and (fmax) / or (fmin) of the two, and a NaN held takes the new value.
 * The scalar rule's signbit tests compiled to branches for double (fmax 2.6x max's time). */
#define CYSCATTER_FEXTREME_ROW(name, T, V, W, MINMAX, TIE_MAX, SUF, scalar)                        \
    static inline void name(T *dst, const T *src, ptrdiff_t width) {                                \
        ptrdiff_t f = 0, whole = width - width % W;                                                 \
        for (; f < whole; f += W) {                                                                 \
            V cur = _mm_loadu_##SUF(dst + f), nw = _mm_loadu_##SUF(src + f);                        \
            V a = _mm_##MINMAX##_##SUF(nw, cur);                                                    \
            V eq = _mm_cmpeq_##SUF(cur, nw);                                                        \
            a = TIE_MAX ? _mm_andnot_##SUF(_mm_andnot_##SUF(nw, eq), a)                             \
                        : _mm_or_##SUF(a, _mm_and_##SUF(eq, nw));                                   \
            V held = _mm_cmpunord_##SUF(cur, cur);                                                  \
            _mm_storeu_##SUF(dst + f, _mm_or_##SUF(_mm_and_##SUF(held, nw), _mm_andnot_##SUF(held, a))); \
        }                                                                                           \
        for (; f < width; f++)                                                                      \
            dst[f] = scalar(dst[f], src[f]);                                                        \
    }
CYSCATTER_FEXTREME_ROW(cyscatter_row_fmax_f, float, __m128, 4, max, 1, ps, cyscatter_fmax_f)
CYSCATTER_FEXTREME_ROW(cyscatter_row_fmin_f, float, __m128, 4, min, 0, ps, cyscatter_fmin_f)
CYSCATTER_FEXTREME_ROW(cyscatter_row_fmax_d, double, __m128d, 2, max, 1, pd, cyscatter_fmax_d)
CYSCATTER_FEXTREME_ROW(cyscatter_row_fmin_d, double, __m128d, 2, min, 0, pd, cyscatter_fmin_d)
/* nansum/nanprod rows: a NaN src value is replaced by the op's exact identity (-0.0 for the sum, 1 for the
 * product: the held value stays bit for bit) through the ordered-compare mask, then added / multiplied; the
 * tail (and one-element rows) in scalar SSE. The scalar bitwise select compiles to 64-bit integer work that SSE2
 * does not vectorise for double (W1 f64 nansum 1.5x add's time), and to a compare-to-integer chain for one
 * element (nansum 1.7x add for one-element float32 rows in a cached table). They return whether the row held a
 * NaN, which nanmean's counting pass (nan_kernels.pyx) needs and the core kernels ignore. */
#define CYSCATTER_NAN_ROW(name, T, V, W, OP, FILL, SUF, S1)                                          \
    static inline int name(T *dst, const T *src, ptrdiff_t width) {                                 \
        ptrdiff_t f = 0, whole = width - width % W;                                                 \
        const V fill = _mm_set1_##SUF(FILL);                                                        \
        V all = _mm_castsi128_##SUF(_mm_set1_epi32(-1)), good = all;                                \
        for (; f < whole; f += W) {                                                                 \
            V nw = _mm_loadu_##SUF(src + f), ok = _mm_cmpord_##SUF(nw, nw);                         \
            good = _mm_and_##SUF(good, ok);                                                         \
            nw = _mm_or_##SUF(_mm_and_##SUF(ok, nw), _mm_andnot_##SUF(ok, fill));                   \
            _mm_storeu_##SUF(dst + f, _mm_##OP##_##SUF(_mm_loadu_##SUF(dst + f), nw));              \
        }                                                                                           \
        for (; f < width; f++) {                                                                    \
            V nw = _mm_load_##S1(src + f), ok = _mm_cmpord_##S1(nw, nw);                            \
            good = _mm_and_##SUF(good, _mm_or_##SUF(ok, _mm_move_##S1(all, _mm_setzero_##SUF()))); \
            nw = _mm_or_##SUF(_mm_and_##SUF(ok, nw), _mm_andnot_##SUF(ok, fill));                   \
            _mm_store_##S1(dst + f, _mm_##OP##_##S1(_mm_load_##S1(dst + f), nw));                   \
        }                                                                                           \
        return _mm_movemask_##SUF(good) != _mm_movemask_##SUF(all);                                 \
    }
CYSCATTER_NAN_ROW(cyscatter_row_nanadd_f, float, __m128, 4, add, -0.0f, ps, ss)
CYSCATTER_NAN_ROW(cyscatter_row_nanmul_f, float, __m128, 4, mul, 1.0f, ps, ss)
CYSCATTER_NAN_ROW(cyscatter_row_nanadd_d, double, __m128d, 2, add, -0.0, pd, sd)
CYSCATTER_NAN_ROW(cyscatter_row_nanmul_d, double, __m128d, 2, mul, 1.0, pd, sd)
#else
#define CYSCATTER_EXTREME_ROW(name, T, scalar)                                                      \
    static inline void name(T *dst, const T *src, ptrdiff_t width) {                                \
        for (ptrdiff_t f = 0; f < width; f++) dst[f] = scalar(dst[f], src[f]);                      \
    }
CYSCATTER_EXTREME_ROW(cyscatter_row_max_f, float, cyscatter_max_f)
CYSCATTER_EXTREME_ROW(cyscatter_row_min_f, float, cyscatter_min_f)
CYSCATTER_EXTREME_ROW(cyscatter_row_max_d, double, cyscatter_max_d)
CYSCATTER_EXTREME_ROW(cyscatter_row_min_d, double, cyscatter_min_d)
CYSCATTER_EXTREME_ROW(cyscatter_row_fmax_f, float, cyscatter_fmax_f)
CYSCATTER_EXTREME_ROW(cyscatter_row_fmin_f, float, cyscatter_fmin_f)
CYSCATTER_EXTREME_ROW(cyscatter_row_fmax_d, double, cyscatter_fmax_d)
CYSCATTER_EXTREME_ROW(cyscatter_row_fmin_d, double, cyscatter_fmin_d)
#define CYSCATTER_NAN_ROW(name, T, OPC, FILL, nan_to)                                                \
    static inline int name(T *dst, const T *src, ptrdiff_t width) {                                 \
        int any = 0;                                                                                \
        for (ptrdiff_t f = 0; f < width; f++) {                                                     \
            any |= src[f] != src[f];                                                                \
            dst[f] = dst[f] OPC nan_to(src[f], FILL);                                               \
        }                                                                                           \
        return any;                                                                                 \
    }
CYSCATTER_NAN_ROW(cyscatter_row_nanadd_f, float, +, -0.0f, cyscatter_nan_to_f)
CYSCATTER_NAN_ROW(cyscatter_row_nanmul_f, float, *, 1.0f, cyscatter_nan_to_f)
CYSCATTER_NAN_ROW(cyscatter_row_nanadd_d, double, +, -0.0, cyscatter_nan_to_d)
CYSCATTER_NAN_ROW(cyscatter_row_nanmul_d, double, *, 1.0, cyscatter_nan_to_d)
#endif

#endif
