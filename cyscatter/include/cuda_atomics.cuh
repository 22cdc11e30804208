// Device helpers of cyscatter's GPU kernels: element rules and atomic updates for every scatter op.
//
// Included as the preamble of the CuPy ElementwiseKernels (cyscatter/_backends/cuda_kernels.py) and compiled on its
// own by the test suite with nvcc. It includes no header, so NVRTC and nvcc both take it as it is; complex
// values are any one-parameter class template with real(), imag() and a (re, im) constructor (CuPy's
// complex<T>, thrust::complex<T>).
//
// Value types: float, double, int (int32), long long (int64), unsigned long long (uint64), complex<float>,
// complex<double>. float16 and the small integers are widened by the Python layer before they get here.
#ifndef CYSCATTER_CUDA_ATOMICS_CUH
#define CYSCATTER_CUDA_ATOMICS_CUH

// ---- plain element rules (the CPU kernels' _combine_row, one element) ---------------------------------------
// Integer arithmetic goes through unsigned types: it wraps (NumPy's modular result) instead of being undefined.

template <class T> __device__ __forceinline__ T cs_add(T a, T b) { return a + b; }
template <class T> __device__ __forceinline__ T cs_sub(T a, T b) { return a - b; }
template <class T> __device__ __forceinline__ T cs_mul(T a, T b) { return a * b; }
template <class T> __device__ __forceinline__ T cs_div(T a, T b) { return a / b; }

