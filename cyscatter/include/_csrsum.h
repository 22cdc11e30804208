/* The weighted or plain sum of gathered rows along a CSR by destination, each destination row's block of features
 * kept in AVX2 registers across its edges. The scalar row loop (`_fused.h`) loads and stores the accumulated row
 * at every edge, so each edge waits for the previous edge's store to be forwarded (about 9 cycles a vector) and,
 * on wide rows, for the store port; here an edge costs its loads and one add (or multiply and add) a vector.
 * Each element still sums its messages in CSR order, one rounding each (w * x rounded, then added: no FMA is
 * enabled), so results are bitwise those of the scalar loop. Built by target attributes (the package's baseline
 * is SSE2); `cyscatter_has_avx2` (`_cpu.h`) says whether the CPU runs it, else the caller keeps the scalar loop. */
#ifndef CYSCATTER_CSRSUM_H
#define CYSCATTER_CSRSUM_H
#include <stddef.h>
#include <stdint.h>
#include "_cpu.h"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define CYSCATTER_CSRSUM 1

/* vectors of accumulators a block holds: 8 of the 16 registers, the rest for the row being added */
#define CYSCATTER_CSRSUM_BLOCK 8

/* `nv` whole vectors and, `tail`, one masked vector of a destination row's block, summed over its edges
 * [p0, p1). `nv` and `tail` are constants at every call site, so the accumulators are registers. The src rows
 * hold `ST` items, LOAD(x) / TAIL(x) the vector (a masked one: `mask`, `rest` lanes) of accumulator type at x. */
