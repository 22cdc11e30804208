/* Row updates of the fused gather-scatter kernels for float and double. `restrict` tells the compiler that the
 * accumulated row and the source row never overlap (the output is always a fresh array), so short rows of a
 * width fixed at the call site are unrolled and vectorised without a run-time overlap test. No FMA contraction
 * happens at the build's baseline ISA, so w * x rounds before the add, as the unfused gather-then-scatter does. */
#ifndef CYSCATTER_FUSED_H
#define CYSCATTER_FUSED_H
#include <stddef.h>

#define CYSCATTER_FUSED_ROWS(T, SUF)                                                                  \
    static inline void cyscatter_add_row_##SUF(T *restrict acc, const T *restrict x, ptrdiff_t n) {     \
        for (ptrdiff_t f = 0; f < n; f++) acc[f] = acc[f] + x[f];                                     \
    }                                                                                                 \
    static inline void cyscatter_axpy_row_##SUF(T *restrict acc, const T *restrict x, T w, ptrdiff_t n) { \
        for (ptrdiff_t f = 0; f < n; f++) acc[f] = acc[f] + w * x[f];                                 \
    }                                                                                                 \
    static inline void cyscatter_scale_row_##SUF(T *restrict dst, const T *restrict x, T w, ptrdiff_t n) { \
        for (ptrdiff_t f = 0; f < n; f++) dst[f] = w * x[f];                                          \
    }
CYSCATTER_FUSED_ROWS(float, f)
CYSCATTER_FUSED_ROWS(double, d)

/* The reverse kernels' selections (fused_kernels.pyx `select_t`): which messages m = w * x of an output element o
 * its cotangent reaches. 0 tied (max/min): m is the value kept, equal with the same sign of zero, or both NaN;
 * 1 won (fmax/fmin): the same without the NaN case; 2 present (nansum/nanmean): m is not NaN (o is not read).
 * "Equal with the same sign" is "the same bits and not NaN" (IEEE formats have one encoding per non-NaN value).
 * `sel` is a constant at every call site, so the tests fold away after inlining. The rows below are SSE2
 * compare masks and bitwise blends: GCC does not if-convert the float compares of the scalar form (`control
 * flow in loop`), and the scalar selections ran per element and edge (the nansum back pass at 2.8x the
 * transposed add's time, NOTES.md v25); the same operations per element, so bitwise the same results. */
#include <stdint.h>
#include <string.h>
#define CYSCATTER_SELECT_SCALAR(T, U, SUF)                                                            \
    static inline int cyscatter_selects_##SUF(int sel, T m, T o) {                                     \
        U a, b;                                                                                       \
        int same;                                                                                     \
        if (sel == 2) return m == m;                                                                  \
        memcpy(&a, &m, sizeof a); memcpy(&b, &o, sizeof b);                                           \
        same = (a == b) & (m == m);                                                                   \
        return sel == 1 ? same : same | ((m != m) & (o != o));                                        \
    }
CYSCATTER_SELECT_SCALAR(float, uint32_t, f)
CYSCATTER_SELECT_SCALAR(double, uint64_t, d)
/* the rows below element by element from feature f on: the vector rows' tails, and the whole rows where there is
 * no SSE2 */