__device__ __forceinline__ int cs_add(int a, int b) { return (int)((unsigned int)a + (unsigned int)b); }
__device__ __forceinline__ int cs_sub(int a, int b) { return (int)((unsigned int)a - (unsigned int)b); }
__device__ __forceinline__ int cs_mul(int a, int b) { return (int)((unsigned int)a * (unsigned int)b); }
__device__ __forceinline__ long long cs_add(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ long long cs_sub(long long a, long long b) {
    return (long long)((unsigned long long)a - (unsigned long long)b);
}
__device__ __forceinline__ long long cs_mul(long long a, long long b) {
    return (long long)((unsigned long long)a * (unsigned long long)b);
}

// max/min: NaN wins (NumPy's maximum/minimum) and -0.0 < +0.0, so the result is the extreme of a total order
// and does not depend on the order in which the threads arrive. Sign bits are read as integers.
__device__ __forceinline__ bool cs_max_wins(float cur, float v) {
    if (v != v) return cur == cur;
    if (v > cur) return true;
    return v == 0.0f && cur == 0.0f && __float_as_int(cur) < 0 && __float_as_int(v) >= 0;
}
__device__ __forceinline__ bool cs_max_wins(double cur, double v) {
    if (v != v) return cur == cur;
    if (v > cur) return true;
    return v == 0.0 && cur == 0.0 && __double_as_longlong(cur) < 0 && __double_as_longlong(v) >= 0;
}
__device__ __forceinline__ bool cs_min_wins(float cur, float v) {
    if (v != v) return cur == cur;
    if (v < cur) return true;
    return v == 0.0f && cur == 0.0f && __float_as_int(v) < 0 && __float_as_int(cur) >= 0;
}
__device__ __forceinline__ bool cs_min_wins(double cur, double v) {
    if (v != v) return cur == cur;
    if (v < cur) return true;
    return v == 0.0 && cur == 0.0 && __double_as_longlong(v) < 0 && __double_as_longlong(cur) >= 0;
}
template <class T> __device__ __forceinline__ bool cs_max_wins(T cur, T v) { return v > cur; }
template <class T> __device__ __forceinline__ bool cs_min_wins(T cur, T v) { return v < cur; }

template <class T> __device__ __forceinline__ T cs_max(T a, T b) { return cs_max_wins(a, b) ? b : a; }
template <class T> __device__ __forceinline__ T cs_min(T a, T b) { return cs_min_wins(a, b) ? b : a; }

// ---- NaN-skipping ops: nanadd/nanmul leave a NaN src value out, fmax/fmin (NumPy's) let NaN lose -------------
// NaN is NumPy's isnan: a complex value is NaN when either part is; integers never are.
template <class T> __device__ __forceinline__ bool cs_isnan(T) { return false; }
__device__ __forceinline__ bool cs_isnan(float x) { return x != x; }
__device__ __forceinline__ bool cs_isnan(double x) { return x != x; }
template <template <class> class C, class R>
__device__ __forceinline__ bool cs_isnan(C<R> z) { return z.real() != z.real() || z.imag() != z.imag(); }

// A NaN entry is absent: nanadd/nanmul leave the held value as it is (as the CPU kernels: adding a 0 would turn
// a -0.0 into +0.0, a product with 1+0j is not exact for complex values); integers have no NaN.
template <class T> __device__ __forceinline__ T cs_nanadd(T a, T b) { return cs_isnan(b) ? a : cs_add(a, b); }
template <class T> __device__ __forceinline__ T cs_nanmul(T a, T b) { return cs_isnan(b) ? a : cs_mul(a, b); }

// fmax/fmin: a NaN v never wins, a NaN cur loses to any number, then max/min's order (-0.0 < +0.0)
__device__ __forceinline__ bool cs_fmax_wins(float cur, float v) {
    return v == v && (cur != cur || cs_max_wins(cur, v));
}
__device__ __forceinline__ bool cs_fmax_wins(double cur, double v) {
    return v == v && (cur != cur || cs_max_wins(cur, v));
}
__device__ __forceinline__ bool cs_fmin_wins(float cur, float v) {
    return v == v && (cur != cur || cs_min_wins(cur, v));
}
__device__ __forceinline__ bool cs_fmin_wins(double cur, double v) {
    return v == v && (cur != cur || cs_min_wins(cur, v));
}
template <class T> __device__ __forceinline__ bool cs_fmax_wins(T cur, T v) { return v > cur; }
template <class T> __device__ __forceinline__ bool cs_fmin_wins(T cur, T v) { return v < cur; }
template <class T> __device__ __forceinline__ T cs_fmax(T a, T b) { return cs_fmax_wins(a, b) ? b : a; }
template <class T> __device__ __forceinline__ T cs_fmin(T a, T b) { return cs_fmin_wins(a, b) ? b : a; }

struct cs_rule_nanmul { template <class T> __device__ static T apply(T a, T b) { return cs_nanmul(a, b); } };
struct cs_rule_fmax { template <class T> __device__ static T apply(T a, T b) { return cs_fmax(a, b); } };
struct cs_rule_fmin { template <class T> __device__ static T apply(T a, T b) { return cs_fmin(a, b); } };

// The rules as types, for the compare-and-swap loop.
struct cs_rule_mul { template <class T> __device__ static T apply(T a, T b) { return cs_mul(a, b); } };
struct cs_rule_div { template <class T> __device__ static T apply(T a, T b) { return cs_div(a, b); } };
struct cs_rule_max { template <class T> __device__ static T apply(T a, T b) { return cs_max(a, b); } };
struct cs_rule_min { template <class T> __device__ static T apply(T a, T b) { return cs_min(a, b); } };
struct cs_rule_add { template <class T> __device__ static T apply(T a, T b) { return cs_add(a, b); } };

// ---- values as the words atomicCAS swaps --------------------------------------------------------------------
// cs_word(x) gives the bits of x; cs_value(bits, (T*)0) turns them back. Both reinterpret, never convert, so
// NaN payloads and the sign of zero survive the round trip.

__device__ __forceinline__ unsigned int cs_word(float x) { return __float_as_uint(x); }
__device__ __forceinline__ unsigned long long cs_word(double x) { return (unsigned long long)__double_as_longlong(x); }
__device__ __forceinline__ unsigned int cs_word(int x) { return (unsigned int)x; }
__device__ __forceinline__ unsigned long long cs_word(long long x) { return (unsigned long long)x; }
__device__ __forceinline__ unsigned long long cs_word(unsigned long long x) { return x; }
// complex<float>: the real part lies at the lower address, i.e. in the low half of a little-endian word
template <template <class> class C>
__device__ __forceinline__ unsigned long long cs_word(C<float> z) {
    return ((unsigned long long)__float_as_uint(z.imag()) << 32) | (unsigned long long)__float_as_uint(z.real());
}

__device__ __forceinline__ float cs_value(unsigned int w, float*) { return __uint_as_float(w); }
__device__ __forceinline__ double cs_value(unsigned long long w, double*) { return __longlong_as_double((long long)w); }
__device__ __forceinline__ int cs_value(unsigned int w, int*) { return (int)w; }
__device__ __forceinline__ long long cs_value(unsigned long long w, long long*) { return (long long)w; }
__device__ __forceinline__ unsigned long long cs_value(unsigned long long w, unsigned long long*) { return w; }
template <template <class> class C>
__device__ __forceinline__ C<float> cs_value(unsigned long long w, C<float>*) {
    return C<float>(__uint_as_float((unsigned int)(w & 0xffffffffULL)), __uint_as_float((unsigned int)(w >> 32)));
}

// atomicCAS exists for 4- and 8-byte words; an element is one such word, aligned to its size.
__device__ __forceinline__ unsigned int cs_cas(unsigned int* p, unsigned int expected, unsigned int desired) {
    return atomicCAS(p, expected, desired);
}
__device__ __forceinline__ unsigned long long cs_cas(unsigned long long* p, unsigned long long expected,
                                                     unsigned long long desired) {
    return atomicCAS(p, expected, desired);
}

// *p = Rule::apply(*p, v), atomically: a compare-and-swap loop on the element's bits. A thread whose update
// leaves the element as it is (max/min: v does not win; mul: v == 1) returns without writing.
template <class Rule, class T>
__device__ __forceinline__ void cs_atomic_update(T* p, T v) {
    typedef decltype(cs_word(v)) W;
    W* word = reinterpret_cast<W*>(p);
    W seen = *word;   // a stale read only costs one more round: the CAS below compares with memory
    while (true) {
        const W expected = seen;
        const W desired = cs_word(Rule::apply(cs_value(expected, (T*)0), v));
        if (desired == expected) return;
        seen = cs_cas(word, expected, desired);
        if (seen == expected) return;
    }
}

// ---- atomic updates, one per op: cs_atomic_<op>(address in out, value from src) -----------------------------

__device__ __forceinline__ void cs_atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void cs_atomic_add(double* p, double v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
    cs_atomic_update<cs_rule_add>(p, v);   // no native double atomicAdd before sm_60
#else
    atomicAdd(p, v);
#endif
}
__device__ __forceinline__ void cs_atomic_add(int* p, int v) { atomicAdd(p, v); }   // wraps, as NumPy
__device__ __forceinline__ void cs_atomic_add(long long* p, long long v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);   // two's complement: wraps
}
__device__ __forceinline__ void cs_atomic_add(unsigned long long* p, unsigned long long v) { atomicAdd(p, v); }
// complex: the two parts are independent sums
template <template <class> class C, class R>
__device__ __forceinline__ void cs_atomic_add(C<R>* p, C<R> v) {
    R* parts = reinterpret_cast<R*>(p);
    cs_atomic_add(parts, v.real());
    cs_atomic_add(parts + 1, v.imag());
}

