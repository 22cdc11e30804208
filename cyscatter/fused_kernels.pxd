# cython: language_level=3
"""C-level surface of the fused gather-scatter kernels (message passing in one pass), for other Cython code to
cimport.

The edges are held as CSR by table row: row r's edges are ``p in [indptr[r], indptr[r + 1])``, each reading the
row ``cols[p]`` of the other side and the weight ``weight[edge_ids[p] * heads + h]`` (``edge_ids`` NULL: the
position p itself). `gather_scatter_csr` computes, for every row r and batch slice o,

    out[o, r, :] = op(... op(out[o, r, :], w * src[o, cols[p0], :]) ..., w * src[o, cols[p1], :])

in CSR order, which is index order when the CSR was built by a stable sort (`build_csr`), so the result is
bitwise that of ``scatter(gather(src, cols) * w, rows)``. Threads own whole rows: no atomics, the same bits on
any thread count. Same conventions as ``kernels.pxd``: the canonical view ``(outer, rows, inner)``, the op fixed at
compile time by a tag type, ``noexcept nogil``, and a status instead of exceptions (``-1``: success).

The max/min reverse kernels find an edge's "tie" with the output element exactly as the forward pass built it:
the message ``w * x`` equals ``out`` (``-0.0`` and ``+0.0`` differ) or both are NaN.
"""
from cython.view cimport contiguous
from libc.stdint cimport int64_t

from cyscatter.kernels cimport op_t, value_t
from cyscatter.group_kernels cimport nan_op_t, nan_value_t, count_t

# Values the max/min reverse kernels take (gradients of ordered ops are real).
ctypedef fused real_t:
    float
    double

# -1, or the first position p whose cols[p] leaves [0, table_rows), or (as -2 - r) the first row r whose bounds
# leave [0, len(cols)] or decrease.
cdef Py_ssize_t check_csr(const int64_t[::1] indptr, const int64_t[::1] cols, Py_ssize_t table_rows) noexcept nogil

# Stable counting sort of the edges by `key` (n,), values in [0, size): indptr (size + 1,), edge_ids (m,) and
# cols (m,) = other[edge_ids]. Edges whose key or other value is out of range ([0, size), [0, other_size)) are
# left out under drop; under raise the first such position is returned before anything is written. m is the
# number of kept edges (indptr[size]). -1 on success.
cdef Py_ssize_t build_csr(const int64_t[::1] key, Py_ssize_t size, const int64_t[::1] other, Py_ssize_t other_size,
                          bint drop, int64_t[::1] indptr, int64_t[::1] edge_ids, int64_t[::1] cols) noexcept nogil

# The fused forward pass (see the module docstring); `weight` NULL: unweighted; `heads` weights per edge, each
# scaling `inner // heads` consecutive features. Returns check_csr's status (nothing written on failure).
cdef Py_ssize_t gather_scatter_csr(op_t op, const value_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                                   const int64_t[::1] cols, const int64_t* edge_ids, const value_t* weight,
                                   Py_ssize_t heads, value_t[:, :, ::contiguous] out, int num_threads) noexcept nogil

# The forward pass of a NaN-skipping op on float or complex values: as `gather_scatter_csr` (a NaN message, w * x
# as the value type rounds it, is left out: nansum/nanprod skip it, fmax/fmin let it lose), and, when `counts` is
# not NULL (strides c_outer, c_row in items, out's shape), the non-NaN messages of each output element are added
# to it (nanmean's divisor; an element whose messages are all NaN counts 0, an empty group).
cdef Py_ssize_t gather_scatter_nan_csr(nan_op_t op, const nan_value_t[:, :, ::contiguous] src,
                                       const int64_t[::1] indptr, const int64_t[::1] cols, const int64_t* edge_ids,
                                       const nan_value_t* weight, Py_ssize_t heads,
                                       nan_value_t[:, :, ::contiguous] out, count_t* counts, Py_ssize_t c_outer,
                                       Py_ssize_t c_row, int num_threads) noexcept nogil

# max/min, by destination row: result[o, r, f] = (sum over the edges p of row r that tie with out[o, r, f] of
# a[o, r, f] (share mode: a = grad_out, tangent_src and tangent_w NULL), or of
# w * tangent_src[o, cols[p], f] + tangent_w[e] * src[o, cols[p], f] (tangent mode)) / (number of such edges,
# plus one where `dst_init`, an in-place scatter's initial value, ties too); 0 where nothing ties. Share mode
# gives each tied candidate its part of the cotangent; tangent mode is the JVP.
cdef void extreme_ties_csr(bint is_max, const real_t[:, :, ::contiguous] src, const int64_t[::1] indptr,
                           const int64_t[::1] cols, const int64_t* edge_ids, const real_t* weight, Py_ssize_t heads,
                           const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] grad_out,
                           const real_t* tangent_src, const real_t* tangent_w, const real_t* dst_init,
                           real_t[:, :, ::contiguous] result, int num_threads) noexcept nogil

# max/min, by source row (the transposed CSR: cols = destination rows): result[o, s, f] = sum over the edges p
# of source row s whose message ties with out[o, cols[p], f] of w * share[o, cols[p], f], in edge order.
cdef void extreme_back_csr(const real_t[:, :, ::contiguous] src, const int64_t[::1] indptr, const int64_t[::1] cols,
                           const int64_t* edge_ids, const real_t* weight, Py_ssize_t heads,
                           const real_t[:, :, ::contiguous] out, const real_t[:, :, ::contiguous] share,
                           real_t[:, :, ::contiguous] result, int num_threads) noexcept nogil

# Per edge e (gather row s = gather[e], scatter row d = scatter[e]; dropped edges, either value out of range,
# give 0): result[e, h] = sum over o and the features f of head h of g[o, d, f] * src[o, s, f] (the sampled
# dense-dense product, SDDMM: the weight gradient of add), counting only the features whose message ties with
# out[o, d, f] when `out_ties` is given (max/min; `weight` then gives the messages).
cdef void edge_dots(const value_t[:, :, ::contiguous] g, const value_t[:, :, ::contiguous] src,
                    const int64_t[::1] gather, const int64_t[::1] scatter, value_t[:, ::1] result,
                    const value_t* out_ties, bint is_max, const value_t* weight, int num_threads) noexcept nogil
