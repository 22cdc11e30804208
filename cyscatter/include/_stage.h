/* Staging of src rows for the scatter kernels: a block of rows of any layout and of a narrower or other dtype,
 * copied into a small C-ordered buffer of the kernel's dtype, so that a scatter reads float16/bfloat16,
 * float32-for-float64, small integers, Fortran-ordered or transposed src in place instead of a whole converted
 * copy (n x F of the wider dtype).
 *
 * Each converter takes `rows` x `cols` elements at src + r * rs + c * cs (strides in bytes, any sign) and writes
 * dst[r * cols + c]. The conversions are those of NumPy's astype, bit for bit: C casts for the integer and
 * float32 -> float64 ones (round to nearest; a signalling NaN is quieted by both), the exact float16 -> float32
 * of `_halfconv.h`, and for bfloat16 the 16-bit shift of ml_dtypes' cast. */
#ifndef CYSCATTER_STAGE_H
#define CYSCATTER_STAGE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "_halfconv.h"

typedef void (*cyscatter_stage_fn)(const char *src, ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t rs, ptrdiff_t cs,
                                   void *dst);

/* Rows whose elements are adjacent are converted row by row (the loop vectorises). When the rows themselves are
 * the adjacent direction (a Fortran-ordered src, features-first data read as rows), the block is read down the
 * columns, four at a time, in bands of CYSCATTER_BAND rows so that the lines of the buffer being written stay
 * in L1 while a band is filled; TRANSPOSE, when not 0, moves a 4 x 4 square at once (4-byte copies). */
#define CYSCATTER_BAND 32
#define CYSCATTER_AHEAD 64   /* rows: 4.1 ms instead of 8.2 for a 200000 x 64 float32 transpose (none: 8.2) */
#if defined(__GNUC__) || defined(__clang__)
#define CYSCATTER_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
#else
#define CYSCATTER_PREFETCH(p) ((void)(p))
#endif
#define CYSCATTER_STAGE_T(name, S, D, CONV, TRANSPOSE)                                                     \
    static void name(const char *src, ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t rs, ptrdiff_t cs,        \
                     void *dstv) {                                                                        \
        D *dst = (D *)dstv;                                                                               \
        if (cs == (ptrdiff_t)sizeof(S) || cols == 1) {                                                    \
            for (ptrdiff_t r = 0; r < rows; r++) {                                                        \
                const S *s = (const S *)(src + r * rs);                                                   \
                D *d = dst + r * cols;                                                                    \
                for (ptrdiff_t c = 0; c < cols; c++) d[c] = CONV(s[c]);                                   \
            }                                                                                             \
        } else if (rs == (ptrdiff_t)sizeof(S) || rows == 1) {                                             \
            for (ptrdiff_t r0 = 0; r0 < rows; r0 += CYSCATTER_BAND) {                                     \
                ptrdiff_t r1 = r0 + CYSCATTER_BAND < rows ? r0 + CYSCATTER_BAND : rows, c = 0;           \
                /* the hardware does not follow this many column streams: fetch each a few bands ahead (a \
                 * prefetch past the array's end does not fault) */                                       \
                for (ptrdiff_t p = 0; p < cols; p++)                                                      \
                    for (ptrdiff_t b = 0; b < CYSCATTER_BAND * (ptrdiff_t)sizeof(S); b += 64)             \
                        CYSCATTER_PREFETCH(src + p * cs + (r0 + CYSCATTER_AHEAD) * (ptrdiff_t)sizeof(S) + b); \
                for (; c + 4 <= cols; c += 4) {                                                           \
                    const S *s0 = (const S *)(src + c * cs), *s1 = (const S *)(src + (c + 1) * cs);      \
                    const S *s2 = (const S *)(src + (c + 2) * cs), *s3 = (const S *)(src + (c + 3) * cs); \
                    D *d = dst + c;                                                                       \
                    ptrdiff_t r = r0;                                                                     \
                    if (TRANSPOSE)                                                                        \
                        for (; r + 4 <= r1; r += 4)                                                       \
                            cyscatter_transpose4((const void *)(s0 + r), (const void *)(s1 + r),          \
                                                 (const void *)(s2 + r), (const void *)(s3 + r),          \
                                                 (void *)(d + r * cols), cols);                           \
                    for (; r < r1; r++) {                                                                 \
                        d[r * cols] = CONV(s0[r]);                                                        \
                        d[r * cols + 1] = CONV(s1[r]);                                                    \
                        d[r * cols + 2] = CONV(s2[r]);                                                    \
                        d[r * cols + 3] = CONV(s3[r]);                                                    \
                    }                                                                                     \
                }                                                                                         \
                for (; c < cols; c++) {                                                                   \
                    const S *s = (const S *)(src + c * cs);                                               \
                    for (ptrdiff_t r = r0; r < r1; r++) dst[r * cols + c] = CONV(s[r]);                   \
                }                                                                                         \
            }                                                                                             \
        } else {                                                                                          \
            for (ptrdiff_t r = 0; r < rows; r++)                                                          \
                for (ptrdiff_t c = 0; c < cols; c++)                                                      \
                    dst[r * cols + c] = CONV(*(const S *)(src + r * rs + c * cs));                        \
        }                                                                                                 \
    }
