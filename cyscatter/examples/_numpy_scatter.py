"""The obvious NumPy alternative to cyscatter, for the GCN example's timing comparison.

What a user without cyscatter writes: gather as fancy indexing ``h[index]`` (autograd differentiates it; its
gradient accumulates with ``np.add.at``) and scatter with ``ufunc.at`` as an autograd primitive with a
hand-written gradient. Same semantics as ``cyscatter.scatter`` for the ops the example uses: a fresh output
starts at the op's identity (0, or -inf for max), mean divides by the group size, a max gradient is split
evenly among tied winners.
"""
from __future__ import annotations

import numpy as np
from autograd.extend import defvjp, primitive

_UFUNC = {"add": np.add, "mean": np.add, "max": np.maximum}
_START = {"add": 0.0, "mean": 0.0, "max": -np.inf}


def _group_sizes(index: np.ndarray, dim_size: int) -> np.ndarray:
    return np.bincount(index, minlength=dim_size)[:, None]


def numpy_gather(h, index):
    """``h[index]``: rows of `h` along the edges (autograd's own indexing primitive)."""
    return h[index]


@primitive
def numpy_scatter(src, index, op, *, dim_size):
    """``out[index[e]] = op(out[index[e]], src[e])`` for op add, mean or max; `src` (n_edges, F) -> (dim_size, F)."""
    out = np.full((dim_size,) + src.shape[1:], _START[op], src.dtype)
    _UFUNC[op].at(out, index, src)
    if op == "mean":
        out /= np.maximum(_group_sizes(index, dim_size), 1)
    return out


def _numpy_scatter_vjp(out, src, index, op, *, dim_size):
    if op == "add":
        return lambda g: g[index]
    if op == "mean":
        sizes = np.maximum(_group_sizes(index, dim_size), 1)
        return lambda g: (g / sizes)[index]
    winners = src == out[index]
    n_winners = np.zeros_like(out)
    np.add.at(n_winners, index, winners)
    share = winners / n_winners[index]
    return lambda g: g[index] * share


defvjp(numpy_scatter, _numpy_scatter_vjp)
