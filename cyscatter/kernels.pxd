# cython: language_level=3
"""C-level surface of the cyscatter CPU kernels, for other Cython code to cimport.

Every kernel works on the canonical view ``(outer, n, inner)`` (see ``cyscatter/_backends/host.py``): ``outer`` is
the product of the batch dims before ``axis``, ``n`` the number of index entries, ``inner`` the product of the
feature dims. Destination rows are addressed by a flat int32/int64 index of length ``n``. Kernels never raise:
they return ``-1`` on success or the first offending index position, and the caller raises.
"""
cimport cython
from cython.view cimport contiguous
from libc.math cimport signbit
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

# Op tags: empty structs, so that `if op_t is OpMax` is decided when Cython specialises the fused kernel.
cdef struct OpAdd:
    char _tag
cdef struct OpSub:
    char _tag
cdef struct OpMul:
    char _tag
cdef struct OpDiv:
    char _tag
cdef struct OpMax:
    char _tag
cdef struct OpMin:
    char _tag
# NaN-skipping twins: a NaN src entry is left out (nansum, nanprod); fmax/fmin (alias nanmax/nanmin)
# follow NumPy's np.fmax/np.fmin, a NaN on either side loses. Integers have no NaN: they run as add/mul/max/min.
cdef struct OpNanAdd:
    char _tag
cdef struct OpNanMul:
    char _tag
cdef struct OpFmax:
    char _tag
cdef struct OpFmin:
    char _tag

ctypedef fused op_t:
    OpAdd
    OpSub
    OpMul
    OpDiv
    OpMax
    OpMin
    OpNanAdd
    OpNanMul
    OpFmax
    OpFmin

# Value types the reduction kernels are compiled for; other dtypes are widened by the Python layer.
ctypedef fused value_t:
    float
    double
    int32_t
    int64_t
    uint64_t
    float complex
    double complex

ctypedef fused index_t:
    int32_t
    int64_t

# Gather only moves bytes, so it is compiled per item size, not per dtype (wider items travel as several
# uint64 words, odd sizes as bytes).
ctypedef fused item_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

# Op codes, in the order of the registry in _ops.py (the Python layer passes them to `scatter_reduce`).
cpdef enum OpCode:
    OP_ADD = 0
    OP_SUB = 1
    OP_MUL = 2
    OP_DIV = 3
    OP_MAX = 4
    OP_MIN = 5
    # 6 and 7 are reserved (set / first)
    OP_NANADD = 8
    OP_NANMUL = 9
    OP_FMAX = 10
    OP_FMIN = 11


# ---- NaN-skipping element rules (the ops above from OpNanAdd on) --------------------------------------------
# NaN is NumPy's isnan: a complex value is NaN when either part is (C's == on complex compares both parts), an
# integer never is (the compiler folds ``x == x`` away, so the integer loops are add/mul/max/min exactly).

cdef extern from "include/_cpu.h" nogil:
    float cyscatter_nan_to_f(float x, float fill)
    double cyscatter_nan_to_d(double x, double fill)

cdef inline value_t nan_to(value_t x, value_t fill) noexcept nogil:
    """`x`, or `fill` when `x` is NaN; a bitwise select for float/double (no branch, and the row loops stay
    vectorised), a conditional for complex."""
    if value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return x
    elif value_t is float:
        return cyscatter_nan_to_f(x, fill)
    elif value_t is double:
        return cyscatter_nan_to_d(x, fill)
    else:
        return x if x == x else fill


cdef inline value_t nan_add(value_t acc, value_t x) noexcept nogil:
    """nansum's update: acc + x, or acc as it is where x is NaN (the entry is absent). For float/double x is
    replaced by -0.0, the sum's exact identity (acc + -0.0 is acc bit for bit, a -0.0 acc included; +0.0 would
    turn it into +0.0), through the bitwise select; complex selects the result."""
    if value_t is float:
        return acc + cyscatter_nan_to_f(x, -0.0)
    elif value_t is double:
        return acc + cyscatter_nan_to_d(x, -0.0)
    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return acc + x
    else:
        return (acc + x) if x == x else acc


cdef inline bint replaces_fmax(value_t cur, value_t new) noexcept nogil:
    """Whether `new` replaces `cur` under fmax: a NaN `new` never does, a NaN `cur` loses to any number, then
    larger wins and +0.0 beats -0.0 (as max: order independent, unlike C's fmax on zeros)."""
    if value_t is float or value_t is double:
        return ((new > cur) | ((cur != cur) & (new == new))
                | ((new == 0) & (cur == 0) & (signbit(cur) != 0) & (signbit(new) == 0)))
    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return new > cur
    else:
        return False


cdef inline bint replaces_fmin(value_t cur, value_t new) noexcept nogil:
    """fmin's twin of `replaces_fmax`: smaller wins, -0.0 beats +0.0, NaN loses."""
    if value_t is float or value_t is double:
        return ((new < cur) | ((cur != cur) & (new == new))
                | ((new == 0) & (cur == 0) & (signbit(new) != 0) & (signbit(cur) == 0)))
    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:
        return new < cur
    else:
        return False


