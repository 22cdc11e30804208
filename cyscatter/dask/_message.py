"""gather_scatter on Dask arrays: message passing block pair by block pair, partials merged per destination block."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import dask.array as da
import numpy as np
from dask.base import tokenize

from cyscatter._plan.index import check_table_bytes
from cyscatter._plan.prepare import prepare
from cyscatter._registry.ops import ORDER_STATS, get_op
from cyscatter._runtime.threads import check_threads
from cyscatter.dask import _edge_blocks as eb
from cyscatter.dask._edges import GatherScatterPlan, as_plan, mini
from cyscatter.dask._graph import as_dask, check_split_every, known_shape, new_array, positions, tree_reduce
from cyscatter.dask._message_order import order_stat_gather_scatter

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike


class EdgeGraph:
    """A checked call on Dask arrays along a Dask plan: src (B + S + F, cut by the plan's source partitions),
    the weight (I + W, cut by the edge chunks) and the task keys of the block pairs."""

    def __init__(self, src, gather_index, scatter_index, weight, plan, dim_size, axis, mode, dim_chunks, fun,
                 num_threads, name):
        self.plan, self.nb, self.src = as_plan(src, gather_index, scatter_index, plan, axis, dim_size, mode,
                                               dim_chunks, fun)
        plan = self.plan
        self.m, self.md, self.ni = len(plan.src_dims), len(plan.dims), len(plan.index_shape)
        self.feat = self.src.shape[self.nb + self.m:]
        # one thread per task by default (Dask runs the tasks in parallel); else checked as in memory
        self.threads = 1 if num_threads is None else check_threads(num_threads)
        self.weight = self.w_dims = None
        if weight is not None:
            weight = known_shape(weight, "weight") if isinstance(weight, da.Array) else np.asarray(weight)
            if tuple(weight.shape[:self.ni]) != plan.index_shape:
                raise ValueError(f"weight shape {weight.shape} does not fit the edges: it must be the index shape "
                                 f"{plan.index_shape} followed by at most {len(self.feat)} dims that broadcast "
                                 f"against the feature shape {self.feat}")
            w_shape = tuple(weight.shape[self.ni:])
            self.w_dims = len(w_shape)
            weight = as_dask(weight).rechunk(plan.edge_chunks + tuple((s,) for s in w_shape))
            heads = len(w_shape)
            while heads and w_shape[heads - 1] == 1:
                heads -= 1
            if heads:   # per-head weights: the feature dims they span in one chunk
                self.src = self.src.rechunk({self.nb + self.m + k: -1 for k in range(heads)})
            self.weight = weight
        self.name = name

    def mini_src(self):
        return mini(self.src, self.nb + self.m)

    def mini_edges(self):
        """(gather_index, scatter_index, weight): one edge each, for the in-memory functions' graph-time checks."""
        lead = (1,) * self.ni
        g = tuple(np.zeros(lead, np.int64) for _ in range(self.m))
        t = tuple(np.zeros(lead, np.int64) for _ in range(self.md))
        w = None if self.weight is None else mini(self.weight, self.ni)
        return (g if self.m > 1 else g[0]), (t if self.md > 1 else t[0]), w

    def like_out(self, arr, arg: str):
        """`arr` (B + D + F: grad_out, out) as a Dask array cut as the output: src's batch and feature chunks,
        the plan's destination partitions."""
        if arr is None:
            return None
        arr = known_shape(arr, arg) if isinstance(arr, da.Array) else np.asarray(arr)
        expected = self.src.shape[:self.nb] + self.plan.dims + self.feat
        if tuple(arr.shape) != expected:
            raise ValueError(f"{arg} has shape {tuple(arr.shape)} but the output of the call (src's batch dims, "
                             f"dim_size={self.plan.dims}, src's feature dims) has shape {expected}")
        chunks = self.src.chunks[:self.nb] + (self.plan.dim_chunks,) + tuple((d,) for d in self.plan.dims[1:]) + \
            self.src.chunks[self.nb + self.m:]
        return as_dask(arr).rechunk(chunks)

    def like_src(self, arr, arg: str):
        if arr is None:
            return None
        arr = known_shape(arr, arg) if isinstance(arr, da.Array) else np.asarray(arr)
        if tuple(arr.shape) != self.src.shape:
            raise ValueError(f"{arg} has shape {tuple(arr.shape)} but src has shape {self.src.shape}")
        return as_dask(arr).rechunk(self.src.chunks)

    def like_weight(self, arr, arg: str):
        if arr is None:
            return None
        arr = known_shape(arr, arg) if isinstance(arr, da.Array) else np.asarray(arr)
        if self.weight is None or tuple(arr.shape) != self.weight.shape:
            raise ValueError(f"{arg} has shape {tuple(arr.shape)} but weight has shape "
                             f"{None if self.weight is None else self.weight.shape}")
        return as_dask(arr).rechunk(self.weight.chunks)

    # ---- keys ------------------------------------------------------------------------------------------------

    def outer_blocks(self):
        """(b, f): the batch and feature block positions of src."""
        for b in positions(self.src.numblocks[:self.nb]):
            for f in positions(self.src.numblocks[self.nb + self.m:]):
                yield b, f

    def src_key(self, arr, b, s, f):
        return (arr.name, *b, s, *(0,) * (self.m - 1), *f)

    def out_key(self, arr, b, d, f):
        return None if arr is None else (arr.name, *b, d, *(0,) * (self.md - 1), *f)

    def pair_key(self, s, d):
        return (self.plan.pairs.name, s, d)

    def weight_keys(self, layer, weight, tag):
        """Per pair (s, d), the key of its edges' weights (tasks added to `layer`); None without a weight."""
        plan = self.plan
        ns, nd = len(plan.src_chunks), len(plan.dim_chunks)
        if weight is None:
            return {(s, d): None for s in range(ns) for d in range(nd)}
        blocks = positions(weight.numblocks[:self.ni])
        keys = {}
        for s in range(ns):
            for d in range(nd):
                key = (self.name + "-" + tag, s, d)
                layer[key] = (partial(eb.pair_weight, w_dims=self.w_dims),
                              [(weight.name, *where, *(0,) * self.w_dims) for where in blocks],
                              [(plan.pieces.name, e, s, d) for e in range(len(blocks))])
                keys[(s, d)] = key
        return keys

    def out_chunks(self):
        return self.src.chunks[:self.nb] + (self.plan.dim_chunks,) + tuple((d,) for d in self.plan.dims[1:]) + \
            self.src.chunks[self.nb + self.m:]

    def deps(self, *arrays):
        return [a for a in (self.src, self.plan.pairs, self.plan.pieces, self.weight, *arrays) if a is not None]


def gather_scatter(src: ArrayInput, gather_index: IndexLike | None = None, scatter_index: IndexLike | None = None,
                   op: OpLike = "add", *, weight: ArrayInput | None = None, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, fill_value: FillValue | None = None, mode: Mode | None = None,
                   plan: GatherScatterPlan | None = None, num_threads: SupportsIndex | None = None,
                   dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                   split_every: SupportsIndex = 4) -> da.Array:
    """Lazy message passing on Dask arrays: ``cyscatter.gather_scatter`` computed block pair by block pair.

    The edges are grouped (``cyscatter.dask.gather_scatter_plan``) into pairs (source partition: a row chunk of
    `src` along its first gathered axis; destination partition: a row chunk of the output). Each pair runs the
    in-memory fused kernel on its src block and its edges, with its own in-memory plan, into a partial output
    block started at the op's identity; the partials of a destination block are merged by a tree of at most
    `split_every` inputs per task with the op's combine rule, as ``cyscatter.dask.scatter`` merges its own
    (mean merges sums and edge counts and divides at the end; max/min keep the winner).

    Parameters
    ----------
    src : dask.array.Array or array_like, shape B + S + F
        Node features; their chunks along the first gathered axis are the source partitions (the later gathered
        axes are put in one chunk, and so are the feature dims a per-head `weight` spans).
    gather_index, scatter_index : Dask or NumPy int array of shape I, or tuple of them
        As for ``cyscatter.gather_scatter``; known chunk sizes; the chunks of `gather_index` are the edge chunks.
        Omit both when `plan` is given.
    op : str
        As for ``cyscatter.gather_scatter`` (add, sub, mul, div, max, min, mean, sqrt_n and the NaN-skipping
        ops; the assignments are refused with the same ValueError).
    weight : Dask or NumPy array, shape I + W, optional
        As for ``cyscatter.gather_scatter``; rechunked to the edge chunks.
    dim_size : int or tuple of int
        Destination shape D. Required without a plan (inferring it would compute the whole index).
    axis : int, default 0
        First gathered axis of `src`.
    fill_value : scalar, optional
        As for ``cyscatter.gather_scatter``.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, optional
        As for ``cyscatter.gather_scatter``; under "raise" an out-of-range entry raises IndexError (when
        computed for a Dask index, at once for a NumPy one).
    plan : cyscatter.dask.GatherScatterPlan, optional
        The edges grouped once (``plan.persist()`` keeps the grouping for many calls).
    num_threads : int, optional
        Threads of each task's kernel (default 1: Dask runs tasks in parallel).
    dim_chunks : int or sequence of int, optional
        Row chunks of the output's first destination axis when no plan is given (default: one chunk).
    split_every : int, default 4
        Partials merged per task.

    Returns
    -------
    out : dask.array.Array, shape B + D + F
        The dtype of ``cyscatter.gather_scatter``'s result; chunked as `src` along B and F and as the plan's
        destination partitions along the first destination axis.

    Raises
    ------
    TypeError, ValueError
        As ``cyscatter.gather_scatter`` for the op, the dtypes, the shapes and the mode, at graph time; also
        missing `dim_size`, unknown chunk sizes, a `plan` that is not a ``cyscatter.dask.GatherScatterPlan``.
    IndexError
        An out-of-range entry under ``mode="raise"``, naming the index: when computed for a Dask index (and
        its chunk), when the graph is built for a NumPy one.

    Notes
    -----
    A pair task holds one src block, its pair's edges (and weights) and one partial of the destination block,
    which it keeps as the rows its edges reach (values, counts, row numbers) where that is smaller; a merge task
    holds one destination block and `split_every` partials. Work: every pair fills a whole destination block, so
    with `k` source partitions each destination block is written `k` times before the merge: few large source
    partitions are fastest. Results equal ``cyscatter.gather_scatter``'s exactly for integers and max/min (NaN
    wins, signed zeros ordered) and to rounding (the partial sums are grouped by source partition) for sums,
    means and products.

    Examples
    --------
    >>> import dask.array as da, numpy as np, cyscatter.dask as csd
    >>> x = da.from_array(np.array([[1., 10.], [2., 20.], [3., 30.]]), chunks=2)
    >>> senders, receivers = np.array([0, 1, 2, 2]), np.array([1, 0, 0, 1])
    >>> csd.gather_scatter(x, senders, receivers, "add", dim_size=2).compute()
    array([[ 5., 50.],
           [ 4., 40.]])
    """
    order_stat = type(op) is str and op in ORDER_STATS
    if order_stat and plan is not None:
        raise ValueError(f"op {op!r}: cyscatter.dask.gather_scatter takes the order statistics with "
                         f"gather_index and scatter_index, not with a plan (their groups are not merged from "
                         f"block-pair partials)")
    op = op if order_stat else get_op(op)
    split_every = check_split_every(split_every)
    g = EdgeGraph(src, gather_index, scatter_index, weight, plan, dim_size, axis, mode, dim_chunks,
                  "gather_scatter", num_threads, "")
    mg, mt, mw = g.mini_edges()
    # the in-memory checks and dtypes, on one edge (an order statistic's are max's: real values only)
    call = prepare("gather_scatter", g.mini_src(), (mg, mt), "max" if order_stat else op, weight=mw,
                   dim_size=(1,) * g.md, axis=g.nb, mode=g.plan.mode, fill_value=fill_value)
    if order_stat:
        return order_stat_gather_scatter(g, gather_index, scatter_index, op, fill_value, dim_chunks, split_every)
    check_table_bytes(tuple(g.src.shape[:g.nb]) + tuple(g.plan.dims) + tuple(g.feat), call.compute, "dim_size",
                      g.plan.dims)
    fill, result_dtype = call.fill, call.result_dtype
    count = op.counts or fill is not None
    g.name = name = f"cyscatter-gather-scatter-{op.name}-" + tokenize(g.src, g.plan.pairs, g.weight, fill, g.nb,
                                                                      g.threads, int(split_every))
    layer = {}
    wkeys = g.weight_keys(layer, g.weight, "weight")
    chunks = g.out_chunks()
    task = partial(eb.edge_partial, op=op.name, nb=g.nb, m=g.m, count=count, threads=g.threads)
    combine = partial(eb.merge_edge_partials, op=op.name)
    for b, f in g.outer_blocks():
        for d in range(len(g.plan.dim_chunks)):
            keys = []
            for s in range(len(g.plan.src_chunks)):
                key = (name + "-partial", *b, d, *f, s)
                layer[key] = (task, g.src_key(g.src, b, s, f), g.pair_key(s, d), wkeys[(s, d)])
                keys.append(key)
            top = tree_reduce(layer, name + "-merge", (*b, d, *f), keys, combine, int(split_every))
            where = (*b, d, *(0,) * (g.md - 1), *f)
            shape = tuple(c[k] for c, k in zip(chunks, where))
            layer[(name, *where)] = (partial(eb.finish_edge_partial, op=op.name, result_dtype=result_dtype,
                                             fill=fill, shape=shape), top)
    return new_array(name, layer, g.deps(), chunks, result_dtype)
