"""The reverse functions of gather_scatter on Dask arrays: each block pair runs the in-memory reverse function on
its blocks, its cotangent scaled by the pair's share of each output element (`_edge_blocks`' module docstring)."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from dask.base import tokenize

from cyscatter._registry.ops import get_op
from cyscatter._reverse.gather_scatter import gather_scatter_jvp as _jvp
from cyscatter._reverse.gather_scatter import gather_scatter_vjp_src as _vjp_src
from cyscatter._reverse.gather_scatter import gather_scatter_vjp_weight as _vjp_weight
from cyscatter.dask import _edge_blocks as eb
from cyscatter.dask._docs import mirror
from cyscatter.dask._edges import mini
from cyscatter.dask._graph import check_split_every, new_array, positions, tree_reduce
from cyscatter.dask._message import EdgeGraph

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, SupportsIndex

    import dask.array as da

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, OpLike

_PARAMS = """    dim_chunks : int or sequence of int, optional
        On Dask: the destination partitions when no plan is given (default: one).
    split_every : int, default 4
        On Dask: partials merged per task.
"""
_NOTES = """On Dask: the arrays may be Dask or NumPy arrays (`grad_out` and `out` of shape B + D + F are cut as the
    output's blocks, `src_dot` as `src`, `weight_dot` as `weight`); `dim_size` is required without a plan, which
    is a ``cyscatter.dask.GatherScatterPlan``. Each block pair (source partition, destination partition) runs the
    in-memory function on its blocks. Where the in-memory rule divides an output element's cotangent among
    edges (mean: by its edge count, sqrt_n: its square root; max/min/fmax/fmin: among its tied winning
    messages; nanmean: among its non-NaN messages), each pair's cotangent is first scaled by its own count over
    the whole count (one more pass over the pairs counts them; for max/min and nanmean it forms each pair's
    messages, E_pair x F). The shares then add up: exact where one pair holds all of an element's edges, else
    to rounding. mul and nanprod scale each pair's cotangent (tangent) by the product of the other pairs'
    messages, from per-pair products of the nonzero messages and counts of the zero ones (prefix and suffix
    products over the pairs, no division: exact with zeros, to rounding); div's rule needs only `out`. The arguments are checked when the graph is built (the in-memory function runs on one edge of
    the same dtypes and feature shape); an out-of-range entry under ``mode="raise"`` raises IndexError when
    computed (at once for a NumPy index)."""
def _check_op(op, fun):
    return get_op(op)


def _setup(op, fun, src, gather_index, scatter_index, weight, plan, dim_size, axis, mode, dim_chunks, num_threads,
           out, tag):
    op = _check_op(op, fun)
    g = EdgeGraph(src, gather_index, scatter_index, weight, plan, dim_size, axis, mode, dim_chunks, fun,
                  num_threads, "")
    out = g.like_out(out, "out")
    return op, g, out


def _totals(g, op, layer, out, wkeys, split_every, extra=None):
    """Per (b, d, f), the key of the whole statistic (the sum of the pairs' local ones, and of the output-shaped
    `extra`, the initial dst's winners, when given); none if the op has no statistic."""
    if op.partials in eb.PRODUCTS:
        return _others(g, op, layer, wkeys, extra)
    if not (op.selects or op.counts):
        return {}
    totals = {}
    task = partial(eb.local_stat, op=op.name, nb=g.nb, m=g.m)
    for b, f in g.outer_blocks():
        for d in range(len(g.plan.dim_chunks)):
            keys = []
            for s in range(len(g.plan.src_chunks)):
                key = (g.name + "-stat", *b, d, *f, s)
                layer[key] = (task, g.src_key(g.src, b, s, f), g.pair_key(s, d), wkeys[(s, d)],
                              g.out_key(out, b, d, f))
                keys.append(key)
            if extra is not None:
                key = (g.name + "-stat-extra", *b, d, *f)
                layer[key] = (partial(eb.canonical, nb=g.nb, md=g.md), g.out_key(extra, b, d, f))
                keys.append(key)
            totals[(b, d, f)] = tree_reduce(layer, g.name + "-stat-merge", (*b, d, *f), keys, eb.add_stats,
                                            split_every)
    return totals


def _others(g, op, layer, wkeys, extra):
    """mul/nanprod: per (b, d, f, s), the key of the product statistic of every pair but s (and of `extra`, the
    initial dst), from prefix and suffix products over the source partitions (no division: exact with zeros)."""
    task = partial(eb.product_stat, op=op.name, nb=g.nb, m=g.m)
    ns = len(g.plan.src_chunks)
    others = {}
    for b, f in g.outer_blocks():
        for d in range(len(g.plan.dim_chunks)):
            stats = []
            for s in range(ns):
                key = (g.name + "-prod", *b, d, *f, s)
                layer[key] = (task, g.src_key(g.src, b, s, f), g.pair_key(s, d), wkeys[(s, d)])
                stats.append(key)
            base = None
            if extra is not None:
                base = (g.name + "-prod-extra", *b, d, *f)
                layer[base] = (partial(eb.product_extra, nb=g.nb, md=g.md), g.out_key(extra, b, d, f))
            prefix, suffix = [base], [None]
            for s in range(ns - 1):
                key = (g.name + "-prod-prefix", *b, d, *f, s)
                layer[key] = (eb.mul_stats, [prefix[-1], stats[s]])
                prefix.append(key)
            for s in range(ns - 1, 0, -1):
                key = (g.name + "-prod-suffix", *b, d, *f, s)
                layer[key] = (eb.mul_stats, [suffix[-1], stats[s]])
                suffix.append(key)
            suffix.reverse()   # suffix[s]: the pairs after s
            for s in range(ns):
                key = (g.name + "-prod-others", *b, d, *f, s)
                layer[key] = (eb.mul_stats, [prefix[s], suffix[s]])
                others[(b, d, f, s)] = key
    return others


def _stat(totals, b, d, f, s):
    return totals.get((b, d, f), totals.get((b, d, f, s)))


@mirror(_vjp_src, params=_PARAMS, notes=_NOTES)
def gather_scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike | None = None,
                           scatter_index: IndexLike | None = None, out: ArrayInput | None = None, *,
                           weight: ArrayInput | None = None, dim_size: DimSize | None = None,
                           axis: SupportsIndex = 0, mode: Mode | None = None, plan: Any = None,
                           num_threads: SupportsIndex | None = None,
                           dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                           split_every: int = 4) -> da.Array:
    """Lazy ``cyscatter.gather_scatter_vjp_src`` of Dask arrays: the cotangent of `src`, shape and chunks of `src`.
    """
    return vjp_src_graph(op, grad_out, src, gather_index, scatter_index, out, weight, dim_size, axis, mode, plan,
                         num_threads, dim_chunks, split_every)


