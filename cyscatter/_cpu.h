/* What the CPU kernels need beyond C99, with portable fallbacks: the OpenMP thread count (one thread when the
 * extension is built without OpenMP) and a software prefetch for writing (a no-op on other compilers). */
#ifndef CYSCATTER_CPU_H
#define CYSCATTER_CPU_H

#ifdef _OPENMP
#include <omp.h>
static inline int cyscatter_omp_max_threads(void) { return omp_get_max_threads(); }
static inline int cyscatter_have_openmp(void) { return 1; }
#else
static inline int cyscatter_omp_max_threads(void) { return 1; }
static inline int cyscatter_have_openmp(void) { return 0; }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define cyscatter_prefetch_w(p) __builtin_prefetch((const void *)(p), 1, 3)
#define cyscatter_prefetch_r(p) __builtin_prefetch((const void *)(p), 0, 3)
#else
#define cyscatter_prefetch_w(p) ((void)(p))
#define cyscatter_prefetch_r(p) ((void)(p))
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

#endif