#define CYSCATTER_CSRSUM_BLOCK_FN(T, ST, V, SUF, S, TARGET, LOAD, TAIL)                                 \
    __attribute__((target(TARGET), always_inline)) static inline void cyscatter_csrsum_block_##SUF(     \
            T *acc, const ST *src, ptrdiff_t s_row, const int64_t *cols, const int64_t *ids, const T *w, \
            ptrdiff_t p0, ptrdiff_t p1, ptrdiff_t m, ptrdiff_t ahead, ptrdiff_t row_bytes, int nv, int tail, \
            __m256i mask, int rest) {                                                                   \
        V a[CYSCATTER_CSRSUM_BLOCK + 1];                                                                \
        const int L = (int)(sizeof(V) / sizeof(T));                                                     \
        (void)rest;                                                                                     \
        for (int j = 0; j < nv; j++) a[j] = _mm256_loadu_##S(acc + j * L);                              \
        if (tail) a[nv] = _mm256_maskload_##S(acc + nv * L, mask);                                      \
        for (ptrdiff_t p = p0; p < p1; p++) {                                                           \
            const ST *x = src + (cols ? cols[p] : p) * s_row;                                           \
            if (ahead && p + ahead < m) {                                                               \
                const char *n = (const char *)(src + cols[p + ahead] * s_row);                          \
                for (ptrdiff_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(n + b, 0, 3);          \
                if (w && ids) __builtin_prefetch(w + ids[p + ahead], 0, 3);                             \
            }                                                                                           \
            if (w) {                                                                                    \
                const V wv = _mm256_set1_##S(w[ids ? ids[p] : p]);                                      \
                for (int j = 0; j < nv; j++) a[j] = _mm256_add_##S(a[j], _mm256_mul_##S(wv, LOAD(x + j * L))); \
                if (tail) a[nv] = _mm256_add_##S(a[nv], _mm256_mul_##S(wv, TAIL(x + nv * L)));           \
            } else {                                                                                    \
                for (int j = 0; j < nv; j++) a[j] = _mm256_add_##S(a[j], LOAD(x + j * L));               \
                if (tail) a[nv] = _mm256_add_##S(a[nv], TAIL(x + nv * L));                              \
            }                                                                                           \
        }                                                                                               \
        for (int j = 0; j < nv; j++) _mm256_storeu_##S(acc + j * L, a[j]);                              \
        if (tail) _mm256_maskstore_##S(acc + nv * L, mask, a[nv]);                                      \
    }

/* A float16 (`BF` 0) or bfloat16 (1) src given as its bits, summed into float accumulators: each vector of
 * eight is widened as it is loaded (vcvtph2ps, or a shift), so that a half node table is summed with no
 * converted copy. A signalling NaN comes out of vcvtph2ps quiet, as it would from the add of its exact
 * widening: the sums have the bits of the converted table's. The masked tail goes through an 8-lane buffer
 * (AVX2 has no 16-bit masked load); the lanes past `rest` are never stored. */
#define CYSCATTER_HALF_LOADS(SUF, BF)                                                                   \
    __attribute__((target("avx2,f16c"), always_inline)) static inline __m256 cyscatter_load8_##SUF(     \
            const uint16_t *x) {                                                                        \
        __m128i h = _mm_loadu_si128((const __m128i *)x);                                                \
        return BF ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))                \
                  : _mm256_cvtph_ps(h);                                                                 \
    }                                                                                                   \
    __attribute__((target("avx2,f16c"), always_inline)) static inline __m256 cyscatter_tail8_##SUF(     \
            const uint16_t *x, int rest) {                                                              \
        uint16_t t[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                       \
        for (int k = 0; k < rest; k++) t[k] = x[k];                                                     \
        return cyscatter_load8_##SUF(t);                                                                \
    }
CYSCATTER_HALF_LOADS(hf, 0)
CYSCATTER_HALF_LOADS(bf, 1)

#define CYSCATTER_LOAD_PS(x) _mm256_loadu_ps(x)
#define CYSCATTER_TAIL_PS(x) _mm256_maskload_ps(x, mask)
#define CYSCATTER_LOAD_PD(x) _mm256_loadu_pd(x)
#define CYSCATTER_TAIL_PD(x) _mm256_maskload_pd(x, mask)
#define CYSCATTER_LOAD_HF(x) cyscatter_load8_hf(x)
#define CYSCATTER_TAIL_HF(x) cyscatter_tail8_hf(x, rest)
#define CYSCATTER_LOAD_BF(x) cyscatter_load8_bf(x)
#define CYSCATTER_TAIL_BF(x) cyscatter_tail8_bf(x, rest)
CYSCATTER_CSRSUM_BLOCK_FN(float, float, __m256, f, ps, "avx2", CYSCATTER_LOAD_PS, CYSCATTER_TAIL_PS)
CYSCATTER_CSRSUM_BLOCK_FN(double, double, __m256d, d, pd, "avx2", CYSCATTER_LOAD_PD, CYSCATTER_TAIL_PD)
CYSCATTER_CSRSUM_BLOCK_FN(float, uint16_t, __m256, hf, ps, "avx2,f16c", CYSCATTER_LOAD_HF, CYSCATTER_TAIL_HF)
CYSCATTER_CSRSUM_BLOCK_FN(float, uint16_t, __m256, bf, ps, "avx2,f16c", CYSCATTER_LOAD_BF, CYSCATTER_TAIL_BF)

/* The blocks of a row's `inner` features: all whole (CYSCATTER_CSRSUM_BLOCK vectors) but the last, of `last_nv`
 * whole vectors and `rest` lanes masked by `mask` */
typedef struct {
    int last_nv, rest;
    __m256i mask;
} cyscatter_csrsum_blocks;

__attribute__((target("avx2"))) static inline cyscatter_csrsum_blocks cyscatter_csrsum_plan(ptrdiff_t inner, int L) {
    cyscatter_csrsum_blocks B;
    const ptrdiff_t block = CYSCATTER_CSRSUM_BLOCK * L, last = inner - (inner - 1) / block * block;
    int64_t lanes[8];
    B.last_nv = (int)(last / L);
    B.rest = (int)(last % L);
    for (int j = 0; j < 8; j++) lanes[j] = j < B.rest ? -1 : 0;
    B.mask = L == 4 ? _mm256_set_epi64x(lanes[3], lanes[2], lanes[1], lanes[0])
                    : _mm256_set_epi32((int)lanes[7], (int)lanes[6], (int)lanes[5], (int)lanes[4], (int)lanes[3],
                                       (int)lanes[2], (int)lanes[1], (int)lanes[0]);
    return B;
}

/* One destination row `acc` (inner > 0 features) += the rows p in [p0, p1) (src row cols[p], or p where cols is
 * NULL), a block of features after the other: the src rows, brought into the cache by the first block, serve the
 * next ones; the look-ahead prefetch fetches whole rows, with the first block */
#define CYSCATTER_CSRSUM_ROW_FN(T, ST, SUF, L, TARGET)                                                  \
    __attribute__((target(TARGET), always_inline)) static inline void cyscatter_csrsum_row_##SUF(       \
            T *acc_row, const ST *src, ptrdiff_t s_row, const int64_t *cols, const int64_t *ids, const T *w, \
            ptrdiff_t p0, ptrdiff_t p1, ptrdiff_t m, ptrdiff_t ahead, ptrdiff_t inner,                  \
            const cyscatter_csrsum_blocks *B) {                                                         \
        const ptrdiff_t row_bytes = inner * (ptrdiff_t)sizeof(ST), block = CYSCATTER_CSRSUM_BLOCK * L;  \
        const __m256i mask = B->mask;                                                                   \
        const int rest = B->rest;                                                                       \
        for (ptrdiff_t f0 = 0; f0 < inner; f0 += block) {                                               \
            T *acc = acc_row + f0;                                                                      \
            const ST *s = src + f0;                                                                     \
            const int whole = f0 + block < inner, nv = whole ? CYSCATTER_CSRSUM_BLOCK : B->last_nv;      \
            const ptrdiff_t pf = f0 == 0 ? ahead : 0;                                                   \
            switch (nv * 2 + (!whole && rest > 0)) {                                                    \
            CYSCATTER_CSRSUM_CASES(SUF)                                                                 \
            }                                                                                           \
        }                                                                                               \
    }

