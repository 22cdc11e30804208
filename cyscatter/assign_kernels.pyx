# cython: language_level=3
"""CPU kernels of the assignment ops ("set" / "last" and "first"): the winner pass over the index, and the
NaN-skipping assignments ("nanlast" / "nanfirst").

The rows of "set" / "first" move with the core's gather kernel (``kernels.gather`` on the winners, mode drop), so
only their winner pass lives here; see ``assign_kernels.pxd``.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint64_t

from cyscatter.kernels cimport index_t, MODE_RAISE


# ---- winner pass ----------------------------------------------------------------------------------------------

cdef Py_ssize_t winner_rows(const index_t* index, Py_ssize_t n, Py_ssize_t size, bint last, int64_t* winner,
                            int64_t* counts, int mode) noexcept nogil:
    """One serial pass in index order: the last write of a row wins for `last`, the first for not `last`."""
    cdef Py_ssize_t k
    cdef uint64_t usize = <uint64_t>size
    cdef index_t j
    for k in range(size):
        winner[k] = -1
    for k in range(n):
        j = index[k]
        if <uint64_t>j >= usize:   # negative entries wrap to huge unsigned values: one comparison
            if mode == MODE_RAISE:
                return k
            continue
        if last or winner[j] < 0:
            winner[j] = k
        if counts != NULL:
            counts[j] += 1
    return -1


def winners(const index_t[::1] index not None, int64_t[::1] winner not None, int64_t[::1] counts=None,
            bint last=True, int mode=MODE_RAISE):
    """Fill `winner` (int64, one per destination row) with the position of the last (first) entry reaching each
    row, -1 where none; add each row's entry count to `counts` when given. Returns -1, or under MODE_RAISE the
    position of the first entry outside ``[0, winner.shape[0])``."""
    cdef Py_ssize_t n = index.shape[0], size = winner.shape[0], status
    cdef int64_t* counts_ptr = NULL
    if counts is not None:
        if counts.shape[0] != size:
            raise ValueError(f"counts has {counts.shape[0]} rows, winner {size}")
        counts_ptr = &counts[0] if size else NULL
    with nogil:
        status = winner_rows(&index[0] if n else NULL, n, size, last, &winner[0] if size else NULL, counts_ptr,
                             mode)
    return status


# ---- NaN-skipping assignment ----------------------------------------------------------------------------------

ctypedef fused nan_value_t:
    float
    double
    float complex
    double complex


def nan_assign(const nan_value_t[:, :, :] src not None, const index_t[::1] index not None,
               nan_value_t[:, :, :] out not None, bint last=True):
    """out[o, index[k], f] = src[o, k, f] for the last (`last`) or first non-NaN entry (complex: neither part
    NaN) of each output element; elements without one keep their values, entries outside ``[0, out.shape[1])``
    are skipped (a raising plan is checked before). One pass in index order for last, in reverse for first, so
    the final write is the winner: no memory beyond `out`."""
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = out.shape[1]
    cdef Py_ssize_t o, i, k, f
    cdef uint64_t usize = <uint64_t>size
    cdef index_t j
    cdef nan_value_t v
    if index.shape[0] != n or out.shape[0] != outer or out.shape[2] != inner:
        raise ValueError(f"nan_assign: src {tuple(src.shape)[:3]}, index ({index.shape[0]},), "
                         f"out {tuple(out.shape)[:3]} do not match")
    with nogil:
        for o in range(outer):
            for i in range(n):
                k = i if last else n - 1 - i
                j = index[k]
                if <uint64_t>j >= usize:
                    continue
                for f in range(inner):
                    v = src[o, k, f]
                    if v == v:
                        out[o, j, f] = v
