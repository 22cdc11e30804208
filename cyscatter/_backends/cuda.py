"""The GPU backend: `cyscatter._backends.host`'s helpers for CuPy arrays, running the kernels of `_cuda_kernels`.

`cyscatter._arrays.protocols.backend_of` imports this module the first time a CUDA array reaches a public function;
`import cyscatter` never does. Work runs on the current CuPy device and stream, as CuPy's own functions do.

Differences from the CPU kernels, all in the order of floating-point updates: atomics apply the updates of a
destination in whatever order the threads arrive, so float sums, products and quotients (add, sub, mean, mul,
div) can differ in the last bits from run to run and from the CPU. max/min, integer ops, gather and complex128
mul/div (the ordered kernel) do not depend on that order. CuPy compiles kernels with ``-ftz=true``: float32
subnormals are flushed to zero.
"""
from __future__ import annotations

import functools
import sys

import cupy
import numpy as np

from cyscatter._arrays.protocols import host_index, refuse_bfloat16_on_gpu, where_is
from cyscatter._backends import assign as _assign_rules
from cyscatter._backends import host as _canonical
from cyscatter._backends import sorted_scan as _sorted_scan
from cyscatter._backends.cuda_kernels import (
    COUNT_ROWS,
    EXCLUSIVE_PRODUCTS,
    GATHER,
    build,
    ordered_spec,
    scatter_spec,
    winner_spec,
)
from cyscatter._registry.ops import Op

xp = cupy
name = "cuda"
raises_in_kernels = False   # the kernels skip an out-of-range entry: plan_index checks them under mode='raise'
fused_reverse = False   # the reverse rules compose the core kernels (`cyscatter.fused_kernels` are CPU code)
refuse_dtype = refuse_bfloat16_on_gpu
on_host = host_index   # the edge plan is validated and grouped on the host, then uploaded once (gather_scatter)
# no kernels of their own here: segment runs as the equivalent scatter, gather_segment as the gather (CuPy's repeat
# takes no array of counts), scatter_argmax composes scatter and gather, all above the backends
segment_reduce = None
repeat_segments = None
arg_winners = None


def asarray(a, dtype=None):
    """`a` as a CuPy array: CuPy's `asarray` (CuPy arrays, ``__cuda_array_interface__`` exporters such as CUDA
    torch tensors, host data copied over), `cupy.from_dlpack` for an object that only speaks DLPack."""
    if not isinstance(a, cupy.ndarray) and where_is(a) == "gpu" and not hasattr(a, "__cuda_array_interface__"):
        a = cupy.from_dlpack(a)
    return cupy.asarray(a, dtype)

check_writable = functools.partial(_canonical.check_writable, array_type=cupy.ndarray)


def shape_of(a) -> tuple:
    """The shape of an array argument (CuPy's arrays refuse NumPy's implicit conversion: asked of the array)."""
    return tuple(asarray(a).shape)


def reduce_max(a):
    """The largest element of a non-empty array."""
    return a.max()


def reduce_all(a):
    """Whether every element of a non-empty array is true."""
    return a.all()


def reduce_any(a):
    """Whether some element of a non-empty array is true."""
    return a.any()


def divide_by_counts(work3, counts, threads: int = 0) -> bool:
    """No dividing kernel here: the caller divides by the counts with CuPy's ufuncs."""
    return False


def divide_by_element_counts(work3, counts) -> bool:
    """No dividing kernel here: the caller divides by the counts with CuPy's ufuncs."""
    return False


_ATOMIC_WORD = 8   # bytes of the widest atomicCAS


def rows_view(arr, dtype, outer: int, rows: int, inner: int):
    """`arr` as a C-contiguous (outer, rows, inner) array of `dtype`: the raw kernels index flat memory."""
    a3 = arr.astype(dtype, copy=False).reshape(outer, rows, inner)
    return a3 if a3.flags.c_contiguous else cupy.ascontiguousarray(a3)


def rows_in_place(arr, dtype, outer: int, rows: int, inner: int):
    """`arr` itself as (outer, rows, inner) when it is C-contiguous, of `dtype` and aligned for the atomics, else
    None: the raw kernels index flat memory."""
    if type(arr) is cupy.ndarray and arr.dtype == dtype and arr.flags.c_contiguous \
            and arr.data.ptr % min(arr.itemsize, _ATOMIC_WORD) == 0:
        return arr.reshape(outer, rows, inner)
    return None


rows_source = rows_view   # what a scatter reads: the GPU kernels read only C-ordered rows of their own dtype


def writable_rows(dst, dtype, outer: int, rows: int, inner: int):
    """(work, direct): `dst` itself as (outer, rows, inner) when it is C-contiguous, of `dtype` and aligned for
    the atomics, else a C-contiguous converted copy for the caller to copy back."""
    if dst.dtype == dtype and dst.flags.c_contiguous and dst.data.ptr % min(dst.itemsize, _ATOMIC_WORD) == 0:
        return dst.reshape(outer, rows, inner), True
    return cupy.array(dst, dtype=dtype, order="C").reshape(outer, rows, inner), False


def fresh_table(shape, dtype, identity):
    """A new array of `shape` and `dtype` holding `identity`: an allocating scatter's accumulator."""
    return cupy.full(shape, identity, dtype)


