"""The canonical (outer, rows, inner) view every kernel works on, and the calls into the kernels.

`outer` is the product of the batch dims before `axis`, `rows` the index entries (src side) or destination
rows (dst side), `inner` the product of the feature dims. Reshaping is free for C-ordered inputs; other layouts
are copied once, here and nowhere else.
"""
from __future__ import annotations

import functools
import math
import sys

import numpy as np

from cyscatter import assign_kernels, fused_kernels, group_kernels, kernels, nan_kernels
from cyscatter._arrays.dtypes import is_bfloat16, item_aligned
from cyscatter._arrays.integers import prod
from cyscatter._arrays.protocols import host_asarray, where_is
from cyscatter._arrays.protocols import shape_of as _shape_of
from cyscatter._backends import assign as _assign
from cyscatter._backends.scans import group_scan, linear_scan, route  # noqa: F401  (backend members)
from cyscatter._backends.strided import apart, gather_groups, group_buffer
from cyscatter._registry.ops import Op, get_op
from cyscatter._runtime.threads import MIN_WORK, REGISTER_SUM_MIN_WORK, team

# The backend interface (see `cyscatter._backends.interface`): `cyscatter._backends.cuda` provides the same names for
# CuPy arrays.
xp = np
asarray = host_asarray
name = "host"
raises_in_kernels = True   # the kernels report the first out-of-range entry under mode='raise'
fused_reverse = True
# ufunc reductions called through C-level partials: ndarray.max/.all/.any go through NumPy's Python-level _methods
reduce_max = functools.partial(np.maximum.reduce, axis=None)
reduce_all = functools.partial(np.logical_and.reduce, axis=None)
reduce_any = functools.partial(np.logical_or.reduce, axis=None)
# the pair of indices as it is (`tuple` of a tuple returns it, a C call): host indices are planned where they are
on_host = tuple
shape_of = _shape_of   # any array argument's (a DLPack-only producer's through numpy.from_dlpack)


def divide_by_counts(work3: np.ndarray, counts: np.ndarray, threads: int = 0) -> bool:
    """work3[o, j, :] /= max(counts[j], 1) in one kernel pass; False (nothing done) for the dtypes the kernel
    does not take and for rows whose elements are apart (an `out=` written in place)."""
    return not apart(work3) and kernels.divide_by_counts(work3, counts, threads)


def refuse_dtype(name: str, dtype) -> None:
    """Nothing to refuse: NumPy holds every dtype the planner lets through (bfloat16 too, from ml_dtypes)."""


def divide_by_element_counts(work3: np.ndarray, counts: np.ndarray) -> bool:
    """work3 /= counts (element counts of a NaN-skipping op, work3's shape) in one kernel pass for C-contiguous
    float32/float64 sums and int32/int64 counts; False for the others."""
    if work3.dtype in (np.float32, np.float64) and counts.dtype in (np.int32, np.int64) \
            and work3.flags.c_contiguous and counts.flags.c_contiguous:
        nan_kernels.divide(work3, counts)
        return True
    return False


def cast(arr: np.ndarray, dtype) -> np.ndarray:
    """``arr.astype(dtype, copy=False)``; a C-ordered float16 array to float32 (the dtype float16 accumulates in)
    through `kernels.half_to_float`: the same bits, 2.3x faster than NumPy's element-by-element cast
    (benchmarks/NOTES.md v26)."""
    if (arr.dtype == np.float16 and np.dtype(dtype) == np.float32 and type(arr) is np.ndarray and arr.size
            and arr.dtype.isnative and arr.flags.c_contiguous and arr.flags.aligned):
        out = np.empty(arr.shape, np.float32)
        kernels.half_to_float(arr.reshape(-1).view(np.uint16), out.reshape(-1))
        return out
    return arr.astype(dtype, copy=False)


def rows_view(arr: np.ndarray, dtype, outer: int, rows: int, inner: int) -> np.ndarray:
    """`arr` as an (outer, rows, inner) array of `dtype` with unit inner stride, copied only when needed.

    The kernels take ``[:, :, ::contiguous]`` views: rows may be strided (batch or index dims of any layout),
    the elements of one row must be adjacent.
    """
    a = arr if arr.dtype == dtype else cast(arr, dtype)
    if not (a.flags.aligned and a.dtype.kind != "c") and not item_aligned(a):
        a = a.copy()   # e.g. buffers unpickled from another process: the kernels load whole items
    try:   # the method, not np.reshape: no Python-level frames
        a3 = a.reshape((outer, rows, inner), copy=False)
    except ValueError:
        return np.ascontiguousarray(a).reshape(outer, rows, inner)
    if a3.strides[2] == a3.itemsize:
        return a3
    return kernels.unit_inner_view(a3) if inner <= 1 else np.ascontiguousarray(a3)


