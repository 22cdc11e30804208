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
# for every NaN src[o, k, f], `counts` C-contiguous (outer, size, inner). Either or both. With `bits` not NULL
# (zeros, (outer, n, ceil(inner / 16)) C-contiguous uint16): the NaN positions of each row in range that holds a
# NaN, bit f % 16 of word f // 16 of bits[o, k] for feature f (see count_words). Strides in elements (0 allowed:
# a broadcast src). Feature columns [f0, f1) (f0 a multiple of 16 when `bits` is given) and batch slices
# [o0, o1) only, so that threads given disjoint ranges never share an element or a word. Returns 0 when src held
# no NaN there (counts untouched), else a positive number.
cdef Py_ssize_t nan_pass(const nan_value_t* src, Py_ssize_t outer_stride, Py_ssize_t row_stride,
                         Py_ssize_t feature_stride, const index_t* index, Py_ssize_t n, nan_value_t* out,
                         Py_ssize_t out_outer_stride, Py_ssize_t out_row_stride, Py_ssize_t out_feature_stride,
                         nan_count_t* counts, Py_ssize_t size, Py_ssize_t inner, uint16_t* bits,
                         Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f0, Py_ssize_t f1) noexcept nogil

# counts[o, index[k], f] += 1 for every bit f % 16 set in word f // 16 of bits[o, k] (the NaN positions nan_pass
# wrote, (outer, n, ceil(inner / 16)) C-contiguous uint16), features [f0, f1) (f0 a multiple of 16) and batch
# slices [o0, o1); entries outside [0, size) skipped. Returns 0 when no bit was set there, else a positive number.
cdef Py_ssize_t count_words(const uint16_t* bits, const index_t* index, Py_ssize_t n, nan_count_t* counts,
                            Py_ssize_t size, Py_ssize_t inner, Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f0,
                            Py_ssize_t f1) noexcept nogil