// dst - v == dst + (-v) exactly in IEEE arithmetic, and modulo 2**k for integers
__device__ __forceinline__ void cs_atomic_sub(float* p, float v) { cs_atomic_add(p, -v); }
__device__ __forceinline__ void cs_atomic_sub(double* p, double v) { cs_atomic_add(p, -v); }
__device__ __forceinline__ void cs_atomic_sub(int* p, int v) { cs_atomic_add(p, cs_sub(0, v)); }
__device__ __forceinline__ void cs_atomic_sub(long long* p, long long v) { cs_atomic_add(p, cs_sub(0LL, v)); }
__device__ __forceinline__ void cs_atomic_sub(unsigned long long* p, unsigned long long v) {
    cs_atomic_add(p, 0ULL - v);
}
template <template <class> class C, class R>
__device__ __forceinline__ void cs_atomic_sub(C<R>* p, C<R> v) { cs_atomic_add(p, C<R>(-v.real(), -v.imag())); }

// mul/div: no hardware atomic, a compare-and-swap loop (elements of at most 8 bytes; complex<double> takes
// the ordered kernel instead, see _cuda_kernels.py)
template <class T> __device__ __forceinline__ void cs_atomic_mul(T* p, T v) { cs_atomic_update<cs_rule_mul>(p, v); }
template <class T> __device__ __forceinline__ void cs_atomic_div(T* p, T v) { cs_atomic_update<cs_rule_div>(p, v); }