#define CYSCATTER_SELECT_FROM(T, SUF)                                                                 \
    static inline void cyscatter_sel_axpy_from_##SUF(int sel, T *restrict acc, const T *restrict x,   \
                                                     const T *restrict o, const T *restrict share, T w, \
                                                     ptrdiff_t f, ptrdiff_t n) {                      \
        for (; f < n; f++)                                                                            \
            if (cyscatter_selects_##SUF(sel, w * x[f], sel == 2 ? (T)0 : o[f])) acc[f] += w * share[f]; \
    }                                                                                                 \
    static inline void cyscatter_sel_count_from_##SUF(int sel, T *restrict count, const T *restrict x, \
                                                      const T *restrict o, T w, ptrdiff_t f, ptrdiff_t n) { \
        for (; f < n; f++)                                                                            \
            count[f] += cyscatter_selects_##SUF(sel, w * x[f], sel == 2 ? (T)0 : o[f]);               \
    }                                                                                                 \
    static inline void cyscatter_sel_tangent_from_##SUF(int sel, T *restrict count, T *restrict acc,  \
                                                        const T *restrict x, const T *restrict o,     \
                                                        const T *restrict t, T w, int with_tw, T tw,  \
                                                        ptrdiff_t f, ptrdiff_t n) {                   \
        for (; f < n; f++) {                                                                          \
            T tan = 0;                                                                                \
            if (!cyscatter_selects_##SUF(sel, w * x[f], sel == 2 ? (T)0 : o[f])) continue;            \
            if (t) tan = w * t[f];                                                                    \
            if (with_tw) tan = tan + tw * x[f];                                                       \
            count[f] += 1;                                                                            \
            acc[f] += tan;                                                                            \
        }                                                                                             \
    }
CYSCATTER_SELECT_FROM(float, f)
CYSCATTER_SELECT_FROM(double, d)

#if defined(__SSE2__)
#include <emmintrin.h>
static inline __m128i cyscatter_same_bits_f(__m128 m, __m128 o) {
    return _mm_cmpeq_epi32(_mm_castps_si128(m), _mm_castps_si128(o));
}
static inline __m128i cyscatter_same_bits_d(__m128d m, __m128d o) {
    /* SSE2 compares 32-bit lanes only: both halves of each 64-bit lane must match */
    __m128i e = _mm_cmpeq_epi32(_mm_castpd_si128(m), _mm_castpd_si128(o));
    return _mm_and_si128(e, _mm_shuffle_epi32(e, _MM_SHUFFLE(2, 3, 0, 1)));
}
#define CYSCATTER_SELECT_ROWS(T, V, W, SUF, S)                                                        \
    static inline V cyscatter_sel_mask_##SUF(int sel, V m, V o) {                                     \
        V present = _mm_cmpord_##S(m, m), same;                                                       \
        if (sel == 2) return present;                                                                 \
        same = _mm_and_##S(_mm_castsi128_##S(cyscatter_same_bits_##SUF(m, o)), present);              \
        return sel == 1 ? same : _mm_or_##S(same, _mm_andnot_##S(present, _mm_cmpunord_##S(o, o)));  \
    }                                                                                                 \
    /* acc += w * share where the message w * x is selected (o: out's row, unread when sel is 2) */  \
    static inline void cyscatter_sel_axpy_row_##SUF(int sel, T *restrict acc, const T *restrict x,    \
                                                    const T *restrict o, const T *restrict share, T w, \
                                                    ptrdiff_t n) {                                    \
        ptrdiff_t f = 0, whole = n - n % W;                                                           \
        const V wv = _mm_set1_##S(w);                                                                 \
        for (; f < whole; f += W) {                                                                   \
            V m = _mm_mul_##S(wv, _mm_loadu_##S(x + f));                                              \
            V k = cyscatter_sel_mask_##SUF(sel, m, sel == 2 ? m : _mm_loadu_##S(o + f));              \
            V add = _mm_and_##S(k, _mm_mul_##S(wv, _mm_loadu_##S(share + f)));                        \
            _mm_storeu_##S(acc + f, _mm_add_##S(_mm_loadu_##S(acc + f), add));                         \
        }                                                                                             \
        cyscatter_sel_axpy_from_##SUF(sel, acc, x, o, share, w, f, n);                                \
    }                                                                                                 \
    /* count += 1 where the message w * x is selected */                                              \
    static inline void cyscatter_sel_count_row_##SUF(int sel, T *restrict count, const T *restrict x, \
                                                     const T *restrict o, T w, ptrdiff_t n) {         \
        ptrdiff_t f = 0, whole = n - n % W;                                                           \
        const V wv = _mm_set1_##S(w), one = _mm_set1_##S(1);                                          \
        for (; f < whole; f += W) {                                                                   \
            V m = _mm_mul_##S(wv, _mm_loadu_##S(x + f));                                              \
            V k = cyscatter_sel_mask_##SUF(sel, m, sel == 2 ? m : _mm_loadu_##S(o + f));              \
            _mm_storeu_##S(count + f, _mm_add_##S(_mm_loadu_##S(count + f), _mm_and_##S(k, one)));    \
        }                                                                                             \
        cyscatter_sel_count_from_##SUF(sel, count, x, o, w, f, n);                                    \
    }                                                                                                 \
    /* count += 1 and acc += the message's tangent (w * t + tw * x; either term absent when its pointer / \
     * flag is) where the message w * x is selected; an unselected tangent (NaN or inf as it may be) is  \
     * blended out, never added */                                                                    \
    static inline void cyscatter_sel_tangent_row_##SUF(int sel, T *restrict count, T *restrict acc,   \
                                                       const T *restrict x, const T *restrict o,      \
                                                       const T *restrict t, T w, int with_tw, T tw,   \
                                                       ptrdiff_t n) {                                 \
        ptrdiff_t f = 0, whole = n - n % W;                                                           \
        const V wv = _mm_set1_##S(w), twv = _mm_set1_##S(tw), one = _mm_set1_##S(1);                 \
        for (; f < whole; f += W) {                                                                   \
            V xv = _mm_loadu_##S(x + f), m = _mm_mul_##S(wv, xv), tan = _mm_setzero_##S();            \
            V k = cyscatter_sel_mask_##SUF(sel, m, sel == 2 ? m : _mm_loadu_##S(o + f));              \
            if (t) tan = _mm_mul_##S(wv, _mm_loadu_##S(t + f));                                       \
            if (with_tw) tan = _mm_add_##S(tan, _mm_mul_##S(twv, xv));                                \
            _mm_storeu_##S(count + f, _mm_add_##S(_mm_loadu_##S(count + f), _mm_and_##S(k, one)));    \
            _mm_storeu_##S(acc + f, _mm_add_##S(_mm_loadu_##S(acc + f), _mm_and_##S(k, tan)));        \
        }                                                                                             \
        cyscatter_sel_tangent_from_##SUF(sel, count, acc, x, o, t, w, with_tw, tw, f, n);             \
    }
