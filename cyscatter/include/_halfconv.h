/* float16 to float32, exactly, for the float32 kernels that accumulate float16.
 *
 * NumPy's float16 -> float32 cast goes element by element through a branchy routine (134-162 ms for 64e6
 * elements on the project's EPYC VM, more than the float32 scatter that follows it); this loop is branchless, so
 * that the compiler vectorises it with the baseline instruction set (36 ms). Same bits as NumPy's
 * npy_half_to_float for every one of the 65536 inputs, NaN payloads (signalling ones too) included. bfloat16
 * needs no such loop: ml_dtypes' cast is a shift, as fast as the allocation it fills. */
#ifndef CYSCATTER_HALFCONV_H
#define CYSCATTER_HALFCONV_H
#include <stdint.h>
#include <string.h>
#include <stddef.h>

static inline uint32_t cyscatter_half_bits_to_float_bits(uint32_t h) {
    uint32_t em = h & 0x7fffu;                 /* exponent and mantissa */
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t normal = (em << 13) + ((127u - 15u) << 23);
    uint32_t special = (em << 13) | 0x7f800000u;   /* inf / NaN: the payload moves up as it is */
    /* subnormal (and zero): em * 2**-24, exact in float32; built from the integer's own float value */
    float f = (float)(int32_t)em * 5.9604644775390625e-08f;
    uint32_t sub;
    memcpy(&sub, &f, sizeof sub);
    /* masks, not branches or ternaries: a loop with control flow is not vectorised */
    uint32_t is_special = 0u - (uint32_t)(em >= 0x7c00u);
    uint32_t is_normal = (0u - (uint32_t)(em >= 0x0400u)) & ~is_special;
    uint32_t bits = (special & is_special) | (normal & is_normal) | (sub & ~(is_special | is_normal));
    return bits | sign;
}

static void cyscatter_f16_to_f32(const uint16_t* src, float* dst, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) {
        uint32_t bits = cyscatter_half_bits_to_float_bits(src[i]);
        memcpy(dst + i, &bits, sizeof bits);
    }
}

/* float16 (`bfloat` 0) or bfloat16 (1) elements widened to float or double, exactly (a NaN stays a NaN; its
 * payload is kept in float, not in double): the rows a reverse kernel reads from a half-precision src into a stack buffer, a row at
 * a time, instead of a whole converted copy. float16 goes by F16C where the CPU has it (chosen at run time, the
 * build targets baseline SSE2): the branchless loop above took the group products of 200000 x 64 float16 rows
 * to 1.9x the float64 kernel's time, half of it converting. The other loops vectorise as they are. */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
__attribute__((target("avx2,f16c"))) static inline void cyscatter_widen_f16c_f(const uint16_t* s, float* d,
                                                                              ptrdiff_t n) {
    ptrdiff_t i = 0;
    const __m128i magnitude = _mm_set1_epi16(0x7fff), inf = _mm_set1_epi16(0x7c00), quiet = _mm_set1_epi16(0x7e00);
    __m128i snan = _mm_setzero_si128();
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i*)(s + i)), m = _mm_and_si128(h, magnitude);
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
        snan = _mm_or_si128(snan, _mm_and_si128(_mm_cmpgt_epi16(m, inf), _mm_cmpgt_epi16(quiet, m)));
    }
    /* vcvtph2ps quiets a signalling NaN (exponent all ones, a payload, the quiet bit clear): a row holding one
     * (rare) is widened again by the exact loop, so that NaN payloads stay as NumPy's cast leaves them (one test a
     * row, not a branch every eight elements; a quiet NaN's payload moves up as it is) */
    if (__builtin_expect(_mm_movemask_epi8(snan), 0)) {
        for (ptrdiff_t k = 0; k < i; k++) {
            uint32_t bits = cyscatter_half_bits_to_float_bits(s[k]);
            memcpy(d + k, &bits, sizeof bits);
        }
    }
    for (; i < n; i++) {
        uint32_t bits = cyscatter_half_bits_to_float_bits(s[i]);
        memcpy(d + i, &bits, sizeof bits);
    }
}
__attribute__((target("avx2,f16c"))) static inline void cyscatter_widen_f16c_d(const uint16_t* s, double* d,
                                                                              ptrdiff_t n) {
    ptrdiff_t i = 0;
    float f;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(s + i)));
        _mm256_storeu_pd(d + i, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        _mm256_storeu_pd(d + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    for (; i < n; i++) {
        uint32_t bits = cyscatter_half_bits_to_float_bits(s[i]);
        memcpy(&f, &bits, sizeof f);
        d[i] = (double)f;
    }
}
static inline int cyscatter_widen_has_f16c(void) {
    static int known = -1;   /* (a race between threads writes the same value) */
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    }
    return known;
}
#else
static inline void cyscatter_widen_f16c_f(const uint16_t* s, float* d, ptrdiff_t n) { (void)s; (void)d; (void)n; }
static inline void cyscatter_widen_f16c_d(const uint16_t* s, double* d, ptrdiff_t n) { (void)s; (void)d; (void)n; }
static inline int cyscatter_widen_has_f16c(void) { return 0; }
#endif

/* One float16 (`bfloat` 0) or bfloat16 (1) value widened exactly (a weight read per edge by the reverse kernels) */
static inline float cyscatter_widen_one_f(int bfloat, uint16_t h) {
    uint32_t bits = bfloat ? (uint32_t)h << 16 : cyscatter_half_bits_to_float_bits(h);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline void cyscatter_widen_row_f(int bfloat, const uint16_t* src, float* dst, ptrdiff_t n) {
    if (bfloat) {
        for (ptrdiff_t i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)src[i] << 16;
            memcpy(dst + i, &bits, sizeof bits);
        }
    } else if (cyscatter_widen_has_f16c()) {
        cyscatter_widen_f16c_f(src, dst, n);
    } else {
        cyscatter_f16_to_f32(src, dst, n);
    }
}

static inline void cyscatter_widen_row_d(int bfloat, const uint16_t* src, double* dst, ptrdiff_t n) {
    float f;
    if (bfloat) {
        for (ptrdiff_t i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)src[i] << 16;
            memcpy(&f, &bits, sizeof f);
            dst[i] = (double)f;
        }
    } else if (cyscatter_widen_has_f16c()) {
        cyscatter_widen_f16c_d(src, dst, n);
    } else {
        for (ptrdiff_t i = 0; i < n; i++) {
            uint32_t bits = cyscatter_half_bits_to_float_bits(src[i]);
            memcpy(&f, &bits, sizeof f);
            dst[i] = (double)f;
        }
    }
}

#endif
