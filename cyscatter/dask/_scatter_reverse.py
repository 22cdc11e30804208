"""The split reverse functions of scatter and gather on Dask arrays.

``scatter_vjp_src`` is ``gather_scatter_vjp_src`` with each src entry an edge from its own position (a gather
index of positions), so the in-memory rules run per block pair; ``scatter_vjp_dst`` runs the in-memory rule per
output block with the src entries' winners counted by a Dask scatter; ``gather_vjp_src`` is a Dask scatter-add.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import dask.array as da
import numpy as np

from cyscatter._plan.index import check_sizes, check_table_bytes
from cyscatter._plan.layout import normalize_axis, src_layout
from cyscatter._plan.values import check_given
from cyscatter._reverse.scatter import gather_vjp_src as _gather_vjp_src
from cyscatter._reverse.scatter import scatter_vjp_dst as _scatter_vjp_dst
from cyscatter._reverse.scatter import scatter_vjp_src as _scatter_vjp_src
from cyscatter.dask import _blocks
from cyscatter.dask import _edge_blocks as eb
from cyscatter.dask._docs import mirror
from cyscatter.dask._edges import mini
from cyscatter.dask._gather import gather
from cyscatter.dask._graph import as_coords, as_dask, check_in_memory_index, known_shape
from cyscatter.dask._groups import broadcast_src
from cyscatter.dask._message_reverse import _check_op, vjp_src_graph
from cyscatter.dask._scatter import scatter

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, IndexLike, Mode, OpLike


_DIM_CHUNKS = """    dim_chunks : int or sequence of int, optional
        On Dask: chunks of the destination's first axis, as ``cyscatter.dask.scatter``'s (default: one).
"""
_SPLIT = """    split_every : int, default 4
        On Dask: partials merged per task.
