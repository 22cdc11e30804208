/* The scatter of a src whose dtype the kernel widens (float16 or bfloat16 into float32, float32 into
 * float64), converting each row in registers right before it is combined: no buffer between conversion and
 * update, src read once at its own width. Loops for add, sub, mul, div, max and min, in AVX2 (+F16C), chosen at
 * run time (the build targets baseline SSE2); `cyscatter_convscatter_fn` returns NULL elsewhere and the staged
 * block loop (`_stage.h`) runs instead (nan ops, complex).
 *
 * Same bits as converting first and then running the core's row update: the conversions are those of
 * `_stage.h` (NumPy's astype: F16C's VCVTPH2PS with the signalling-NaN fix of `cyscatter_half_row_f16c`, the
 * 16-bit shift for bfloat16, VCVTPS2PD which quiets a signalling NaN as the C cast does), the updates those of
 * `_cpu.h` and `_combine_n` on 8 (float) or 4 (double) lanes instead of 4 or 2: IEEE addition, subtraction,
 * multiplication and division lane by lane (no contraction: one operation each), and MAXPS/MINPS with
 * the same two fixes as `CYSCATTER_EXTREME_ROW` (ties take the bitwise and/or, a NaN held stays). Rows are taken
 * in index order, so every destination element sees its updates in the same order; several threads split the
 * call as the core's `scatter_reduce_layout` does (batch slices, feature columns in whole cache lines, or
 * destination row ranges: the `lo`, `hi` below), each destination element with one writer, so the bits do not
 * depend on the thread count. Measured (200000 x 64 rows into 5000, one thread, CPU time, benchmarks/NOTES.md):
 * float16 add 0.7x and max 1.0x of the float32 call, float32 -> float64 add 1.0x, against 1.8x, 1.7x and 2.7x
 * for blocks converted into a buffer first. */
#ifndef CYSCATTER_CONVSCATTER_H
#define CYSCATTER_CONVSCATTER_H
#include <stddef.h>
#include <stdint.h>
#include "_cpu.h"
#include "_stage.h"

/* src rows of `width` elements `rs` bytes apart; table rows `trs` elements apart, `size` of them, of which only
 * rows [lo, hi) are written (one thread's share of a destination-range split; 0, size: all); `ahead` index
 * entries of table-row prefetch (0: none); counts (or NULL) += 1 per applied entry; returns -1 or, when
 * `raise`, the first position whose index is outside [0, size) (entries before it applied, as the core: every
 * range scans the whole index, so all report the same position). */
typedef ptrdiff_t (*cyscatter_convscatter_fn)(const char *src, ptrdiff_t rs, const void *index, ptrdiff_t n,
                                              void *table, ptrdiff_t trs, ptrdiff_t size, ptrdiff_t width,
                                              ptrdiff_t ahead, int64_t *counts, int raise, ptrdiff_t lo,
                                              ptrdiff_t hi);

enum { CYSCATTER_CONV_HALF = 1, CYSCATTER_CONV_BFLOAT = 2, CYSCATTER_CONV_F4 = 3 };   /* StageCode values */
enum { CYSCATTER_CONV_ADD = 0, CYSCATTER_CONV_MAX = 1, CYSCATTER_CONV_MIN = 2, CYSCATTER_CONV_SUB = 3,
       CYSCATTER_CONV_MUL = 4, CYSCATTER_CONV_DIV = 5, CYSCATTER_CONV_OPS = 6 };

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define CYSCATTER_AVX __attribute__((target("avx2,f16c"))) static inline __attribute__((always_inline))

