"""Graph plumbing shared by the Dask scatter and gather: index coordinates as Dask arrays, their destination rows,
destination partitions, tree reductions, and a Dask array made of hand-built tasks."""
from __future__ import annotations

import math

import dask.array as da
import numpy as np
from dask.highlevelgraph import HighLevelGraph

from cyscatter._arrays.integers import as_int
from cyscatter._backends.host import precheck
from cyscatter._plan.index import parse_coords, plan_index
from cyscatter.dask import _blocks


def stand_in(arr) -> np.ndarray:
    """A zero-memory NumPy array with the shape and dtype of `arr`, for the core's eager checks."""
    return np.broadcast_to(np.empty((), arr.dtype), arr.shape)


def known_shape(arr: da.Array, arg: str) -> da.Array:
    if any(math.isnan(s) for s in arr.shape):
        raise ValueError(f"{arg} has unknown chunk sizes (shape {arr.shape}); call "
                         f"{arg}.compute_chunk_sizes() first")
    return arr


def as_dask(arr) -> da.Array:
    """`arr` as a Dask array; an in-memory object array in one chunk (Dask cannot size object chunks), so the
    in-memory function's graph-time checks accept or refuse its dtype as they do in memory."""
    if isinstance(arr, da.Array):
        return arr
    arr = np.asarray(arr)
    return da.from_array(arr, chunks=-1 if arr.dtype.hasobject else "auto")


def as_coords(index) -> tuple:
    """The coordinate arrays of an integer or tuple index as Dask arrays, checked as the core checks them."""
    parts = index if isinstance(index, tuple) else (index,)
    parts = tuple(p if isinstance(p, da.Array) else parse_coords(p)[0] for p in parts)
    coords = tuple(known_shape(da.asarray(p), "index") for p in parts)
    stand_ins = tuple(stand_in(c) for c in coords)
    parse_coords(stand_ins if isinstance(index, tuple) else stand_ins[0])
    return coords


def check_in_memory_index(index, dims, mode: str, arg: str = "index", dims_arg: str = "dim_size") -> None:
    """An in-memory index (NumPy, not Dask) is checked now, as the in-memory function checks it: its values are at
    hand, so an out-of-range entry under mode='raise' raises IndexError (naming `arg`) when the graph is built.
    A Dask index's values are checked by the tasks that read them (`flat_rows`), when computed."""
    parts = index if isinstance(index, tuple) else (index,)
    if not parts or any(isinstance(p, da.Array) for p in parts):
        return
    precheck(plan_index(index, dims, mode, arg=arg, dims_arg=dims_arg))


def check_split_every(split_every) -> int:
    """`split_every` as an int >= 2 (partials merged per task); TypeError / ValueError naming it otherwise."""
    what = f"split_every={split_every!r} must be an integer >= 2"
    if as_int(split_every, what) < 2:
        raise ValueError(what)
    return int(split_every)


def flat_rows(coords: tuple, chunks: tuple, dims: tuple, mode: str) -> da.Array:
    """Destination row of every index entry (flattened destination of shape `dims`), chunked as `chunks`.

    Its tasks validate the index, so an out-of-range entry under mode='raise' raises when they run.
    """
    coords = tuple(c.rechunk(chunks) for c in coords)
    if coords[0].size == 0 and coords[0].chunks != tuple(chunks):
        # Dask's rechunk leaves an empty array's chunks as they are (((0,),), not src's ((0, 0),)): the blocks of
        # src would miss theirs. An empty index has no entries to check: empty blocks cut as src's
        coords = tuple(da.from_array(np.empty(c.shape, c.dtype), chunks=chunks) for c in coords)
    dtype = np.dtype(np.int32 if len(coords) == 1 and coords[0].dtype == np.int32 else np.int64)
    return da.map_blocks(_blocks.flat_rows, *coords, dims=dims, mode=mode, dtype=dtype,
                         meta=np.empty((0,) * coords[0].ndim, dtype))


def partitions(chunks: tuple, rest: int) -> list[tuple[int, int]]:
    """(lo, hi) flat-row ranges of destination blocks chunked as `chunks` along the first destination axis,
    with `rest` rows per step along it (the product of the other destination dims)."""
    bounds = np.cumsum((0,) + tuple(chunks)).tolist()
    return [(lo * rest, hi * rest) for lo, hi in zip(bounds[:-1], bounds[1:])]


def positions(numblocks: tuple) -> list[tuple]:
    """Block positions of a grid in C order (the order in which partials are merged)."""
    return list(np.ndindex(*numblocks))


def block_shape(chunks: tuple, where: tuple) -> tuple:
    return tuple(c[k] for c, k in zip(chunks, where))


def tree_reduce(layer: dict, prefix: str, where: tuple, keys: list, combine, split_every: int):
    """Add tasks to `layer` that merge `keys` in order, at most `split_every` at a time; the last key."""
    depth = 0
    while len(keys) > 1:
        groups = [keys[j:j + split_every] for j in range(0, len(keys), split_every)]
        keys = []
        for j, group in enumerate(groups):
            if len(group) == 1:
                keys.append(group[0])
                continue
            key = (prefix, depth, *where, j)
            layer[key] = (combine, group)
            keys.append(key)
        depth += 1
    return keys[0]


def new_array(name: str, layer: dict, dependencies: list, chunks: tuple, dtype) -> da.Array:
    graph = HighLevelGraph.from_collections(name, layer, dependencies=dependencies)
    return da.Array(graph, name, chunks, meta=np.empty((0,) * len(chunks), dtype))