"""


def _as_dask(arr, arg):
    if arr is None:
        return None
    return known_shape(arr, arg) if isinstance(arr, da.Array) else as_dask(arr)


def _broadcast(src, index, out, axis):
    """(`src` broadcast lazily to B + I + F, the axis) where it has another shape that broadcasts to that one (as
    the in-memory functions take it: B and F of `out`), else None; ValueError where it does not broadcast."""
    coords = as_coords(index)
    axis, _, _, expected = src_layout(src.shape, coords, axis, table_shape=out.shape, table_arg="out",
                                      expanded_check=False)
    if tuple(src.shape) == expected:
        return None
    return broadcast_src(src, expected, axis, coords), axis


def _unbroadcast(full, shape):
    """The sum of `full` over the dims a src of `shape` was broadcast along: an array of `shape`."""
    lead = full.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(j + lead for j, n in enumerate(shape) if n == 1 and full.shape[j + lead] != 1)
    return full.sum(axis=dims, dtype=full.dtype).reshape(shape) if dims else full.reshape(shape)


def _layout(src, index, out, axis, arg="src"):
    """(coords, axis, m, index shape I, destination shape D) of a scatter of `src` (B + I + F) into `out`."""
    coords = as_coords(index)
    m, ishape = len(coords), coords[0].shape
    axis = normalize_axis(axis, src.ndim, coords[0].ndim, array=arg)
    dims = tuple(out.shape[axis:axis + m])
    return coords, axis, m, ishape, dims


def _required(**arrays):
    """The in-memory TypeError for a required array given as None (`out` is the forward call's result)."""
    for arg, value in arrays.items():
        check_given(arg, value, " (the result of the forward scatter)" if arg == "out" else "")


def _same_shape(out, **others):
    """The in-memory ValueError for a `grad_out` / `dst` whose shape is not `out`'s (B + D + F)."""
    for arg, arr in others.items():
        if arr is not None and arr.shape != out.shape:
            raise ValueError(f"{arg} shape {arr.shape} != out shape {out.shape}")


def _mini_index(coords, lead=None):
    shape = lead if lead is not None else (1,) * coords[0].ndim
    parts = tuple(np.zeros(shape, np.int64) for _ in coords)
    return parts if len(parts) > 1 else parts[0]


@mirror(_scatter_vjp_src, params=_DIM_CHUNKS)
def scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                    dst: ArrayInput | None = None, axis: SupportsIndex = 0, mode: Mode = "raise",
                    dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None) -> da.Array:
    """Lazy ``cyscatter.scatter_vjp_src`` of Dask arrays: the cotangent of `src` (its shape and chunks).

    A `src` that broadcasts to B + I + F (B and F of `out`) is broadcast lazily, and its cotangent summed over
    the broadcast dims (to rounding: Dask's sums). The entries are the edges of a
    message-passing call from their own position (``cyscatter.dask.gather_scatter_vjp_src`` with a gather index
    of positions), so each (src chunk, destination partition) pair runs the in-memory rule with its cotangent
    scaled by its share of each output element (mean's counts, max/min's tied winners, the initial `dst` a
    candidate of max/min; for mul and nanprod, by the product of the other pairs' entries and of `dst`); exact
    where one pair holds all of an element's entries, else to rounding.
    """
    op = _check_op(op, "scatter_vjp_src")
    _required(grad_out=grad_out, src=src, out=out)
    src, grad, out, dst = (_as_dask(a, n) for a, n in ((src, "src"), (grad_out, "grad_out"), (out, "out"),
                                                         (dst, "dst")))
    _same_shape(out, grad_out=grad, dst=dst)
    broadcast = _broadcast(src, index, out, axis)
    if broadcast is not None:   # the cotangent of the broadcast src, summed over the dims src broadcast along
        full = scatter_vjp_src(op, grad, broadcast[0], index, out, dst=dst, axis=broadcast[1], mode=mode,
                               dim_chunks=dim_chunks)
        return _unbroadcast(full, src.shape)
    coords, axis, m, ishape, dims = _layout(src, index, out, axis)
    check_in_memory_index(index, dims, mode)
    ni = len(ishape)
    _scatter_vjp_src(op, mini(grad, axis + m), mini(src, axis + ni), _mini_index(coords), mini(out, axis + m),
                     dst=mini(dst, axis + m), axis=axis, mode=mode)   # the in-memory checks, on one entry
    dtype = _scatter_vjp_src(op, mini(grad, axis + m), mini(src, axis + ni), _mini_index(coords),
                             mini(out, axis + m), dst=mini(dst, axis + m), axis=axis, mode=mode).dtype
    chunks = src.chunks[axis:axis + ni]
    positions = tuple(da.broadcast_to(da.arange(n, chunks=c).reshape((1,) * k + (n,) + (1,) * (ni - k - 1)), ishape,
                                      chunks=chunks)
                      for k, (n, c) in enumerate(zip(ishape, chunks)))
    if op.winner:
        return _assignment_vjp_src(op, grad, src, index, positions, dims, axis, mode).astype(dtype)
    extra = None
    if dst is not None and op.selects:   # the initial dst is a candidate: its winners join the total
        extra = da.map_blocks(eb.winners_of, dst, out.rechunk(dst.chunks), dtype=np.float64)
    elif dst is not None and op.partials in eb.PRODUCTS:   # the initial dst is a factor of every product
        extra = dst
    targets = tuple(c.rechunk(chunks) for c in coords)
    if mode == "raise" and any(isinstance(p, da.Array) for p in (index if isinstance(index, tuple) else (index,))):
        # checked as this scatter's index (IndexError naming `index`) before the edges' plan meets it
        targets = tuple(da.map_blocks(_blocks.checked_coord, *targets, k=k, dims=dims, mode=mode, dtype=t.dtype)
                        for k, t in enumerate(targets))
    targets = targets if m > 1 else targets[0]
    grad_src = vjp_src_graph(op, grad, src, positions if ni > 1 else positions[0], targets, out, None, dims, axis,
                             mode, None, None, dim_chunks, 4, extra)
    return grad_src.astype(dtype)