#define CYSCATTER_STAGE(name, S, D, CONV) CYSCATTER_STAGE_T(name, S, D, CONV, 0)

/* Four columns of four 4-byte elements (a0..a3 each four consecutive rows of one column) stored as four rows of
 * `cols` elements starting at d: the 4 x 4 transpose in SSE registers. */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline void cyscatter_transpose4(const void *a0, const void *a1, const void *a2, const void *a3, void *d,
                                        ptrdiff_t cols) {
    __m128 r0 = _mm_loadu_ps((const float *)a0), r1 = _mm_loadu_ps((const float *)a1);
    __m128 r2 = _mm_loadu_ps((const float *)a2), r3 = _mm_loadu_ps((const float *)a3);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);   /* moves bits only: NaN payloads pass unchanged */
    float *out = (float *)d;
    _mm_storeu_ps(out, r0);
    _mm_storeu_ps(out + cols, r1);
    _mm_storeu_ps(out + 2 * cols, r2);
    _mm_storeu_ps(out + 3 * cols, r3);
}
#define CYSCATTER_TRANSPOSE4 1
#else
static inline void cyscatter_transpose4(const void *a0, const void *a1, const void *a2, const void *a3, void *d,
                                        ptrdiff_t cols) { (void)a0; (void)a1; (void)a2; (void)a3; (void)d; (void)cols; }
#define CYSCATTER_TRANSPOSE4 0
#endif

