# cython: language_level=3
"""CPU kernels of the grouped scans: one pass over the index with a running value per destination row.

Typed-memoryview loops on the canonical (outer, n, inner) view, fused over dtypes, the op fixed at compile time;
they run without the GIL and return a status. The `def` wrappers at the bottom translate the registry's op codes
into tags, check every extent the loops rely on, and are the only entry points the Python layer uses.
"""
cimport cython
from cython.view cimport contiguous
from libc.stdint cimport int64_t, uint64_t

import numpy as np

from cyscatter.kernels cimport (OpAdd, OpMul, OpMax, OpMin, op_t, value_t, index_t, OP_ADD, OP_MUL, OP_MAX,
                                OP_MIN, MODE_RAISE, MODE_DROP, first_out_of_range)
from cyscatter.group_kernels cimport beats, combine, running


# ---- scans -------------------------------------------------------------------------------------------------------

cdef inline void _scan_column(op_t op, const value_t* src, Py_ssize_t src_stride, const index_t* index,
                              Py_ssize_t n, value_t* out, Py_ssize_t out_stride, value_t* table,
                              Py_ssize_t table_stride, Py_ssize_t size, value_t identity, bint reverse,
                              bint exclusive) noexcept nogil:
    """`scan_rows` for one-element rows: raw pointers, the flags decided once outside the loop (memoryview
    indexing and per-element flag tests made the general loop about 4x slower: 6.9 ms against 1.75 ms for 1e6
    float64 entries in 100 groups, benchmarks/bench_scan.py's case)."""
    cdef Py_ssize_t i, k = n - 1 if reverse else 0, step = -1 if reverse else 1
    cdef index_t j
    cdef value_t cur, new
    if exclusive:
        for i in range(n):
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:
                out[k * out_stride] = identity
            else:
                cur = table[j * table_stride]
                out[k * out_stride] = cur
                table[j * table_stride] = running(op, cur, src[k * src_stride])
            k += step
    else:
        for i in range(n):
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:
                out[k * out_stride] = identity
            else:
                new = running(op, table[j * table_stride], src[k * src_stride])
                table[j * table_stride] = new
                out[k * out_stride] = new
            k += step


cdef inline void _scan_wide(op_t op, const value_t* src, Py_ssize_t src_stride, const index_t* index,
                            Py_ssize_t n, value_t* out, Py_ssize_t out_stride, value_t* table,
                            Py_ssize_t table_stride, Py_ssize_t width, Py_ssize_t size, value_t identity,
                            bint reverse, bint exclusive) noexcept nogil:
    """`_scan_column` for rows of `width` adjacent elements (features): one row update per entry."""
    cdef Py_ssize_t i, f, k = n - 1 if reverse else 0, step = -1 if reverse else 1
    cdef index_t j
    cdef value_t* row
    cdef value_t* dst
    cdef const value_t* x
    for i in range(n):
        j = index[k]
        dst = out + k * out_stride
        if <uint64_t>j >= <uint64_t>size:
            for f in range(width):
                dst[f] = identity
        else:
            row = table + j * table_stride
            x = src + k * src_stride
            if exclusive:
                for f in range(width):
                    dst[f] = row[f]
                    row[f] = combine(op, row[f], x[f])
            else:
                for f in range(width):
                    row[f] = combine(op, row[f], x[f])
                    dst[f] = row[f]
        k += step


cdef Py_ssize_t scan_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                          value_t[:, :, ::contiguous] out, value_t[:, ::contiguous] table, value_t identity,
                          bint reverse, bint exclusive, int mode, bint track,
                          int64_t[:, :, ::contiguous] arg, int64_t[:, ::contiguous] targ) noexcept nogil:
    return _scan_rows(op, src, index, out, table, identity, reverse, exclusive, mode, track, arg, targ, False, 0)


