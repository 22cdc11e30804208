# cython: language_level=3
"""C-level surface of the group kernels beyond the core scatter: sorted (CSR) segments, sorted-run scatter and
arg-extremes, for other Cython code to cimport.

Same conventions as ``cyscatter/kernels.pxd``: the canonical view ``(outer, rows, inner)``, the op fixed at
compile time by a tag type, ``noexcept nogil``, and a status return instead of exceptions (``-1`` on success).
The element rules below are the core's: updates in order, NaN wins max/min, ``-0.0 < +0.0``, Smith's complex
division.
"""
cimport cython
# rows may be strided, the elements of a row are adjacent (as the core kernels; see kernels.pxd)
from cython.view cimport contiguous
from libc.math cimport signbit
from libc.stdint cimport int64_t, int32_t, uint64_t

from cyscatter.kernels cimport (OpAdd, OpSub, OpMul, OpDiv, OpMax, OpMin, OpNanAdd, OpNanMul, OpFmax, OpFmin,
                                op_t, value_t, index_t, nan_to, nan_add, replaces_fmax, replaces_fmin)

cdef extern from "include/_cdiv.h" nogil:
    double complex cyscatter_cdiv(double complex a, double complex b)
    float complex cyscatter_cdivf(float complex a, float complex b)

cdef extern from "include/_cpu.h" nogil:   # the same rules as branch-free selects (see _cpu.h)
    double cyscatter_max_d(double cur, double new)
    double cyscatter_min_d(double cur, double new)
    float cyscatter_max_f(float cur, float new)
    float cyscatter_min_f(float cur, float new)

# The NaN-skipping ops, and the value types that can hold a NaN: the CSR kernel that also counts the non-NaN
# entries of each output element (nanmean's divisor, the empty elements a fill_value replaces). Integers have no
# NaN: the Python layer runs them as the twins, with the segment lengths as counts.
ctypedef fused nan_op_t:
    OpNanAdd
    OpNanMul
    OpFmax
    OpFmin

ctypedef fused nan_value_t:
    float
    double
    float complex
    double complex

ctypedef fused count_t:
    int32_t
    int64_t

# The two ops that have a winner (and so an arg-reduction).
ctypedef fused extreme_t:
    OpMax
    OpMin


# ---- element rules -------------------------------------------------------------------------------------------

cdef inline bint replaces_max(value_t cur, value_t new) noexcept nogil:
    """Whether `new` beats `cur` for max: NaN wins, then larger, then +0.0 over -0.0 (order independent)."""
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


cdef inline bint replaces_min(value_t cur, value_t new) noexcept nogil:
    """Whether `new` beats `cur` for min: NaN wins, then smaller, then -0.0 over +0.0."""
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


cdef inline bint beats(op_t op, value_t cur, value_t new) noexcept nogil:
    """Whether `new` replaces `cur` under max/min (False for the other ops)."""
    if op_t is OpMax:
        return replaces_max(cur, new)
    elif op_t is OpMin:
        return replaces_min(cur, new)
    elif op_t is OpFmax:
        return replaces_fmax(cur, new)
    elif op_t is OpFmin:
        return replaces_fmin(cur, new)
    else:
        return False


cdef inline value_t combine(op_t op, value_t acc, value_t x) noexcept nogil:
    """One update ``acc = op(acc, x)``, exactly as the core scatter kernel applies it."""
    cdef value_t one = 1
    if op_t is OpAdd:
        return acc + x
    elif op_t is OpSub:
        return acc - x
    elif op_t is OpMul:
        return acc * x
    elif op_t is OpDiv:
        # integers never get here (true division widens them to float64 in the Python layer)
        if value_t is int32_t or value_t is int64_t or value_t is uint64_t:
            return acc
        elif value_t is cython.doublecomplex:
            return cyscatter_cdiv(acc, x)
        elif value_t is cython.floatcomplex:
            return cyscatter_cdivf(acc, x)
        else:
            return acc / x
    elif op_t is OpNanAdd:
        return nan_add(acc, x)
    elif op_t is OpNanMul:
        if value_t is cython.floatcomplex or value_t is cython.doublecomplex:
            return (acc * x) if x == x else acc   # a product with 1+0j is not exact (see kernels.pyx)
        return acc * nan_to(x, one)
    elif op_t is OpFmax or op_t is OpFmin:
        return x if beats(op, acc, x) else acc
    elif value_t is double:
        return cyscatter_max_d(acc, x) if op_t is OpMax else cyscatter_min_d(acc, x)
    elif value_t is float:
        return cyscatter_max_f(acc, x) if op_t is OpMax else cyscatter_min_f(acc, x)
    else:
        return x if beats(op, acc, x) else acc


cdef inline value_t running(op_t op, value_t acc, value_t x) noexcept nogil:
    """`combine` for a running value kept in a register (segments and runs of one-element rows): max/min take
    a branch, not a select. The winner rarely changes, so the branch is predicted and the compares do not form
    one long dependency chain (NOTES.md v18)."""
    if op_t is OpMax or op_t is OpMin or op_t is OpFmax or op_t is OpFmin:
        if beats(op, acc, x):
            acc = x
        return acc
    else:
        return combine(op, acc, x)


# ---- kernels ---------------------------------------------------------------------------------------------------

cdef Py_ssize_t segment_reduce_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] indptr,
                                    value_t[:, :, ::contiguous] out) noexcept nogil

cdef Py_ssize_t segment_reduce_counted_rows(nan_op_t op, const nan_value_t[:, :, ::contiguous] src,
                                            const index_t[::1] indptr, nan_value_t[:, :, ::contiguous] out,
                                            count_t[:, :, ::contiguous] counts, bint counting) noexcept nogil

cdef Py_ssize_t scatter_runs_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                  value_t[:, :, ::contiguous] out, int64_t* counts, int mode) noexcept nogil

cdef Py_ssize_t scatter_arg_rows(extreme_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                 value_t[:, :, ::contiguous] best, int64_t[:, :, ::contiguous] arg,
                                 int mode) noexcept nogil
