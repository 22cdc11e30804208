# cython: language_level=3
"""CPU kernels of cyscatter: typed-memoryview loops, fused over dtypes, the op fixed at compile time.

The kernels run without the GIL and never raise; the `def` wrappers at the bottom are the only entry points the
Python layer uses, and they translate op codes into the compile-time op tags.
"""
cimport cython
from cython.view cimport contiguous
from libc.math cimport signbit
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memcpy

cdef extern from "_cdiv.h" nogil:
    double complex cyscatter_cdiv(double complex a, double complex b)
    float complex cyscatter_cdivf(float complex a, float complex b)

from cyscatter.kernels cimport (OpAdd, OpSub, OpMul, OpDiv, OpMax, OpMin, op_t, value_t, index_t, item_t,
                                OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, MODE_RAISE, MODE_DROP)

cdef extern from *:
    """
    #ifndef CYSCATTER_DEBUG
    #define CYSCATTER_DEBUG 0
    #endif
    """
    int CYSCATTER_DEBUG

# True in a debug build (CYSCATTER_DEBUG=1 at build time): every memoryview access is bounds-checked, and a bad
# one is reported as an unraisable IndexError (the kernels are noexcept) instead of touching foreign memory.
BOUNDS_CHECKED = bool(CYSCATTER_DEBUG)


# ---- max / min element rules ----------------------------------------------------------------------------------
# NaN wins (NumPy's maximum/minimum) and -0.0 < +0.0, so the result does not depend on the order of the updates
# (np.maximum.at returns whichever zero came last; we deliberately do not).

cdef inline bint _replaces_max(value_t cur, value_t new) noexcept nogil:
    if value_t is float or value_t is double:
        if new != new:
            return cur == cur
        if new > cur:
            return True
        return new == 0 and cur == 0 and signbit(cur) and not signbit(new)
    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return new > cur
    else:
        return False


cdef inline bint _replaces_min(value_t cur, value_t new) noexcept nogil:
    if value_t is float or value_t is double:
        if new != new:
            return cur == cur
        if new < cur:
            return True
        return new == 0 and cur == 0 and signbit(new) and not signbit(cur)
    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return new < cur
    else:
        return False


# ---- scatter-reduce --------------------------------------------------------------------------------------------

cdef inline void _combine_row(op_t op, value_t* dst, const value_t* src, Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t f
    if op_t is OpAdd:
        for f in range(inner):
            dst[f] = dst[f] + src[f]
    elif op_t is OpSub:
        for f in range(inner):
            dst[f] = dst[f] - src[f]
    elif op_t is OpMul:
        for f in range(inner):
            dst[f] = dst[f] * src[f]
    elif op_t is OpDiv:
        # integer division is never requested (NumPy true division: the Python layer widens to float64);
        # pruning it here keeps a C integer division by zero out of the binary altogether
        if value_t is int32_t or value_t is int64_t or value_t is uint64_t:
            pass
        elif value_t is cython.doublecomplex:
            for f in range(inner):
                dst[f] = cyscatter_cdiv(dst[f], src[f])
        elif value_t is cython.floatcomplex:
            for f in range(inner):
                dst[f] = cyscatter_cdivf(dst[f], src[f])
        else:
            for f in range(inner):
                dst[f] = dst[f] / src[f]
    elif op_t is OpMax:
        for f in range(inner):
            if _replaces_max(dst[f], src[f]):
                dst[f] = src[f]
    else:
        for f in range(inner):
            if _replaces_min(dst[f], src[f]):
                dst[f] = src[f]


cdef Py_ssize_t scatter_reduce_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                    value_t[:, :, ::contiguous] out, int64_t* counts, int mode) noexcept nogil:
    """out[o, index[k], :] = op(out[o, index[k], :], src[o, k, :]); counts[index[k]] += 1 when counts != NULL.

    Returns -1, or (mode MODE_RAISE) the first position k whose index is outside [0, out.shape[1]).
    """
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = out.shape[1]
    cdef Py_ssize_t o, k
    cdef index_t j
    # the index is checked and counted once, on the first outer slice (or alone when there is none)
    for k in range(n):
        j = index[k]
        if <uint64_t>j >= <uint64_t>size:   # a negative j wraps to a huge unsigned value
            if mode == MODE_DROP:
                continue
            return k
        if counts != NULL:
            counts[j] += 1
        if outer > 0 and inner > 0:
            _combine_row(op, &out[0, j, 0], &src[0, k, 0], inner)
    if inner == 0:
        return -1
    for o in range(1, outer):
        for k in range(n):
            j = index[k]
            if <uint64_t>j < <uint64_t>size:
                _combine_row(op, &out[o, j, 0], &src[o, k, 0], inner)
    return -1


