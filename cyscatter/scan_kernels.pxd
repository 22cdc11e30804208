# cython: language_level=3
"""C-level surface of the grouped-scan kernels (cumulative sum, product, max and min within each group), for
other Cython code to cimport.

Same conventions as ``cyscatter/kernels.pxd``: the canonical view ``(outer, n, inner)``, the op fixed at compile
time by a tag type, ``noexcept nogil``, a status return instead of exceptions (``-1`` on success, else the first
index position out of range under MODE_RAISE, found before anything is written). Element rules are the core's
(``combine``/``beats`` of group_kernels.pxd): NaN wins max/min, ``-0.0 < +0.0``.
"""
from cython.view cimport contiguous
from libc.stdint cimport int64_t

from cyscatter.kernels cimport op_t, value_t, index_t

# out[o, k, f] = op over src[o, p, f] for the members p of k's group (index[p] == index[k]) up to k in scan order
# (index order, or its reverse when `reverse`), k itself included unless `exclusive` (then the identity for the
# first member). `table` (size, inner) holds the running value of each group; it is filled with `identity` per
# outer row. Entries out of range under MODE_DROP get `identity`. With `track` (max/min), arg[o, k, f] is the
# position whose value out[o, k, f] is (the first one to reach the running extremum; -1: none), using `targ`
# (size, inner) as its running table.
cdef Py_ssize_t scan_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                          value_t[:, :, ::contiguous] out, value_t[:, ::contiguous] table, value_t identity,
                          bint reverse, bint exclusive, int mode, bint track,
                          int64_t[:, :, ::contiguous] arg, int64_t[:, ::contiguous] targ) noexcept nogil

# The first-order linear recurrence along each group: new = b[k] + a[k] * prev (prev: the group's last value,
# 0 at first; a[k] * prev is 0 where prev is 0, even for an inf or NaN a[k]), out[k] = new (or prev when
# `exclusive`); dropped entries get 0. The derivatives of the product
# scan are such recurrences, exact where src holds zeros (no division).
cdef Py_ssize_t linear_scan_rows(const value_t[:, :, ::contiguous] b, const value_t[:, :, ::contiguous] a,
                                 const index_t[::1] index, value_t[:, :, ::contiguous] out,
                                 value_t[:, ::contiguous] table, bint reverse, bint exclusive,
                                 int mode) noexcept nogil
