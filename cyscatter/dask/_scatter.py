"""scatter on Dask arrays: one partial per (src block, index block, destination partition), merged by a tree."""
from __future__ import annotations

import reprlib

from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import dask
import dask.array as da
import numpy as np
from dask.array.core import normalize_chunks
from dask.base import tokenize
from dask.utils import parse_bytes

from cyscatter._arrays.integers import as_int, prod
from cyscatter._docs import fill_doc
from cyscatter._plan.index import _dims_from, check_mode, check_table_bytes, parse_coords
from cyscatter._plan.layout import refuse_expanded_index, src_layout
from cyscatter._plan.values import check_dtype_arg, fill_for
from cyscatter._registry.ops import get_op
from cyscatter.dask import _blocks
from cyscatter.dask._graph import (
    as_coords,
    block_shape,
    check_in_memory_index,
    check_split_every,
    flat_rows,
    known_shape,
    new_array,
    partitions,
    positions,
    stand_in,
    tree_reduce,
)

if TYPE_CHECKING:
    from typing import Any, Sequence, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike


def _as_dask_src(src, coords, nb: int, nf: int) -> da.Array:
    """`src` as a Dask array; a NumPy `src` is cut along the index dims as the index is."""
    if isinstance(src, da.Array):
        return src
    return da.from_array(src, chunks=(-1,) * nb + coords[0].chunks + (-1,) * nf)


