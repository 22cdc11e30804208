"""scatter_argmax / scatter_argmin on Dask arrays: (winning value, global position) partials merged by a tree."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from dask.base import tokenize

from cyscatter._api.argext import arg_doc
from cyscatter._arrays.integers import prod
from cyscatter._plan.values import fill_for
from cyscatter._registry.ops import get_op
from cyscatter.dask import _blocks
from cyscatter.dask._scatter import prepare, reduction_graph

if TYPE_CHECKING:
    from typing import Sequence, SupportsIndex

    import dask.array as da

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode

_DOC = """Lazy ``cyscatter.scatter_arg{which}`` of Dask arrays: the position of each group's {which} winner.

    Each pair (src block, index block) gives a partial: per destination element the block's winning value and
    its position in the whole flattened index (the block's own position plus the block's offset). The
    partials of each output block are merged by a tree of at most `split_every` inputs per task, keeping the
    winner under the rules of ``scatter(..., "{which}")`` (NaN wins, {zero}); equal values keep the smaller
    position, so the result is that of the in-memory call whatever the chunking.

    Parameters
    ----------
    src : dask.array.Array or array_like, shape B + I + F, or broadcastable to it along I
        Integers or floats, chunked in any way; the index is rechunked to match src along I. A NumPy `src` is
        cut like the index.
    index : Dask or NumPy int array of shape I, or tuple of m of them
        As for ``cyscatter.scatter``: any integer dtype; known chunk sizes.
    dim_size : int or tuple of m ints
        Destination shape D. Required: inferring it would compute the whole index.
    {{axis}}
    fill_value : int, optional
        Position given to empty groups instead of ``n``, checked as in ``cyscatter.scatter_arg{which}``.
    {{mode}}
    dim_chunks : int or tuple of ints, optional
        Chunks of the output along the first destination axis (default: one chunk), as for
        ``cyscatter.dask.scatter``.
    split_every : int, default 4
        Partials merged per task of the tree reduction.

    Returns
    -------
    out : dask.array.Array of int64, shape B + D + F
        Positions k in ``range(n)``, ``n = prod(I)``, in the flattened (C-order) index; ``n`` (or
        `fill_value`) for groups with no entry. Chunked as `src` along B and F, as `dim_chunks` along the first
        destination axis.

    Raises
    ------
    TypeError
        Missing `dim_size`, a non-integer index, complex or object `src`.
    ValueError
        Unknown mode, mismatched shapes, unknown chunk sizes, `dim_chunks` that do not add up.
    IndexError
        An out-of-range entry under ``mode="raise"``: when computed for a Dask index, when the graph is built
        for a NumPy one.

    Notes
    -----
    Memory as for ``cyscatter.dask.scatter``; a partial holds a value and an int64 position per destination
    element.

    Examples
    --------
    >>> import dask.array as da, numpy as np, cyscatter.dask as csd
    >>> src = da.from_array(np.array([{example}]), chunks=2)
    >>> csd.scatter_arg{which}(src, da.from_array(np.array([0, 0, 2, 0]), chunks=2), dim_size=4).compute()
    array([{result}])
    """


def _scatter_arg(which, src, index, dim_size, axis, mode, dim_chunks, split_every, fill_value=None):
    op = get_op(which)
    setup = prepare(src, index, op, dim_size, axis, mode, dim_chunks, split_every)
    ishape = setup.flat.shape
    fill = fill_for(fill_value, np.int64)
    fill = None if fill is None else int(fill)
    offsets = [np.cumsum((0,) + c)[:-1].tolist() for c in setup.flat.chunks]
    name = f"cyscatter-scatter-arg{which}-" + tokenize(setup.src, setup.flat, setup.dims, setup.d0_chunks,
                                                         split_every, setup.nb, fill)
    return reduction_graph(
        name, setup,
        lambda rows, i: partial(_blocks.arg_partial, op=op.name, nb=setup.nb, rows=rows,
                                starts=tuple(o[k] for o, k in zip(offsets, i)), ishape=ishape),
        partial(_blocks.combine_arg_partials, op=op.name),
        lambda shape: partial(_blocks.finish_arg, shape=shape, n=prod(ishape), fill=fill),
        np.int64)


@arg_doc("max", "+0.0 beats -0.0", "3., 5., 1., 5.", "1, 4, 2, 4", _DOC)
def scatter_argmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                   fill_value: SupportsIndex | float | None = None, mode: Mode = "raise",
                   dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                   split_every: SupportsIndex = 4) -> da.Array:
    return _scatter_arg("max", src, index, dim_size, axis, mode, dim_chunks, split_every, fill_value)


@arg_doc("min", "-0.0 beats +0.0", "3., 5., 1., 3.", "0, 4, 2, 4", _DOC)
def scatter_argmin(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                   fill_value: SupportsIndex | float | None = None, mode: Mode = "raise",
                   dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                   split_every: SupportsIndex = 4) -> da.Array:
    return _scatter_arg("min", src, index, dim_size, axis, mode, dim_chunks, split_every, fill_value)


_NAN_DOC = (_DOC.replace("scatter_arg{which}", "scatter_nanarg{which}")
            .replace('the rules of ``scatter(..., "{which}")`` (NaN wins, {zero})',
                     'the rules of ``scatter(..., "nan{which}")`` (NaN never wins, {zero})')
            .replace("for groups with no entry.", "for groups with no entry or only NaN entries."))


@arg_doc("max", "+0.0 beats -0.0", "3., np.nan, 1., 5.", "3, 4, 2, 4", _NAN_DOC)
def scatter_nanargmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                      fill_value: SupportsIndex | float | None = None, mode: Mode = "raise",
                      dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                      split_every: SupportsIndex = 4) -> da.Array:
    return _scatter_arg("fmax", src, index, dim_size, axis, mode, dim_chunks, split_every, fill_value)


@arg_doc("min", "-0.0 beats +0.0", "3., np.nan, 1., 3.", "0, 4, 2, 4", _NAN_DOC)
def scatter_nanargmin(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                      fill_value: SupportsIndex | float | None = None, mode: Mode = "raise",
                      dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                      split_every: SupportsIndex = 4) -> da.Array:
    return _scatter_arg("fmin", src, index, dim_size, axis, mode, dim_chunks, split_every, fill_value)
