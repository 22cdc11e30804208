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
    }                                                                                                 \
    /* the reverse of the NaN-skipping sums: acc += w * share where the message w * x is not NaN (a blend,  \
     * so a NaN or inf share of an absent message never reaches acc) */                                \
    static inline void cyscatter_present_axpy_row_##SUF(T *restrict acc, const T *restrict x,        \
                                                        const T *restrict share, T w, ptrdiff_t n) {  \
        for (ptrdiff_t f = 0; f < n; f++) {                                                           \
            const T m = w * x[f];                                                                     \
            acc[f] = acc[f] + (m == m ? w * share[f] : (T)0);                                          \
        }                                                                                             \
    }
CYSCATTER_FUSED_ROWS(float, f)
CYSCATTER_FUSED_ROWS(double, d)
#endif