@fill_doc
def scatter(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize, axis: SupportsIndex = 0,
            fill_value: FillValue | None = None, dtype: DTypeLike | None = None, out: Any = None,
            mode: Mode = "raise", dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
            split_every: SupportsIndex = 4) -> da.Array:
    """Lazy scatter-reduce of Dask arrays: ``cyscatter.scatter`` computed block by block.

    Each pair (src block, index block) is reduced by the core kernel into a partial output that starts at the
    op's identity; the partials of each output block are merged in index order by a tree of at most
    `split_every` inputs per task, with the op's combine rule (``Op.combine``: sums add, and so do sub's
    negated sums; products multiply, and so do div's reciprocal products; max/min; mean merges sums and
    counts and divides at the end; the assignments set/last and first carry the rows each partial reached, and
    the later partial wins a row for set, the earlier for first, so the result equals the in-memory one).

    Parameters
    ----------
    src : dask.array.Array or array_like, shape B + I + F, or broadcastable to it along I
        Values, chunked in any way; the index is rechunked to match src along I. A NumPy `src` is cut like
        the index. A src that broadcasts (as ``cyscatter.scatter``'s: dims of 1 at the index position, a
        scalar) is broadcast lazily, block by block (``dask.array.broadcast_to``: stride-0 views).
    index : Dask or NumPy int array of shape I, or tuple of m of them
        As for ``cyscatter.scatter``: any integer dtype; known chunk sizes.
    {op}
    dim_size : int or tuple of m ints
        Destination shape D. Required: inferring it would compute the whole index.
    {axis}
    fill_value : scalar, optional
        Value of destination positions no entry reaches (default: the op's identity; 0 for mean).
    dtype : dtype, optional
        As for ``cyscatter.scatter``: `src` is cast (lazily, block by block) to `dtype` under NumPy's
        ``same_kind`` rule before the reduction, which then runs as for a `src` of that dtype (float16 still
        accumulates in float32, div and mean of integers still give float64). Default: the dtype of `src`.
    out : None
        Not supported: Dask arrays are immutable and a lazy result has no buffer to write into. Any value but
        None raises TypeError; to fill an existing array, ``dask.array.store(result, out)`` or
        ``out[...] = result.compute()``.
    {mode}
    dim_chunks : int or tuple of ints, optional
        Chunks of the output along the first destination axis (default: one chunk). Each src block is then
        reduced once per destination block, into a partial of that block's size only.
    split_every : int, default 4
        Partials merged per task of the tree reduction.

    Returns
    -------
    out : dask.array.Array, shape B + D + F
        Chunked as `src` along B and F, as `dim_chunks` along the first destination axis and in one chunk
        along the others. Its dtype is that of ``cyscatter.scatter``.

    Raises
    ------
    TypeError
        Missing `dim_size`, a non-integer index, an op/dtype pair the core refuses, a `dtype` `src` cannot be
        cast to under ``same_kind``, an `out` that is not None.
    ValueError
        Unknown op or mode, mismatched shapes, unknown chunk sizes, `dim_chunks` that do not add up, a
        `dim_size` whose output could not exist (more than 2**63 - 1 bytes: the core's error, at graph time).
    IndexError
        An out-of-range entry under ``mode="raise"``: when computed for a Dask index (the message names the
        position within its index chunk and that chunk's location), when the graph is built for a NumPy one.

    Notes
    -----
    Memory: a partial task holds one src block, its index block and one partial of
    ``outer_block * rows * inner_block`` elements in the compute dtype, where `rows` is the size of the
    destination block (all of D with one chunk); a merge task holds `split_every` partials and their merge.
    When ``prod(D) * features`` is itself large, give `dim_chunks`: every src block is then read once per
    destination block (work grows with their number), but no task holds more than one destination block.

    Results equal ``cyscatter.scatter``'s exactly for integers and max/min (NaN wins, -0.0 < +0.0) and to
    rounding for float sums, products and quotients, which are merged in a different grouping. div's
    partials are ``1 / prod``, merged by multiplying, so a partial may overflow or underflow where the
    in-memory sequence of divisions does not.

    Examples
    --------
    >>> import dask.array as da, numpy as np, cyscatter.dask as csd
    >>> src = da.from_array(np.arange(6.), chunks=2)
    >>> index = da.from_array(np.array([0, 2, 0, 2, 1, 1]), chunks=3)
    >>> csd.scatter(src, index, "add", dim_size=4).compute()
    array([2., 9., 4., 0.])
    """
    op = get_op(op)
    refuse_out(out, "scatter")
    setup = prepare(src, index, op, dim_size, axis, mode, dim_chunks, split_every, dtype)
    if op.winner:   # the last (first) entry in index order wins: blocks merged in that order
        setup = in_index_order(setup)
    fill = fill_for(fill_value, setup.result_dtype)
    count = op.counts or bool(op.winner) or fill is not None   # assignments combine by the rows reached
    name = f"cyscatter-scatter-{op.name}-" + tokenize(setup.src, setup.flat, op.name, setup.dims, fill,
                                                      setup.d0_chunks, split_every, setup.nb)
    return reduction_graph(
        name, setup,
        lambda rows, i: partial(_blocks.scatter_partial, op=op.name, result_dtype=setup.result_dtype,
                                nb=setup.nb, rows=rows, count=count),
        partial(_blocks.combine_partials, op=op.name),
        lambda shape: partial(_blocks.finish_partial, op=op.name, result_dtype=setup.result_dtype, fill=fill,
                              shape=shape),
        setup.result_dtype)


class Setup(NamedTuple):
    """A checked scatter of Dask arrays: src, the destination rows `flat` (chunked as src along I), its dims."""
    src: da.Array
    flat: da.Array
    nb: int
    ni: int
    dims: tuple
    d0_chunks: tuple
    split_every: int
    result_dtype: np.dtype


def refuse_out(out, func: str) -> None:
    """TypeError for an `out` that is not None: a lazy Dask result has no buffer to write into."""
    if out is not None:
        raise TypeError(f"cyscatter.dask.{func} does not take out= (got {type(out).__name__}): Dask arrays are "
                        "immutable; store the lazy result with dask.array.store(result, out) or assign "
                        "out[...] = result.compute()")