def node_rows(arr: np.ndarray, dtype, outer: int, rows: int, inner: int) -> np.ndarray:
    """`rows_view` of a node table for the fused kernels, which read a native float16/bfloat16 one as it is
    when they compute in float32 or float64 (each row widened exactly as it is read): that table keeps its
    dtype, any other is converted to `dtype`."""
    if arr.dtype.name in HALF_IN_PLACE and arr.dtype.isnative and np.dtype(dtype) in (np.float32, np.float64):
        dtype = arr.dtype
    return rows_view(arr, dtype, outer, rows, inner)


class StagedRows:
    """A src that the scatter kernel reads as it is, a cached block of rows at a time (`kernels.scatter_staged`):
    converted to `dtype` there and, for `transpose` (one-element rows under several batch slices: features-first
    data), scattered as the transposed problem. Only `run_scatter` takes it, and only with a stage `code`; one
    without (`chunks.chunked_source`: a conversion no stage makes, float16 to float64) only `converted_chunks`
    reads."""
    __slots__ = ("array", "code", "dtype", "shape", "transpose")
    staged = True   # what the `Reverse` context asks of a source it may read by chunks

    def __init__(self, array: np.ndarray, dtype: np.dtype, code: int | None, transpose: bool):
        self.array, self.dtype, self.code, self.transpose = array, dtype, code, transpose
        self.shape = array.shape


_S = kernels.StageCode
# (src dtype name, kernel dtype name) -> the conversion a staged scatter makes, exactly NumPy's astype. Names, not
# characters: int64 is "l" on Linux and "q" elsewhere, and a result dtype may come as either
_STAGES: dict[tuple[str, str], int] = {("float16", "float32"): _S.STAGE_HALF, ("float32", "float64"): _S.STAGE_F4,
           **{(np.dtype(t).name, "int64"): c for t, c in ((np.int8, _S.STAGE_I1), (np.int16, _S.STAGE_I2),
                                                          (np.int32, _S.STAGE_I4), (np.uint8, _S.STAGE_U1),
                                                          (np.uint16, _S.STAGE_U2), (np.uint32, _S.STAGE_U4))},
           **{(np.dtype(t).name, "float64"): c for t, c in ((np.int8, _S.STAGE_I1), (np.int16, _S.STAGE_I2),
                                                            (np.int32, _S.STAGE_I4), (np.int64, _S.STAGE_I8),
                                                            (np.uint8, _S.STAGE_U1), (np.uint16, _S.STAGE_U2),
                                                            (np.uint32, _S.STAGE_U4), (np.uint64, _S.STAGE_U8))}}
_COPY_KINDS = frozenset("fdiqlQLFD")   # the kernels' own dtypes (int32/int64/uint64 under their C names)
STAGE_MIN_ELEMENTS = 1 << 14   # smaller srcs are converted whole: the block loop's setup would dominate


def _stage_code(src: np.dtype, dtype: np.dtype):
    if src == dtype:
        return _S.STAGE_COPY if dtype.char in _COPY_KINDS and dtype.isnative else None
    if not (src.isnative and dtype.isnative):
        return None
    if src.name == "bfloat16" and dtype.char == "f":
        return _S.STAGE_BFLOAT
    return _STAGES.get((src.name, dtype.name))


def rows_source(arr: np.ndarray, dtype, outer: int, rows: int, inner: int):
    """What a scatter reads its src from: a `StagedRows` when the staged kernel can read `arr` in place where
    `rows_view` would have copied or converted it whole (or, for features-first data, read it one batch slice
    at a time), else `rows_view`'s array."""
    dtype = np.dtype(dtype)
    code = _stage_code(arr.dtype, dtype) if type(arr) is np.ndarray else None
    if code is None or outer * rows * inner < STAGE_MIN_ELEMENTS or not item_aligned(arr):
        return rows_view(arr, dtype, outer, rows, inner)
    try:
        a3 = arr.reshape((outer, rows, inner), copy=False)
    except ValueError:
        return rows_view(arr, dtype, outer, rows, inner)
    transpose = inner == 1 and outer > 1
    if code == _S.STAGE_COPY and not transpose and (inner <= 1 or a3.strides[2] == a3.itemsize):
        return a3   # the kernels read it as it is
    return StagedRows(a3, dtype, int(code), transpose)