CYSCATTER_SELECT_ROWS(float, __m128, 4, f, ps)
CYSCATTER_SELECT_ROWS(double, __m128d, 2, d, pd)
#else
#define CYSCATTER_SELECT_ROWS(T, SUF)                                                                 \
    static inline void cyscatter_sel_axpy_row_##SUF(int sel, T *restrict acc, const T *restrict x,    \
                                                    const T *restrict o, const T *restrict share, T w, \
                                                    ptrdiff_t n) {                                    \
        cyscatter_sel_axpy_from_##SUF(sel, acc, x, o, share, w, 0, n);                                \
    }                                                                                                 \
    static inline void cyscatter_sel_count_row_##SUF(int sel, T *restrict count, const T *restrict x, \
                                                     const T *restrict o, T w, ptrdiff_t n) {         \
        cyscatter_sel_count_from_##SUF(sel, count, x, o, w, 0, n);                                    \
    }                                                                                                 \
    static inline void cyscatter_sel_tangent_row_##SUF(int sel, T *restrict count, T *restrict acc,   \
                                                       const T *restrict x, const T *restrict o,      \
                                                       const T *restrict t, T w, int with_tw, T tw,   \
                                                       ptrdiff_t n) {                                 \
        cyscatter_sel_tangent_from_##SUF(sel, count, acc, x, o, t, w, with_tw, tw, 0, n);             \
    }
CYSCATTER_SELECT_ROWS(float, f)
CYSCATTER_SELECT_ROWS(double, d)
#endif
/* Per-edge dots (the weight gradients, SDDMM): sum over f of g[f] * x[f], or over the selected features (`sel`
 * as above, message w * x against o; an unselected product, NaN or inf as it may be, is blended out). A
 * sequential sum is a chain of dependent adds, 4 cycles each: 64 features took ~256 cycles per edge, more than the
 * two rows' cache misses (vjp_weight of add 2.3x its vjp_src, NOTES.md v25). Here 2 * L partial sums (L = 4
 * floats or 2 doubles, two SSE2 registers), combined as (a[j] + a[j + L]) pairwise, then the last < 2 * L
 * features in order. The fallback computes the same partial sums in the same order, so results are the same
 * bits on every target (and on every thread count: each edge is one thread's). */