cdef Py_ssize_t first_out_of_range(const index_t[::1] index, Py_ssize_t size) noexcept nogil:
    """Position of the first entry outside [0, size), or -1."""
    cdef Py_ssize_t k
    for k in range(index.shape[0]):
        if <uint64_t>index[k] >= <uint64_t>size:
            return k
    return -1


# ---- gather ----------------------------------------------------------------------------------------------------

cdef Py_ssize_t gather_rows(const item_t[:, :, ::contiguous] src, const index_t[::1] index,
                            item_t[:, :, ::contiguous] out, int mode) noexcept nogil:
    """out[o, k, :] = src[o, index[k], :]. Returns -1 or (MODE_RAISE) the first bad position, before writing."""
    cdef Py_ssize_t outer = src.shape[0], size = src.shape[1], inner = src.shape[2], n = index.shape[0]
    cdef Py_ssize_t o, k, f
    cdef index_t j
    cdef const item_t* s
    cdef item_t* d
    if mode == MODE_RAISE:
        k = first_out_of_range(index, size)
        if k >= 0:
            return k
    if inner == 0:
        return -1
    for o in range(outer):
        for k in range(n):
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:
                continue
            s = &src[o, j, 0]
            d = &out[o, k, 0]
            if inner == 1:
                d[0] = s[0]
            else:
                memcpy(d, s, inner * sizeof(item_t))
    return -1


# ---- reverse-mode helpers --------------------------------------------------------------------------------------

cdef void group_exclusive_products(const value_t[:, :, ::contiguous] src, const int64_t[::1] order,
                                   const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials) noexcept nogil:
    """partials[o, k, :] = product of src[o, k', :] over the other members k' of k's group, in group order.

    Groups are order[indptr[g]:indptr[g + 1]]. Prefix times suffix products: exact with zeros, no division.
    """
    cdef Py_ssize_t outer = src.shape[0], inner = src.shape[2], ngroups = indptr.shape[0] - 1
    cdef Py_ssize_t o, g, p, f, pos
    cdef value_t acc
    if inner == 0:
        return
    for o in range(outer):
        for g in range(ngroups):
            for f in range(inner):
                acc = 1
                for p in range(indptr[g + 1] - 1, indptr[g] - 1, -1):
                    pos = order[p]
                    partials[o, pos, f] = acc
                    acc = acc * src[o, pos, f]
                acc = 1
                for p in range(indptr[g], indptr[g + 1]):
                    pos = order[p]
                    partials[o, pos, f] = partials[o, pos, f] * acc
                    acc = acc * src[o, pos, f]