cdef Py_ssize_t _scan_rows(op_t op, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
                           value_t[:, :, ::contiguous] out, value_t[:, ::contiguous] table, value_t identity,
                           bint reverse, bint exclusive, int mode, bint track,
                           int64_t[:, :, ::contiguous] arg, int64_t[:, ::contiguous] targ,
                           bint keep_table, int64_t offset) noexcept nogil:
    """`scan_rows`, or with `keep_table` starting from the running values `table` (and `targ`) hold instead of
    `identity`: a scan continued over consecutive blocks of rows (one batch slice; `scan(keep_table=True)`).
    `offset` is added to the positions `targ` and `arg` record: a block's first row's position in the whole
    src, so the holders carried from block to block stay comparable."""
    cdef Py_ssize_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2], size = table.shape[0]
    cdef Py_ssize_t o, t, k, f, bad
    cdef index_t j
    cdef value_t cur, x
    if mode == MODE_RAISE:
        bad = first_out_of_range(index, size)
        if bad >= 0:
            return bad
    for o in range(outer):
        for k in range(size if not keep_table else 0):
            for f in range(inner):
                table[k, f] = identity
                if track:
                    targ[k, f] = -1
        if not track and n > 0 and size > 0 and inner > 0:   # the value-only scans: pointer loops
            if inner == 1:   # the common case: one value per entry
                _scan_column(op, &src[o, 0, 0], src.strides[1] // sizeof(value_t), &index[0], n, &out[o, 0, 0],
                             out.strides[1] // sizeof(value_t), &table[0, 0], table.strides[0] // sizeof(value_t),
                             size, identity, reverse, exclusive)
            else:
                _scan_wide(op, &src[o, 0, 0], src.strides[1] // sizeof(value_t), &index[0], n, &out[o, 0, 0],
                           out.strides[1] // sizeof(value_t), &table[0, 0], table.strides[0] // sizeof(value_t),
                           inner, size, identity, reverse, exclusive)
            continue
        for t in range(n):
            k = n - 1 - t if reverse else t
            j = index[k]
            if <uint64_t>j >= <uint64_t>size:   # dropped (a negative j wraps to a huge unsigned value)
                for f in range(inner):
                    out[o, k, f] = identity
                    if track:
                        arg[o, k, f] = -1
                continue
            for f in range(inner):
                cur = table[j, f]
                x = src[o, k, f]
                if exclusive:
                    out[o, k, f] = cur
                    if track:
                        arg[o, k, f] = targ[j, f]
                if op_t is OpMax or op_t is OpMin:
                    if beats(op, cur, x) or (track and targ[j, f] < 0):   # ties keep the first position
                        table[j, f] = x
                        if track:
                            targ[j, f] = k + offset
                else:
                    table[j, f] = combine(op, cur, x)
                if not exclusive:
                    out[o, k, f] = table[j, f]
                    if track:
                        arg[o, k, f] = targ[j, f]
    return -1


cdef inline value_t _carried(value_t a, value_t prev) noexcept nogil:
    """a * prev, but 0 where prev is 0 and the product NaN (a inf or NaN): a running sum that is still empty (or
    exactly 0) carries nothing, so a member that no later output reads (an exclusive scan's last) or an inf
    factor meeting no cotangent yet does not turn the derivatives NaN (torch's and JAX's rules give those)."""
    cdef value_t t = a * prev
    if t != t and prev == 0:
        return 0
    return t


cdef Py_ssize_t linear_scan_rows(const value_t[:, :, ::contiguous] b, const value_t[:, :, ::contiguous] a,
                                 const index_t[::1] index, value_t[:, :, ::contiguous] out,
                                 value_t[:, ::contiguous] table, bint reverse, bint exclusive,
                                 int mode) noexcept nogil:
    return _linear_scan_rows(b, a, index, out, table, reverse, exclusive, mode, False)