# Index modes understood by the kernels: raise stops at the first bad entry, drop skips it.
cpdef enum IndexMode:
    MODE_RAISE = 0
    MODE_DROP = 1

# Geometry of one call on the canonical view, strides counted in elements. The "entry" side is addressed by the
# position k in the index (scatter's src, gather's out), the "table" side by the row index[k] (scatter's out,
# gather's src).
cdef struct Layout:
    Py_ssize_t outer
    Py_ssize_t n
    Py_ssize_t size
    Py_ssize_t inner
    Py_ssize_t entry_outer_stride
    Py_ssize_t entry_row_stride
    Py_ssize_t table_outer_stride
    Py_ssize_t table_row_stride

# Threads for a call of `work` element updates: `requested`, or the default when 0 (see `set_num_threads`);
# fewer for small work; one in a child forked after threads ran (GNU OpenMP cannot start a team there).
# Every parallel region of the kernels takes its thread count from here.
cdef int team_size(int requested, Py_ssize_t work) noexcept nogil
# First group g whose bounds leave [0, len(order)] or decrease, or len(indptr) - 1 when an entry of `order` outside
# [0, n) is reached; -1 when the groups are safe to walk.
cdef Py_ssize_t first_bad_group(Py_ssize_t n, const int64_t[::1] order, const int64_t[::1] indptr) noexcept nogil
# Whether the float/double sums of several rows into one hold the row in AVX2 registers (`_csrsum.h`; the CPU has
# AVX2 and the tests have not switched it off).
cdef bint registers_on() noexcept nogil

# Pointer-level kernels, run on `num_threads` OpenMP threads (0: the default, see `set_num_threads`); each
# destination element receives its updates in index order whatever the thread count, so results are bitwise
# identical. They return -1 or the first offending index position.
# counts[index[k]] += 1 for the entries in [0, size) (counts may be NULL: a check only); -1, or under MODE_RAISE
# the first position k whose index is outside [0, size) (the entries before it are counted).
cdef Py_ssize_t check_and_count(const index_t* index, Py_ssize_t n, Py_ssize_t size, int64_t* counts,
                                int mode) noexcept nogil

cdef Py_ssize_t scatter_reduce_layout(op_t op, const value_t* src, const index_t* index, value_t* out,
                                      const Layout* layout, int64_t* counts, int mode,
                                      int num_threads) noexcept nogil

cdef Py_ssize_t gather_layout(const item_t* src, const index_t* index, item_t* out, const Layout* layout,
                              int mode, int num_threads) noexcept nogil

cdef Py_ssize_t scatter_reduce_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                    value_t[:, :, ::contiguous] out, int64_t* counts, int mode) noexcept nogil

cdef Py_ssize_t gather_rows(const item_t[:, :, ::contiguous] src, const index_t[::1] index, item_t[:, :, ::contiguous] out,
                            int mode) noexcept nogil

cdef Py_ssize_t first_out_of_range(const index_t[::1] index, Py_ssize_t size) noexcept nogil

# `rows` row updates dst[f] = op(dst[f], src[p * stride + f]), p < rows, f < width, in order, under the element
# rules above, as the scatter loop applies them (vectorised for the common widths); `src` must not overlap `dst`.
cdef void combine_rows(op_t op, value_t* dst, const value_t* src, Py_ssize_t rows, Py_ssize_t stride,
                       Py_ssize_t width) noexcept nogil

cdef void group_exclusive_products(const value_t[:, :, ::contiguous] src, const int64_t[::1] order,
                                   const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials) noexcept nogil


cdef void group_exclusive_products_jvp(const value_t[:, :, ::contiguous] src,
                                       const value_t[:, :, ::contiguous] tangent, const int64_t[::1] order,
                                       const int64_t[::1] indptr, value_t[:, :, ::contiguous] partials,
                                       value_t[:, :, ::contiguous] partials_dot) noexcept nogil


# ---- simple per-op entry points for cimporting code ----------------------------------------------------------
# Fused: Cython picks the specialisation from views declared like these (last axis ``::contiguous``); to pass
# C-contiguous ``::1`` views, name it: ``scatter_add[double, int64_t](src, index, out)``.
cdef inline Py_ssize_t scatter_add(const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                   value_t[:, :, ::contiguous] out) noexcept nogil:
    cdef OpAdd op
    return scatter_reduce_rows(op, src, index, out, NULL, MODE_RAISE)

cdef inline Py_ssize_t scatter_max(const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                   value_t[:, :, ::contiguous] out) noexcept nogil:
    cdef OpMax op
    return scatter_reduce_rows(op, src, index, out, NULL, MODE_RAISE)

cdef inline Py_ssize_t scatter_min(const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                   value_t[:, :, ::contiguous] out) noexcept nogil:
    cdef OpMin op
    return scatter_reduce_rows(op, src, index, out, NULL, MODE_RAISE)

cdef inline Py_ssize_t scatter_mul(const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                                   value_t[:, :, ::contiguous] out) noexcept nogil:
    cdef OpMul op
    return scatter_reduce_rows(op, src, index, out, NULL, MODE_RAISE)