def in_index_order(setup: Setup) -> Setup:
    """`setup` with one chunk along the index dims after the first, so that its blocks along the first index dim
    follow each other in index order (the flattened index runs across the later dims): what the
    order-dependent results need (the assignments' winners, the scans' running totals)."""
    src, flat, nb, ni = setup.src, setup.flat, setup.nb, setup.ni
    if ni < 2 or all(len(c) == 1 for c in src.chunks[nb + 1:nb + ni]):
        return setup
    whole = {d: -1 for d in range(nb + 1, nb + ni)}
    return setup._replace(src=src.rechunk(whole), flat=flat.rechunk({d - nb: -1 for d in whole}))


def prepare(src, index, op, dim_size, axis, mode, dim_chunks, split_every, dtype=None) -> Setup:
    """The graph-time checks of a Dask scatter for `op` (an Op); errors as ``cyscatter.dask.scatter`` lists."""
    if dim_size is None:
        raise TypeError("dim_size is required for Dask inputs (inferring it would compute the whole index)")
    check_mode(mode)
    coords = as_coords(index)
    src = known_shape(src, "src") if isinstance(src, da.Array) else np.asarray(src)
    axis, batch, feat, expected = src_layout(src.shape, tuple(stand_in(c) for c in coords), axis,
                                             expanded_check=False)
    if not isinstance(index, (tuple, da.Array)):   # an in-memory index: its layout can be seen (a Dask one's not)
        refuse_expanded_index(parse_coords(index), expected, axis)
    if src.shape != expected:   # a src that broadcasts (as the core's): stride-0 views per block, no copy
        src = (da.broadcast_to if isinstance(src, da.Array) else np.broadcast_to)(src, expected)
    nb, ni, nf = len(batch), coords[0].ndim, len(feat)
    src = _as_dask_src(src, coords, nb, nf)
    cast = check_dtype_arg(dtype, src.dtype)
    if cast is not None:   # the core's checks and messages (cyscatter.scatter)
        try:
            op.check_dtype(cast)
        except TypeError as err:
            raise TypeError(f"dtype={cast}: {err}") from None
        if cast != src.dtype:
            src = src.astype(cast)
    result_dtype = op.result_dtype(src.dtype)
    dims = _dims_from(dim_size, coords, "dim_size")
    check_table_bytes(tuple(src.shape[:nb]) + tuple(dims) + tuple(src.shape[nb + ni:]),
                      op.compute_dtype(result_dtype), "dim_size", dim_size)   # the core's ValueError now, not Dask's at compute
    split_every = check_split_every(split_every)
    d0_chunks = check_dim_chunks(dim_chunks, dims[0])
    check_in_memory_index(index, dims, mode)
    flat = flat_rows(coords, src.chunks[nb:nb + ni], dims, mode)
    return Setup(src, flat, nb, ni, dims, d0_chunks, split_every, result_dtype)


def check_dim_chunks(dim_chunks, rows: int, arg: str = "dim_chunks", sized_by: str = "dim_size") -> tuple:
    """Chunk sizes along the first destination axis (of `rows` rows) from `dim_chunks`: None (one chunk), a
    positive int (blocks of that many rows) or a sequence of non-negative ints adding up to `rows`; NumPy
    integers are taken as ints. TypeError / ValueError naming `arg` otherwise; MemoryError naming it where the
    blocks would be too many to list (the graph could not be built)."""
    if dim_chunks is None:
        return (rows,)
    shown = reprlib.repr(dim_chunks)   # a long sequence is shown cut, not spelled out in every message
    what = f"{arg}={shown} must be a positive integer or a sequence of non-negative integers"
    if isinstance(dim_chunks, (tuple, list)) or np.ndim(dim_chunks) > 0:
        if len(dim_chunks) > _MAX_BLOCKS:
            raise MemoryError(f"{arg}={shown} lists {len(dim_chunks)} blocks: their graph does not fit in memory "
                              f"(at most {_MAX_BLOCKS} blocks)")
        sizes = tuple(as_int(c, what) for c in dim_chunks)
        if any(c < 0 for c in sizes):
            raise ValueError(what)
        if sum(sizes) != rows:
            raise ValueError(f"{arg}={shown} add up to {sum(sizes)}, not to the {rows} rows that "
                             f"{sized_by} gives the axis they cut")
        return sizes if sizes else (0,)
    step = as_int(dim_chunks, what)
    if step < 1:
        raise ValueError(what)
    return _blocks_of(step, rows, arg, dim_chunks, sized_by)