def vjp_src_graph(op, grad_out, src, gather_index, scatter_index, out, weight, dim_size, axis, mode, plan,
                  num_threads, dim_chunks, split_every, extra=None):
    """`gather_scatter_vjp_src`'s graph; `extra` (B + D + F, the initial dst's max/min winners of a scatter) adds
    to the statistic of the selecting ops."""
    split_every = check_split_every(split_every)
    op, g, out = _setup(op, "gather_scatter_vjp_src", src, gather_index, scatter_index, weight, plan, dim_size,
                        axis, mode, dim_chunks, num_threads, out, "vjp-src")
    grad = g.like_out(grad_out, "grad_out")
    mg, mt, mw = g.mini_edges()
    lead = g.nb + g.md
    dtype = _vjp_src(op, mini(grad, lead), g.mini_src(), mg, mt, mini(out, lead), weight=mw,
                     dim_size=(1,) * g.md, axis=g.nb, mode=g.plan.mode).dtype
    g.name = name = "cyscatter-gather-scatter-vjp-src-" + tokenize(op.name, grad, g.src, out, g.plan.pairs,
                                                                   g.weight, g.nb, g.threads, split_every)
    layer = {}
    wkeys = g.weight_keys(layer, g.weight, "weight")
    extra = g.like_out(extra, "dst")
    totals = _totals(g, op, layer, out, wkeys, split_every, extra)
    task = partial(eb.vjp_src_pair, op=op.name, nb=g.nb, m=g.m, md=g.md, threads=g.threads)
    for b, f in g.outer_blocks():
        for s in range(len(g.plan.src_chunks)):
            keys = []
            for d in range(len(g.plan.dim_chunks)):
                key = (name + "-pair", *b, s, *f, d)
                layer[key] = (task, g.src_key(g.src, b, s, f), g.pair_key(s, d), g.out_key(grad, b, d, f),
                              g.out_key(out, b, d, f), _stat(totals, b, d, f, s), wkeys[(s, d)])
                keys.append(key)
            top = tree_reduce(layer, name + "-merge", (*b, s, *f), keys, eb.add_arrays, split_every)
            layer[(name, *b, s, *(0,) * (g.m - 1), *f)] = (partial(_as_dtype, dtype=dtype), top)
    return new_array(name, layer, g.deps(grad, out, extra), g.src.chunks, dtype)


