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

#endif
