# cython: language_level=3
"""C-level surface of the NaN-counting kernel of the NaN-skipping ops (nanmean's divisor, their fill_value), for
other Cython code to cimport.

Same conventions as ``cyscatter/kernels.pxd``: the canonical view ``(outer, n, inner)``, ``noexcept nogil``, no
exceptions. A NaN is NumPy's isnan (a complex value when either part is); integers have none.
"""
from cyscatter.kernels cimport index_t
from cyscatter.group_kernels cimport nan_value_t, count_t

# counts[o, index[k], f] -= 1 for every NaN src[o, k, f], k in index order; entries whose index is outside
# [0, size) are skipped (the sum pass before it has applied the call's index mode). Strides of `src` in elements
# (0 allowed: a broadcast src); `counts` is C-contiguous (outer, size, inner). Feature columns [f0, f1) and batch
# slices [o0, o1) only, so that threads given disjoint ranges never share a count. Returns 0 when no NaN was
# found there (counts untouched), else a positive number.
cdef Py_ssize_t uncount_nan(const nan_value_t* src, Py_ssize_t outer_stride, Py_ssize_t row_stride,
                            Py_ssize_t feature_stride, const index_t* index, Py_ssize_t n, count_t* counts,
                            Py_ssize_t size, Py_ssize_t inner, Py_ssize_t o0, Py_ssize_t o1, Py_ssize_t f0,
                            Py_ssize_t f1) noexcept nogil
