"""The index chunkings and the scheduler the Dask tests share."""
from __future__ import annotations

N = 24
# Chunkings of the N index entries: one block, even, uneven with empty blocks, one entry per block (deep tree).
CHUNKS = {"one": (N,), "even": (6,) * 4, "uneven_empty": (0, 7, 0, 1, 16), "singles": (1,) * N}


def threads(x):
    """`x` (a Dask array) computed on the threaded scheduler."""
    import dask.array as da
    assert isinstance(x, da.Array)
    return x.compute(scheduler="threads")