#define CYSCATTER_PLAIN(x) (x)
static inline float cyscatter_half_value(uint16_t h) {
    uint32_t bits = cyscatter_half_bits_to_float_bits(h);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
static inline float cyscatter_bfloat_value(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

CYSCATTER_STAGE(cyscatter_stage_half_soft, uint16_t, float, cyscatter_half_value)
CYSCATTER_STAGE(cyscatter_stage_bfloat, uint16_t, float, cyscatter_bfloat_value)
CYSCATTER_STAGE(cyscatter_stage_f4_f8, float, double, (double))
/* integers to the wider integer and to float64 (int64 -> float64 rounds to nearest, as NumPy's cast) */
CYSCATTER_STAGE(cyscatter_stage_i1_i8, int8_t, int64_t, (int64_t))
CYSCATTER_STAGE(cyscatter_stage_i2_i8, int16_t, int64_t, (int64_t))
CYSCATTER_STAGE(cyscatter_stage_i4_i8, int32_t, int64_t, (int64_t))
CYSCATTER_STAGE(cyscatter_stage_u1_i8, uint8_t, int64_t, (int64_t))
CYSCATTER_STAGE(cyscatter_stage_u2_i8, uint16_t, int64_t, (int64_t))
CYSCATTER_STAGE(cyscatter_stage_u4_i8, uint32_t, int64_t, (int64_t))
CYSCATTER_STAGE(cyscatter_stage_i1_f8, int8_t, double, (double))
CYSCATTER_STAGE(cyscatter_stage_i2_f8, int16_t, double, (double))
CYSCATTER_STAGE(cyscatter_stage_i4_f8, int32_t, double, (double))
CYSCATTER_STAGE(cyscatter_stage_i8_f8, int64_t, double, (double))
CYSCATTER_STAGE(cyscatter_stage_u1_f8, uint8_t, double, (double))
CYSCATTER_STAGE(cyscatter_stage_u2_f8, uint16_t, double, (double))
CYSCATTER_STAGE(cyscatter_stage_u4_f8, uint32_t, double, (double))
CYSCATTER_STAGE(cyscatter_stage_u8_f8, uint64_t, double, (double))
/* the same dtype, moved as words: layout only */
typedef struct { uint64_t lo, hi; } cyscatter_word16;
CYSCATTER_STAGE_T(cyscatter_stage_copy4, uint32_t, uint32_t, CYSCATTER_PLAIN, CYSCATTER_TRANSPOSE4)
CYSCATTER_STAGE(cyscatter_stage_copy8, uint64_t, uint64_t, CYSCATTER_PLAIN)
CYSCATTER_STAGE(cyscatter_stage_copy16, cyscatter_word16, cyscatter_word16, CYSCATTER_PLAIN)

/* float16 rows by F16C where the CPU has it (with AVX2 for the fix below), 8 elements an instruction, about 7x
 * the branchless loop: VCVTPH2PS quiets a signalling NaN, which NumPy's cast keeps, so the quiet bit is cleared
 * again on exactly those lanes (checked against the branchless loop for all 65536 inputs). */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
__attribute__((target("avx2,f16c"))) static void cyscatter_half_row_f16c(const uint16_t *s, float *d,
                                                                          ptrdiff_t n) {
    const __m256i mask = _mm256_set1_epi32(0x7fff), inf = _mm256_set1_epi32(0x7c00);
    const __m256i quiet_half = _mm256_set1_epi32(0x7e00), quiet = _mm256_set1_epi32(0x400000);
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
        __m256 f = _mm256_cvtph_ps(h);
        __m256i em = _mm256_and_si256(_mm256_cvtepu16_epi32(h), mask);
        __m256i snan = _mm256_and_si256(_mm256_cmpgt_epi32(em, inf), _mm256_cmpgt_epi32(quiet_half, em));
        f = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_and_si256(snan, quiet), _mm256_castps_si256(f)));
        _mm256_storeu_ps(d + i, f);
    }
    for (; i < n; i++) d[i] = cyscatter_half_value(s[i]);
}
static int cyscatter_has_f16c(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    }
    return known;
}
#else
static void cyscatter_half_row_f16c(const uint16_t *s, float *d, ptrdiff_t n) { cyscatter_f16_to_f32(s, d, n); }
static int cyscatter_has_f16c(void) { return 0; }
#endif

static void cyscatter_stage_half(const char *src, ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t rs, ptrdiff_t cs,
                                 void *dstv) {
    float *dst = (float *)dstv;
    if ((cs == 2 || cols == 1) && cyscatter_has_f16c()) {
        if (rs == 2 * cols) {   /* the whole block is one run */
            cyscatter_half_row_f16c((const uint16_t *)src, dst, rows * cols);
            return;
        }
        for (ptrdiff_t r = 0; r < rows; r++)
            cyscatter_half_row_f16c((const uint16_t *)(src + r * rs), dst + r * cols, cols);
        return;
    }
    cyscatter_stage_half_soft(src, rows, cols, rs, cs, dstv);
}

#endif
