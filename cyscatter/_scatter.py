"""scatter and scatter_into: the public scatter-reduce functions (NNlib's `scatter` and `scatter!`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from cyscatter._backend import backend_of, check_foreign, refuse_bfloat16_on_gpu
from cyscatter._canonical import normalize_axis, prod, run_scatter as run_scatter_host
from cyscatter._docs import fill_doc
from cyscatter._index import check_table_bytes, index_shape, parse_coords, plan_index, sized_by
from cyscatter import _machine, kernels, nan_kernels
from cyscatter._ops import FAST, float_kind, get_op, is_bfloat16
from cyscatter._result import check_dtype_arg, check_out, direct, write_out
from cyscatter._threads import check_threads
from cyscatter._sorted import run_scatter_runs

HOST_RUNNERS = (run_scatter_host, run_scatter_runs)   # the scatter runners of host (NumPy) arrays

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike, NDArray

    from cyscatter._typing import (ArrayInput, DeviceArray, DeviceIndex, DimSize, FillValue, IndexLike, Mode, OpLike,
                                   _DstT)


def split_src(src: np.ndarray, coords: tuple, axis, arg: str = "src",
              expanded_check: bool = True) -> tuple[int, tuple, tuple]:
    """(axis, batch shape B, feature shape F) of `src` around an index of shape I = index_shape(coords), for the
    functions whose `src` must have exactly the shape B + I + F (the softmax family, whose output has it).

    Refuses a torch-style expanded index (see `refuse_expanded_index`) unless `expanded_check` is False (an
    index whose values are not at hand, as Dask's)."""
    ishape = index_shape(coords)
    axis = normalize_axis(axis, src.ndim, len(ishape), array=arg)
    if src.shape[axis:axis + len(ishape)] != ishape:
        raise ValueError(f"{arg} shape {src.shape} does not hold the index shape {ishape} at axis {axis}")
    if expanded_check:
        refuse_expanded_index(coords, src.shape, axis, arg)
    return axis, src.shape[:axis], src.shape[axis + len(ishape):]


# ---- broadcasting src ------------------------------------------------------------------------------------------
# `src` broadcasts (NumPy's rules) against the shape B + I + F it stands for, as `b` in NumPy's
# ``ufunc.at(a, idx, b)``, JAX's ``x.at[idx].add(b)`` and CuPy's ``cupyx.scatter_add``. Where a destination is
# given (scatter_into, the reverse functions' `out`), B and F are its own and src broadcasts to B + I + F. Where
# src alone defines B and F (scatter and the other allocating functions), the dims of src at the index position
# must each equal the index's or be 1, and a src with fewer dims than the index gets leading 1s first (so a
# scalar is scattered at every entry, numpy_groupies' ``aggregate(idx, 1)``).

def src_layout(src_shape: tuple, coords: tuple, axis, arg: str = "src", table_shape: tuple | None = None,
               table_arg: str = "dst", expanded_check: bool = True) -> tuple[int, tuple, tuple, tuple]:
    """(axis, B, F, expected shape B + I + F) of a `src` of `src_shape` that broadcasts to the expected shape.

    `table_shape`: the shape B + D + F of the destination (`table_arg`) when one is given, else src defines B
    and F. ValueError naming src's shape and the expected one when src does not broadcast. Refuses a
    torch-style expanded index (see `refuse_expanded_index`) unless `expanded_check` is False."""
    src_shape = tuple(src_shape)
    ishape = index_shape(coords)
    k = len(ishape)
    if table_shape is None:
        shape = (1,) * (k - len(src_shape)) + src_shape
        axis = normalize_axis(axis, len(shape), k, array=arg)
        held = shape[axis:axis + k]
        if any(s != i and s != 1 for s, i in zip(held, ishape)):
            raise ValueError(f"{arg} shape {src_shape} does not hold the index shape {ishape} at axis {axis} "
                             f"(nor broadcasts to it: each of those dims must equal the index's or be 1)")
        expected = shape[:axis] + ishape + shape[axis + k:]
    else:
        table_shape = tuple(table_shape)
        m = len(coords)
        if len(table_shape) < m:
            raise ValueError(f"{table_arg} shape {table_shape} has fewer dims than the {m} that an index of shape "
                             f"{ishape} addresses ({arg} shape {src_shape})")
        ndim = len(table_shape) - m + k   # the dims of a src of the expected shape: its axis counts from them
        axis = normalize_axis(axis, ndim, k, array=arg if len(src_shape) == ndim else f"{arg} (broadcast)")
        expected = table_shape[:axis] + ishape + table_shape[axis + m:]
        if not broadcasts(src_shape, expected):
            raise ValueError(f"{arg} shape {src_shape} does not broadcast to the shape {expected} that {table_arg} "
                             f"shape {table_shape} and an index of shape {ishape} addressing {m} axis(es) at "
                             f"axis {axis} expect")
    if expanded_check:
        refuse_expanded_index(coords, expected, axis, arg)
    return axis, expected[:axis], expected[axis + k:], expected


def out_layout(src_shape: tuple, coords: tuple, axis, out) -> tuple[int, tuple, tuple, tuple]:
    """`src_layout` of an allocating call given `out=`: B and F from `out` when `src` broadcasts to the shape
    B + I + F it implies (as `scatter_into` takes them from `dst`, and NumPy's ``ufunc.at(out, idx, src)``), else
    from `src` alone (a wrong `out` is then reported as such, naming `out`)."""
    if out is None or np.ndim(out) < len(coords):
        return src_layout(src_shape, coords, axis)
    try:
        return src_layout(src_shape, coords, axis, table_shape=np.shape(out), table_arg="out")
    except ValueError as by_out:
        try:
            return src_layout(src_shape, coords, axis)
        except ValueError:
            raise by_out from None   # neither reading fits: the one of the documented rule (B, F from out)


def broadcasts(shape: tuple, to: tuple) -> bool:
    """`shape` broadcasts to exactly `to` (NumPy's rules, one way)."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], to[::-1]))


def expand_src(src, expected: tuple, nfeat: int, xp=np):
    """`src` as a read-only view of shape `expected` (B + I + F) with stride 0 along its broadcast dims, or
    `src` itself when it has that shape.

    The kernels read rows through strides, so entries repeated by broadcasting cost no memory; only a row's
    features must be adjacent, so when F itself is broadcast (a scalar, a (n, 1) src against F) the features are
    materialised once per distinct row of src, never the n entries. A cast belongs before this call (a cast of
    the view would materialise it)."""
    expected = tuple(expected)
    if tuple(src.shape) == expected:
        return src
    src = src.reshape((1,) * (len(expected) - src.ndim) + tuple(src.shape))
    if nfeat and src.shape[len(expected) - nfeat:] != expected[len(expected) - nfeat:] \
            and prod(expected[len(expected) - nfeat:]) > 1:
        src = xp.ascontiguousarray(xp.broadcast_to(src, src.shape[:len(expected) - nfeat]
                                                   + expected[len(expected) - nfeat:]))
    return xp.broadcast_to(src, expected)


def unbroadcast(grad, shape: tuple, xp=np):
    """`grad` (of a src broadcast to grad's shape) summed over the broadcast dims, back to `shape` (autograd's
    ``unbroadcast``): the cotangent of a broadcast src."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(shape) if s == 1 and grad.shape[lead + d] != 1)
    return grad.sum(axis=axes).reshape(shape) if axes else grad.reshape(shape)


_PYTHON_KIND = {int: "iu", float: "f", complex: "c"}


def python_scalar_as(value, dtype, xp=np, arg: str = "dst"):
    """A Python int, float or complex `value` for a destination `arg` of `dtype`, taken by value as NumPy 2
    takes Python scalars (NEP 50, as ``np.add.at(uint8_array, idx, 1)``): a 0-d array of `dtype` when `dtype`
    is of the same kind or a higher one (bool < integers < floats < complex), ValueError when an int is out of
    its range; else a 0-d array of NumPy's default dtype for it, which the caller's same_kind rule refuses."""
    dtype = np.dtype(dtype)
    if _KIND_RANK.get(float_kind(dtype), -1) >= _KIND_RANK[_PYTHON_KIND[type(value)][0]]:   # bfloat16: a float
        try:
            return xp.asarray(np.array(value, dtype=dtype))
        except OverflowError:
            raise ValueError(f"src={value!r} is out of range for the {arg} dtype {dtype}") from None
    return xp.asarray(value)


def expand_cast(src, expected: tuple, nfeat: int, dtype, xp=np):
    """`src` cast to `dtype` and then expanded (`expand_src`); a `src` of the expected shape is returned as it is
    (its cast is left to `rows_view`, which may fuse it with a layout copy)."""
    if tuple(src.shape) == tuple(expected):
        return src
    return expand_src(src.astype(dtype, copy=False), expected, nfeat, xp)


def refuse_expanded_index(coords: tuple, src_shape: tuple, axis: int, arg: str = "src") -> None:
    """ValueError for an index shaped like all of `src` and expanded along its last axis (stride 0): the
    ``index.view(-1, 1).expand_as(src)`` of PyTorch's ``scatter_reduce`` / pytorch_scatter, or its
    ``np.broadcast_to`` twin.

    There each index entry addresses one element (``out[index[i, j], j]``); here (NNlib, NumPy) every index
    dim is an entry dim, so the same index would reduce each row's features into one number: a silent
    difference in shape and numbers, refused with the call that means what PyTorch means. The rule looks at
    the layout, not the values: an index that merely holds equal values along a row is an NNlib index like any
    other (a copy of an expanded index, too, is read with NNlib's meaning).
    """
    if len(coords) != 1:
        return
    index = coords[0]
    if (index.ndim < 2 or axis + index.ndim != len(src_shape) or index.shape[-1] < 2
            or index.size == 0 or index.strides[-1] != 0):
        return
    one = "index[" + ", ".join([":"] * (index.ndim - 1)) + ", 0]"
    where = f"the shape of {arg} {tuple(src_shape)}" if axis == 0 else \
        f"the shape {index.shape} of {arg} {tuple(src_shape)} after axis={axis}"
    raise ValueError(
        f"index has {where} and is expanded along its last axis (stride 0), as a "
        f"torch-style expanded index (index.view(-1, 1).expand_as({arg})). Here every index dim is an entry dim "
        f"(NNlib, NumPy), so this call would reduce each row of {arg} to one number. To reduce rows as PyTorch "
        f"does, pass the index without its expanded axis: {one} (shape {index.shape[:-1]}). To scatter each "
        f"element on its own, pass {arg}.ravel() and np.ascontiguousarray(index).ravel()")


def _runner(be, indices_are_sorted: bool):
    """The scatter kernel to run: the sorted-run one for a hinted host call (same result, faster), else the
    backend's (the GPU's atomics gain nothing from the hint)."""
    return run_scatter_runs if indices_are_sorted and be.xp is np else be.run_scatter


def new_counts(op, shape3, xp=np, fill=None, n: int = 0):
    """Zeroed counts for a call of `op` on an (outer, size, inner) output, or None when nothing needs them.

    Entries per destination row (int64, length size) for mean and a fill_value; for the NaN-skipping ops
    (`Op.skips_nan`) non-NaN entries per output element (shape3; int32 for fewer than 2**31 entries `n`: half
    the traffic of the counting pass), so an element whose entries are all NaN counts as an empty group.
    """
    if not (op.counts or fill is not None):
        return None
    if op.skips_nan:
        return ElementCounts(shape3, np.dtype(np.int32 if n < 2**31 - 1 else np.int64), xp)
    return xp.zeros(shape3[1], np.int64)


class ElementCounts:
    """Zeroed element counts (outer, size, inner) of a NaN-skipping op, allocated when first asked for: on host
    arrays only once src shows a NaN (without one the entries per row are the counts, `_run_counted_host`)."""
    ndim = 3

    def __init__(self, shape, dtype, xp, array=None):
        self.shape, self.dtype, self.xp, self._array = shape, dtype, xp, array

    @classmethod
    def holding(cls, counts):
        """Counts made by the caller (zeroed, any backend) as they are."""
        return cls(counts.shape, counts.dtype, np if isinstance(counts, np.ndarray) else None, counts)

    @property
    def contiguous(self) -> bool:
        return self._array is None or self._array.flags.c_contiguous

    def array(self):
        if self._array is None:
            self._array = self.xp.zeros(self.shape, self.dtype)
        return self._array


MASK_ELEMENTS = 1 << 20   # src elements whose NaN mask (at most 8 MiB) one pass of `count_not_nan` holds


def count_not_nan(run_scatter, src3, plan, element_counts, threads: int = 0) -> None:
    """element_counts[o, flat[k], f] += 1 for each non-NaN src3[o, k, f] (NumPy's isnan; complex: either part),
    on any backend: a second add pass through the same scatter kernel, of the mask in the counts' dtype, made
    for a slice of index entries at a time (the extra memory is bounded, not O(n)). The host runs
    `_count_host` instead."""
    from cyscatter._index import IndexPlan
    step = max(1, MASK_ELEMENTS // max(1, src3.shape[0] * src3.shape[2]))
    for lo in range(0, plan.n, step):
        part = src3[:, lo:lo + step]
        flat = plan.flat[lo:lo + step]
        # the entries are planned already: skipping any still out of range is the plan's own rule
        sub = IndexPlan(flat, flat.shape, (plan.size,), "drop" if plan.drops else "raise", (flat,))
        mask = (part == part).astype(element_counts.dtype)
        run_scatter(kernels.OpCode.OP_ADD, mask, sub, element_counts, None, threads)


NAN_COUNT_DTYPES = (np.uint8, np.uint16, np.int32, np.int64)


class NanCounts:
    """Counts of a NaN-skipping op on host arrays, kept apart: `rows` the entries per destination row (int64,
    (size,)) and `nan` the NaN entries per element (the narrowest unsigned type, (outer, size, inner)). The
    element counts ``rows[j] - nan[o, j, f]`` are made only when asked for (`elements`): nanmean's divide reads
    the two parts directly (`nan_kernels.mean`)."""
    ndim = 3

    def __init__(self, rows, nan, dtype):
        self.rows, self.nan, self.dtype = rows, nan, dtype

    def elements(self):
        """The element counts, (outer, size, inner) of `dtype` (int32, or int64 past 2**31 - 1 entries)."""
        counts = np.empty(self.nan.shape, self.dtype)
        nan_kernels.element_counts(self.rows, self.nan, counts)
        return counts

    def divide(self, op, work3, threads: int = 0) -> None:
        """`op.divide` of `work3` by these counts: one pass for float32/float64 C-contiguous sums."""
        if work3.dtype in (np.float32, np.float64) and work3.flags.c_contiguous:
            nan_kernels.mean(work3, self.rows, self.nan)
        else:
            op.divide(work3, self.elements(), np, threads)


def _run_counted_host(run_scatter, op, src3, plan, work3, element_counts, threads: int = 0, split: bool = False):
    """`run_counted` on host arrays (`cyscatter/nan_kernels.pyx`): the entries of each destination row are
    counted first (applying the index mode); each element's NaN entries are counted in the narrowest unsigned
    type that the largest row count fits, in nansum's pass while the tables fit the cache (`_machine`), else by
    a second pass over src run only when the sum pass met a NaN (other ops scatter first, then count). Without
    any NaN the row counts are the counts, and `element_counts` (an `ElementCounts`) is never
    allocated; else it receives the row counts minus the NaN counts, or with `split` the two are returned apart
    (`NanCounts`)."""
    rows = np.zeros(plan.size, np.int64)
    if plan.n:
        status = nan_kernels.row_counts(plan.flat, rows, plan.kernel_mode)
        if status >= 0:
            raise plan.error(status)
    # integers and bools have no NaN; any other dtype reaching here is one the kernel takes (or refuses loudly)
    if src3.dtype.kind in "biu" or not plan.n:
        run_scatter(op.opcode, src3, plan, work3, None, threads)
        return rows
    most = int(rows.max()) if rows.size else 0
    narrow = next(t for t in NAN_COUNT_DTYPES if most <= np.iinfo(t).max)
    fused = work3.size * (work3.itemsize + np.dtype(narrow).itemsize) <= _machine.ACTIVE.fused_count_bytes
    nansum = op.opcode == kernels.OpCode.OP_NANADD
    if not nansum:
        run_scatter(op.opcode, src3, plan, work3, None, threads)
        if not nan_kernels.any_nan(src3):   # no NaN count table for a src without one (a read, as a count pass)
            return rows
    elif not fused and not nan_kernels.nansum(src3, plan.flat, work3, threads):
        return rows
    # cache-line aligned (a 64-byte row of uint8 counts at NumPy's 16-byte offset spans two lines)
    nan = kernels.fresh_table(work3.shape, narrow, 0)
    if fused and nansum:
        found = nan_kernels.nansum_count(src3, plan.flat, work3, nan, threads)
    else:
        found = nan_kernels.count(src3, plan.flat, nan, threads)
    if not found:
        return rows
    if split:
        return NanCounts(rows, nan, element_counts.dtype)
    nan_kernels.element_counts(rows, nan, element_counts.array())
    return element_counts.array()


def run_counted(run_scatter, op, src3, plan, work3, counts, threads: int = 0, split: bool = False):
    """`run_scatter` of `op`, counting into `counts` (zeros from `new_counts`) when given; returns the counts to
    finish with: `counts`, or for a NaN-skipping op on host arrays whose src holds no NaN the entries per row
    (int64, size), which mean's row rules then apply to; with `split` (a caller that finishes with
    `finish_fresh`), host element counts may come as `NanCounts`."""
    if counts is not None and counts.ndim == 3:
        lazy = counts if isinstance(counts, ElementCounts) else ElementCounts.holding(counts)
        if run_scatter in HOST_RUNNERS and lazy.xp is np and lazy.contiguous:
            return _run_counted_host(run_scatter, op, src3, plan, work3, lazy, threads, split)
        counts = lazy.array()
        run_scatter(op.opcode, src3, plan, work3, None, threads)
        count_not_nan(run_scatter, src3, plan, counts, threads)
    else:
        run_scatter(op.opcode, src3, plan, work3, counts, threads)
    return counts


def counts3(counts):
    """`counts` broadcastable against an (outer, size, inner) output: element counts as they are, row counts as
    (1, size, 1)."""
    return counts if counts.ndim == 3 else counts[None, :, None]


def _reduce_into(be, op, src3, plan, work3, indices_are_sorted: bool = False, threads: int = 0) -> None:
    """Apply `op` from the canonical `src3` into an existing `work3` (outer, size, inner) on backend `be`.

    For mean the group means are added to the rows that have a group (NNlib's ``scatter!(mean)``), and so are
    sqrt_n's ``sum / sqrt(count)``; for nanmean the means of the non-NaN entries to the elements that have one.
    """
    xp = be.xp
    run_scatter = _runner(be, indices_are_sorted)
    if op.counts:
        counts = new_counts(op, work3.shape, xp, n=plan.n)
        sums = op.fresh(work3.shape, work3.dtype, xp)
        counts = run_counted(run_scatter, op, src3, plan, sums, counts, threads)
        reached = xp.broadcast_to(counts3(counts) > 0, work3.shape)
        op.divide(sums, counts, xp, threads)
        if xp is np:   # one masked pass (CuPy's ufuncs take no `where`)
            np.add(work3, sums, out=work3, where=reached)
        else:
            xp.add(work3, sums, out=sums)   # in the buffer of sums: no second dst-sized temporary
            xp.copyto(work3, sums, where=reached)
    else:
        run_scatter(op.opcode, src3, plan, work3, threads=threads)


def size_arg(dim_size, plan) -> tuple[str, object]:
    """(name, value) of what sized an allocating call's output, for its errors: `dim_size`, or the index."""
    return ("dim_size", dim_size) if dim_size is not None else ("the dim_size inferred from index", plan.dims)


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def fill_for(fill_value, result_dtype, xp=np):
    """`fill_value` as a 0-d array of the output dtype (None stays None).

    NumPy's same_kind rule on the kind of the value (bool < integers < floats < complex); a Python scalar of a
    higher kind is also accepted when the output dtype holds it exactly, as NumPy 2 takes Python scalars by
    value: 0 or 1 fill a bool output, 2.0 an integer one, -1 no unsigned one (ValueError), 2.5 no integer one
    (TypeError).
    """
    if fill_value is None:
        return None
    if type(fill_value) not in (bool, int, float, complex, str, bytes) and not isinstance(fill_value, np.generic):
        check_foreign("fill_value", fill_value)
    dtype = np.dtype(result_dtype)
    value = np.asarray(fill_value)
    if is_bfloat16(dtype):   # a float for the rule below (its kind is 'V'), cast by ml_dtypes
        return _fill_float(fill_value, value, dtype, xp)
    if dtype.kind not in _KIND_RANK:   # strings, datetimes, records (gather): NumPy's own cast decides
        try:
            return xp.asarray(value.astype(dtype))
        except (TypeError, ValueError):
            raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype}") from None
    python_scalar = isinstance(fill_value, (bool, int, float, complex))
    try:
        cast = np.array(fill_value, dtype=dtype) if python_scalar else value.astype(dtype)
    except OverflowError:
        raise ValueError(f"fill_value={fill_value!r} is out of range for the output dtype {dtype}") from None
    except (TypeError, ValueError):
        cast = None
    if value.dtype.kind in _KIND_RANK and dtype.kind in _KIND_RANK:
        higher_kind = _KIND_RANK[value.dtype.kind] > _KIND_RANK[dtype.kind]
    else:   # strings, datetimes, ... (gather takes any dtype): NumPy's own rule
        higher_kind = not np.can_cast(value.dtype, dtype, "same_kind")
    if (cast is not None and not python_scalar and value.ndim == 0 and value.dtype.kind in "iub"
            and dtype.kind in "iu" and int(value) != int(cast)):   # a NumPy integer astype wrapped
        raise ValueError(f"fill_value={fill_value!r} is out of range for the output dtype {dtype}")
    if value.ndim or cast is None or (higher_kind and not (python_scalar and cast.item() == fill_value)):
        raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype} "
                        "under NumPy's same_kind rule (it must be a scalar the dtype holds)")
    return xp.asarray(cast)