STAGE_CHUNK_BYTES = 4 << 20   # converted rows a chunked family holds at once (a share of the L3)


def converted_chunks(source: StagedRows, chunk_bytes: int | None = None):
    """(r0, r1, rows3) over the rows of a `StagedRows` source: rows [r0, r1) of every batch slice converted to its
    dtype (exactly NumPy's astype) into one reused C-ordered buffer of about `chunk_bytes`, for the families
    that walk src rows in order (the segment kernels) and so need no n x F converted copy."""
    arr3, dtype = source.array, source.dtype
    outer, n, inner = arr3.shape
    step = max(1, (chunk_bytes or STAGE_CHUNK_BYTES) // max(1, outer * inner * dtype.itemsize))
    buf = np.empty(outer * min(step, n) * inner, dtype)
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        rows3 = buf[:outer * (r1 - r0) * inner].reshape(outer, r1 - r0, inner)
        if source.code is None:   # NumPy's own cast, the loop of astype
            np.copyto(rows3, arr3[:, r0:r1], casting="unsafe")
        else:
            kernels.stage_rows(source.code, arr3[:, r0:r1], rows3)
        yield r0, r1, rows3


def _unit_inner_stride(a3: np.ndarray) -> np.ndarray:
    if a3.strides[2] == a3.itemsize:
        return a3
    if a3.shape[2] <= 1:   # one element per row: any inner stride is as good as the unit one
        return kernels.unit_inner_view(a3)
    return np.ascontiguousarray(a3)


def rows_in_place(arr, dtype, outer: int, rows: int, inner: int) -> np.ndarray | None:
    """`arr` itself as (outer, rows, inner) of any strides, or None where that takes a copy or a conversion: for
    the runs that read or write any strides (`gather_apart`, the assignments, `run_scatter` into rows apart)."""
    if type(arr) is not np.ndarray or arr.dtype != dtype or not item_aligned(arr):
        return None
    try:
        a3 = arr.reshape((outer, rows, inner), copy=False)
    except ValueError:
        return None
    return _unit_inner_stride(a3) if a3.shape[2] <= 1 else a3


def writable_rows(dst: np.ndarray, dtype, outer: int, rows: int, inner: int) -> tuple[np.ndarray, bool]:
    """(work, direct): `dst` itself as (outer, rows, inner) when possible (`rows_in_place`: its row elements may
    be apart, the runners handle such a view), else a converted copy to copy back."""
    d3 = rows_in_place(dst, dtype, outer, rows, inner)
    if d3 is not None:
        return d3, True
    # np.array copies even a contiguous dst (ascontiguousarray would hand back a misaligned one unchanged)
    return np.array(dst, dtype=dtype, order="C").reshape(outer, rows, inner), False


def check_writable(dst, arg: str = "dst", array_type: type = np.ndarray) -> np.ndarray:
    """`dst` must be an `array_type` we may write: writeable and without elements that alias one another.

    Returns the array to write: `dst`, or for a subclass (np.matrix, a masked array) a plain view of its memory,
    since subclasses may refuse the reshapes the kernels need. Another library's array (a PyTorch CPU tensor) is
    written through its DLPack export, which never copies; one exported read-only (a JAX array) is refused, and
    so is an object without DLPack (pandas, xarray): `numpy.asarray` may hand back a copy, and writing a copy
    would lose the result."""
    if not isinstance(dst, array_type):
        library = array_type.__module__.partition('.')[0]
        if array_type is np.ndarray and hasattr(type(dst), "__dlpack__") and where_is(dst) == "host":
            dst = np.from_dlpack(dst)
            if not dst.flags.writeable:
                raise ValueError(f"{arg} is exported read-only through DLPack (as JAX arrays are): it cannot be "
                                 "written in place; use the functional form (scatter, gather), which returns "
                                 "a new array")
        else:
            raise TypeError(f"{arg} must be a {library}.{array_type.__name__} (or, on the CPU, an array that "
                            f"exports DLPack, such as a torch.Tensor) to be written in place, got "
                            f"{type(dst).__module__.partition('.')[0]}.{type(dst).__name__}")
    if not getattr(dst.flags, "writeable", True):   # CuPy arrays have no read-only flag
        raise ValueError(f"{arg} is read-only (flags.writeable is False)")
    if dst.size > 1 and _self_overlapping(dst):
        raise ValueError(f"{arg} has overlapping elements (strides {dst.strides} for shape {dst.shape}); "
                         "pass a copy")
    return dst if type(dst) is array_type else dst.view(array_type)


def _self_overlapping(a: np.ndarray) -> bool:
    # Sufficient test for distinct elements: sorted by |stride|, each stride must step over all smaller dims.
    extent = a.itemsize
    for size, stride in sorted(((s, abs(t)) for s, t in zip(a.shape, a.strides) if s > 1), key=lambda p: p[1]):
        if stride < extent:
            return True
        extent = stride * size
    return False


def run_scatter(op: Op, src3: np.ndarray | StagedRows, plan, out3: np.ndarray, counts: np.ndarray | None = None,
                threads: int = 0) -> None:
    """out3[o, flat[k], f] = op(out3[o, flat[k], f], src3[o, k, f]); counts[flat[k]] += 1 when counts is given
    (`op` a registry `Op`; the kernel takes its op code)."""
    if type(src3) is StagedRows and src3.transpose and out3.strides[0] == out3.itemsize and out3.size:
        # batch slices adjacent (features first into a Fortran-ordered out): out3 is the transposed problem's table
        src3 = StagedRows(src3.array.transpose(2, 1, 0), src3.dtype, src3.code, False)
        out3 = out3.transpose(2, 1, 0)
    if apart(out3) and not op.winner:   # (assignments below write any strides)
        return _scatter_strided_out(op, src3, plan, out3, counts, threads)
    if type(src3) is StagedRows:
        if plan.size == 0 or src3.transpose and (out3.shape[1] > 4 * max(plan.n, 1) or (
                src3.code == _S.STAGE_COPY and op.opcode == kernels.OpCode.OP_ADD
                and not (kernels.layout_add_ready(src3.dtype, src3.shape[0])
                         and src3.array.strides[1] == src3.array.itemsize))):
            # transposing a table much larger than the entries costs more than it saves; and a sum of one-element
            # rows already in the kernel's dtype runs faster one batch slice at a time than staged (64 x 200000
            # float32 into 5000, one thread: 5.6 ms against 6.4 transposed; max 19.3 against 7.6, nansum 12.8
            # against 7.4, mul 7.6 against 6.9), though not than the AVX2 tiles of `layout_add_ready`
            src3 = rows_view(src3.array, src3.dtype, *src3.shape)
        else:
            status = kernels.scatter_staged(op.opcode, src3.code, src3.array, plan.flat, out3, counts,
                                            plan.kernel_mode, threads, src3.transpose)
            if status == -3:   # no memory for the block buffer: the whole conversion, as before
                src3 = rows_view(src3.array, src3.dtype, *src3.shape)
            elif status >= 0:
                raise plan.error(status)
            else:
                return None
    if (type(src3) is not np.ndarray or not src3.flags.aligned or src3.dtype.kind == "c") and not item_aligned(src3):
        src3 = src3.copy()   # e.g. a partial unpickled from another process (cyscatter.dask)
    if op.winner and op.skips_nan and _assign.skips_nan(src3):   # nanfirst / nanlast: a winner per element
        precheck(plan)
        if src3.dtype == out3.dtype and src3.dtype.char in "fdFD":   # in place, any strides, nothing beyond out3
            return assign_kernels.nan_assign(src3, plan.flat, out3, op.winner == "last")
        return _assign.run_nan(sys.modules[__name__], op.winner == "last", src3, plan, out3)
    if op.winner:   # an assignment: winner pass, then a gather (see cyscatter._backends.assign)
        return _assign.run_host(op.winner == "last", src3, plan, out3, counts, threads)
    status = kernels.scatter_reduce(op.opcode, src3, plan.flat, out3, counts, plan.kernel_mode, threads)
    if status >= 0:
        raise plan.error(status)


STRIDED_BLOCK_BYTES = 1 << 18   # the transposed src block of `_scatter_columns`


def _scatter_strided_out(op: Op, src3, plan, out3: np.ndarray, counts, threads: int) -> None:
    """`run_scatter` into an `out3` whose row elements are apart (a Fortran-ordered dst or out), in index order
    per element (a C-ordered out's bits), the cheapest way by src's elements E against out3's (one thread, f4):

    - E > 4 * out3.size: out3 is small next to the entries; a C-ordered copy is updated and copied back (5000 x
      64 from 200000 rows: 2.6 ms, 6.1 by column groups; the copy is under a quarter of src);
    - E < out3.size: few entries; `_scatter_columns`, one-element rows down each column (100000 x 32 from 20000
      rows: 2.3 ms, 4.4 by column groups, which copy all of out3 in and out);
    - else: `_scatter_groups`, a group of columns at a time through a C-ordered buffer (50000 x 64 from 100000
      rows: add 9.8 ms and max 10.2, against 26 and 84 by columns). (Assignments: in `run_scatter` itself.)"""
    outer, n, inner = src3.shape
    entries = outer * n * inner
    if out3.size * 4 < entries:
        work = np.ascontiguousarray(out3)
        run_scatter(op, src3, plan, work, counts, threads)
        out3[...] = work
    elif entries < out3.size:
        _scatter_columns(op, src3, plan, out3, counts, threads)
    else:
        _scatter_groups(op, src3, plan, out3, counts, threads)


def _scatter_groups(op: Op, src3, plan, out3: np.ndarray, counts, threads: int) -> None:
    """A group of out3's columns at a time through a C-ordered buffer (`strided.group_buffer`), updated from the
    same columns of src (its rows strided as they are) and copied back."""
    precheck(plan)   # under mode='raise', before the first group is written back
    buf = group_buffer(out3)
    inner, width = out3.shape[2], buf.shape[2]
    staged = type(src3) is StagedRows
    for f0 in range(0, inner, width):
        f1 = min(inner, f0 + width)
        work = buf[:, :, :f1 - f0]
        work[...] = out3[:, :, f0:f1]
        part = StagedRows(src3.array[:, :, f0:f1], src3.dtype, src3.code, False) if staged else src3[:, :, f0:f1]
        run_scatter(op, part, plan, work, counts if f0 == 0 else None, threads)
        out3[:, :, f0:f1] = work


def _scatter_columns(op: Op, src3, plan, out3: np.ndarray, counts, threads: int) -> None:
    """A block of entries at a time, its columns made adjacent (a transposed copy of at most STRIDED_BLOCK_BYTES),
    scattered as `inner` slices of one-element rows into the columns of out3, blocks in index order."""
    outer, n, inner = src3.shape
    precheck(plan)
    arr, dtype = (src3.array, src3.dtype) if type(src3) is StagedRows else (src3, src3.dtype)
    step = max(8, STRIDED_BLOCK_BYTES // max(1, inner * dtype.itemsize))
    for o in range(outer):
        columns = out3[o].T[:, :, None]   # (inner, size, 1): any strides serve one-element rows
        for k0 in range(0, n, step):
            block = None   # the block before is freed first: one block at a time
            block = cast(np.ascontiguousarray(arr[o, k0:k0 + step].T), dtype)
            status = kernels.scatter_reduce(op.opcode, block[:, :, None], plan.flat[k0:k0 + step], columns,
                                            counts if o == 0 else None, plan.kernel_mode, threads)
            if status >= 0:
                raise plan.error(status + k0)


def precheck(plan) -> None:
    """Under mode='raise', fail before an in-place write touches the destination."""
    if plan.mode == "raise" and plan.n:
        status = kernels.check_index(plan.flat, plan.size)
        if status >= 0:
            raise plan.error(status)


def run_gather(src3: np.ndarray, plan, out3: np.ndarray, threads: int = 0) -> None:
    if src3.dtype.hasobject:
        raise TypeError("gather does not support src dtype object")
    if apart(src3) and not apart(out3):   # not down its columns: 50000 x 64 float32 to 100000 rows took 63 ms
        if src3.size * 4 >= out3.size:    # by groups of columns 4.4 (copied whole 3.5, but src3 is large)
            return gather_groups(src3, plan, out3, threads)
        src3 = np.ascontiguousarray(src3)   # (a quarter of out3 at most; 5000 x 64 to 200000: 2.9 ms, groups 5.2)
    if apart(out3):   # a Fortran-ordered dst (any strides), written in place
        status = kernels.gather_apart(src3, plan.flat, out3, plan.kernel_mode, threads)
    else:
        status = kernels.gather(src3, plan.flat, out3, plan.kernel_mode, threads)
    if status >= 0:
        raise plan.error(status)


exclusive_products = kernels.exclusive_products


def fresh_table(shape, dtype, identity):
    """A new C-ordered table of (shape, dtype) holding the identity: cache-line aligned rows, zero identities from
    zeroed pages with no write pass (the kernels' fill, for number and bool dtypes); np.full for the other dtypes
    an assignment moves (datetimes keep their unit, records their fields)."""
    if (dtype.kind in "biufc" or is_bfloat16(dtype)) and not (
            dtype.kind in "fc" and identity == 0 and (math.copysign(1.0, identity.real) < 0 or (
                dtype.kind == "c" and math.copysign(1.0, identity.imag) < 0))):   # -0.0: not the zero pages
        return kernels.fresh_table(shape, dtype, identity)
    return np.full(shape, identity, dtype)


_HALF = np.dtype(np.float16)
ROUND_MIN_ELEMENTS = 1 << 12   # smaller tables are left to NumPy: the call's own overhead would dominate


def rounded(table: np.ndarray, dtype) -> np.ndarray:
    """`table` (the compute dtype) as `dtype`, NumPy's ``astype(dtype, copy=False)``: a float32 table rounded
    to bfloat16 by `kernels.round_bfloat` (ml_dtypes' bits, 6x faster), to float16 by `kernels.round_half` (NumPy's own cast is a branchy element loop, 8.8 ms for 50000 x 64 on the
    project's EPYC VM against 1 ms), redone by NumPy where the loop met an overflow or underflow that NumPy's
    error state (``np.errstate``) would act on, so warnings and errors stay NumPy's."""
    if not (dtype == _HALF or is_bfloat16(dtype)) or table.dtype != np.float32 or table.size < ROUND_MIN_ELEMENTS \
            or not (table.flags.c_contiguous and table.flags.aligned and table.dtype.isnative):
        return table.astype(dtype, copy=False)
    out = np.empty(table.shape, dtype)
    if dtype != _HALF:   # bfloat16: ml_dtypes' cast raises no floating-point error
        kernels.round_bfloat(table, out.view(np.uint16))
        return out
    flags = kernels.round_half(table, out)
    if flags:
        state = np.geterr()
        if (flags & kernels.RoundFlag.ROUND_OVERFLOW and state["over"] != "ignore") or \
                (flags & kernels.RoundFlag.ROUND_UNDERFLOW and state["under"] != "ignore"):
            return table.astype(dtype)
    return out


def run_scatter_runs(op: Op, src3: np.ndarray | StagedRows, plan, out3: np.ndarray,
                     counts: np.ndarray | None = None, threads: int = 0):
    """`_canonical.run_scatter` for an index whose equal entries are adjacent (sorted): same result, faster.

    Only one-element rows gain from a register; wider rows go to the core kernel, which can use `threads`
    (the run kernel is not parallel), and so does a src the core reads in place converting it (`StagedRows`):
    the same updates in the same order."""
    if type(src3) is StagedRows or src3.shape[2] != 1 or op.winner:   # assignments: nothing kept in a register
        return run_scatter(op, src3, plan, out3, counts, threads)
    status = group_kernels.scatter_runs(op.opcode, src3, plan.flat, out3, counts, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)


def messages(src3, plan, w, heads: int, feat: tuple, dtype):
    """(messages (outer, kept, inner) of the kept edges in `dtype`, their edge positions): the E x F matrix the
    fused kernels avoid, for the few cases that need it (integer messages, the mul/div reverse rules)."""
    keep = np.flatnonzero(plan.valid_edges())
    taken = src3[:, plan.gather[keep], :].astype(dtype, copy=False)
    if w is None:
        return taken, keep
    rows = weight_rows(w, plan.index_shape, feat, heads, dtype)[keep]
    return taken * np.repeat(rows, src3.shape[2] // max(heads, 1), axis=1)[None], keep


_NO_COUNTS = np.zeros((0, 0, 0), np.int32)
# the weight and node-table dtypes that the fused kernels read as they are, widening each edge's values exactly,
# and their codes (kernels.StageCode's); emptied, every such array is converted whole first
HALF_IN_PLACE = {"float16": 1, "bfloat16": 2}


def run_forward(op: Op, src3, plan, w, heads, feat, out3, threads, transpose: bool = False, counts=None) -> None:
    """The fused kernel from `src3` into `out3` (started at the identity) along the plan's CSR by destination,
    or, `transpose`, along its CSR by source (src3 then holds destination rows, out3 source rows). A NaN-skipping
    op on floats adds the non-NaN messages of each output element to `counts` (out3's shape) when given."""
    if out3.shape[0] == 0 or out3.shape[2] == 0:
        return   # no batch slice or no feature: nothing to compute (a head dim of length 0 included)
    indptr, edge_ids, cols = plan.transpose if transpose else (plan.indptr, plan.edge_ids, plan.cols)
    registers = op.twin_opcode == kernels.OpCode.OP_ADD and not op.skips_nan and out3.dtype.char in "fd" and \
        (w is None or heads <= 1)   # the sums `_csrsum.h` holds in registers
    parts = team(threads, cols.shape[0] * out3.shape[0] * out3.shape[2],
                 REGISTER_SUM_MIN_WORK if registers else MIN_WORK)
    code = HALF_IN_PLACE.get(w.dtype.name) if type(w) is np.ndarray and w.dtype.isnative else None
    half = {}
    if code is not None and out3.dtype in (np.float32, np.float64):
        # float16/bfloat16 weights read as they are, each edge's widened exactly by the kernel: no E x heads
        # float32 copy, the same messages
        half = {"half_weight": weight_rows(w, plan.index_shape, feat, heads, w.dtype).view(np.uint16),
                "weight_code": code}
        w2 = np.zeros((0, 1), out3.dtype)
    else:
        w2 = np.zeros((0, 1), out3.dtype) if w is None else weight_rows(w, plan.index_shape, feat, heads, out3.dtype)
    scode = HALF_IN_PLACE.get(src3.dtype.name) if src3.dtype.isnative else None
    if scode is not None and out3.dtype in (np.float32, np.float64):
        # a float16/bfloat16 node table read as it is, each edge's row widened exactly by the kernel: no S x F
        # converted table, the same messages
        fused_kernels.forward_half_src(op.opcode if op.skips_nan else op.twin_opcode, scode, src3.view(np.uint16),
                                       indptr, cols, edge_ids, w2, w is not None, out3, parts,
                                       counts=counts if op.skips_nan else None, **half)
        return
    if op.skips_nan and out3.dtype.kind in "fc":
        status = fused_kernels.forward_nan(op.opcode, src3, indptr, cols, edge_ids, w2, w is not None, out3,
                                           _NO_COUNTS if counts is None else counts, counts is not None, parts,
                                           **half)
    else:   # integers hold no NaN: a NaN-skipping op runs its twin's kernel
        status = fused_kernels.forward(op.twin_opcode, src3, indptr, cols, edge_ids, w2, w is not None, out3,
                                       parts, **half)
    if status != -1:   # a plan validates everything the kernel checks; only a corrupted one gets here
        raise ValueError(f"the plan's edges do not fit src and out (kernel status {status})")


def count_rows(plan) -> np.ndarray:
    """int64 (plan.size,): the entries of `plan` per destination row, by the scatter kernel's own counting pass
    (the counts mean divides by), run on rows of no elements (inner = 0), so that no value is read or written:
    one pass over the index, which checks it too (IndexError under mode='raise')."""
    counts = np.zeros(plan.size, np.int64)
    status = kernels.scatter_reduce(kernels.OpCode.OP_ADD, np.empty((1, plan.n, 0), np.int64), plan.flat,
                                    np.empty((1, plan.size, 0), np.int64), counts, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)
    return counts


def nonzero_flags(src: np.ndarray) -> np.ndarray:
    """int32 0/1 of ``src != 0`` in one pass: the comparison writes int32 directly (a kernel dtype of max/min: no
    widening copy)."""
    out = np.empty(src.shape, np.int32)
    np.not_equal(src, 0, out=out, casting="unsafe")
    return out


# ---- grouped scans (`cyscatter._api.scan`): one pass over the index with a running value per destination row ----

# ---- sorted segments (CSR) and the winners of max/min: kernels the GPU backend has no counterpart of ----------

def segment_reduce(op: Op, src3: np.ndarray | StagedRows, ptr: np.ndarray, work3: np.ndarray, counting: bool):
    """Reduce the segments of `src3` (outer, rows, inner) cut by the validated pointer `ptr` into `work3` (outer,
    S, inner, at the identity) with the group kernels; returns the counts to finish with (`reduce.finish_fresh`):
    the segment lengths (int64), or with `counting` for a NaN-skipping op on floats the non-NaN entries per output
    element, counted by the kernel as it reduces (an all-NaN element is empty; int32 below 2**31 rows, as
    scatter's element counts)."""
    rows = src3.shape[1]
    counted = op.skips_nan and work3.dtype.kind in "fc"
    counts = np.zeros(work3.shape if counted and counting else (0, 0, 0), np.int32 if rows < 2**31 - 1 else np.int64)
    if type(src3) is StagedRows and not op.skips_nan and _segment_scatter(op, src3, ptr, work3):
        pass
    elif type(src3) is StagedRows:
        # a chunk of rows at a time, each segment continued from where the chunk before left it: rows are
        # combined in the same order, so the same bits as one call on the whole converted src
        for r0, r1, rows3 in converted_chunks(src3):
            s0 = max(int(np.searchsorted(ptr, r0, "right")) - 1, 0)
            s1 = int(np.searchsorted(ptr, r1, "left"))
            if s1 > s0:
                part = np.clip(ptr[s0:s1 + 1], r0, r1) - r0
                _segment_call(op, counted, rows3, part, work3[:, s0:s1],
                              counts[:, s0:s1] if counted and counting else counts, counting)
    else:
        _segment_call(op, counted, src3, ptr, work3, counts, counting)
    if counted and counting:
        return counts
    return np.diff(ptr).astype(np.int64, copy=False)   # the kernels take int64 counts whatever indptr holds


def _segment_scatter(op: Op, src3: StagedRows, ptr: np.ndarray, work3: np.ndarray) -> bool:
    """The segments as the staged scatter of their ids (sorted: the same updates in the same order as the segment
    kernel, so the same bits), which converts each row as it combines it where it can (add, max, min of
    float16/bfloat16 and float32 -> float64); an index of 4 bytes a row instead of 4 MiB chunks converted apart.
    False when the kernel found no memory for its buffers."""
    nseg = ptr.size - 1
    ids = np.repeat(np.arange(nseg, dtype=np.int32 if nseg < 2**31 else np.int64), np.diff(ptr))
    status = kernels.scatter_staged(op.opcode, src3.code, src3.array, ids, work3, None, kernels.IndexMode.MODE_RAISE, 1)
    if status >= 0:
        raise AssertionError(f"staged scatter refused entry {status} of a validated indptr")
    return status == -1


def _segment_call(op: Op, counted: bool, src3, ptr, work3, counts, counting: bool) -> None:
    if counted:
        status = group_kernels.segment_reduce_counted(op.opcode, src3, ptr, work3, counts, counting)
    else:   # integers have no NaN: a NaN-skipping op counts its segment lengths, as its twin
        status = group_kernels.segment_reduce(op.opcode, src3, ptr, work3)
    if status >= 0:   # check_indptr lets nothing through that the kernel refuses
        raise AssertionError(f"segment kernel refused segment {status} of a validated indptr")


def repeat_segments(src: np.ndarray, ptr: np.ndarray, axis: int) -> np.ndarray:
    """Row s of `src` along `axis` repeated for each member of segment s of the validated pointer `ptr`."""
    return np.repeat(src, np.diff(ptr), axis=axis)


def arg_winners(op: Op, src3: np.ndarray, plan, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(best, arg), both (outer, size, inner): each destination row's winning value under max/min (`op`) and its
    position k in `plan` (ties: the smallest; no member: ``plan.n``). `src3` is in the op's compute dtype.
    fmax/fmin (nanargmax/nanargmin): NaN members never win, an all-NaN group has no winner (``plan.n``)."""
    if op.skips_nan:
        return _nan_winners(op, src3, plan, size)
    outer, _, inner = src3.shape
    best = np.full((outer, size, inner), op.identity(src3.dtype), src3.dtype)
    arg = np.full((outer, size, inner), plan.n, np.int64)
    status = group_kernels.scatter_arg(op.opcode, src3, plan.flat, best, arg, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)
    return best, arg


def _nan_winners(op: Op, src3: np.ndarray, plan, size: int) -> tuple[np.ndarray, np.ndarray]:
    """`arg_winners` for fmax/fmin from the core kernels: each group's fmax/fmin (never NaN: an all-NaN group keeps
    the identity), its members equal to it (a zero of the same sign), and a scatter "min" of their positions."""
    outer, n, inner = src3.shape
    best = np.full((outer, size, inner), op.identity(src3.dtype), src3.dtype)
    run_scatter(op, np.ascontiguousarray(src3), plan, best)
    mine = np.zeros((outer, n, inner), src3.dtype)
    run_gather(best, plan, mine)   # dropped entries keep 0: the position scatter below skips them anyway
    wins = mine == src3
    if src3.dtype.kind == "f":
        wins &= np.signbit(mine) == np.signbit(src3)
    positions = np.where(wins, np.arange(n, dtype=np.int64)[None, :, None], np.int64(n))
    arg = np.full((outer, size, inner), n, np.int64)
    run_scatter(get_op("min"), positions, plan, arg)
    return best, arg


def weight_rows(w, index_shape: tuple, feat: tuple, heads: int, dtype, xp=np):
    """The weight as a C-contiguous (n_edges, heads) array of `dtype` (broadcast head dims materialised)."""
    k = len(index_shape)
    full = xp.broadcast_to(w, index_shape + feat[:w.ndim - k])
    return xp.ascontiguousarray(full.reshape(prod(index_shape), heads), dtype=dtype)