/* out[r] += sum over p in [indptr[r], indptr[r + 1]) of w[e] * src[cols[p]] (or of src[cols[p]] when w is
 * NULL), e = ids[p] (or p when ids is NULL), for the rows r in [r0, r1); one weight per edge. Rows of `inner`
 * features, `s_row` / `o_row` items apart; `ahead` edges of look-ahead for the src-row prefetch (0: none). */
#define CYSCATTER_CSRSUM_FN(T, ST, SUF, L, TARGET)                                                      \
    __attribute__((target(TARGET))) static void cyscatter_csrsum_##SUF(                                 \
            const ST *src, ptrdiff_t s_row, const int64_t *indptr, const int64_t *cols, ptrdiff_t m,     \
            const int64_t *ids, const T *w, T *out, ptrdiff_t o_row, ptrdiff_t inner, ptrdiff_t r0,      \
            ptrdiff_t r1, ptrdiff_t ahead) {                                                            \
        cyscatter_csrsum_blocks B;                                                                      \
        if (inner <= 0) return;                                                                         \
        B = cyscatter_csrsum_plan(inner, L);                                                            \
        for (ptrdiff_t r = r0; r < r1; r++)                                                             \
            if (indptr[r] < indptr[r + 1])                                                              \
                cyscatter_csrsum_row_##SUF(out + r * o_row, src, s_row, cols, ids, w, indptr[r],        \
                                           indptr[r + 1], m, ahead, inner, &B);                         \
    }

/* acc[f] += src[p * s_row + f] for the rows p in [0, rows), in order: a segment's sum */
#define CYSCATTER_ROWSUM_FN(T, SUF, L)                                                                  \
    __attribute__((target("avx2"))) static void cyscatter_rowsum_##SUF(                                 \
            T *acc, const T *src, ptrdiff_t s_row, ptrdiff_t rows, ptrdiff_t inner) {                   \
        cyscatter_csrsum_blocks B;                                                                      \
        if (inner <= 0 || rows <= 0) return;                                                            \
        B = cyscatter_csrsum_plan(inner, L);                                                            \
        cyscatter_csrsum_row_##SUF(acc, src, s_row, NULL, NULL, NULL, 0, rows, rows, 0, inner, &B);     \
    }
#define CYSCATTER_CSRSUM_CASE(SUF, NV, TAIL)                                                            \
    case NV * 2 + TAIL:                                                                                 \
        cyscatter_csrsum_block_##SUF(acc, s, s_row, cols, ids, w, p0, p1, m, pf, row_bytes, NV, TAIL, mask, rest); \
        break;
#define CYSCATTER_CSRSUM_CASES(SUF)                                                                     \
    CYSCATTER_CSRSUM_CASE(SUF, 0, 1) CYSCATTER_CSRSUM_CASE(SUF, 1, 0) CYSCATTER_CSRSUM_CASE(SUF, 1, 1)   \
    CYSCATTER_CSRSUM_CASE(SUF, 2, 0) CYSCATTER_CSRSUM_CASE(SUF, 2, 1) CYSCATTER_CSRSUM_CASE(SUF, 3, 0)   \
    CYSCATTER_CSRSUM_CASE(SUF, 3, 1) CYSCATTER_CSRSUM_CASE(SUF, 4, 0) CYSCATTER_CSRSUM_CASE(SUF, 4, 1)   \
    CYSCATTER_CSRSUM_CASE(SUF, 5, 0) CYSCATTER_CSRSUM_CASE(SUF, 5, 1) CYSCATTER_CSRSUM_CASE(SUF, 6, 0)   \
    CYSCATTER_CSRSUM_CASE(SUF, 6, 1) CYSCATTER_CSRSUM_CASE(SUF, 7, 0) CYSCATTER_CSRSUM_CASE(SUF, 7, 1)   \
    CYSCATTER_CSRSUM_CASE(SUF, 8, 0)