@mirror(_vjp_weight, params=_PARAMS, notes=_NOTES)
def gather_scatter_vjp_weight(op: OpLike, grad_out: ArrayInput, src: ArrayInput,
                              gather_index: IndexLike | None = None, scatter_index: IndexLike | None = None,
                              out: ArrayInput | None = None, *, weight: ArrayInput | None = None,
                              dim_size: DimSize | None = None, axis: SupportsIndex = 0, mode: Mode | None = None,
                              plan: Any = None, num_threads: SupportsIndex | None = None,
                              dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                              split_every: int = 4) -> da.Array:
    """Lazy ``cyscatter.gather_scatter_vjp_weight`` of Dask arrays: the cotangent of `weight` (shape I + W, or I
    without a weight), chunked as the edges."""
    split_every = check_split_every(split_every)
    op, g, out = _setup(op, "gather_scatter_vjp_weight", src, gather_index, scatter_index, weight, plan, dim_size,
                        axis, mode, dim_chunks, num_threads, out, "vjp-weight")
    grad = g.like_out(grad_out, "grad_out")
    mg, mt, mw = g.mini_edges()
    lead = g.nb + g.md
    dtype = _vjp_weight(op, mini(grad, lead), g.mini_src(), mg, mt, mini(out, lead), weight=mw,
                        dim_size=(1,) * g.md, axis=g.nb, mode=g.plan.mode).dtype
    g.name = name = "cyscatter-gather-scatter-vjp-weight-" + tokenize(op.name, grad, g.src, out, g.plan.pairs,
                                                                      g.weight, g.nb, g.threads, split_every)
    layer = {}
    wkeys = g.weight_keys(layer, g.weight, "weight")
    totals = _totals(g, op, layer, out, wkeys, split_every)
    task = partial(eb.vjp_weight_pair, op=op.name, nb=g.nb, m=g.m, md=g.md, threads=g.threads)
    plan = g.plan
    edge_blocks = positions(tuple(len(c) for c in plan.edge_chunks))
    w_shape = () if g.weight is None else g.weight.shape[g.ni:]
    pieces = {e: [] for e in range(len(edge_blocks))}
    for b, f in g.outer_blocks():
        for s in range(len(plan.src_chunks)):
            for d in range(len(plan.dim_chunks)):
                key = (name + "-pair", *b, s, *f, d)
                layer[key] = (task, g.src_key(g.src, b, s, f), g.pair_key(s, d), g.out_key(grad, b, d, f),
                              g.out_key(out, b, d, f), _stat(totals, b, d, f, s), wkeys[(s, d)])
                for e in range(len(edge_blocks)):
                    piece = (name + "-piece", *b, s, *f, d, e)
                    layer[piece] = (partial(eb.weight_piece, e=e), key, g.pair_key(s, d), (plan.pieces.name, e, s, d))
                    pieces[e].append(piece)
    chunks = plan.edge_chunks + tuple((w,) for w in w_shape)
    for e, where in enumerate(edge_blocks):
        shape = tuple(c[k] for c, k in zip(plan.edge_chunks, where)) + w_shape
        layer[(name, *where, *(0,) * len(w_shape))] = (
            partial(_assemble, n=int(np.prod(shape[:g.ni], dtype=np.int64)), shape=shape, dtype=dtype), pieces[e])
    return new_array(name, layer, g.deps(grad, out), chunks, dtype)