CYSCATTER_AVX __m256 cyscatter_cv8_half(const uint16_t *s) {
    const __m256i mask = _mm256_set1_epi32(0x7fff), inf = _mm256_set1_epi32(0x7c00);
    const __m256i quiet_half = _mm256_set1_epi32(0x7e00), quiet = _mm256_set1_epi32(0x400000);
    __m128i h = _mm_loadu_si128((const __m128i *)s);
    __m256 f = _mm256_cvtph_ps(h);
    __m256i em = _mm256_and_si256(_mm256_cvtepu16_epi32(h), mask);
    __m256i snan = _mm256_and_si256(_mm256_cmpgt_epi32(em, inf), _mm256_cmpgt_epi32(quiet_half, em));
    return _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_and_si256(snan, quiet), _mm256_castps_si256(f)));
}
CYSCATTER_AVX __m256 cyscatter_cv8_bfloat(const uint16_t *s) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)s));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
/* the rules of CYSCATTER_EXTREME_ROW (`_cpu.h`) on 8 floats / 4 doubles */
CYSCATTER_AVX __m256 cyscatter_v8_max(__m256 cur, __m256 nw) {
    __m256 a = _mm256_max_ps(cur, nw), eq = _mm256_cmp_ps(cur, nw, _CMP_EQ_OQ);
    a = _mm256_andnot_ps(_mm256_andnot_ps(cur, eq), a);
    __m256 held = _mm256_cmp_ps(cur, cur, _CMP_UNORD_Q);
    return _mm256_or_ps(_mm256_and_ps(held, cur), _mm256_andnot_ps(held, a));
}
CYSCATTER_AVX __m256 cyscatter_v8_min(__m256 cur, __m256 nw) {
    __m256 a = _mm256_min_ps(cur, nw), eq = _mm256_cmp_ps(cur, nw, _CMP_EQ_OQ);
    a = _mm256_or_ps(a, _mm256_and_ps(eq, cur));
    __m256 held = _mm256_cmp_ps(cur, cur, _CMP_UNORD_Q);
    return _mm256_or_ps(_mm256_and_ps(held, cur), _mm256_andnot_ps(held, a));
}
CYSCATTER_AVX __m256 cyscatter_v8_add(__m256 cur, __m256 nw) { return _mm256_add_ps(cur, nw); }
CYSCATTER_AVX __m256 cyscatter_v8_sub(__m256 cur, __m256 nw) { return _mm256_sub_ps(cur, nw); }
CYSCATTER_AVX __m256 cyscatter_v8_mul(__m256 cur, __m256 nw) { return _mm256_mul_ps(cur, nw); }
CYSCATTER_AVX __m256 cyscatter_v8_div(__m256 cur, __m256 nw) { return _mm256_div_ps(cur, nw); }
CYSCATTER_AVX __m256d cyscatter_v4_max(__m256d cur, __m256d nw) {
    __m256d a = _mm256_max_pd(cur, nw), eq = _mm256_cmp_pd(cur, nw, _CMP_EQ_OQ);
    a = _mm256_andnot_pd(_mm256_andnot_pd(cur, eq), a);
    __m256d held = _mm256_cmp_pd(cur, cur, _CMP_UNORD_Q);
    return _mm256_or_pd(_mm256_and_pd(held, cur), _mm256_andnot_pd(held, a));
}
CYSCATTER_AVX __m256d cyscatter_v4_min(__m256d cur, __m256d nw) {
    __m256d a = _mm256_min_pd(cur, nw), eq = _mm256_cmp_pd(cur, nw, _CMP_EQ_OQ);
    a = _mm256_or_pd(a, _mm256_and_pd(eq, cur));
    __m256d held = _mm256_cmp_pd(cur, cur, _CMP_UNORD_Q);
    return _mm256_or_pd(_mm256_and_pd(held, cur), _mm256_andnot_pd(held, a));
}
CYSCATTER_AVX __m256d cyscatter_v4_add(__m256d cur, __m256d nw) { return _mm256_add_pd(cur, nw); }
CYSCATTER_AVX __m256d cyscatter_v4_sub(__m256d cur, __m256d nw) { return _mm256_sub_pd(cur, nw); }
CYSCATTER_AVX __m256d cyscatter_v4_mul(__m256d cur, __m256d nw) { return _mm256_mul_pd(cur, nw); }
CYSCATTER_AVX __m256d cyscatter_v4_div(__m256d cur, __m256d nw) { return _mm256_div_pd(cur, nw); }
static inline float cyscatter_s_add_f(float cur, float nw) { return cur + nw; }
static inline double cyscatter_s_add_d(double cur, double nw) { return cur + nw; }
static inline float cyscatter_s_sub_f(float cur, float nw) { return cur - nw; }
static inline double cyscatter_s_sub_d(double cur, double nw) { return cur - nw; }
static inline float cyscatter_s_mul_f(float cur, float nw) { return cur * nw; }
static inline double cyscatter_s_mul_d(double cur, double nw) { return cur * nw; }
static inline float cyscatter_s_div_f(float cur, float nw) { return cur / nw; }
static inline double cyscatter_s_div_d(double cur, double nw) { return cur / nw; }
static inline float cyscatter_cv1_half(uint16_t h) { return cyscatter_half_value(h); }
static inline float cyscatter_cv1_bfloat(uint16_t h) { return cyscatter_bfloat_value(h); }

