"""scatter_quantile / scatter_nanquantile (and scatter's ops median / nanmedian) on Dask arrays: whole groups.

A quantile cannot be merged from partial results (the median of medians is not the median), so the tree of
`cyscatter.dask._scatter.reduction_graph` carries members instead of partials: each (src block, index block)
task keeps the entries that reach its destination block (their values and local rows), the merge tasks
concatenate them in index order, and the last task sorts them (`cyscatter.scatter_quantile`). The result equals
the in-memory one bit for bit; the memory of a task is the members of one destination block (all of them with one
block along D), so give `dim_chunks` (and chunk src along B and F) when that is large.
"""
from __future__ import annotations

import functools
from functools import partial
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.base import tokenize

import cyscatter as cs
from cyscatter._api.quantile import MEDIAN, check_method, check_q, result_dtype
from cyscatter._arrays.integers import prod
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import fill_for
from cyscatter._registry.ops import ORDER_STATS, get_op
from cyscatter.dask._scatter import prepare, reduction_graph, refuse_out, scatter
from cyscatter.dask._whole import _no_sizes, is_empty_tuple

if TYPE_CHECKING:
    from typing import Sequence, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode

# max's dtype checks are the order statistics' (real values only) for the shared graph-time checks of `prepare`
_ORDERED = get_op("max")


def _members(src: Any, flat: Any, *, nb: int, rows: tuple[int, int]) -> tuple[Any, Any]:
    """(values (outer, k, inner), local rows (k,)) of the entries of one block that reach rows = (lo, hi)."""
    lo, hi = rows
    outer = prod(src.shape[:nb])
    src3 = src.reshape(outer, flat.size, prod(src.shape[nb + flat.ndim:]))
    flat = flat.reshape(-1)
    keep = (flat >= lo) & (flat < hi)
    return src3[:, keep, :], (flat[keep] - lo).astype(np.int64)


