# cython: language_level=3
"""C-level surface of the assignment kernels (ops "set" / "last" and "first"), for other Cython code to cimport.

An assignment is not a reduction: each destination row takes one entry's row, the last (set) or the first
(first) in index order that reaches it. The kernels split it in two passes: `winner_rows` finds, for every
destination row, the position of its winning entry (an O(n) pass over the index only, serial in k, so the result
is deterministic whatever the thread count), and the core's gather kernel (``cyscatter.kernels.gather_layout``)
then moves the winning rows as bytes, so every dtype gather moves is assigned. Same conventions as
``cyscatter/kernels.pxd``: ``noexcept nogil`` and a status return (``-1`` on success).
"""
from libc.stdint cimport int64_t

from cyscatter.kernels cimport index_t

# winner[j] = the position k of the last (`last` true) or first entry with index[k] == j, -1 where none; with
# `counts` (or NULL), counts[j] += 1 per entry. Entries outside [0, size) are skipped under MODE_DROP and end
# the pass under MODE_RAISE, returning their position (winner and counts are then partly written).
cdef Py_ssize_t winner_rows(const index_t* index, Py_ssize_t n, Py_ssize_t size, bint last, int64_t* winner,
                            int64_t* counts, int mode) noexcept nogil