/* one row, 8 floats a step, the rest one at a time by the scalar rules of `_cpu.h` */
#define CYSCATTER_ROW_F(name, CV8, CV1, V8, S1)                                                           \
    CYSCATTER_AVX void name(float *d, const uint16_t *s, ptrdiff_t width) {                               \
        ptrdiff_t f = 0;                                                                                  \
        for (; f + 8 <= width; f += 8) _mm256_storeu_ps(d + f, V8(_mm256_loadu_ps(d + f), CV8(s + f)));  \
        for (; f < width; f++) d[f] = S1(d[f], CV1(s[f]));                                                \
    }
#define CYSCATTER_ROW_D(name, V4, S1)                                                                     \
    CYSCATTER_AVX void name(double *d, const float *s, ptrdiff_t width) {                                 \
        ptrdiff_t f = 0;                                                                                  \
        for (; f + 4 <= width; f += 4)                                                                    \
            _mm256_storeu_pd(d + f, V4(_mm256_loadu_pd(d + f), _mm256_cvtps_pd(_mm_loadu_ps(s + f))));    \
        for (; f < width; f++) d[f] = S1(d[f], (double)s[f]);                                             \
    }
/* the index loop (as the core's `_scatter_part` on one thread): table rows prefetched `ahead` entries ahead,
 * the common widths unrolled at compile time */
#define CYSCATTER_SCATTER(name, IDX, S, D, ROW)                                                           \
    CYSCATTER_AVX ptrdiff_t name##_w(const char *src, ptrdiff_t rs, const IDX *index, ptrdiff_t n, D *t,  \
                                     ptrdiff_t trs, ptrdiff_t size, ptrdiff_t width, ptrdiff_t ahead,     \
                                     int64_t *counts, int raise, ptrdiff_t lo, ptrdiff_t hi) {             \
        ptrdiff_t lines = (width * (ptrdiff_t)sizeof(D) + 63) / 64;                                       \
        uint64_t span = (uint64_t)(hi - lo);                                                              \
        for (ptrdiff_t k = 0; k < n; k++) {                                                               \
            if (ahead && k + ahead < n) {                                                                 \
                uint64_t jp = (uint64_t)(int64_t)index[k + ahead];                                        \
                if (jp - (uint64_t)lo < span)                                                             \
                    for (ptrdiff_t l = 0; l < lines; l++) cyscatter_prefetch_w((char *)(t + jp * trs) + l * 64); \
            }                                                                                             \
            uint64_t j = (uint64_t)(int64_t)index[k];                                                     \
            if (j - (uint64_t)lo >= span) {                                                               \
                if (raise && j >= (uint64_t)size) return k;                                               \
                continue;                                                                                 \
            }                                                                                             \
            if (counts) counts[j] += 1;                                                                   \
            ROW(t + j * trs, (const S *)(src + k * rs), width);                                           \
        }                                                                                                 \
        return -1;                                                                                        \
    }                                                                                                     \
    __attribute__((target("avx2,f16c"))) static ptrdiff_t name(                                           \
        const char *src, ptrdiff_t rs, const void *index, ptrdiff_t n, void *table, ptrdiff_t trs,        \
        ptrdiff_t size, ptrdiff_t width, ptrdiff_t ahead, int64_t *counts, int raise, ptrdiff_t lo,        \
        ptrdiff_t hi) {                                                                                   \
        const IDX *ix = (const IDX *)index;                                                               \
        D *t = (D *)table;                                                                                \
        if (width == 16) return name##_w(src, rs, ix, n, t, trs, size, 16, ahead, counts, raise, lo, hi); \
        if (width == 32) return name##_w(src, rs, ix, n, t, trs, size, 32, ahead, counts, raise, lo, hi); \
        if (width == 64) return name##_w(src, rs, ix, n, t, trs, size, 64, ahead, counts, raise, lo, hi); \
        return name##_w(src, rs, ix, n, t, trs, size, width, ahead, counts, raise, lo, hi);               \
    }

#define CYSCATTER_ROWS_F(conv)                                                                            \
    CYSCATTER_ROW_F(cyscatter_cr_##conv##_add, cyscatter_cv8_##conv, cyscatter_cv1_##conv, cyscatter_v8_add,     \
                    cyscatter_s_add_f)                                                                    \
    CYSCATTER_ROW_F(cyscatter_cr_##conv##_max, cyscatter_cv8_##conv, cyscatter_cv1_##conv, cyscatter_v8_max,     \
                    cyscatter_max_f)                                                                      \
    CYSCATTER_ROW_F(cyscatter_cr_##conv##_min, cyscatter_cv8_##conv, cyscatter_cv1_##conv, cyscatter_v8_min,     \
                    cyscatter_min_f)                                                                      \
    CYSCATTER_ROW_F(cyscatter_cr_##conv##_sub, cyscatter_cv8_##conv, cyscatter_cv1_##conv, cyscatter_v8_sub,     \
                    cyscatter_s_sub_f)                                                                    \
    CYSCATTER_ROW_F(cyscatter_cr_##conv##_mul, cyscatter_cv8_##conv, cyscatter_cv1_##conv, cyscatter_v8_mul,     \
                    cyscatter_s_mul_f)                                                                    \
    CYSCATTER_ROW_F(cyscatter_cr_##conv##_div, cyscatter_cv8_##conv, cyscatter_cv1_##conv, cyscatter_v8_div,     \
                    cyscatter_s_div_f)