cdef Py_ssize_t _linear_scan_rows(const value_t[:, :, ::contiguous] b, const value_t[:, :, ::contiguous] a,
                                  const index_t[::1] index, value_t[:, :, ::contiguous] out,
                                  value_t[:, ::contiguous] table, bint reverse, bint exclusive,
                                  int mode, bint keep_table) noexcept nogil:
    """`linear_scan_rows`, or with `keep_table` continuing from the values `table` holds (one batch slice's
    consecutive blocks of rows, as `_scan_rows`)."""
    cdef Py_ssize_t outer = b.shape[0], n = b.shape[1], inner = b.shape[2], size = table.shape[0]
    cdef Py_ssize_t o, t, k, f, bad, step = -1 if reverse else 1
    cdef Py_ssize_t bs = b.strides[1] // sizeof(value_t), As = a.strides[1] // sizeof(value_t)
    cdef Py_ssize_t os = out.strides[1] // sizeof(value_t), ts = table.strides[0] // sizeof(value_t)
    cdef index_t j
    cdef value_t prev
    cdef value_t* row
    cdef value_t* dst
    cdef const value_t* bk
    cdef const value_t* ak
    if mode == MODE_RAISE:
        bad = first_out_of_range(index, size)
        if bad >= 0:
            return bad
    if n == 0 or inner == 0:
        return -1
    for o in range(outer):
        for k in range(size if not keep_table else 0):
            for f in range(inner):
                table[k, f] = 0
        k = n - 1 if reverse else 0
        for t in range(n):   # raw row pointers: memoryview indexing per element cost ~4x (see _scan_column)
            j = index[k]
            dst = &out[o, 0, 0] + k * os
            if <uint64_t>j >= <uint64_t>size:
                for f in range(inner):
                    dst[f] = 0
            else:
                row = &table[0, 0] + j * ts
                bk = &b[o, 0, 0] + k * bs
                ak = &a[o, 0, 0] + k * As
                if exclusive:
                    for f in range(inner):
                        prev = row[f]
                        dst[f] = prev
                        row[f] = bk[f] + _carried(ak[f], prev)
                else:
                    for f in range(inner):
                        row[f] = bk[f] + _carried(ak[f], row[f])
                        dst[f] = row[f]
            k += step
    return -1


cdef void route_rows(const value_t[:, :, ::contiguous] grad, const int64_t[:, :, ::contiguous] arg,
                     value_t[:, :, ::contiguous] out) noexcept nogil:
    """out[o, arg[o, k, f], f] += grad[o, k, f] for arg >= 0, in k order: the adjoint of picking the running
    extremum's holder (max/min scans). `out` starts at 0; the wrapper checks every arg is below n."""
    cdef Py_ssize_t outer = grad.shape[0], n = grad.shape[1], inner = grad.shape[2]
    cdef Py_ssize_t o, k, f
    cdef int64_t p
    for o in range(outer):
        for k in range(n):
            for f in range(inner):
                p = arg[o, k, f]
                if p >= 0:
                    out[o, p, f] = out[o, p, f] + grad[o, k, f]


# ---- Python entry points ---------------------------------------------------------------------------------------
# The loops run without bounds checks, so the wrappers check every extent they rely on.

cdef int _check(str kernel, tuple src_shape, Py_ssize_t index_len, tuple arrays, tuple tables,
                Py_ssize_t size) except -1:
    if index_len != src_shape[1]:
        raise ValueError(f"{kernel}: index has {index_len} entries for {src_shape[1]} rows of src")
    for name, shape in arrays:
        if shape != src_shape:
            raise ValueError(f"{kernel}: {name} shape {shape} != src shape {src_shape}")
    for name, shape in tables:
        if shape != (size, src_shape[2]):
            raise ValueError(f"{kernel}: {name} shape {shape} != ({size}, {src_shape[2]})")
    return 0


cdef tuple _shape3(const value_t[:, :, ::contiguous] a):
    return (a.shape[0], a.shape[1], a.shape[2])


