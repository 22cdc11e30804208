"""The index chunkings, index cases and scheduler the Dask tests share."""
from __future__ import annotations

N = 24
# Chunkings of the N index entries: one block, even, uneven with empty blocks, one entry per block (deep tree).
CHUNKS = {"one": (N,), "even": (6,) * 4, "uneven_empty": (0, 7, 0, 1, 16), "singles": (1,) * N}


def threads(x):
    """`x` (a Dask array) computed on the threaded scheduler."""
    import dask.array as da
    assert isinstance(x, da.Array)
    return x.compute(scheduler="threads")


def make_index(rng, kind, mode, dims):
    """(index, dim_size) of N entries into `dims[kind]` (one size for "int", several for "tuple"): in range,
    plus out-of-range ones (negative and too large, one still out of range once normalised) unless
    mode='raise'."""
    dims = dims[kind]
    coords = [rng.integers(0, d, N) for d in dims]
    if mode != "raise":
        for c, d in zip(coords, dims):
            c[[2, 9, 17]] = (-2, d, d + 3)
            if mode == "normalize_drop":
                c[5] = -d - 1
    return (coords[0] if kind == "int" else tuple(coords)), (dims[0] if kind == "int" else dims)


def chunked(index, chunks):
    """`index` (an array or a tuple of them) as Dask arrays of `chunks`."""
    import dask.array as da
    if isinstance(index, tuple):
        return tuple(da.from_array(c, chunks=chunks) for c in index)
    return da.from_array(index, chunks=chunks)