#define CYSCATTER_DOT_SCALAR_TAIL(T, SUF)                                                            \
    static inline T cyscatter_lanes_sum_##SUF(T *a, int lanes) {                                      \
        /* a[2 * lanes] partial sums -> one: (a[j] + a[j + lanes]), then pairwise */                  \
        for (int j = 0; j < lanes; j++) a[j] = a[j] + a[j + lanes];                                    \
        return lanes == 4 ? (a[0] + a[1]) + (a[2] + a[3]) : a[0] + a[1];                              \
    }
CYSCATTER_DOT_SCALAR_TAIL(float, f)
CYSCATTER_DOT_SCALAR_TAIL(double, d)
#if defined(__SSE2__)
#define CYSCATTER_DOT_ROWS(T, V, L, SUF, S)                                                           \
    static inline T cyscatter_dot_row_##SUF(int sel, const T *restrict g, const T *restrict x,        \
                                            const T *restrict o, T w, ptrdiff_t n) {                  \
        /* sel < 0: every feature (w, o unused) */                                                    \
        ptrdiff_t f = 0;                                                                              \
        V a0 = _mm_setzero_##S(), a1 = _mm_setzero_##S();                                             \
        const V wv = _mm_set1_##S(w);                                                                 \
        T lanes[2 * L], sum;                                                                          \
        for (; f + 2 * L <= n; f += 2 * L) {                                                          \
            V x0 = _mm_loadu_##S(x + f), x1 = _mm_loadu_##S(x + f + L);                               \
            V p0 = _mm_mul_##S(_mm_loadu_##S(g + f), x0), p1 = _mm_mul_##S(_mm_loadu_##S(g + f + L), x1); \
            if (sel >= 0) {                                                                           \
                V m0 = _mm_mul_##S(wv, x0), m1 = _mm_mul_##S(wv, x1);                                 \
                p0 = _mm_and_##S(p0, cyscatter_sel_mask_##SUF(sel, m0, sel == 2 ? m0 : _mm_loadu_##S(o + f))); \
                p1 = _mm_and_##S(p1, cyscatter_sel_mask_##SUF(sel, m1,                                \
                                                              sel == 2 ? m1 : _mm_loadu_##S(o + f + L))); \
            }                                                                                         \
            a0 = _mm_add_##S(a0, p0);                                                                 \
            a1 = _mm_add_##S(a1, p1);                                                                 \
        }                                                                                             \
        _mm_storeu_##S(lanes, a0);                                                                    \
        _mm_storeu_##S(lanes + L, a1);                                                                \
        sum = cyscatter_lanes_sum_##SUF(lanes, L);                                                    \
        for (; f < n; f++)                                                                            \
            if (sel < 0 || cyscatter_selects_##SUF(sel, w * x[f], sel == 2 ? (T)0 : o[f]))            \
                sum = sum + g[f] * x[f];                                                              \
        return sum;                                                                                   \
    }
CYSCATTER_DOT_ROWS(float, __m128, 4, f, ps)
CYSCATTER_DOT_ROWS(double, __m128d, 2, d, pd)
#else
#define CYSCATTER_DOT_ROWS(T, L, SUF)                                                                 \
    static inline T cyscatter_dot_row_##SUF(int sel, const T *restrict g, const T *restrict x,        \
                                            const T *restrict o, T w, ptrdiff_t n) {                  \
        ptrdiff_t f = 0;                                                                              \
        T lanes[2 * L] = {0}, sum;                                                                    \
        for (; f + 2 * L <= n; f += 2 * L)                                                            \
            for (int j = 0; j < 2 * L; j++) /* (+0 where unselected, as the SSE2 blend adds) */      \
                lanes[j] = lanes[j] + (sel < 0 || cyscatter_selects_##SUF(sel, w * x[f + j],           \
                                                                         sel == 2 ? (T)0 : o[f + j])  \
                                       ? g[f + j] * x[f + j] : (T)0);                                 \
        sum = cyscatter_lanes_sum_##SUF(lanes, L);                                                    \
        for (; f < n; f++)                                                                            \
            if (sel < 0 || cyscatter_selects_##SUF(sel, w * x[f], sel == 2 ? (T)0 : o[f]))            \
                sum = sum + g[f] * x[f];                                                              \
        return sum;                                                                                   \
    }