@mirror(_scatter_vjp_dst)
def scatter_vjp_dst(op: OpLike, grad_out: ArrayInput, dst: ArrayInput, src: ArrayInput, index: IndexLike,
                    out: ArrayInput, *, axis: SupportsIndex = 0, mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_vjp_dst`` of Dask arrays: the cotangent of `dst` (shape of `dst`, chunks of
    `grad_out`).

    Each block of `dst` runs the in-memory rule; for max/min and fmax/fmin its cotangent is first shared with
    the tied src winners, counted by a Dask scatter-add (``src == out[index]``), as the in-memory rule splits it;
    for mul, div and nanprod it is first multiplied by the Dask scatter of `src` with the op (from 1), in the
    result dtype (to rounding).
    """
    op = _check_op(op, "scatter_vjp_dst")
    _required(grad_out=grad_out, dst=dst, src=src, out=out)
    grad, dst, src, out = (_as_dask(a, n) for a, n in ((grad_out, "grad_out"), (dst, "dst"), (src, "src"),
                                                         (out, "out")))
    broadcast = _broadcast(src, index, out, axis)
    if broadcast is not None:
        src, axis = broadcast
    coords, axis, m, ishape, dims = _layout(src, index, out, axis)
    check_in_memory_index(index, dims, mode)
    ni = len(ishape)
    dtype = _scatter_vjp_dst(op, mini(grad, axis + m), mini(dst, axis + m), mini(src, axis + ni),
                             _mini_index(coords), mini(out, axis + m), axis=axis, mode=mode).dtype
    for arr, arg in ((dst, "dst"), (out, "out")):
        if arr.shape != grad.shape:
            raise ValueError(f"{arg} has shape {arr.shape} but grad_out has shape {grad.shape}")
    if op.winner:   # the initial value stays only where no entry (no non-NaN one, for the twins) reached it
        reached = scatter(_takes_part(op, src).astype(np.int8), index, "max", dim_size=dims, axis=axis, mode=mode)
        return da.where(reached.rechunk(grad.chunks) > 0, 0, grad).astype(dtype)
    dst, out = dst.rechunk(grad.chunks), out.rechunk(grad.chunks)
    task = partial(_dst_block, op=op.name, src_dtype=src.dtype, empty_index=_mini_index(coords, (0,) * max(ni, 1)), ni=max(ni, 1),
                   m=m, axis=axis, dtype=dtype)
    if op.partials:
        factor = scatter(src.astype(dtype), index, op.name, dim_size=dims, axis=axis, mode=mode)
        return da.map_blocks(task, grad, dst, out, None, factor.rechunk(grad.chunks), dtype=dtype)
    if not op.selects:
        return da.map_blocks(task, grad, dst, out, dtype=dtype)
    wins = da.map_blocks(partial(eb.winners_of, skip_nan=op.skips_nan), src,
                         gather(out, index, axis=axis, mode=mode).rechunk(src.chunks), dtype=np.float64)
    total = scatter(wins, index, "add", dim_size=dims, axis=axis, mode=mode).rechunk(grad.chunks)
    return da.map_blocks(task, grad, dst, out, total, dtype=dtype)


def _takes_part(op, src):
    """Where an entry of `src` can win an assignment: everywhere, or where it is not NaN for the NaN-skipping twins."""
    if op.skips_nan and src.dtype.kind in "fc":
        return da.logical_not(da.isnan(src))
    return da.ones(src.shape, bool, chunks=src.chunks)


def _assignment_vjp_src(op, grad, src, index, positions, dims, axis, mode):
    """The cotangent of the assignments' src: each destination element's cotangent goes to its winner, the last
    (first) entry in index order that reached it, found by a Dask scatter of the entries' positions."""
    ishape = tuple(p.shape[0] if p.ndim == 1 else p.shape[k] for k, p in enumerate(positions))
    flat = positions[0]
    for k in range(1, len(positions)):   # the position in index order (C order over the index dims)
        flat = flat * ishape[k] + positions[k]
    nfeat = src.ndim - axis - len(ishape)
    pos = da.broadcast_to(flat.reshape((1,) * axis + ishape + (1,) * nfeat), src.shape, chunks=src.chunks)
    takes_part = _takes_part(op, src)
    last = op.winner == "last"
    candidates = da.where(takes_part, pos, -1 if last else int(np.prod(ishape, dtype=np.int64)))
    winner = scatter(candidates.astype(np.int64), index, "max" if last else "min", dim_size=dims, axis=axis,
                     mode=mode)
    won = da.logical_and(takes_part, gather(winner, index, axis=axis, mode=mode).rechunk(src.chunks) == pos)
    return da.where(won, gather(grad, index, axis=axis, mode=mode).rechunk(src.chunks), 0)


def _dst_block(grad, dst, out, total=None, factor=None, *, op, src_dtype, empty_index, ni, m, axis, dtype):
    if factor is not None:   # the product of the src entries: the in-memory rule on no entries then gives g
        with np.errstate(invalid="ignore", over="ignore"):
            grad = grad * factor
    if total is not None:
        mine = eb.winners_of(dst, out)
        total = total + mine
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(total > 0, mine / np.maximum(total, 1), 0.0)
        if not np.all(factor[mine > 0] == 1):
            real = grad.dtype if grad.dtype.kind in "fc" else np.dtype(np.float64)
            grad = grad * factor.astype(np.empty(0, real).real.dtype)
    # no src entries (a 1-D empty index: a 0-d one is an entry): the in-memory rule of dst alone, on the cotangent
    # shared out above
    src = np.zeros(dst.shape[:axis] + (0,) * ni + dst.shape[axis + m:], src_dtype)
    return _scatter_vjp_dst(op, grad, dst, src, empty_index, out, axis=axis, mode="drop").astype(dtype, copy=False)


@mirror(_gather_vjp_src, params=_DIM_CHUNKS + _SPLIT)
def gather_vjp_src(grad_out: ArrayInput, index: IndexLike, src_shape: Any, *, axis: SupportsIndex = 0,
                   mode: Mode = "raise", dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                   split_every: SupportsIndex = 4) -> da.Array:
    """Lazy ``cyscatter.gather_vjp_src`` of Dask arrays: ``grad_out`` scatter-added into zeros of `src_shape`
    (``cyscatter.dask.scatter`` with op "add"), in the in-memory function's float dtype.
    """
    check_given("grad_out", grad_out)
    grad = _as_dask(grad_out, "grad_out")
    coords = as_coords(index)
    ni, m = coords[0].ndim, len(coords)
    shape = check_sizes(src_shape, "src_shape")   # the in-memory checks of the sizes
    if len(shape) < m:
        raise ValueError(f"src_shape={shape} has {len(shape)} dims but the index addresses {m}")
    axis_n = normalize_axis(axis, len(shape), m, array="src_shape")
    mini_shape = shape[:axis_n] + (1,) * m + shape[axis_n + m:]
    mini_grad = np.zeros(shape[:axis_n] + (1,) * ni + shape[axis_n + m:], grad.dtype) \
        if grad.ndim == len(shape) - m + ni else mini(grad, axis_n + ni)
    dtype = _gather_vjp_src(mini_grad, _mini_index(coords), mini_shape, axis=axis_n, mode=mode).dtype
    expected = shape[:axis_n] + coords[0].shape + shape[axis_n + m:]
    if tuple(grad.shape) != expected:
        raise ValueError(f"grad_out shape {grad.shape} does not match src_shape {shape} gathered with an index of "
                         f"shape {coords[0].shape} at axis {axis_n}: expected {expected}")
    check_table_bytes(shape, dtype, "src_shape", shape)
    result = scatter(grad.astype(dtype), index, "add", dim_size=shape[axis_n:axis_n + m], axis=axis_n, mode=mode,
                     dim_chunks=dim_chunks, split_every=split_every)
    return result.astype(dtype)
