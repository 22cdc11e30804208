# cython: language_level=3
"""C-level surface of the NaN-counting kernel of the NaN-skipping ops (nanmean's divisor, their fill_value), for
other Cython code to cimport.

Same conventions as ``cyscatter/kernels.pxd``: the canonical view ``(outer, n, inner)``, ``noexcept nogil``, no
exceptions. A NaN is NumPy's isnan (a complex value when either part is); integers have none.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t

from cyscatter.kernels cimport index_t
from cyscatter.group_kernels cimport nan_value_t

# NaN counts per output element: the narrowest type that holds the most entries any destination row has.
ctypedef fused nan_count_t:
    uint8_t
    uint16_t
    int32_t
    int64_t

# One pass over the entries k in index order, entries whose index is outside [0, size) skipped (`kernels.pxd`
# check_and_count applies the call's index mode first). With `out` not NULL: out[o, index[k], f] = nansum's
# update (`kernels.pxd` nan_add, bit for bit) by src[o, k, f]. With `counts` not NULL: counts[o, index[k], f] += 1
# for every NaN src[o, k, f], `counts` C-contiguous (outer, size, inner). Either or both. Strides in elements (0
# allowed: a broadcast src). Feature columns [f0, f1) and batch slices [o0, o1) only, so that threads given
# disjoint ranges never share an element. Returns 0 when src held no NaN there (counts untouched), else a
# positive number.
cdef Py_ssize_t nan_pass(const nan_value_t* src, Py_ssize_t outer_stride, Py_ssize_t row_stride,
                         Py_ssize_t feature_stride, const index_t* index, Py_ssize_t n, nan_value_t* out,
                         Py_ssize_t out_outer_stride, Py_ssize_t out_row_stride, Py_ssize_t out_feature_stride,
                         nan_count_t* counts, Py_ssize_t size, Py_ssize_t inner, Py_ssize_t o0, Py_ssize_t o1,
                         Py_ssize_t f0, Py_ssize_t f1) noexcept nogil