# More blocks along one axis than a graph is built from in seconds: each output block is about six tasks (partials,
# merges, the finish), a million tasks take a minute and gigabytes to list; refused before any is listed
_MAX_BLOCKS = 2**17


def _blocks_of(step: int, rows: int, arg: str, given, sized_by: str) -> tuple:
    if step >= rows:   # one chunk (Dask's normalize_chunks would sum a step past 2**63 as a float)
        return (rows,)
    blocks = -(-rows // step)
    if blocks > _MAX_BLOCKS:
        raise MemoryError(f"{arg}={given!r} cuts the {rows} rows of {sized_by} into {blocks} blocks: their graph "
                          f"does not fit in memory (at most {_MAX_BLOCKS} blocks)")
    return normalize_chunks((step,), shape=(rows,))[0]


def check_out_chunks(chunks, rows: int, itemsize: int, arg: str = "chunks", sized_by: str = "indptr[-1]") -> tuple:
    """Chunk sizes of an output axis of `rows` rows from `chunks`: "auto" (Dask's, for items of `itemsize`
    bytes), -1 (one chunk), a positive int or a sequence of non-negative ints adding up to `rows` (as
    `check_dim_chunks`). TypeError / ValueError naming `arg` otherwise, MemoryError for too many blocks."""
    if isinstance(chunks, str) and chunks == "auto":
        limit = parse_bytes(dask.config.get("array.chunk-size"))
        step = max(1, limit // max(itemsize, 1))   # Dask's "auto" for one axis: a chunk of at most that size
        return _blocks_of(step, rows, arg, chunks, sized_by) if rows else (0,)
    if isinstance(chunks, (int, np.integer)) and not isinstance(chunks, (bool, np.bool_)) and chunks == -1:
        return (rows,)
    if chunks is None or isinstance(chunks, (str, bytes)):
        raise TypeError(f'{arg}={chunks!r} must be "auto", -1, a positive integer or a sequence of non-negative '
                        "integers")
    return check_dim_chunks(chunks, rows, arg, sized_by)


def reduction_graph(name: str, setup: Setup, reduce_task, combine, finish_task, dtype) -> da.Array:
    """Output B + D + F: per output block, a partial per index block, merged by a tree, then finished.

    `reduce_task(rows, i)` is the task function of index block `i` (a tuple) for the destination rows
    ``(lo, hi)``, called on (src block, flat block); `combine` merges a list of partials in order;
    `finish_task(shape)` turns the last partial into the output block of `shape`.
    """
    src, flat, nb, ni, dims = setup.src, setup.flat, setup.nb, setup.ni, setup.dims
    out_chunks = src.chunks[:nb] + (setup.d0_chunks,) + tuple((d,) for d in dims[1:]) + src.chunks[nb + ni:]
    layer = {}
    grid = src.numblocks
    for r, rows in enumerate(partitions(setup.d0_chunks, prod(dims[1:]))):
        for b in positions(grid[:nb]):
            for f in positions(grid[nb + ni:]):
                where = b + (r,) + f
                keys = []
                for i in positions(grid[nb:nb + ni]):
                    key = (name + "-partial", *where, *i)
                    layer[key] = (reduce_task(rows, i), (src.name, *b, *i, *f), (flat.name, *i))
                    keys.append(key)
                top = tree_reduce(layer, name + "-merge", where, keys, combine, setup.split_every)
                out_where = b + (r,) + (0,) * (len(dims) - 1) + f
                layer[(name, *out_where)] = (finish_task(block_shape(out_chunks, out_where)), top)
    return new_array(name, layer, [src, flat], out_chunks, dtype)