CYSCATTER_CSRSUM_ROW_FN(float, float, f, 8, "avx2")
CYSCATTER_CSRSUM_ROW_FN(double, double, d, 4, "avx2")
CYSCATTER_CSRSUM_ROW_FN(float, uint16_t, hf, 8, "avx2,f16c")
CYSCATTER_CSRSUM_ROW_FN(float, uint16_t, bf, 8, "avx2,f16c")
CYSCATTER_CSRSUM_FN(float, float, f, 8, "avx2")
CYSCATTER_CSRSUM_FN(double, double, d, 4, "avx2")
CYSCATTER_CSRSUM_FN(float, uint16_t, hf, 8, "avx2,f16c")
CYSCATTER_CSRSUM_FN(float, uint16_t, bf, 8, "avx2,f16c")
CYSCATTER_ROWSUM_FN(float, f, 8)
CYSCATTER_ROWSUM_FN(double, d, 4)
#else
#define CYSCATTER_CSRSUM 0
static void cyscatter_rowsum_f(float *acc, const float *src, ptrdiff_t s_row, ptrdiff_t rows, ptrdiff_t inner) {
    (void)acc; (void)src; (void)s_row; (void)rows; (void)inner;
}
static void cyscatter_rowsum_d(double *acc, const double *src, ptrdiff_t s_row, ptrdiff_t rows, ptrdiff_t inner) {
    (void)acc; (void)src; (void)s_row; (void)rows; (void)inner;
}
static void cyscatter_csrsum_f(const float *src, ptrdiff_t s_row, const int64_t *indptr, const int64_t *cols,
                               ptrdiff_t m, const int64_t *ids, const float *w, float *out, ptrdiff_t o_row,
                               ptrdiff_t inner, ptrdiff_t r0, ptrdiff_t r1, ptrdiff_t ahead) {
    (void)src; (void)s_row; (void)indptr; (void)cols; (void)m; (void)ids; (void)w; (void)out; (void)o_row;
    (void)inner; (void)r0; (void)r1; (void)ahead;
}
static void cyscatter_csrsum_d(const double *src, ptrdiff_t s_row, const int64_t *indptr, const int64_t *cols,
                               ptrdiff_t m, const int64_t *ids, const double *w, double *out, ptrdiff_t o_row,
                               ptrdiff_t inner, ptrdiff_t r0, ptrdiff_t r1, ptrdiff_t ahead) {
    (void)src; (void)s_row; (void)indptr; (void)cols; (void)m; (void)ids; (void)w; (void)out; (void)o_row;
    (void)inner; (void)r0; (void)r1; (void)ahead;
}
static void cyscatter_csrsum_hf(const uint16_t *src, ptrdiff_t s_row, const int64_t *indptr, const int64_t *cols,
                                ptrdiff_t m, const int64_t *ids, const float *w, float *out, ptrdiff_t o_row,
                                ptrdiff_t inner, ptrdiff_t r0, ptrdiff_t r1, ptrdiff_t ahead) {
    (void)src; (void)s_row; (void)indptr; (void)cols; (void)m; (void)ids; (void)w; (void)out; (void)o_row;
    (void)inner; (void)r0; (void)r1; (void)ahead;
}
static void cyscatter_csrsum_bf(const uint16_t *src, ptrdiff_t s_row, const int64_t *indptr, const int64_t *cols,
                                ptrdiff_t m, const int64_t *ids, const float *w, float *out, ptrdiff_t o_row,
                                ptrdiff_t inner, ptrdiff_t r0, ptrdiff_t r1, ptrdiff_t ahead) {
    (void)src; (void)s_row; (void)indptr; (void)cols; (void)m; (void)ids; (void)w; (void)out; (void)o_row;
    (void)inner; (void)r0; (void)r1; (void)ahead;
}
#endif
#endif