// max/min: native for integers, compare-and-swap on the full-width bits for floats (double stays double)
__device__ __forceinline__ void cs_atomic_max(int* p, int v) { atomicMax(p, v); }
__device__ __forceinline__ void cs_atomic_max(long long* p, long long v) { atomicMax(p, v); }
__device__ __forceinline__ void cs_atomic_max(unsigned long long* p, unsigned long long v) { atomicMax(p, v); }
__device__ __forceinline__ void cs_atomic_max(float* p, float v) { cs_atomic_update<cs_rule_max>(p, v); }
__device__ __forceinline__ void cs_atomic_max(double* p, double v) { cs_atomic_update<cs_rule_max>(p, v); }
__device__ __forceinline__ void cs_atomic_min(int* p, int v) { atomicMin(p, v); }
__device__ __forceinline__ void cs_atomic_min(long long* p, long long v) { atomicMin(p, v); }
__device__ __forceinline__ void cs_atomic_min(unsigned long long* p, unsigned long long v) { atomicMin(p, v); }
__device__ __forceinline__ void cs_atomic_min(float* p, float v) { cs_atomic_update<cs_rule_min>(p, v); }
__device__ __forceinline__ void cs_atomic_min(double* p, double v) { cs_atomic_update<cs_rule_min>(p, v); }

// NaN-skipping updates: a NaN src value writes nothing (nanadd skips the atomic; nanmul's CAS loop returns
// without writing); fmax/fmin: native for integers (no NaN), a CAS loop for floats
template <class T> __device__ __forceinline__ void cs_atomic_nanadd(T* p, T v) { if (!cs_isnan(v)) cs_atomic_add(p, v); }
template <class T> __device__ __forceinline__ void cs_atomic_nanmul(T* p, T v) {
    cs_atomic_update<cs_rule_nanmul>(p, v);
}
__device__ __forceinline__ void cs_atomic_fmax(int* p, int v) { atomicMax(p, v); }
__device__ __forceinline__ void cs_atomic_fmax(long long* p, long long v) { atomicMax(p, v); }
__device__ __forceinline__ void cs_atomic_fmax(unsigned long long* p, unsigned long long v) { atomicMax(p, v); }
__device__ __forceinline__ void cs_atomic_fmax(float* p, float v) { cs_atomic_update<cs_rule_fmax>(p, v); }
__device__ __forceinline__ void cs_atomic_fmax(double* p, double v) { cs_atomic_update<cs_rule_fmax>(p, v); }
__device__ __forceinline__ void cs_atomic_fmin(int* p, int v) { atomicMin(p, v); }
__device__ __forceinline__ void cs_atomic_fmin(long long* p, long long v) { atomicMin(p, v); }
__device__ __forceinline__ void cs_atomic_fmin(unsigned long long* p, unsigned long long v) { atomicMin(p, v); }
__device__ __forceinline__ void cs_atomic_fmin(float* p, float v) { cs_atomic_update<cs_rule_fmin>(p, v); }
__device__ __forceinline__ void cs_atomic_fmin(double* p, double v) { cs_atomic_update<cs_rule_fmin>(p, v); }

// ---- the winners of max/min (the fused gather-scatter's reverse kernels) -------------------------------------

// The message m is the value the forward max/min kept in o: equal with the same sign of zero, or both NaN (the
// CPU kernels' rule, so an edge ties on the GPU exactly when it ties there). Real values only: ordered ops.
__device__ __forceinline__ bool cs_ties(float m, float o) {
    if (m != m) return o != o;
    return m == o && (__float_as_int(m) < 0) == (__float_as_int(o) < 0);
}
__device__ __forceinline__ bool cs_ties(double m, double o) {
    if (m != m) return o != o;
    return m == o && (__double_as_longlong(m) < 0) == (__double_as_longlong(o) < 0);
}

// ---- one-line kernel bodies ----------------------------------------------------------------------------------

// The row of the canonical (outer, rows, inner) view holding flat element i, and its outer/inner coordinates.
struct cs_position {
    long long outer, row, inner;
};
__device__ __forceinline__ cs_position cs_locate(long long i, long long rows, long long inner) {
    cs_position at;
    at.inner = i % inner;
    at.row = (i / inner) % rows;
    at.outer = i / inner / rows;
    return at;
}

// Offset of element (outer, row, inner) in a C-contiguous (outer, rows, inner) array.
__device__ __forceinline__ long long cs_offset(long long outer, long long row, long long inner, long long rows,
                                               long long width) {
    return (outer * rows + row) * width + inner;
}

#endif  // CYSCATTER_CUDA_ATOMICS_CUH