def scan(int opcode, const value_t[:, :, ::contiguous] src, const index_t[::1] index,
         value_t[:, :, ::contiguous] out, value_t[:, ::contiguous] table, const value_t[::1] identity,
         bint reverse=False, bint exclusive=False, int mode=MODE_RAISE, int64_t[:, :, ::contiguous] arg=None,
         int64_t[:, ::contiguous] targ=None, bint keep_table=False, int64_t arg_offset=0):
    """Run the grouped scan for OP_ADD, OP_MUL, OP_MAX or OP_MIN; `table` (size, inner) is scratch space for the
    running values, `identity` a one-element array holding the start value. With `arg` and `targ` (max/min
    only; shaped as `out` and `table`) also the position each output value comes from. `keep_table` (one batch
    slice only) continues from the running values `table` holds instead of starting at `identity`: a scan
    over consecutive blocks of rows, one call a block, with `arg` positions within the block plus `arg_offset`
    (the block's first row in the whole src, so that `targ` carries whole-src positions). Returns -1 or the
    first bad index position."""
    cdef Py_ssize_t status = -1
    cdef OpAdd add
    cdef OpMul mul
    cdef OpMax mx
    cdef OpMin mn
    cdef bint track = arg is not None
    cdef int64_t[:, :, ::1] no_arg
    cdef int64_t[:, ::1] no_targ
    if opcode not in (OP_ADD, OP_MUL, OP_MAX, OP_MIN):
        raise ValueError(f"scan takes OP_ADD, OP_MUL, OP_MAX or OP_MIN, got op code {opcode}")
    if identity.shape[0] != 1:
        raise ValueError(f"scan: identity has {identity.shape[0]} entries, not 1")
    shape = _shape3(src)
    if keep_table and shape[0] > 1:
        raise ValueError(f"scan: keep_table continues one batch slice's running values, got {shape[0]} slices")
    _check("scan", shape, index.shape[0], (("out", _shape3(out)),),
           (("table", (table.shape[0], table.shape[1])),), table.shape[0])
    if track:
        if opcode not in (OP_MAX, OP_MIN) or targ is None:
            raise ValueError("scan: arg (with targ) is for OP_MAX and OP_MIN only")
        _check("scan", shape, index.shape[0], (("arg", (arg.shape[0], arg.shape[1], arg.shape[2])),),
               (("targ", (targ.shape[0], targ.shape[1])),), table.shape[0])
    else:
        no_arg = np.zeros((1, 1, 1), np.int64)
        no_targ = np.zeros((1, 1), np.int64)
        arg, targ = no_arg, no_targ
    with nogil:
        if opcode == OP_ADD:
            status = _scan_rows(add, src, index, out, table, identity[0], reverse, exclusive, mode, track, arg,
                               targ, keep_table, arg_offset)
        elif opcode == OP_MUL:
            status = _scan_rows(mul, src, index, out, table, identity[0], reverse, exclusive, mode, track, arg,
                               targ, keep_table, arg_offset)
        elif opcode == OP_MAX:
            status = _scan_rows(mx, src, index, out, table, identity[0], reverse, exclusive, mode, track, arg, targ,
                               keep_table, arg_offset)
        else:
            status = _scan_rows(mn, src, index, out, table, identity[0], reverse, exclusive, mode, track, arg, targ,
                               keep_table, arg_offset)
    return status


def linear_scan(const value_t[:, :, ::contiguous] b, const value_t[:, :, ::contiguous] a,
                const index_t[::1] index, value_t[:, :, ::contiguous] out, value_t[:, ::contiguous] table,
                bint reverse=False, bint exclusive=False, int mode=MODE_RAISE, bint keep_table=False):
    """Run the linear recurrence ``new = b + a * prev`` along each group (`table`: (size, inner) scratch; a
    product a * prev is 0 where prev is 0, even for an inf or NaN a);
    returns -1 or the first bad index position. `keep_table` (one batch slice only) continues from the values
    `table` holds instead of 0, as `scan`'s."""
    cdef Py_ssize_t status = -1
    if keep_table and b.shape[0] > 1:
        raise ValueError(f"linear_scan: keep_table continues one batch slice's values, got {b.shape[0]} slices")
    _check("linear_scan", _shape3(b), index.shape[0], (("a", _shape3(a)), ("out", _shape3(out))),
           (("table", (table.shape[0], table.shape[1])),), table.shape[0])
    with nogil:
        status = _linear_scan_rows(b, a, index, out, table, reverse, exclusive, mode, keep_table)
    return status


def route(const value_t[:, :, ::contiguous] grad, const int64_t[:, :, ::contiguous] arg,
          value_t[:, :, ::contiguous] out):
    """Add each grad[o, k, f] into out[o, arg[o, k, f], f] (skipping arg < 0); `out` shaped as `grad`."""
    shape = _shape3(grad)
    if (arg.shape[0], arg.shape[1], arg.shape[2]) != shape or _shape3(out) != shape:
        raise ValueError(f"route: arg {(arg.shape[0], arg.shape[1], arg.shape[2])} and out {_shape3(out)} must "
                         f"have grad's shape {shape}")
    if arg.shape[0] and arg.shape[1] and arg.shape[2] and np.asarray(arg).max() >= shape[1]:
        raise ValueError(f"route: arg holds a position past {shape[1] - 1}")
    with nogil:
        route_rows(grad, arg, out)