cdef void group_exclusive_products_jvp(const value_t[:, :, ::contiguous] src,
                                       const value_t[:, :, ::contiguous] tangent, const int64_t[::1] order,
                                       const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials,
                                       value_t[:, :, ::contiguous] partials_dot) noexcept nogil:
    """`group_exclusive_products` and its derivative along `tangent`, in dual-number arithmetic.

    partials_dot[o, k, :] = sum over the other members m of k's group of tangent[m] times the product of the
    members other than k and m: the second derivatives of a group product applied to `tangent`, exact with zeros.
    """
    cdef Py_ssize_t outer = src.shape[0], inner = src.shape[2], ngroups = indptr.shape[0] - 1
    cdef Py_ssize_t o, g, p, f, pos
    cdef value_t acc, acc_dot, s
    if inner == 0:
        return
    for o in range(outer):
        for g in range(ngroups):
            for f in range(inner):
                acc = 1
                acc_dot = 0
                for p in range(indptr[g + 1] - 1, indptr[g] - 1, -1):
                    pos = order[p]
                    partials[o, pos, f] = acc
                    partials_dot[o, pos, f] = acc_dot
                    s = src[o, pos, f]
                    acc_dot = acc_dot * s + acc * tangent[o, pos, f]
                    acc = acc * s
                acc = 1
                acc_dot = 0
                for p in range(indptr[g], indptr[g + 1]):
                    pos = order[p]
                    partials_dot[o, pos, f] = partials_dot[o, pos, f] * acc + partials[o, pos, f] * acc_dot
                    partials[o, pos, f] = partials[o, pos, f] * acc
                    s = src[o, pos, f]
                    acc_dot = acc_dot * s + acc * tangent[o, pos, f]
                    acc = acc * s


# ---- Python entry points ---------------------------------------------------------------------------------------

def scatter_reduce(int opcode, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                   value_t[:, :, ::contiguous] out, int64_t[::1] counts=None, int mode=MODE_RAISE):
    """Run the scatter-reduce kernel for `opcode` (an OpCode); returns -1 or the first bad index position."""
    cdef int64_t* counts_ptr = NULL
    cdef Py_ssize_t status = -1
    cdef OpAdd add
    cdef OpSub sub
    cdef OpMul mul
    cdef OpDiv div
    cdef OpMax mx
    cdef OpMin mn
    if counts is not None and counts.shape[0] > 0:
        counts_ptr = &counts[0]
    with nogil:
        if opcode == OP_ADD:
            status = scatter_reduce_rows(add, src, index, out, counts_ptr, mode)
        elif opcode == OP_SUB:
            status = scatter_reduce_rows(sub, src, index, out, counts_ptr, mode)
        elif opcode == OP_MUL:
            status = scatter_reduce_rows(mul, src, index, out, counts_ptr, mode)
        elif opcode == OP_DIV:
            status = scatter_reduce_rows(div, src, index, out, counts_ptr, mode)
        elif opcode == OP_MAX:
            status = scatter_reduce_rows(mx, src, index, out, counts_ptr, mode)
        elif opcode == OP_MIN:
            status = scatter_reduce_rows(mn, src, index, out, counts_ptr, mode)
    return status


def gather(const item_t[:, :, ::contiguous] src, const index_t[::1] index, item_t[:, :, ::contiguous] out,
           int mode=MODE_RAISE):
    """Run the gather kernel on same-size items; returns -1 or the first bad index position (nothing written)."""
    cdef Py_ssize_t status
    with nogil:
        status = gather_rows(src, index, out, mode)
    return status


def check_index(const index_t[::1] index, Py_ssize_t size):
    """Position of the first index entry outside [0, size), or -1 (run before an in-place write)."""
    cdef Py_ssize_t status
    with nogil:
        status = first_out_of_range(index, size)
    return status


def exclusive_products_jvp(const value_t[:, :, ::contiguous] src, const value_t[:, :, ::contiguous] tangent,
                           const int64_t[::1] order, const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials,
                           value_t[:, :, ::contiguous] partials_dot):
    """Fill `partials` as `exclusive_products` does and `partials_dot` with their derivative along `tangent`."""
    with nogil:
        group_exclusive_products_jvp(src, tangent, order, indptr, partials, partials_dot)


def exclusive_products(const value_t[:, :, ::contiguous] src, const int64_t[::1] order, const int64_t[::1] indptr,
                       value_t[:, :, ::contiguous] partials):
    """Fill `partials` with each element's product of the other members of its group (see the cdef kernel)."""
    with nogil:
        group_exclusive_products(src, order, indptr, partials)
