"""Random cases for the group-op tests: (src, index, dim_size, axis) over index kinds, layouts and modes, with
ties, empty groups and (outside mode="raise") out-of-range entries."""
from __future__ import annotations

import numpy as np

# name -> (index shape I, src shape around it as (batch, features), axis)
LAYOUTS = {
    "axis0": ((9,), (), (3,), 0),
    "batch": ((9,), (2,), (3,), 1),
    "last": ((9,), (2,), (), -1),
    "nd_index": ((3, 4), (), (2,), 0),
}
DIMS = {"int": (5,), "tuple": (3, 2)}   # destination shape D per index kind (larger than needed: empty groups)


def values(rng, shape, dtype) -> np.ndarray:
    """Values with many ties: small integers (halves for floats), both signs where the dtype has them."""
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, 6, shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-4, 5, shape).astype(dtype)
    raw = rng.integers(-6, 7, shape) / 2
    if dtype.kind == "c":
        return (raw + 1j * rng.integers(-3, 4, shape) / 2).astype(dtype)
    return raw.astype(dtype)


def index_for(rng, kind, ishape, mode):
    """An index of `kind` over the DIMS of that kind; outside mode="raise" some entries are out of range."""
    dims = DIMS[kind]
    coords = []
    for size in dims:
        c = rng.integers(0, size - 1, ishape)   # the last row of every axis stays empty unless wrapped/clipped
        if mode != "raise":
            flat = c.reshape(-1)
            flat[rng.choice(flat.size, 2, replace=False)] = (-1, size + 1)
            if mode == "normalize_drop":   # also one still out of range once normalised
                flat[flat.size // 2] = -size - 1
        coords.append(c)
    return (coords[0] if kind == "int" else tuple(coords)), dims


def make_case(seed, kind, layout, mode, dtype):
    rng = np.random.default_rng(seed)
    ishape, batch, feat, axis = LAYOUTS[layout]
    index, dims = index_for(rng, kind, ishape, mode)
    src = values(rng, batch + ishape + feat, dtype)
    return src, index, dims if kind == "tuple" else dims[0], axis


def random_indptr(rng, rows: int, nseg: int) -> np.ndarray:
    """A CSR pointer over `rows` rows with `nseg` segments, some of them empty."""
    cuts = np.sort(rng.integers(0, rows + 1, nseg - 1))
    return np.concatenate(([0], cuts, [rows])).astype(np.int64)