def _fill_float(fill_value, value, dtype, xp):
    """`fill_for` of a bfloat16 output: as for a float one (a real number scalar; complex refused)."""
    python_scalar = isinstance(fill_value, (bool, int, float))
    if value.ndim or not (python_scalar or (value.dtype.kind in "biuf" or is_bfloat16(value.dtype))):
        raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype} "
                        "under NumPy's same_kind rule (it must be a scalar the dtype holds)")
    return xp.asarray(value.astype(dtype))


def finish_fresh(op, work3, counts, fill, result_dtype, xp=np, threads: int = 0):
    """The result from an accumulator `work3` that started at the identity (mutated; may be returned).

    Mean divides by the group counts; `fill` (from `fill_for`) replaces rows whose count is 0 (elements, for
    the NaN-skipping ops' element counts); then the compute dtype is cast to `result_dtype`. `counts` (from
    `new_counts`) may be None when neither needs it.
    """
    if counts is not None and counts.ndim == 3:   # element counts (NaN-skipping ops): no counts-sized temporary
        split = isinstance(counts, NanCounts)
        empty = None if fill is None else (counts.elements() if split else counts) == 0
        if op.counts and split:
            counts.divide(op, work3, threads)
        elif op.counts:
            op.divide(work3, counts, xp, threads)
        if empty is not None:
            work3[empty] = fill[()]
        return work3.astype(result_dtype, copy=False)
    if op.counts:
        op.divide(work3, counts, xp, threads)
    if fill is not None:
        work3[:, counts == 0] = fill[()]
    return work3.astype(result_dtype, copy=False)


