/* The index entry every kernel of the layout headers reads: an int64 or int32 entry as an unsigned 64-bit value,
 * so that a negative one is a huge entry and one unsigned comparison against the size bounds it. Portable C;
 * the AVX2 and AVX-512 kernels inline it (its instruction set is a subset of theirs). */
#ifndef CYSCATTER_INDEX_AT_H
#define CYSCATTER_INDEX_AT_H
#include <stddef.h>
#include <stdint.h>

static inline uint64_t cyscatter_index_at(const void *index, int wide, ptrdiff_t k) {
    return wide ? (uint64_t)((const int64_t *)index)[k] : (uint64_t)(int64_t)((const int32_t *)index)[k];
}

#endif