def _concatenate(parts: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    return np.concatenate([p[0] for p in parts], axis=1), np.concatenate([p[1] for p in parts])


def _finish(part: tuple[Any, Any], *, q: float, method: str, skip_nan: bool, fill_value: Any,
            shape: tuple[int, ...]) -> Any:
    """The output block of `shape` (B + rows + F) from the members of its rows."""
    values, local = part
    columns = values.shape[0] * values.shape[2]
    rows = prod(shape) // columns if columns else 0
    if method == MEDIAN:
        op: Any = "nanmedian" if skip_nan else "median"   # the order statistics are not in the typed OpLike
        out = cs.scatter(values, local, op, dim_size=rows, axis=1, fill_value=fill_value)
    else:
        func = cs.scatter_nanquantile if skip_nan else cs.scatter_quantile
        out = func(values, local, q, method=method, dim_size=rows, axis=1, fill_value=fill_value)
    return out.reshape(shape)


def order_stat(name: str, src: Any, index: Any, qs: Any, scalar: bool, method: str, skip_nan: bool, dim_size: Any,
               axis: Any, fill_value: Any, mode: Any, dim_chunks: Any, split_every: Any, dtype: Any = None) -> Any:
    if is_empty_tuple(index):   # the one entry of index=() reaches the whole destination: a size-1 axis
        _no_sizes(dim_size, "dim_size")
        _no_sizes(dim_chunks, "dim_chunks")
        src = da.asarray(src)
        axis = normalize_axis(axis, src.ndim, 0)
        out = order_stat(name, da.expand_dims(src, axis), np.zeros(1, np.intp), qs, scalar, method, skip_nan, 1,
                         axis, fill_value, mode, None, split_every, dtype)
        return out.squeeze(axis + (0 if scalar else 1))
    given = np.dtype(dtype) if dtype is not None else src.dtype if isinstance(src, da.Array) else \
        np.asarray(src).dtype
    result_dtype(given, method, name)   # this function's TypeError for complex or bool, before max's checks
    setup = prepare(src, index, _ORDERED, dim_size, axis, mode, dim_chunks, split_every, dtype)
    result = result_dtype(setup.src.dtype, method, name)
    fill_for(fill_value, result)   # its errors at graph time, as the core's
    per_q = []
    for q in qs:
        token = tokenize(setup.src, setup.flat, name, float(q), method, setup.dims, fill_value, setup.d0_chunks,
                         split_every, setup.nb)
        per_q.append(reduction_graph(
            f"cyscatter-{name}-" + token, setup,
            lambda rows, i: partial(_members, nb=setup.nb, rows=rows),
            _concatenate,
            lambda shape, q=q: partial(_finish, q=float(q), method=method, skip_nan=skip_nan, fill_value=fill_value,
                                       shape=shape),
            result))
    return per_q[0] if scalar else da.stack(per_q)


def with_order_stats(scatter: Any) -> Any:
    """`scatter` (`cyscatter.dask.scatter`) that also takes the ops median / nanmedian (`order_stat`)."""
    @functools.wraps(scatter)
    def scatter_or_order_stat(src: Any, index: Any, op: Any = "add", *, dim_size: Any, axis: Any = 0,
                              fill_value: Any = None, dtype: Any = None, out: Any = None, mode: Any = "raise",
                              dim_chunks: Any = None, split_every: Any = 4) -> Any:
        if type(op) is str and op in ORDER_STATS:
            refuse_out(out, "scatter")
            return order_stat("scatter", src, index, np.array([0.5]), True, MEDIAN, ORDER_STATS[op], dim_size,
                              axis, fill_value, mode, dim_chunks, split_every, dtype)
        return scatter(src, index, op, dim_size=dim_size, axis=axis, fill_value=fill_value, dtype=dtype, out=out,
                       mode=mode, dim_chunks=dim_chunks, split_every=split_every)
    return scatter_or_order_stat


# cyscatter.dask.scatter as users call it, and as segment and gather_scatter's order statistics reach it
scatter_or_median = with_order_stats(scatter)


_DOC = """Lazy `cyscatter.{name}` of Dask arrays, by whole groups.

    Each (src block, index block) task keeps the entries that reach its destination block, a tree of tasks
    concatenates them in index order and the last one sorts them (a quantile cannot be merged from partial
    quantiles). The result equals the in-memory one bit for bit. A task holds the members of one destination
    block: give `dim_chunks` (and chunk src along B and F) when they do not fit in memory. A 1-d `q` builds one
    such graph per quantile, stacked along a new first axis.

    Parameters
    ----------
    src : dask.array.Array or array_like, shape B + I + F, or broadcastable to it along I
        Real values, chunked in any way.
    index : Dask or NumPy int array of shape I, or tuple of m of them
        As for ``cyscatter.{name}``.
    q : float or 1-d sequence of floats in [0, 1], default 0.5
        As for ``cyscatter.{name}``.
    method : {{"linear", "lower", "higher", "nearest", "midpoint"}}, default "linear"
        As for ``cyscatter.{name}``.
    dim_size : int or tuple of m ints
        Destination shape D. Required: inferring it would compute the whole index.
    axis : int, default 0
        As for ``cyscatter.{name}``.
    fill_value : scalar, optional
        As for ``cyscatter.{name}``.
    mode : {{"raise", "drop", "wrap", "clip", "normalize_drop"}}, default "raise"
        As for ``cyscatter.{name}``.
    dim_chunks : int or tuple of ints, optional
        Chunks of the output along the first destination axis (default: one chunk).
    split_every : int, default 4
        Blocks of members concatenated per task of the tree.

    Returns
    -------
    out : dask.array.Array, shape B + D + F, or (Q,) + B + D + F for a 1-d `q`
        The dtype of ``cyscatter.{name}``.

    Raises
    ------
    TypeError
        Missing `dim_size`, a non-integer index, a complex or bool `src`, a non-real `q`.
    ValueError
        A bad `q` or `method`, unknown mode, mismatched shapes, unknown chunk sizes, `dim_chunks` that do not add
        up.
    IndexError
        An out-of-range entry under ``mode="raise"``: when computed for a Dask index, when the graph is built
        for a NumPy one.

    Examples
    --------
    >>> import dask.array as da, numpy as np, cyscatter.dask as csd
    >>> src = da.from_array(np.array([1., 7., 3., 4., 5.]), chunks=2)
    >>> csd.{name}(src, np.array([0, 0, 0, 2, 2]), 0.5, dim_size=3).compute()
    array([3. , nan, 4.5])
    """


def scatter_quantile(src: ArrayInput, index: IndexLike, q: Any = 0.5, *, method: str = "linear",
                     dim_size: DimSize, axis: SupportsIndex = 0, fill_value: FillValue | None = None,
                     mode: Mode = "raise", dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                     split_every: SupportsIndex = 4) -> da.Array:
    qs, scalar = check_q(q)
    result: da.Array = order_stat("scatter_quantile", src, index, qs, scalar, check_method(method), False,
                                  dim_size, axis, fill_value, mode, dim_chunks, split_every)
    return result


def scatter_nanquantile(src: ArrayInput, index: IndexLike, q: Any = 0.5, *, method: str = "linear",
                        dim_size: DimSize, axis: SupportsIndex = 0, fill_value: FillValue | None = None,
                        mode: Mode = "raise", dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                        split_every: SupportsIndex = 4) -> da.Array:
    qs, scalar = check_q(q)
    result: da.Array = order_stat("scatter_nanquantile", src, index, qs, scalar, check_method(method), True,
                                  dim_size, axis, fill_value, mode, dim_chunks, split_every)
    return result


scatter_quantile.__doc__ = _DOC.format(name="scatter_quantile")
scatter_nanquantile.__doc__ = _DOC.format(name="scatter_nanquantile")