CYSCATTER_ROWS_F(half)
CYSCATTER_ROWS_F(bfloat)
CYSCATTER_ROW_D(cyscatter_cr_f4_add, cyscatter_v4_add, cyscatter_s_add_d)
CYSCATTER_ROW_D(cyscatter_cr_f4_max, cyscatter_v4_max, cyscatter_max_d)
CYSCATTER_ROW_D(cyscatter_cr_f4_min, cyscatter_v4_min, cyscatter_min_d)
CYSCATTER_ROW_D(cyscatter_cr_f4_sub, cyscatter_v4_sub, cyscatter_s_sub_d)
CYSCATTER_ROW_D(cyscatter_cr_f4_mul, cyscatter_v4_mul, cyscatter_s_mul_d)
CYSCATTER_ROW_D(cyscatter_cr_f4_div, cyscatter_v4_div, cyscatter_s_div_d)

#define CYSCATTER_SCATTER2(conv, op, S, D)                                                                \
    CYSCATTER_SCATTER(cyscatter_cs_##conv##_##op##_i4, int32_t, S, D, cyscatter_cr_##conv##_##op)        \
    CYSCATTER_SCATTER(cyscatter_cs_##conv##_##op##_i8, int64_t, S, D, cyscatter_cr_##conv##_##op)
#define CYSCATTER_SCATTERS(conv, S, D)                                                                    \
    CYSCATTER_SCATTER2(conv, add, S, D) CYSCATTER_SCATTER2(conv, max, S, D)                               \
    CYSCATTER_SCATTER2(conv, min, S, D) CYSCATTER_SCATTER2(conv, sub, S, D)                               \
    CYSCATTER_SCATTER2(conv, mul, S, D) CYSCATTER_SCATTER2(conv, div, S, D)
CYSCATTER_SCATTERS(half, uint16_t, float)
CYSCATTER_SCATTERS(bfloat, uint16_t, float)
CYSCATTER_SCATTERS(f4, float, double)

/* [conversion - 1][CYSCATTER_CONV_* op][index of 8 bytes] */
#define CYSCATTER_CONV_ROW(conv, op) {cyscatter_cs_##conv##_##op##_i4, cyscatter_cs_##conv##_##op##_i8}
#define CYSCATTER_CONV_TABLE(conv)                                                                        \
    {CYSCATTER_CONV_ROW(conv, add), CYSCATTER_CONV_ROW(conv, max), CYSCATTER_CONV_ROW(conv, min),          \
     CYSCATTER_CONV_ROW(conv, sub), CYSCATTER_CONV_ROW(conv, mul), CYSCATTER_CONV_ROW(conv, div)}
static const cyscatter_convscatter_fn cyscatter_convscatters[3][CYSCATTER_CONV_OPS][2] = {
    CYSCATTER_CONV_TABLE(half), CYSCATTER_CONV_TABLE(bfloat), CYSCATTER_CONV_TABLE(f4)};

/* the loop for conversion `conv` (CYSCATTER_CONV_*), op `op` (CYSCATTER_CONV_ADD ... DIV) and an index of
 * `index_bytes` (4 or 8), or NULL where there is none or the CPU lacks AVX2/F16C */
static inline cyscatter_convscatter_fn cyscatter_convscatter(int conv, int op, int index_bytes) {
    if (conv < 1 || conv > 3 || op < 0 || op >= CYSCATTER_CONV_OPS || (index_bytes != 4 && index_bytes != 8))
        return NULL;
    if (!cyscatter_has_f16c()) return NULL;
    return cyscatter_convscatters[conv - 1][op][index_bytes == 8];
}
#else
static inline cyscatter_convscatter_fn cyscatter_convscatter(int conv, int op, int index_bytes) {
    (void)conv; (void)op; (void)index_bytes;
    return NULL;
}
#endif

#endif