@mirror(_jvp, params=_PARAMS, notes=_NOTES)
def gather_scatter_jvp(op: OpLike, src: ArrayInput, gather_index: IndexLike | None = None,
                       scatter_index: IndexLike | None = None, out: ArrayInput | None = None,
                       src_dot: ArrayInput | None = None, *, weight: ArrayInput | None = None,
                       weight_dot: ArrayInput | None = None, dim_size: DimSize | None = None,
                       axis: SupportsIndex = 0, mode: Mode | None = None, plan: Any = None,
                       num_threads: SupportsIndex | None = None,
                       dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                       split_every: int = 4) -> da.Array:
    """Lazy ``cyscatter.gather_scatter_jvp`` of Dask arrays: the tangent of the output (shape B + D + F), chunked
    as ``cyscatter.dask.gather_scatter``'s result. Each pair's tangent is weighted by its local statistic and
    the sums divided by the whole one (the in-memory rule averages over an element's winners or edges)."""
    split_every = check_split_every(split_every)
    op, g, out = _setup(op, "gather_scatter_jvp", src, gather_index, scatter_index, weight, plan, dim_size, axis,
                        mode, dim_chunks, num_threads, out, "jvp")
    src_dot = g.like_src(src_dot, "src_dot")
    weight_dot = g.like_weight(weight_dot, "weight_dot")
    mg, mt, mw = g.mini_edges()
    lead = g.nb + g.md
    dtype = _jvp(op, g.mini_src(), mg, mt, mini(out, lead), mini(src_dot, g.nb + g.m), weight=mw,
                 weight_dot=mini(weight_dot, g.ni), dim_size=(1,) * g.md, axis=g.nb, mode=g.plan.mode).dtype
    g.name = name = "cyscatter-gather-scatter-jvp-" + tokenize(op.name, g.src, out, src_dot, weight_dot,
                                                               g.plan.pairs, g.weight, g.nb, g.threads, split_every)
    layer = {}
    wkeys = g.weight_keys(layer, g.weight, "weight")
    dkeys = g.weight_keys(layer, weight_dot, "weight-dot")
    others = _others(g, op, layer, wkeys, None) if op.partials in eb.PRODUCTS else {}
    task = partial(eb.jvp_pair, op=op.name, nb=g.nb, m=g.m, md=g.md, threads=g.threads)
    chunks = g.out_chunks()
    for b, f in g.outer_blocks():
        for d in range(len(g.plan.dim_chunks)):
            keys = []
            for s in range(len(g.plan.src_chunks)):
                key = (name + "-pair", *b, d, *f, s)
                layer[key] = (task, g.src_key(g.src, b, s, f), g.pair_key(s, d), g.out_key(out, b, d, f),
                              None if src_dot is None else g.src_key(src_dot, b, s, f), wkeys[(s, d)],
                              dkeys[(s, d)], others.get((b, d, f, s)))
                keys.append(key)
            top = tree_reduce(layer, name + "-merge", (*b, d, *f), keys, eb.jvp_combine, split_every)
            where = (*b, d, *(0,) * (g.md - 1), *f)
            shape = tuple(c[k] for c, k in zip(chunks, where))
            layer[(name, *where)] = (partial(_jvp_finish, op=op.name, shape=shape, dtype=dtype), top)
    return new_array(name, layer, g.deps(out, src_dot, weight_dot), chunks, dtype)


def _as_dtype(a, *, dtype):
    return a.astype(dtype, copy=False)


def _assemble(pieces, *, n, shape, dtype):
    if not pieces:
        return np.zeros(shape, dtype)
    return eb.weight_assemble(pieces, n=n, shape=shape).astype(dtype, copy=False)


def _jvp_finish(part, *, op, shape, dtype):
    return eb.jvp_finish(part, op=op, shape=shape).astype(dtype, copy=False)