CYSCATTER_DOT_ROWS(float, 4, f)
CYSCATTER_DOT_ROWS(double, 2, d)
#endif
/* The present selection (nansum/nanmean) read from NaN bits instead of the values: bit f of a src row is set
 * where x[f] is NaN (a row's bits start at a word). Where the weight w of the edge is finite and not 0, the
 * message w * x is NaN exactly where x is, so the tie counts and the tangents w * t of the JVP need the 8 bytes
 * of bits a row of 64 features has, from a table 1/32 (float) or 1/64 (double) of src's size that stays in
 * cache, instead of the row itself from memory (NOTES.md v25). The same operations per element as the rows
 * above: bitwise the same results. `p` is the first feature's bit. */
static inline unsigned cyscatter_bits_at(const uint64_t *b, ptrdiff_t p, int k) {
    /* k <= 4 bits from bit p on (they may straddle two words) */
    unsigned s = (unsigned)(p & 63);
    uint64_t v = b[p >> 6] >> s;
    if (s > 64u - (unsigned)k) v |= b[(p >> 6) + 1] << (64 - s);
    return (unsigned)v & ((1u << k) - 1u);
}
/* a row's NaN bits: b[0 .. (n + 63) / 64) */
#if defined(__SSE2__)
#define CYSCATTER_NAN_BITS_ROW(T, V, W, SUF, S)                                                      \
    static inline void cyscatter_nan_bits_row_##SUF(const T *restrict x, uint64_t *restrict b, ptrdiff_t n) { \
        ptrdiff_t f = 0, whole = n - n % W;                                                           \
        for (ptrdiff_t k = 0; k < (n + 63) / 64; k++) b[k] = 0;                                       \
        for (; f < whole; f += W) {                                                                   \
            V v = _mm_loadu_##S(x + f);                                                               \
            b[f >> 6] |= (uint64_t)_mm_movemask_##S(_mm_cmpunord_##S(v, v)) << (f & 63);             \
        }                                                                                             \
        for (; f < n; f++) b[f >> 6] |= (uint64_t)(x[f] != x[f]) << (f & 63);                         \
    }
#else
#define CYSCATTER_NAN_BITS_ROW(T, V, W, SUF, S)                                                      \
    static inline void cyscatter_nan_bits_row_##SUF(const T *restrict x, uint64_t *restrict b, ptrdiff_t n) { \
        for (ptrdiff_t k = 0; k < (n + 63) / 64; k++) b[k] = 0;                                       \
        for (ptrdiff_t f = 0; f < n; f++) b[f >> 6] |= (uint64_t)(x[f] != x[f]) << (f & 63);          \
    }
#endif
CYSCATTER_NAN_BITS_ROW(float, __m128, 4, f, ps)
CYSCATTER_NAN_BITS_ROW(double, __m128d, 2, d, pd)
#if defined(__SSE2__)
/* lane j all ones where bit j of the index is set */
#define CYSCATTER_L4(j) ((j) & 1 ? ~0u : 0u), ((j) & 2 ? ~0u : 0u), ((j) & 4 ? ~0u : 0u), ((j) & 8 ? ~0u : 0u)
static const uint32_t cyscatter_nib_lanes_f[16][4] = {
    {CYSCATTER_L4(0)}, {CYSCATTER_L4(1)}, {CYSCATTER_L4(2)}, {CYSCATTER_L4(3)}, {CYSCATTER_L4(4)}, {CYSCATTER_L4(5)},
    {CYSCATTER_L4(6)}, {CYSCATTER_L4(7)}, {CYSCATTER_L4(8)}, {CYSCATTER_L4(9)}, {CYSCATTER_L4(10)},
    {CYSCATTER_L4(11)}, {CYSCATTER_L4(12)}, {CYSCATTER_L4(13)}, {CYSCATTER_L4(14)}, {CYSCATTER_L4(15)}};
