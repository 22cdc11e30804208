/* The gather into a dst whose entries are adjacent and features apart (a Fortran-ordered gather_into dst), for
 * 1- and 2-byte items read from src rows of adjacent features: V = 8 / item entries by V features at a time,
 * each src row segment one 64-bit word, the V words transposed in registers (swaps of halves, quarters, eighths:
 * portable C, no ISA requirement) and stored as V items of each feature column. The element-at-a-time loop
 * moves one byte per index lookup; this moves 8. (4- and 8-byte items take the AVX2 tiles of `_layout.h`.) */
#ifndef CYSCATTER_GATHER_APART_H
#define CYSCATTER_GATHER_APART_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "_index_at.h"

/* x[r] holds row r of a V x V matrix of (8 / V)-byte elements, element c at bits (64 / V) c (little-endian);
 * afterwards x[c] holds column c. V = 8 (bytes) or 4 (2-byte elements): recursive block swaps. */
static inline void cyscatter_apart_swap(uint64_t *a, uint64_t *b, int bits, uint64_t low) {
    uint64_t x = *a, y = *b;
    *a = (x & low) | ((y & low) << bits);
    *b = ((x >> bits) & low) | (y & ~low);
}
static inline void cyscatter_apart_transpose(uint64_t *x, int v) {
    if (v == 8) {
        for (int r = 0; r < 4; r++) cyscatter_apart_swap(&x[r], &x[r + 4], 32, 0x00000000FFFFFFFFull);
        for (int r = 0; r < 8; r += 4)
            for (int i = 0; i < 2; i++) cyscatter_apart_swap(&x[r + i], &x[r + i + 2], 16, 0x0000FFFF0000FFFFull);
        for (int r = 0; r < 8; r += 2) cyscatter_apart_swap(&x[r], &x[r + 1], 8, 0x00FF00FF00FF00FFull);
    } else {
        for (int r = 0; r < 2; r++) cyscatter_apart_swap(&x[r], &x[r + 2], 32, 0x00000000FFFFFFFFull);
        for (int r = 0; r < 4; r += 2) cyscatter_apart_swap(&x[r], &x[r + 1], 16, 0x0000FFFF0000FFFFull);
    }
}

/* whether the words hold their elements in the order above (little-endian); else the caller's element loop */
static inline int cyscatter_gather_apart_small_ok(void) {
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return 1;
#elif defined(_M_X64) || defined(_M_IX86) || defined(_M_ARM64)
    return 1;
#else
    return 0;
#endif
}

/* out[f * os + k * item] = src[index[k] * rs + f * item] (strides in bytes) for features [f0, f1) with
 * f1 - f0 a multiple of V = 8 / item, every entry k < n; entries outside [0, size) skipped (their outputs left
 * as they are). */
static void cyscatter_gather_apart_small(const char *src, ptrdiff_t rs, const void *index, int wide, ptrdiff_t n,
                                         char *out, ptrdiff_t os, ptrdiff_t f0, ptrdiff_t f1, uint64_t size,
                                         int item) {
    const int v = 8 / item;
    ptrdiff_t k = 0;
    for (; k + v <= n; k += v) {
        const char *r[8];
        int ok = 1;
        for (int i = 0; i < v; i++) {
            uint64_t j = cyscatter_index_at(index, wide, k + i);
            ok &= j < size;
            r[i] = src + (ptrdiff_t)j * rs;
        }
        if (!ok) {
            for (int i = 0; i < v; i++)
                if (cyscatter_index_at(index, wide, k + i) < size)
                    for (ptrdiff_t f = f0; f < f1; f++)
                        memcpy(out + f * os + (k + i) * item, r[i] + f * item, (size_t)item);
            continue;
        }
        for (ptrdiff_t f = f0; f < f1; f += v) {
            uint64_t x[8];
            for (int i = 0; i < v; i++) memcpy(&x[i], r[i] + f * item, 8);
            cyscatter_apart_transpose(x, v);
            for (int i = 0; i < v; i++) memcpy(out + (f + i) * os + k * item, &x[i], 8);
        }
    }
    for (; k < n; k++) {
        uint64_t j = cyscatter_index_at(index, wide, k);
        if (j >= size) continue;
        for (ptrdiff_t f = f0; f < f1; f++)
            memcpy(out + f * os + k * item, src + (ptrdiff_t)j * rs + f * item, (size_t)item);
    }
}

#endif