@overload
def scatter(src: DeviceArray, index: IndexLike, op: OpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            out: Any = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> Any: ...


@overload
def scatter(src: ArrayInput, index: DeviceIndex, op: OpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            out: Any = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> Any: ...


@overload
def scatter(src: ArrayInput, index: IndexLike, op: OpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            out: Any = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...


@fill_doc
def scatter(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize | None = None,
            axis: SupportsIndex = 0, fill_value: FillValue | None = None, dtype: DTypeLike | None = None,
            out: Any = None, mode: Mode = "raise", indices_are_sorted: bool = False,
            num_threads: SupportsIndex | None = None) -> Any:
    """Scatter-reduce `src` into a new array: ``out[b, index[k], f] = op(out[b, index[k], f], src[b, k, f])``.

    NNlib's ``scatter(op, src, idx; dstsize)``, in NumPy conventions: index dims first, feature dims last.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values; B = ``src.shape[:axis]`` batch dims, I the index shape, F feature dims (any C-ordered layout
        is used without a copy; other layouts are copied once). The dims of `src` at the index position may
        each be 1 and are then broadcast over the entries (NumPy's rule; a src of one row ``(1, F)``, or
        ``(2, 1, F)`` against an index ``(2, n)``), and a `src` with fewer dims than the index gets leading
        1s, so a scalar is scattered at every entry (numpy_groupies' ``aggregate(idx, 1)``: ``scatter(1.0,
        idx)`` counts). B and F are read off `src` itself: a src ``(F,)`` is not a row here, as nothing says
        F (use ``src[None]``, or `scatter_into`, whose `dst` gives them). On the CPU broadcast entries are
        read through stride-0 views, never copied (the GPU kernels index flat memory: CuPy copies).
    {index}
    {op}
    dim_size : int or tuple of m ints, optional
        Destination shape D addressed by the index. Default: the largest entry + 1 per coordinate (0 for an
        empty index).
    {axis}
    fill_value : scalar, optional
        Value of the destination positions that no index entry reaches (default: the op's identity; 0 for
        mean). Cast to the output dtype with NumPy's ``same_kind`` rule.
    dtype : dtype, optional
        The accumulator and result dtype, as NumPy's ``np.add.reduce(..., dtype=)``: `src` is cast to it
        before the reduction, which then runs as for a `src` of that dtype. The cast follows NumPy's
        ``same_kind`` rule, as `scatter_into` does (float to int raises TypeError naming `dtype`; NumPy's
        reductions cast unsafely, ``np.add.reduce([1.5, 2.5], dtype=int)`` is 3: cast `src` yourself for
        that). As for any `src`: float16 still accumulates in float32 and small integers in int64, and div
        and mean of an integer `dtype` still divide truly and give float64 (``dtype=np.int32`` with "mean":
        the int32 values are summed in float64, the result is float64). Default: the dtype of `src`.
    out : ndarray, optional
        An array of exactly the result's shape B + D + F and dtype (byte order aside) that receives the result
        and is returned (NumPy's ``out=``). Like the fresh output, it starts from the op's identity (or
        `fill_value`): its values are not read. To reduce *into* existing values use `scatter_into`
        (pytorch_scatter's ``scatter(..., out=)`` is that accumulate-into meaning). With `out` and no
        `dim_size`, D is read off `out`'s shape; a `src` that broadcasts to the B + I + F that `out` implies
        takes B and F from it (``scatter(2.0, idx, out=np.zeros((3, 4)))`` puts a row of 2.0 at each entry, as
        ``np.add.at(out, idx, 2.0)`` on zeros). A Python int, float or complex `src` (without `dtype`) takes
        `out`'s dtype when that is of its kind or a higher one, as NumPy 2 takes Python scalars (NEP 50):
        ``scatter(2, idx, out=np.zeros(3, np.float32))`` is float32 (an int out of `out`'s range raises
        ValueError); a NumPy scalar or an array keeps its own dtype. A C-contiguous `out` of the compute dtype
        that shares no memory with `src` or `index` is written in place (no work table); any other is filled
        by a copy.
        A wrong shape raises ValueError, a wrong dtype or a non-array TypeError, a read-only `out`
        ValueError, all naming `out`; on any error `out` is left as it was.
    {mode}
    {indices_are_sorted}
    {threads}

    Returns
    -------
    out : ndarray, shape B + D + F
        The dtype of `src` (or `dtype`), except float64 for integer `src` with div, mean and sqrt_n. C-ordered; an output
        of at least 4 KB whose rows are longer than 16 bytes starts on a 64-byte boundary (a view of a buffer
        up to 64 B larger, its `base`), so that rows of whole cache lines do not straddle one more. The `out`
        object itself when one is given.

    Raises
    ------
    {raises}

    Notes
    -----
    {semantics}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter(np.array([1., 2., 3., 4.]), np.array([0, 2, 0, 2]), "add")
    array([4., 0., 6.])
    >>> cs.scatter(np.array([[1, 2], [3, 4], [5, 6]]), np.array([1, 0, 1]), "max")
    array([[3, 4],
           [5, 6]])
    >>> cs.scatter(np.arange(4.), (np.array([0, 1, 1, 0]), np.array([0, 0, 1, 1])), "mean")
    array([[0., 3.],
           [1., 2.]])
    >>> cs.scatter(1, np.array([0, 2, 0]))   # a scalar src broadcasts over the entries
    array([2, 0, 1])
    """
    threads = check_threads(num_threads)
    if type(op) is str and op in FAST and type(axis) is int and axis == 0 and mode == "raise" \
            and fill_value is None and type(src) is np.ndarray and not indices_are_sorted \
            and dtype is None and out is None \
            and (dim_size is None or type(dim_size) is int and 0 <= dim_size < 2 ** 62):
        opcode, identities = FAST[op]
        simple = kernels.scatter_simple(src, index, opcode, identities.get(src.dtype), dim_size, threads)
        if simple is not None:
            return simple
    op = get_op(op)
    be = backend_of(src=src, index=index, out=out)
    out_dtype = getattr(out, "dtype", None)
    if type(src) in _PYTHON_KIND and dtype is None and isinstance(out_dtype, np.dtype):
        src = python_scalar_as(src, out_dtype.newbyteorder("="), be.xp, "out")   # weak, as NumPy 2's (NEP 50)
    src = be.asarray(src)
    cast = check_dtype_arg(dtype, src.dtype)
    if cast is not None:
        if be.xp is not np:
            refuse_bfloat16_on_gpu("dtype", cast)
        try:
            op.check_dtype(cast)
        except TypeError as err:
            raise TypeError(f"dtype={cast}: {err}") from None
    result_dtype = op.result_dtype(src.dtype if cast is None else cast)
    coords = parse_coords(index, xp=be.xp)
    axis, batch, feat, expected = out_layout(src.shape, coords, axis, out)
    m = len(coords)
    if out is not None and dim_size is None and np.ndim(out) == len(batch) + m + len(feat):
        dim_size = tuple(int(d) for d in np.shape(out)[axis:axis + m])   # D from out, as scatter_into's dst
    plan = plan_index(None, dim_size, mode, coords=coords)
    fill = fill_for(fill_value, result_dtype, be.xp)
    shape = batch + plan.dims + feat
    target = None if out is None else check_out(be, out, shape, result_dtype)
    outer, inner = prod(batch), prod(feat)
    compute = op.compute_dtype(result_dtype)
    if target is not None and direct(be, target, compute, src, *coords):
        be.precheck(plan)   # under mode="raise", before `out` is written: the kernels then meet no bad entry
        counts = new_counts(op, (outer, plan.size, inner), be.xp, fill, plan.n)
        work3 = target.reshape(outer, plan.size, inner)
        work3[...] = op.identity(result_dtype)
        src = expand_cast(src if cast is None else src.astype(cast, copy=False), expected, len(feat), compute,
                          be.xp)
        src3 = be.rows_view(src, compute, outer, plan.n, inner)
        counts = run_counted(_runner(be, indices_are_sorted), op, src3, plan, work3, counts, threads,
                             split=True)
        finish_fresh(op, work3, counts, fill, result_dtype, be.xp, threads)
        return out
    arg, given = size_arg(dim_size, plan)
    check_table_bytes((outer, plan.size, inner), compute, arg, given)
    with sized_by(arg, given):
        work3 = op.fresh((outer, plan.size, inner), result_dtype, be.xp)
        if cast is not None:   # cast first (NumPy's dtype=), then to the compute dtype
            src = src.astype(cast, copy=False)
        src = expand_cast(src, expected, len(feat), work3.dtype, be.xp)
        src3 = be.rows_view(src, work3.dtype, outer, plan.n, inner)
        counts = new_counts(op, work3.shape, be.xp, fill, plan.n)
        counts = run_counted(_runner(be, indices_are_sorted), op, src3, plan, work3, counts, threads,
                             split=True)
        result = finish_fresh(op, work3, counts, fill, result_dtype, be.xp, threads)
    if target is not None:
        return write_out(be, target, result, out)
    return result.reshape(shape)


@fill_doc
def scatter_into(dst: _DstT, src: ArrayInput, index: IndexLike, op: OpLike = "add", *, axis: SupportsIndex = 0,
                 mode: Mode = "raise", indices_are_sorted: bool = False,
                 num_threads: SupportsIndex | None = None) -> _DstT:
    """Scatter-reduce `src` into `dst` in place: ``dst[b, index[k], f] = op(dst[b, index[k], f], src[b, k, f])``.

    NNlib's ``scatter!(op, dst, src, idx)``. For ``op="mean"`` the mean of each group is *added* to `dst`
    (NNlib); rows no entry reaches keep their values. ``op="sqrt_n"`` follows mean's convention: each group's
    ``sum / sqrt(count)`` is added to `dst`, rows no entry reaches keep their values (``dst`` is not a member
    of the group and does not count).

    Parameters
    ----------
    dst : ndarray, shape B + D + F
        Destination, updated in place; any layout, but writeable and without overlapping elements.
    src : array_like or scalar, shape broadcastable to B + I + F
        Values, cast to ``dst.dtype`` (NumPy ``same_kind``; a Python int, float or complex is taken by value,
        as NumPy 2 does: ``1`` goes into a uint8 `dst`, ``300`` raises ValueError, ``1.5`` into an int `dst`
        TypeError). `src` broadcasts (NumPy's rules) against B + I + F, with B and F from `dst`: the shape
        NumPy's ``ufunc.at(dst, idx, src)``, JAX's ``dst.at[idx].add(src)`` and CuPy's ``cupyx.scatter_add``
        broadcast it to. A scalar or 0-d array updates every entry, a row ``(F,)`` is applied at each entry,
        ``(n, 1)`` is broadcast over F, a size-1 batch dim over the batch. A shape that does not broadcast
        raises ValueError naming both shapes. On the CPU broadcast entries are read through stride-0 views,
        never copied (a scalar with F > 1 becomes one row; on the GPU CuPy copies). When `src` or `index`
        share memory with `dst`, the result is as if they had been copied first.
    {index}
    {op}
    {axis}
    {mode}
    {indices_are_sorted}
    {threads}

    Returns
    -------
    dst : ndarray
        The same object, updated.

    Raises
    ------
    {raises}
    TypeError
        Also for div/mean into an integer `dst` (their results are not integers).

    Notes
    -----
    {semantics}
    On any exception `dst` is left exactly as it was.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> dst = np.array([10., 20., 30.])
    >>> cs.scatter_into(dst, np.array([1., 2., 3.]), np.array([2, 0, 2]), "sub")
    array([ 8., 20., 26.])
    >>> cs.scatter_into(np.zeros(3, np.int64), 1, np.array([2, 0, 2]))   # a scalar src: counts
    array([1, 0, 2])
    >>> cs.scatter_into(np.zeros((2, 2)), np.array([1., 10.]), np.array([1, 1, 0]), "add")   # a row
    array([[ 1., 10.],
           [ 2., 20.]])
    """
    threads = check_threads(num_threads)
    if type(op) is str and op in FAST and type(axis) is int and axis == 0 and mode == "raise" \
            and type(dst) is np.ndarray and not indices_are_sorted:
        opcode, identities = FAST[op]
        if kernels.scatter_into_simple(dst, src, index, opcode, dst.dtype in identities, threads):
            return dst
    op = get_op(op)
    be = backend_of(dst=dst, src=src, index=index)
    target, dst = dst, be.check_writable(dst)   # a subclass is written through a plain view
    src = python_scalar_as(src, dst.dtype, be.xp) if type(src) in _PYTHON_KIND else be.asarray(src)
    op.check_dtype(dst.dtype, "dst")
    op.check_dtype(src.dtype)
    if op.true_division and dst.dtype.kind in "iu":
        raise TypeError(f"op {op.name!r} gives non-integer results; dst dtype {dst.dtype} cannot hold them")
    if not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src.dtype} to dst dtype {dst.dtype} (same_kind rule)")
    coords = parse_coords(index, xp=be.xp)
    axis, batch, feat, expected = src_layout(src.shape, coords, axis, table_shape=dst.shape)
    m = len(coords)
    if be.xp.may_share_memory(src, dst):
        src = src.copy()
    if any(be.xp.may_share_memory(c, dst) for c in coords):
        coords = tuple(c.copy() for c in coords)
    plan = plan_index(None, dst.shape[axis:axis + m], mode, coords=coords, dims_arg="dst.shape")
    be.precheck(plan)
    compute = op.compute_dtype(dst.dtype)
    if src.dtype != dst.dtype:   # NumPy's ufunc.at casts src to dst's dtype first
        src = src.astype(dst.dtype)
    src = expand_cast(src, expected, len(feat), compute, be.xp)   # after the casts: they see src's own size
    outer, inner = prod(batch), prod(feat)
    src3 = be.rows_view(src, compute, outer, plan.n, inner)
    work3, direct = be.writable_rows(dst, compute, outer, plan.size, inner)
    _reduce_into(be, op, src3, plan, work3, indices_are_sorted, threads)
    if not direct:
        be.xp.copyto(dst, work3.reshape(dst.shape), casting="unsafe")
    return target
