"""The edges of a graph on Dask: `gather_scatter_plan` groups them once into block pairs (source partition,
destination partition), each with its own in-memory plan, computed lazily by Dask."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.sizeof import sizeof

from cyscatter._arrays.integers import prod
from cyscatter._plan.index import check_mode, check_sizes
from cyscatter._plan.layout import normalize_axis
from cyscatter.dask import _edge_blocks as eb
from cyscatter.dask._graph import (
    as_coords,
    check_in_memory_index,
    known_shape,
    new_array,
    partitions,
    positions,
    stand_in,
)
from cyscatter.dask._scatter import check_dim_chunks

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import SupportsIndex

    from cyscatter._typing import DimSize, IndexLike, Mode


@sizeof.register(eb.Box)
def _sizeof_box(block) -> int:
    """A block of plans or pieces by what its element holds (Dask sizes an object array by its references)."""
    return sum(sizeof(v) for v in block.reshape(-1).tolist())


@sizeof.register(eb.PairPlan)
def _sizeof_pair(pair) -> int:
    return pair.nbytes


class GatherScatterPlan:
    """The edges of a graph on Dask, validated and grouped into block pairs lazily: a Dask collection.

    Made by `cyscatter.dask.gather_scatter_plan`; pass it as ``plan=`` to `cyscatter.dask.gather_scatter` and its
    reverse functions. Nothing is computed when it is made; ``plan.persist()`` computes the grouping once (and
    keeps it in memory, or on the workers of a ``dask.distributed`` client) for many calls.

    Parameters
    ----------
    index_shape, src_dims, dims, mode, src_chunks, dim_chunks, edge_chunks, pairs, pieces : internal
        What `gather_scatter_plan` worked out (the attributes below); it is the way to build a plan (the
        constructor is not public API).

    Attributes
    ----------
    index_shape : tuple of int
        Shape I of the edge index.
    src_dims, dims : tuple of int
        Shape S of the source rows and D of the destination rows.
    mode : str
        The out-of-range mode the edges are validated with (when the grouping is computed).
    src_chunks, dim_chunks : tuple of int
        Row chunks of the first source axis and of the first destination axis: the partitions of the pairs.
    edge_chunks : tuple of tuples of int
        Chunks of the index arrays (the edge chunks).
    pairs : dask.array.Array of object, shape (len(src_chunks), len(dim_chunks))
        One in-memory `cyscatter.GatherScatterPlan` per pair (with the edge count each edge chunk gave it).
    pieces : dask.array.Array of object, shape (edge blocks, len(src_chunks), len(dim_chunks))
        Per edge chunk and pair: the positions of its edges in the chunk and their local rows.
    """

    def __init__(self, index_shape, src_dims, dims, mode, src_chunks, dim_chunks, edge_chunks, pairs, pieces):
        self.index_shape, self.src_dims, self.dims, self.mode = index_shape, src_dims, dims, mode
        self.src_chunks, self.dim_chunks, self.edge_chunks = src_chunks, dim_chunks, edge_chunks
        self.pairs, self.pieces = pairs, pieces

    @property
    def n_edge_blocks(self) -> int:
        """The number of edge chunks, each bucketed once into the block pairs."""
        return self.pieces.shape[0]

    def persist(self, **kwargs) -> GatherScatterPlan:
        """This plan with its grouping computed and kept (``dask.persist``).

        Parameters
        ----------
        **kwargs
            Passed to ``dask.persist`` (``scheduler=``, ...).

        Returns
        -------
        GatherScatterPlan
            The same plan, its pairs and pieces held in memory (or on the workers).
        """
        pairs, pieces = dask.persist(self.pairs, self.pieces, **kwargs)
        return GatherScatterPlan(self.index_shape, self.src_dims, self.dims, self.mode, self.src_chunks,
                                 self.dim_chunks, self.edge_chunks, pairs, pieces)

    def __repr__(self) -> str:
        return (f"cyscatter.dask.GatherScatterPlan(index_shape={self.index_shape}, src_dims={self.src_dims}, "
                f"dims={self.dims}, mode={self.mode!r}, pairs={len(self.src_chunks)}x{len(self.dim_chunks)}, "
                f"edge_blocks={self.n_edge_blocks})")


def gather_scatter_plan(gather_index: IndexLike, scatter_index: IndexLike, *, src_size: DimSize | None = None,
                        dim_size: DimSize | None = None, mode: Mode = "raise",
                        src_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                        dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None) -> GatherScatterPlan:
    """Group the edges of a graph on Dask into block pairs, lazily: ``cyscatter.gather_scatter_plan`` per pair.

    Parameters
    ----------
    gather_index, scatter_index : Dask or NumPy int array of shape I, or tuple of m of them
        Source and destination row of each edge, as for ``cyscatter.gather_scatter_plan``; known chunk sizes.
        The edge chunks are those of `gather_index` (`scatter_index` is rechunked to them).
    src_size, dim_size : int or tuple of int
        Source shape S and destination shape D. Required: inferring them would compute the whole index.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        As for ``cyscatter.gather_scatter_plan``; under "raise" an out-of-range entry raises IndexError (naming
        the index, its position within its chunk and the chunk) when the grouping is computed.
    src_chunks, dim_chunks : int or sequence of int, optional
        Row chunks of the first source and destination axis (default: one chunk each); as
        ``cyscatter.dask.scatter``'s `dim_chunks`. `cyscatter.dask.gather_scatter` rechunks `src` to
        `src_chunks` along its first gathered axis.

    Returns
    -------
    GatherScatterPlan
        Lazy; ``persist()`` it to reuse the grouping across calls.

    Raises
    ------
    TypeError
        A non-integer index, missing `src_size` or `dim_size`.
    ValueError
        Index arrays of different shapes, unknown chunk sizes, a bad `src_size`/`dim_size`/chunks or mode.
    IndexError
        An out-of-range entry under ``mode="raise"``: when computed for a Dask index, when the graph is built
        for a NumPy one.

    Notes
    -----
    One bucket task per edge chunk sorts its edges by pair (a stable radix sort: edge order kept); one task per
    pair concatenates its pieces and builds its in-memory plan (about 32 bytes per edge and 16 per row). The
    src_chunks x dim_chunks pairs each hold about ``E / (len(src_chunks) * len(dim_chunks))`` edges.
    """
    check_mode(mode)
    if src_size is None or dim_size is None:
        missing = "src_size" if src_size is None else "dim_size"
        raise TypeError(f"{missing} is required for Dask indices (inferring it would compute the whole index)")
    gather = as_coords_named(gather_index, "gather_index")
    scatter = as_coords_named(scatter_index, "scatter_index")
    if gather[0].shape != scatter[0].shape:
        raise ValueError(f"gather_index has shape {gather[0].shape} but scatter_index has shape "
                         f"{scatter[0].shape}: one entry of each per edge")
    src_dims = _dims(src_size, gather, "src_size")
    dims = _dims(dim_size, scatter, "dim_size")
    s_chunks = check_dim_chunks(src_chunks, src_dims[0], "src_chunks", "src_size")
    d_chunks = check_dim_chunks(dim_chunks, dims[0])
    check_in_memory_index(gather_index, src_dims, mode, "gather_index", "src_size")
    check_in_memory_index(scatter_index, dims, mode, "scatter_index", "dim_size")
    edge_chunks = gather[0].chunks
    g_rows = _rows(gather, edge_chunks, src_dims, mode, "gather_index", "src_size")
    t_rows = _rows(scatter, edge_chunks, dims, mode, "scatter_index", "dim_size")
    src_bounds = np.array([lo for lo, _ in partitions(s_chunks, prod(src_dims[1:]))] + [prod(src_dims)], np.int64)
    dst_bounds = np.array([lo for lo, _ in partitions(d_chunks, prod(dims[1:]))] + [prod(dims)], np.int64)
    ns, nd = len(s_chunks), len(d_chunks)
    token = tokenize(g_rows, t_rows, s_chunks, d_chunks)
    pieces_name, pairs_name = "cyscatter-edge-pieces-" + token, "cyscatter-edge-pairs-" + token
    edge_blocks = positions(g_rows.numblocks)
    layer: dict[tuple[object, ...], object] = {}
    for e, where in enumerate(edge_blocks):
        bucket = (pieces_name + "-bucket", e)
        layer[bucket] = (partial(eb.bucket_edges, src_bounds=src_bounds, dst_bounds=dst_bounds),
                         (g_rows.name, *where), (t_rows.name, *where))
        for s in range(ns):
            for d in range(nd):
                layer[(pieces_name, e, s, d)] = (partial(eb.piece_of, pair=(s, d)), bucket)
    pieces = new_array(pieces_name, layer, [g_rows, t_rows], ((1,) * len(edge_blocks), (1,) * ns, (1,) * nd),
                       object)
    layer = {}
    spans_s, spans_d = partitions(s_chunks, prod(src_dims[1:])), partitions(d_chunks, prod(dims[1:]))
    for s, (slo, shi) in enumerate(spans_s):
        for d, (dlo, dhi) in enumerate(spans_d):
            layer[(pairs_name, s, d)] = (partial(eb.pair_plan, src_rows=shi - slo, dst_rows=dhi - dlo),
                                         [(pieces_name, e, s, d) for e in range(len(edge_blocks))])
    pairs = new_array(pairs_name, layer, [pieces], ((1,) * ns, (1,) * nd), object)
    return GatherScatterPlan(gather[0].shape, src_dims, dims, mode, s_chunks, d_chunks, edge_chunks, pairs, pieces)


def as_coords_named(index, arg: str) -> tuple:
    """`as_coords` with the index named `arg` in the errors the core raises."""
    try:
        return as_coords(index)
    except (TypeError, ValueError) as err:
        raise type(err)(str(err).replace("index", arg, 1) if arg not in str(err) else str(err)) from None


def _dims(size, coords, arg) -> tuple:
    dims = check_sizes(size, arg)
    if len(dims) != len(coords):
        raise ValueError(f"{arg}={size!r} gives {len(dims)} sizes but the index has {len(coords)} coordinate "
                         f"array{'s' * (len(coords) > 1)}")
    return dims


def _rows(coords, chunks, dims, mode, arg, dims_arg) -> da.Array:
    coords = tuple(c.rechunk(chunks) for c in coords)
    dtype = np.dtype(np.int64)
    return da.map_blocks(eb.edge_rows, *coords, dims=dims, mode=mode, arg=arg, dims_arg=dims_arg, dtype=dtype,
                         meta=np.empty((0,) * coords[0].ndim, dtype))


def as_plan(src, gather_index, scatter_index, plan, axis, dim_size, mode, dim_chunks, fun: str):
    """(Dask plan, axis, src as a Dask array rechunked to the plan's source partitions) for a call of `fun`:
    the given plan, checked against the other arguments as the in-memory functions check theirs, or one made
    from the indices (src_chunks: the chunks of `src` along its first gathered axis)."""
    if plan is not None:
        if not isinstance(plan, GatherScatterPlan):
            raise TypeError(f"plan must be a cyscatter.dask.GatherScatterPlan (from "
                            f"cyscatter.dask.gather_scatter_plan), got {type(plan).__name__}")
        if gather_index is not None or scatter_index is not None:
            raise ValueError("pass either plan or gather_index and scatter_index, not both (the plan holds them)")
        if mode is not None and mode != plan.mode:
            raise ValueError(f"mode={mode!r} differs from the plan's mode {plan.mode!r}")
        if dim_size is not None and check_sizes(dim_size, "dim_size") != plan.dims:
            raise ValueError(f"dim_size={dim_size!r} differs from the plan's destination shape {plan.dims}")
        if dim_chunks is not None:
            raise ValueError("dim_chunks is the plan's (give it to cyscatter.dask.gather_scatter_plan)")
    elif gather_index is None or scatter_index is None:
        raise TypeError(f"{fun} needs gather_index and scatter_index, or a plan")
    elif dim_size is None:
        raise TypeError("dim_size is required for Dask inputs (inferring it would compute the whole index)")
    src = known_shape(src, "src") if isinstance(src, da.Array) else np.asarray(src)
    if src.dtype.hasobject:
        raise TypeError(f"src must hold numbers (integers, floats or complex), got dtype {src.dtype}")
    m = len(plan.src_dims) if plan is not None else (len(gather_index) if isinstance(gather_index, tuple) else 1)
    axis = normalize_axis(axis, src.ndim, m, array="src")
    src_dims = tuple(src.shape[axis:axis + m])
    if plan is None:
        src_chunks = src.chunks[axis] if isinstance(src, da.Array) else None
        plan = gather_scatter_plan(gather_index, scatter_index, src_size=src_dims, dim_size=dim_size,
                                   mode="raise" if mode is None else mode, src_chunks=src_chunks,
                                   dim_chunks=dim_chunks)
    elif src_dims != plan.src_dims:
        raise ValueError(f"src shape {src.shape} has {src_dims} rows at axis {axis}, but the plan was made for "
                         f"src_size={plan.src_dims}")
    src = da.asarray(src).rechunk({axis: plan.src_chunks, **{axis + k: -1 for k in range(1, m)}})
    return plan, axis, src


def stand_in_of(arr):
    return None if arr is None else stand_in(arr)


def mini(arr, nlead: int, lead=None):
    """A small NumPy array of the dtype of `arr` whose first `nlead` dims are 1 (or `lead`), the rest as in
    `arr`: what the in-memory functions validate at graph time without the data."""
    if arr is None:
        return None
    shape = (tuple(lead) if lead is not None else (1,) * nlead) + tuple(arr.shape[nlead:])
    return np.zeros(shape, arr.dtype)
