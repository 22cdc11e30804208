"""scatter and scatter_into: the public scatter-reduce functions (NNlib's `scatter` and `scatter!`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from cyscatter._backend import backend_of, check_foreign
from cyscatter._canonical import normalize_axis, prod
from cyscatter._docs import fill_doc
from cyscatter._index import check_table_bytes, parse_coords, plan_index, sized_by
from cyscatter import kernels
from cyscatter._ops import FAST, get_op
from cyscatter._result import check_dtype_arg, check_out, direct, write_out
from cyscatter._threads import check_threads
from cyscatter._sorted import run_scatter_runs

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike, NDArray

    from cyscatter._typing import (ArrayInput, DeviceArray, DeviceIndex, DimSize, FillValue, IndexLike, Mode, OpLike,
                                   _DstT)


def split_src(src: np.ndarray, coords: tuple, axis, arg: str = "src",
              expanded_check: bool = True) -> tuple[int, tuple, tuple]:
    """(axis, batch shape B, feature shape F) of `src` around an index of shape I = coords[0].shape.

    Refuses a torch-style expanded index (see `refuse_expanded_index`) unless `expanded_check` is False (an
    index whose values are not at hand, as Dask's)."""
    ishape = coords[0].shape
    axis = normalize_axis(axis, src.ndim, len(ishape), array=arg)
    if src.shape[axis:axis + len(ishape)] != ishape:
        raise ValueError(f"{arg} shape {src.shape} does not hold the index shape {ishape} at axis {axis}")
    if expanded_check:
        refuse_expanded_index(coords, src.shape, axis, arg)
    return axis, src.shape[:axis], src.shape[axis + len(ishape):]


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
    index = coords[0]
    if (len(coords) != 1 or index.ndim < 2 or axis + index.ndim != len(src_shape) or index.shape[-1] < 2
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
        return xp.zeros(shape3, np.int32 if n < 2**31 - 1 else np.int64)
    return xp.zeros(shape3[1], np.int64)


MASK_ELEMENTS = 1 << 20   # src elements whose NaN mask (at most 8 MiB) one pass of `count_not_nan` holds


def count_not_nan(run_scatter, src3, plan, element_counts, threads: int = 0) -> None:
    """element_counts[o, flat[k], f] += 1 for each non-NaN src3[o, k, f] (NumPy's isnan; complex: either part).

    A second add pass through the same scatter kernel, of the mask in the counts' dtype, made for a slice of
    index entries at a time (the extra memory is bounded, not O(n)). Its cost against the twin: benchmarks/bench_nan.py.
    """
    from cyscatter._index import IndexPlan
    step = max(1, MASK_ELEMENTS // max(1, src3.shape[0] * src3.shape[2]))
    for lo in range(0, plan.n, step):
        part = src3[:, lo:lo + step]
        flat = plan.flat[lo:lo + step]
        # the entries are planned already: skipping any still out of range is the plan's own rule
        sub = IndexPlan(flat, flat.shape, (plan.size,), "drop" if plan.drops else "raise", (flat,))
        mask = (part == part).astype(element_counts.dtype)
        run_scatter(kernels.OpCode.OP_ADD, mask, sub, element_counts, None, threads)


def run_counted(run_scatter, op, src3, plan, work3, counts, threads: int = 0) -> None:
    """`run_scatter` of `op`, counting into `counts` (from `new_counts`) when given."""
    if counts is not None and counts.ndim == 3:
        run_scatter(op.opcode, src3, plan, work3, None, threads)
        count_not_nan(run_scatter, src3, plan, counts, threads)
    else:
        run_scatter(op.opcode, src3, plan, work3, counts, threads)


def counts3(counts):
    """`counts` broadcastable against an (outer, size, inner) output: element counts as they are, row counts as
    (1, size, 1)."""
    return counts if counts.ndim == 3 else counts[None, :, None]


def _reduce_into(be, op, src3, plan, work3, indices_are_sorted: bool = False, threads: int = 0) -> None:
    """Apply `op` from the canonical `src3` into an existing `work3` (outer, size, inner) on backend `be`.

    For mean the group means are added to the rows that have a group (NNlib's ``scatter!(mean)``); for nanmean
    the means of the non-NaN entries to the elements that have one.
    """
    xp = be.xp
    run_scatter = _runner(be, indices_are_sorted)
    if op.counts:
        counts = new_counts(op, work3.shape, xp, n=plan.n)
        sums = op.fresh(work3.shape, work3.dtype, xp)
        run_counted(run_scatter, op, src3, plan, sums, counts, threads)
        reached = xp.broadcast_to(counts3(counts) > 0, work3.shape)
        if counts.ndim == 3:   # in place, as in finish_fresh
            xp.maximum(counts, 1, out=counts)
            xp.divide(sums, counts, out=sums, dtype=sums.dtype, casting="unsafe")
        elif not (xp is np and kernels.divide_by_counts(sums, counts, threads)):
            sums /= xp.maximum(counts, 1)[None, :, None].astype(sums.real.dtype)
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
    if value.ndim or cast is None or (higher_kind and not (python_scalar and cast == fill_value)):
        raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype} "
                        "under NumPy's same_kind rule (it must be a scalar the dtype holds)")
    return xp.asarray(cast)


def finish_fresh(op, work3, counts, fill, result_dtype, xp=np, threads: int = 0):
    """The result from an accumulator `work3` that started at the identity (mutated; may be returned).

    Mean divides by the group counts; `fill` (from `fill_for`) replaces rows whose count is 0 (elements, for
    the NaN-skipping ops' element counts); then the compute dtype is cast to `result_dtype`. `counts` (from
    `new_counts`) may be None when neither needs it.
    """
    if counts is not None and counts.ndim == 3:   # element counts (NaN-skipping ops): no counts-sized temporary
        empty = None if fill is None else counts == 0
        if op.counts:
            xp.maximum(counts, 1, out=counts)
            xp.divide(work3, counts, out=work3, dtype=work3.dtype, casting="unsafe")
        if empty is not None:
            work3[empty] = fill[()]
        return work3.astype(result_dtype, copy=False)
    if op.counts and not (xp is np and kernels.divide_by_counts(work3, counts, threads)):
        work3 /= xp.maximum(counts, 1)[None, :, None].astype(work3.real.dtype)
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
    src : array_like, shape B + I + F
        Values; B = ``src.shape[:axis]`` batch dims, I the index shape, F feature dims (any C-ordered layout
        is used without a copy; other layouts are copied once).
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
        `dim_size`, D is read off `out`'s shape. A C-contiguous `out` of the compute dtype that shares no
        memory with `src` or `index` is written in place (no work table); any other is filled by a copy.
        A wrong shape raises ValueError, a wrong dtype or a non-array TypeError, a read-only `out`
        ValueError, all naming `out`; on any error `out` is left as it was.
    {mode}
    {indices_are_sorted}
    {threads}

    Returns
    -------
    out : ndarray, shape B + D + F
        The dtype of `src` (or `dtype`), except float64 for integer `src` with div and mean. C-ordered; an output
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
    src = be.asarray(src)
    cast = check_dtype_arg(dtype, src.dtype)
    if cast is not None:
        try:
            op.check_dtype(cast)
        except TypeError as err:
            raise TypeError(f"dtype={cast}: {err}") from None
    result_dtype = op.result_dtype(src.dtype if cast is None else cast)
    coords = parse_coords(index, xp=be.xp)
    axis, batch, feat = split_src(src, coords, axis)
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
        src3 = be.rows_view(src if cast is None else src.astype(cast, copy=False), compute, outer, plan.n, inner)
        run_counted(_runner(be, indices_are_sorted), op, src3, plan, work3, counts, threads)
        finish_fresh(op, work3, counts, fill, result_dtype, be.xp, threads)
        return out
    arg, given = size_arg(dim_size, plan)
    check_table_bytes((outer, plan.size, inner), compute, arg, given)
    with sized_by(arg, given):
        work3 = op.fresh((outer, plan.size, inner), result_dtype, be.xp)
        if cast is not None:   # cast first (NumPy's dtype=), then to the compute dtype
            src = src.astype(cast, copy=False)
        src3 = be.rows_view(src, work3.dtype, outer, plan.n, inner)
        counts = new_counts(op, work3.shape, be.xp, fill, plan.n)
        run_counted(_runner(be, indices_are_sorted), op, src3, plan, work3, counts, threads)
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
    (NNlib); rows no entry reaches keep their values.

    Parameters
    ----------
    dst : ndarray, shape B + D + F
        Destination, updated in place; any layout, but writeable and without overlapping elements.
    src : array_like, shape B + I + F
        Values, cast to ``dst.dtype`` (NumPy ``same_kind``). When `src` or `index` share memory with `dst`,
        the result is as if they had been copied first.
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
    src = be.asarray(src)
    op.check_dtype(dst.dtype, "dst")
    op.check_dtype(src.dtype)
    if op.true_division and dst.dtype.kind in "iu":
        raise TypeError(f"op {op.name!r} gives non-integer results; dst dtype {dst.dtype} cannot hold them")
    if not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src.dtype} to dst dtype {dst.dtype} (same_kind rule)")
    coords = parse_coords(index, xp=be.xp)
    axis, batch, feat = split_src(src, coords, axis)
    m = len(coords)
    if dst.ndim != len(batch) + m + len(feat) or dst.shape[:axis] != batch or dst.shape[axis + m:] != feat:
        raise ValueError(f"dst shape {dst.shape} does not match src shape {src.shape} with an index of "
                         f"shape {coords[0].shape} addressing {m} axis(es) at axis {axis}")
    if be.xp.may_share_memory(src, dst):
        src = src.copy()
    if any(be.xp.may_share_memory(c, dst) for c in coords):
        coords = tuple(c.copy() for c in coords)
    plan = plan_index(None, dst.shape[axis:axis + m], mode, coords=coords, dims_arg="dst.shape")
    be.precheck(plan)
    compute = op.compute_dtype(dst.dtype)
    if src.dtype != dst.dtype:   # NumPy's ufunc.at casts src to dst's dtype first
        src = src.astype(dst.dtype)
    outer, inner = prod(batch), prod(feat)
    src3 = be.rows_view(src, compute, outer, plan.n, inner)
    work3, direct = be.writable_rows(dst, compute, outer, plan.size, inner)
    _reduce_into(be, op, src3, plan, work3, indices_are_sorted, threads)
    if not direct:
        be.xp.copyto(dst, work3.reshape(dst.shape), casting="unsafe")
    return target