static const uint64_t cyscatter_nib_lanes_d[4][2] = {
    {0, 0}, {~(uint64_t)0, 0}, {0, ~(uint64_t)0}, {~(uint64_t)0, ~(uint64_t)0}};
#define CYSCATTER_NAN_MASK_f(b, p) _mm_loadu_ps((const float *)cyscatter_nib_lanes_f[cyscatter_bits_at(b, p, 4)])
#define CYSCATTER_NAN_MASK_d(b, p) _mm_loadu_pd((const double *)cyscatter_nib_lanes_d[cyscatter_bits_at(b, p, 2)])
#define CYSCATTER_BITS_ROWS(T, V, W, SUF, S)                                                          \
    /* count += 1 where x is not NaN (the bits from bit p on) */                                       \
    static inline void cyscatter_bits_count_row_##SUF(T *restrict count, const uint64_t *restrict b,  \
                                                      ptrdiff_t p, ptrdiff_t n) {                     \
        ptrdiff_t f = 0, whole = n - n % W;                                                           \
        const V one = _mm_set1_##S(1);                                                                \
        for (; f < whole; f += W)                                                                     \
            _mm_storeu_##S(count + f, _mm_add_##S(_mm_loadu_##S(count + f),                           \
                                                  _mm_andnot_##S(CYSCATTER_NAN_MASK_##SUF(b, p + f), one))); \
        for (; f < n; f++)                                                                            \
            if (!cyscatter_bits_at(b, p + f, 1)) count[f] += 1;                                       \
    }                                                                                                 \
    /* count += 1 and acc += w * t where x is not NaN */                                              \
    static inline void cyscatter_bits_tangent_row_##SUF(T *restrict count, T *restrict acc,           \
                                                        const uint64_t *restrict b, ptrdiff_t p,      \
                                                        const T *restrict t, T w, ptrdiff_t n) {      \
        ptrdiff_t f = 0, whole = n - n % W;                                                           \
        const V one = _mm_set1_##S(1), wv = _mm_set1_##S(w);                                          \
        for (; f < whole; f += W) {                                                                   \
            V nan = CYSCATTER_NAN_MASK_##SUF(b, p + f);                                               \
            _mm_storeu_##S(count + f, _mm_add_##S(_mm_loadu_##S(count + f), _mm_andnot_##S(nan, one))); \
            _mm_storeu_##S(acc + f, _mm_add_##S(_mm_loadu_##S(acc + f),                               \
                                                _mm_andnot_##S(nan, _mm_mul_##S(wv, _mm_loadu_##S(t + f))))); \
        }                                                                                             \
        for (; f < n; f++)                                                                            \
            if (!cyscatter_bits_at(b, p + f, 1)) { count[f] += 1; acc[f] += w * t[f]; }               \
    }
CYSCATTER_BITS_ROWS(float, __m128, 4, f, ps)
CYSCATTER_BITS_ROWS(double, __m128d, 2, d, pd)
#else
#define CYSCATTER_BITS_ROWS(T, SUF)                                                                   \
    static inline void cyscatter_bits_count_row_##SUF(T *restrict count, const uint64_t *restrict b,  \
                                                      ptrdiff_t p, ptrdiff_t n) {                     \
        for (ptrdiff_t f = 0; f < n; f++)                                                             \
            if (!cyscatter_bits_at(b, p + f, 1)) count[f] += 1;                                       \
    }                                                                                                 \
    static inline void cyscatter_bits_tangent_row_##SUF(T *restrict count, T *restrict acc,           \
                                                        const uint64_t *restrict b, ptrdiff_t p,      \
                                                        const T *restrict t, T w, ptrdiff_t n) {      \
        for (ptrdiff_t f = 0; f < n; f++)                                                             \
            if (!cyscatter_bits_at(b, p + f, 1)) { count[f] += 1; acc[f] += w * t[f]; }               \
    }
CYSCATTER_BITS_ROWS(float, f)
CYSCATTER_BITS_ROWS(double, d)
#endif
#endif
