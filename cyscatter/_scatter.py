"""scatter and scatter_into: the public scatter-reduce functions (NNlib's `scatter` and `scatter!`)."""
from __future__ import annotations

import numpy as np

from cyscatter._canonical import (check_writable, normalize_axis, precheck, prod, rows_view, run_scatter,
                                  writable_rows)
from cyscatter._docs import fill_doc
from cyscatter._index import parse_coords, plan_index
from cyscatter import kernels
from cyscatter._ops import FAST, get_op
from cyscatter._threads import check_threads


def split_src(src: np.ndarray, coords: tuple, axis, arg: str = "src") -> tuple[int, tuple, tuple]:
    """(axis, batch shape B, feature shape F) of `src` around an index of shape I = coords[0].shape."""
    ishape = coords[0].shape
    axis = normalize_axis(axis, src.ndim, len(ishape))
    if src.shape[axis:axis + len(ishape)] != ishape:
        raise ValueError(f"{arg} shape {src.shape} does not hold the index shape {ishape} at axis {axis}")
    return axis, src.shape[:axis], src.shape[axis + len(ishape):]


def _reduce_into(op, src3, plan, work3, *, fresh: bool, count: bool, threads: int = 0):
    """Apply `op` from the canonical `src3` into `work3` (outer, size, inner); returns group counts or None.

    A fresh `work3` holds the identity, so mean can sum in place; into an existing one, mean adds the group
    means to the rows that have a group (NNlib's ``scatter!(mean)``).
    """
    counts = np.zeros(plan.size, np.int64) if count or op.counts else None
    if op.counts and not fresh:
        sums = np.zeros_like(work3)
        run_scatter(op.opcode, src3, plan, sums, counts, threads)
        sums /= np.maximum(counts, 1)[None, :, None].astype(sums.real.dtype)
        np.add(work3, sums, out=work3, where=(counts > 0)[None, :, None])
    else:
        run_scatter(op.opcode, src3, plan, work3, counts, threads)
        if op.counts and not kernels.divide_by_counts(work3, counts, threads):
            work3 /= np.maximum(counts, 1)[None, :, None].astype(work3.real.dtype)
    return counts


@fill_doc
def scatter(src, index, op="add", *, dim_size=None, axis=0, fill_value=None, mode="raise", num_threads=None):
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
    {mode}

    Returns
    -------
    out : ndarray, shape B + D + F
        dtype of `src`, except float64 for integer `src` with div and mean.

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
    threads = 0 if num_threads is None else check_threads(num_threads)
    if type(op) is str and op in FAST and type(axis) is int and axis == 0 and mode == "raise" \
            and fill_value is None and type(src) is np.ndarray:
        opcode, identities = FAST[op]
        out = kernels.scatter_simple(src, index, opcode, identities.get(src.dtype), dim_size, threads)
        if out is not None:
            return out
    op = get_op(op)
    src = np.asarray(src)
    result_dtype = op.result_dtype(src.dtype)
    coords = parse_coords(index)
    axis, batch, feat = split_src(src, coords, axis)
    plan = plan_index(index, dim_size, mode, coords=coords)
    compute = op.compute_dtype(result_dtype)
    outer, inner = prod(batch), prod(feat)
    work3 = np.full((outer, plan.size, inner), op.identity(result_dtype), compute)
    src3 = rows_view(src, compute, outer, plan.n, inner)
    counts = _reduce_into(op, src3, plan, work3, fresh=True, count=fill_value is not None, threads=threads)
    if fill_value is not None:
        fill = np.asarray(fill_value).astype(result_dtype, casting="same_kind")
        work3[:, counts == 0] = fill
    return work3.astype(result_dtype, copy=False).reshape(batch + plan.dims + feat)


@fill_doc
def scatter_into(dst, src, index, op="add", *, axis=0, mode="raise", num_threads=None):
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
    threads = 0 if num_threads is None else check_threads(num_threads)
    if type(op) is str and op in FAST and type(axis) is int and axis == 0 and mode == "raise" \
            and type(dst) is np.ndarray:
        opcode, identities = FAST[op]
        if kernels.scatter_into_simple(dst, src, index, opcode, dst.dtype in identities, threads):
            return dst
    op = get_op(op)
    check_writable(dst)
    src = np.asarray(src)
    op.check_dtype(dst.dtype, "dst")
    op.check_dtype(src.dtype)
    if op.true_division and dst.dtype.kind in "iu":
        raise TypeError(f"op {op.name!r} gives non-integer results; dst dtype {dst.dtype} cannot hold them")
    if not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src.dtype} to dst dtype {dst.dtype} (same_kind rule)")
    coords = parse_coords(index)
    axis, batch, feat = split_src(src, coords, axis)
    m = len(coords)
    if dst.ndim != len(batch) + m + len(feat) or dst.shape[:axis] != batch or dst.shape[axis + m:] != feat:
        raise ValueError(f"dst shape {dst.shape} does not match src shape {src.shape} with an index of "
                         f"shape {coords[0].shape} addressing {m} axis(es) at axis {axis}")
    if np.may_share_memory(src, dst):
        src = src.copy()
    if any(np.may_share_memory(c, dst) for c in coords):
        coords = tuple(c.copy() for c in coords)
    plan = plan_index(index, dst.shape[axis:axis + m], mode, coords=coords, dims_arg="dst.shape")
    precheck(plan)
    compute = op.compute_dtype(dst.dtype)
    if src.dtype != dst.dtype:   # NumPy's ufunc.at casts src to dst's dtype first
        src = src.astype(dst.dtype)
    outer, inner = prod(batch), prod(feat)
    src3 = rows_view(src, compute, outer, plan.n, inner)
    work3, direct = writable_rows(dst, compute, outer, plan.size, inner)
    _reduce_into(op, src3, plan, work3, fresh=False, count=False, threads=threads)
    if not direct:
        np.copyto(dst, work3.reshape(dst.shape), casting="unsafe")
    return dst