def rounded(table, dtype):
    return table.astype(dtype, copy=False)


def precheck(plan) -> None:
    """Nothing left to check: `plan_index` checks device indexes under mode='raise' when it makes the plan."""


def run_scatter(op: Op, src3, plan, out3, counts=None, threads: int = 0) -> None:
    """out3[o, flat[k], f] = op(out3[o, flat[k], f], src3[o, k, f]); counts[flat[k]] += 1 when counts is given.

    Entries outside [0, plan.size) are skipped (a mode='raise' plan has none). `threads` is the CPU kernels'
    thread count, meaningless here.
    """
    if counts is not None and plan.n:
        build(COUNT_ROWS)(plan.flat, plan.size, counts)
    if op.winner and op.skips_nan and _assign_rules.skips_nan(src3):   # nanfirst / nanlast: per element
        _assign_rules.run_nan(sys.modules[__name__], op.winner == "last", src3, plan, out3)
        return
    if op.winner:   # an assignment: the winner of each row, then a gather of the winners' rows
        _assign(op.winner, src3, plan, out3)
        return
    if src3.size == 0:
        return
    _, n, inner = src3.shape
    if op.gpu_cas and src3.dtype.itemsize > _ATOMIC_WORD:
        order, indptr = plan.groups()
        build(ordered_spec(op.gpu_update))(src3.reshape(-1), order, indptr, n, inner, plan.size, out3)
    else:
        build(scatter_spec(op.gpu_update))(src3, plan.flat, n, inner, plan.size, out3.reshape(-1))


def assign_winners(plan, last: bool):
    """(size,) int64: the position of the last (first) entry reaching each row; rows without one hold -1
    (last) or plan.n (first), both outside the positions, which the gather skips."""
    winner = cupy.full(plan.size, -1 if last else plan.n, np.int64)
    if plan.n and plan.size:
        build(winner_spec("last" if last else "first"))(plan.flat, plan.size, winner)
    return winner


def _assign(winner: str, src3, plan, out3) -> None:
    """out3[o, j, f] = src3[o, winner[j], f] for the rows an entry reaches; other rows keep their values."""
    win = assign_winners(plan, winner == "last")
    if out3.size == 0 or src3.shape[1] == 0:
        return
    items3 = _items(out3)
    _, size, inner = items3.shape
    build(GATHER)(_items(src3).reshape(-1), win, size, inner, src3.shape[1], items3)


def _items(a3):
    """A same-bytes view of `a3` whose item type the gather kernel is compiled for."""
    size = a3.itemsize
    if size in (1, 2, 4, 8):
        return a3.view(f"u{size}")
    return a3.view("u8" if size % 8 == 0 else "u1")


def run_gather(src3, plan, out3, threads: int = 0) -> None:
    """out3[o, k, f] = src3[o, flat[k], f]; rows of skipped entries keep their values."""
    if out3.size == 0:
        return
    items3 = _items(out3)   # gather moves bytes: one kernel per item size serves every dtype
    _, n, inner = items3.shape
    build(GATHER)(_items(src3).reshape(-1), plan.flat, n, inner, src3.shape[1], items3)


def exclusive_products(src3, order, indptr, partials) -> None:
    """GPU twin of `kernels.exclusive_products`: each entry's product of the other members of its group."""
    outer, n, inner = src3.shape
    groups = indptr.shape[0] - 1
    if outer * groups * inner:
        build(EXCLUSIVE_PRODUCTS)(src3.reshape(-1), order, indptr, n, inner, groups, partials.reshape(-1),
                                  size=outer * groups * inner)


def count_rows(plan):
    """int64 (plan.size,): the entries per destination row, ``cupy.bincount`` of the valid rows (the index was
    checked when it was planned)."""
    flat = plan.flat
    if plan.drops and flat.size:
        valid = plan.valid()
        if not bool(valid.all()):
            flat = flat[valid]
    if not flat.size:   # np.bincount of an empty int32 vector is fine, of an empty int64 one too; keep one dtype
        return cupy.zeros(plan.size, np.int64)
    return cupy.bincount(flat, minlength=plan.size).astype(np.int64, copy=False)


def nonzero_flags(src):
    """int32 0/1 of ``src != 0`` (NaN is nonzero)."""
    return (src != 0).astype(np.int32)


def group_scan(op: Op, src3, plan, ident, reverse: bool, exclusive: bool, track: bool, sized) -> tuple:
    """(out3, arg3 or None): a stable sort by group, then a segmented scan (`sorted_scan.scan`); `sized` (the
    host's MemoryError naming) is not used."""
    # the identity as a NumPy scalar, not a 0-d host array, as the fill of device arrays
    return _sorted_scan.scan(cupy, op, src3, plan, ident[()], reverse, exclusive, track)


def linear_scan(b3, a3, plan, reverse: bool, exclusive: bool, sized):
    """``new = b + a * prev`` along each group: a segmented scan of the affine maps (`sorted_scan.linear`)."""
    return _sorted_scan.linear(cupy, b3, a3, plan, reverse, exclusive)


def route(g3, arg3):
    """g3[o, k, f] added at position arg3[o, k, f] (nothing where arg3 < 0), by one bincount."""
    return _sorted_scan.route(cupy, g3, arg3)

