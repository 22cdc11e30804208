"""Several aggregations in one call: scatter_multi, segment_multi and gather_scatter_multi.

PyG's ``MultiAggregation`` (and PNA's mean/min/max/std) concatenate the results of several aggregations along
the feature axis. Called one op at a time, each reads `src` again (and var/std twice). Here, on the CPU for a
float32/float64 `src`, one kernel pass (`group_kernels.multi_reduce`) reads each row once and updates every
table the ops need (the sums of add, mean and var/std, the maxima, the minima, the counts); var/std add the
second pass of their two-pass algorithm (`group_kernels.multi_squares`: the squared deviations from the means
the first pass gave). Each table gets its updates in index order with the core's rules, so add, mean, max and
min equal `scatter`'s bits, var and std `scatter_var`'s algorithm. Other ops, dtypes and the GPU run each op's
own function.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter import group_kernels
from cyscatter._api.gather import gather
from cyscatter._api.moments import check_ddof, scatter_std, scatter_var
from cyscatter._api.scatter import scatter
from cyscatter._api.segment import check_indptr, segment_ids
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._backends.reduce import divide
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.groups import dst_shape, group_view
from cyscatter._plan.index import sized_by
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import size_arg
from cyscatter._registry.ops import get_op

if TYPE_CHECKING:
    from typing import Any, Sequence, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode

MOMENTS = ("var", "std")   # the aggregations beyond the registry's ops (scatter_var / scatter_std)
# what the fused kernel computes: the tables each op reads
_FUSED = {"add": "sums", "mean": "sums", "max": "maxs", "min": "mins", "var": "sums", "std": "sums"}


def parse_ops(ops) -> tuple:
    """The canonical names of `ops` (registry names, aliases resolved; "var", "std"); TypeError / ValueError
    naming `ops` otherwise."""
    if isinstance(ops, str) or not isinstance(ops, (tuple, list)):
        raise TypeError(f"ops must be a tuple or list of op names, got {type(ops).__name__} {ops!r}")
    if not ops:
        raise ValueError("ops must name at least one aggregation, got an empty sequence")
    names = []
    for op in ops:
        if op in MOMENTS:
            names.append(op)
            continue
        entry = get_op(op)
        if entry.winner:
            raise ValueError(f"ops: {entry.name!r} is an assignment, not an aggregation; scatter_multi takes the "
                             f"reductions and {', '.join(MOMENTS)}")
        names.append(entry.name)
    return tuple(names)


def stack_results(results, xp):
    """PyG's MultiAggregation layout: the results side by side along their last axis (the feature axis, or a
    new axis of length 1 each where they have no feature dims)."""
    return xp.concatenate(results, axis=-1)


def split_results(a, k: int, feature_dims: bool, xp):
    """The k results `stack_results` placed side by side in `a` (B + D + (k * f,), or B + D + (k,))."""
    if not feature_dims:
        return [a[..., i] for i in range(k)]
    width = a.shape[-1] // k
    return [a[..., i * width:(i + 1) * width] for i in range(k)]


def _one(name, src, index, dim_size, axis, mode, ddof):
    if name in MOMENTS:
        moment = scatter_var if name == "var" else scatter_std
        return moment(src, index, ddof=ddof, dim_size=dim_size, axis=axis, mode=mode)
    return scatter(src, index, name, dim_size=dim_size, axis=axis, mode=mode)


def _fused(names, src, index, dim_size, axis, mode, ddof):
    """The results of `names` from the one-pass kernel, or None where it does not serve the call."""
    if not all(name in _FUSED for name in names) or getattr(src, "dtype", None) not in (np.float32, np.float64):
        return None   # (integers would be computed in float64: max and min keep their dtype)
    ctx, result, batch, feat = group_view("scatter_multi", src, index, dim_size, axis, mode)
    src3 = ctx.src3
    if ctx.be.name != "host" or src3.dtype not in (np.float32, np.float64) or result != src3.dtype:
        return None
    src3 = np.ascontiguousarray(src3)
    flat = ctx.plan.flat if ctx.plan.flat.dtype in (np.int32, np.int64) else ctx.plan.flat.astype(np.int64)
    flat = np.ascontiguousarray(flat).reshape(-1)
    outer, size, inner = src3.shape[0], ctx.plan.size, src3.shape[2]
    wanted = [table for table in ("sums", "maxs", "mins") if table in {_FUSED[name] for name in names}]
    start = {"sums": 0, "maxs": -np.inf, "mins": np.inf}
    with sized_by(*size_arg(dim_size, ctx.plan)):
        # the tables of a destination row side by side in one work row: one run of cache lines per entry
        work = np.empty((outer, size, len(wanted) * inner), src3.dtype)
        at = {}
        for i, table in enumerate(wanted):
            at[table] = i * inner
            work[:, :, i * inner:(i + 1) * inner] = start[table]
        counts = np.zeros(size, np.int64)
        status = group_kernels.multi_reduce(src3, flat, work, at.get("sums", -1), at.get("maxs", -1),
                                            at.get("mins", -1), counts, ctx.plan.kernel_mode)
        if status >= 0:
            raise ctx.plan.error(status)
        part = {table: work[:, :, at[table]:at[table] + inner] for table in wanted}
        tables = {"add": part.get("sums"), "max": part.get("maxs"), "min": part.get("mins")}
        if "mean" in names:
            tables["mean"] = part["sums"].copy()   # (C order; the sums stay for var/std)
            divide(get_op("mean"), tables["mean"], counts)
        if "var" in names or "std" in names:
            # scatter_var's two passes: the means in src's dtype, then the squared deviations from them, the two
            # side by side in one work row as above
            moments = np.zeros((outer, size, 2 * inner), src3.dtype)
            np.divide(part["sums"], np.maximum(counts, 1)[None, :, None].astype(src3.dtype),
                      out=moments[:, :, :inner])
            group_kernels.multi_squares(src3, flat, moments)
            squares = moments[:, :, inner:]
            dof = np.subtract(counts[None, :, None], ddof, dtype=src3.dtype)
            with np.errstate(divide="ignore", invalid="ignore"):
                var = np.divide(squares, dof)
            np.copyto(var, np.nan, where=~(dof > 0))
            tables["var"] = var
            tables["std"] = np.sqrt(var) if "std" in names else None
    shape = dst_shape(ctx, batch, feat)
    return [tables[name].reshape(shape) for name in names]


@fill_doc
def scatter_multi(src: ArrayInput, index: IndexLike, ops: Sequence[str] = ("mean", "max", "min", "std"), *,
                  dim_size: DimSize | None = None, axis: SupportsIndex = 0, mode: Mode = "raise",
                  ddof: float = 0, **porting: object) -> Any:
    """Several group aggregations in one call, side by side along the feature axis (PyG's MultiAggregation).

    ``scatter_multi(src, index, ("mean", "max"))`` is ``np.concatenate([scatter(src, index, "mean"),
    scatter(src, index, "max")], axis=-1)``, PyG's layout (``MultiAggregation(mode="cat")``: result i fills
    features ``i * F:(i + 1) * F``); a `src` without feature dims gets a new last axis of ``len(ops)``. For a
    float32/float64 `src` on the CPU with ops among add, mean, max, min, var and std, one kernel pass reads
    each row once for all of them (var/std add the second pass of their two-pass algorithm), instead of a
    pass (two for var/std) per op: PNA's ("mean", "max", "min", "std") take about a third of the time of four
    calls. The results equal the single-op calls: add, mean, max and min bit for bit, var and std
    `scatter_var`'s two-pass algorithm. Other ops and dtypes, and CuPy arrays, run each op's function.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values (the dtypes the ops take).
    {index}
    ops : sequence of str, default ("mean", "max", "min", "std")
        The aggregations, in the order of the result's blocks: any reduction `scatter` takes (aliases too) and
        "var", "std" (`scatter_var` / `scatter_std`, with `ddof`). Not the assignments (set, first, ...).
    {dim_size}
    {axis}
    {mode}
    ddof : float, default 0
        Delta degrees of freedom of "var" and "std".

    Returns
    -------
    out : ndarray, shape B + D + F[:-1] + (len(ops) * F[-1],), or B + D + (len(ops),) without F
        Each op's result (its own empty-group value: 0 for add and mean, -inf / +inf for max / min, NaN for
        var / std), concatenated with NumPy's dtype promotion (float64 results of an integer `src` with mean
        promote an integer max). NumPy or CuPy, as `src`.

    Raises
    ------
    TypeError
        `ops` not a sequence of strings, or an op or dtype the op's own function refuses.
    ValueError
        An empty `ops`, an unknown op, an assignment op, or what `scatter` raises.
    IndexError
        An out-of-range index entry under ``mode="raise"``.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src = np.array([[1., 10.], [3., 30.], [5., 50.]])
    >>> cs.scatter_multi(src, np.array([0, 0, 1]), ("mean", "max", "std"))
    array([[ 2., 20.,  3., 30.,  1., 10.],
           [ 5., 50.,  5., 50.,  0.,  0.]])
    """
    if porting:
        raise unexpected_keywords("scatter_multi", porting)
    names = parse_ops(ops)
    ddof = check_ddof(ddof)
    results = _fused(names, src, index, dim_size, axis, mode, ddof)
    if results is None:
        results = [_one(name, src, index, dim_size, axis, mode, ddof) for name in names]
    if not feature_dims(src, index, axis):   # a new last axis
        results = [r[..., None] for r in results]
    return stack_results(results, backend_of(src=src, index=index).xp)


def feature_dims(src, index, axis) -> bool:
    """Whether `src` has feature dims past the index dims (else the results stack along a new axis)."""
    coords = index if isinstance(index, tuple) else (index,)
    ishape = tuple(shape_of(coords[0])) if coords else ()
    ndim = len(shape_of(src))
    start = normalize_axis(axis, max(ndim, 1), 1) if ndim else 0
    return ndim > start + len(ishape)


@fill_doc
def segment_multi(src: ArrayInput, indptr: ArrayInput, ops: Sequence[str] = ("mean", "max", "min", "std"), *,
                  axis: SupportsIndex = 0, ddof: float = 0, **porting: object) -> Any:
    """Several CSR segment aggregations in one call: `scatter_multi` with the index ``segment_ids(indptr)``.

    Parameters
    ----------
    src : array_like, shape B + (n,) + F
        Values; the n rows along `axis` are cut into segments.
    indptr : 1-D int array of length S + 1
        CSR pointer, as for `segment` (starts at 0, ends at n, never decreases).
    ops : sequence of str, default ("mean", "max", "min", "std")
        As for `scatter_multi`.
    axis : int, default 0
        The axis of `src` holding the rows.
    ddof : float, default 0
        Delta degrees of freedom of "var" and "std".

    Returns
    -------
    out : ndarray, shape B + (S,) + F[:-1] + (len(ops) * F[-1],), or B + (S, len(ops)) without F
        As `scatter_multi`.

    Raises
    ------
    TypeError, ValueError
        As `scatter_multi` and `segment` (a bad `indptr`).

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.segment_multi(np.array([1., 3., 5.]), np.array([0, 2, 3]), ("add", "max"))
    array([[4., 3.],
           [5., 5.]])
    """
    if porting:
        raise unexpected_keywords("segment_multi", porting)
    be = backend_of(src=src, indptr=indptr)
    src = be.asarray(src)
    k = normalize_axis(axis, src.ndim, 1)
    ptr = check_indptr(indptr, src.shape[k], be=be)
    return scatter_multi(src, segment_ids(ptr), ops, dim_size=ptr.size - 1, axis=k, ddof=ddof)


@fill_doc
def gather_scatter_multi(src: ArrayInput, gather_index: IndexLike, scatter_index: IndexLike,
                         ops: Sequence[str] = ("mean", "max", "min", "std"), *, weight: ArrayInput | None = None,
                         dim_size: DimSize | None = None, ddof: float = 0, **porting: object) -> Any:
    """Several aggregations of messages in one call: `scatter_multi` of ``gather(src, gather_index)`` (times
    `weight`) into `scatter_index`: PNA's and PyG's MultiAggregation message passing.

    The messages are made once (an edges x F array, unlike `gather_scatter`'s single op, which makes none) and
    reduced by `scatter_multi`'s one pass.

    Parameters
    ----------
    src : array_like, shape (N,) + F
        Node rows.
    gather_index, scatter_index : 1-D int arrays of length E
        Source and destination node of each edge.
    ops : sequence of str, default ("mean", "max", "min", "std")
        As for `scatter_multi`.
    weight : array_like, shape (E,), optional
        A weight per edge, multiplying its message.
    dim_size : int, optional
        The number of destination rows (default: the largest scatter index + 1).
    ddof : float, default 0
        Delta degrees of freedom of "var" and "std".

    Returns
    -------
    out : ndarray, shape (dim_size,) + F[:-1] + (len(ops) * F[-1],), or (dim_size, len(ops)) without F
        As `scatter_multi`.

    Raises
    ------
    TypeError, ValueError, IndexError
        As `gather`, `scatter_multi` (a weight not of one entry per edge: ValueError); an index entry out of
        range raises IndexError (no other modes: use `gather` and `scatter_multi` for those).

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x = np.array([[1.], [2.], [4.]])
    >>> cs.gather_scatter_multi(x, np.array([0, 1, 2]), np.array([0, 0, 1]), ("add", "max"))
    array([[3., 2.],
           [4., 4.]])
    """
    if porting:
        raise unexpected_keywords("gather_scatter_multi", porting)
    messages = gather(src, gather_index)
    if weight is not None:
        be = backend_of(src=messages, weight=weight)
        w = be.asarray(weight)
        if w.shape != tuple(shape_of(gather_index)):
            raise ValueError(f"weight has shape {w.shape}, but there are {tuple(shape_of(gather_index))} edges")
        messages = messages * w.reshape(w.shape + (1,) * (messages.ndim - w.ndim))
    return scatter_multi(messages, scatter_index, ops, dim_size=dim_size, ddof=ddof)
