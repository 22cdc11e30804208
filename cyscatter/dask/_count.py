"""scatter_count on Dask indexes: a sum of per-block ``np.bincount`` of the planned destination rows."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from dask.base import tokenize

from cyscatter._arrays.integers import prod
from cyscatter._docs import fill_doc
from cyscatter._plan.index import _dims_from, check_mode
from cyscatter.dask import _blocks
from cyscatter.dask._graph import (
    as_coords,
    check_in_memory_index,
    check_split_every,
    flat_rows,
    new_array,
    positions,
    tree_reduce,
)

if TYPE_CHECKING:
    from typing import SupportsIndex

    import dask.array as da

    from cyscatter._typing import DimSize, IndexLike, Mode


@fill_doc
def scatter_count(index: IndexLike, dim_size: DimSize, *, mode: Mode = "raise",
                  split_every: SupportsIndex = 4) -> da.Array:
    """Lazy ``cyscatter.scatter_count`` of a Dask index: how many entries reach each destination element.

    Each index block is planned (modes applied) and counted with ``np.bincount``; the per-block counts are
    added by a tree of at most `split_every` inputs per task. The result is that of the in-memory call.

    Parameters
    ----------
    {index}
    dim_size : int or tuple of m ints
        Destination shape D. Required: inferring it would compute the whole index.
    {mode}
    split_every : int, default 4
        Partial counts added per task of the tree reduction.

    Returns
    -------
    out : dask.array.Array of int64, shape D, in one chunk
        Counts; entries dropped by the mode are not counted.

    Raises
    ------
    TypeError
        Missing `dim_size`, a non-integer index.
    ValueError
        Unknown mode, index arrays of different shapes, unknown chunk sizes, a bad `split_every`.
    IndexError
        An out-of-range entry under ``mode="raise"``: when computed for a Dask index, when the graph is built
        for a NumPy one.

    Notes
    -----
    Each task holds one index block and one int64 table of ``prod(D)`` counts.

    Examples
    --------
    >>> import dask.array as da, numpy as np, cyscatter.dask as csd
    >>> csd.scatter_count(da.from_array(np.array([0, 2, 0, 2, 2]), chunks=2), 4).compute()
    array([2, 0, 3, 0])
    """
    if dim_size is None:
        raise TypeError("dim_size is required for Dask inputs (inferring it would compute the whole index)")
    check_mode(mode)
    coords = as_coords(index)
    dims = _dims_from(dim_size, coords, "dim_size")
    split_every = check_split_every(split_every)
    check_in_memory_index(index, dims, mode)
    flat = flat_rows(coords, coords[0].chunks, dims, mode)
    size = prod(dims)
    name = "cyscatter-scatter-count-" + tokenize(flat, dims)
    layer: dict[tuple[object, ...], object] = {}
    keys = []
    count = partial(_blocks.count_rows, size=size)
    for i in positions(flat.numblocks):
        key = (name + "-partial", *i)
        layer[key] = (count, (flat.name, *i))
        keys.append(key)
    top = tree_reduce(layer, name + "-merge", (), keys, _blocks.add_counts, int(split_every))
    layer[(name, *(0,) * len(dims))] = (partial(_blocks.finish_counts, shape=dims), top)
    return new_array(name, layer, [flat], tuple((d,) for d in dims), np.int64)
