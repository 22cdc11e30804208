"""What one Dask task of `cyscatter.dask.gather_scatter` (and its reverse functions) does to NumPy blocks. Nothing
here imports Dask; worker processes unpickle references to these functions.

The edges are cut three ways: by edge chunk `e` (the chunks of the index arrays), by source partition `s` (the
row chunks of `src` along its first gathered axis) and by destination partition `d` (the row chunks of the
output along its first destination axis). A bucket task sorts the edges of one edge chunk by (s, d); a pair task
builds, per (s, d), one in-memory `GatherScatterPlan` over the edges of every edge chunk that go from s to d, in
edge order, in rows local to the two partitions. Each block pair then runs the in-memory kernels on its own
blocks: the src block s, the output block d, the pair's edges and weights.

The reverse functions split across pairs by a *local statistic*: the in-memory reverse rule of a pair divides
an output element's cotangent among the pair's own edges (mean: its edge count; max/min: its tied winners;
nanmean: its non-NaN messages), where the whole call divides it among all of them. Scaling the cotangent by
``phi(local) / phi(total)`` (phi the identity, or the square root for sqrt_n) makes the pair's share the
in-memory one; where every winner or edge of an element lies in one pair, the factor is 1 and the pair's
result has the in-memory bits.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from cyscatter._api.scatter import scatter as _scatter
from cyscatter._arrays.integers import prod
from cyscatter._backends.host import fresh_table, messages, rows_view, run_forward, run_scatter
from cyscatter._plan.edges import gather_scatter_plan
from cyscatter._plan.index import IndexPlan, parse_coords, plan_index
from cyscatter._plan.prepare import prepare
from cyscatter._registry.ops import get_op
from cyscatter._reverse.gather_scatter import gather_scatter_jvp, gather_scatter_vjp_src, gather_scatter_vjp_weight
from cyscatter._reverse.rules import _winners
from cyscatter.dask import _blocks


class PairPlan(NamedTuple):
    """The edges from one source partition to one destination partition: their in-memory plan (rows local to
    the partitions) and how many of them each edge chunk gave, in edge-chunk order.

    Pickled (sent to another worker, spilled to disk) as its local rows, and grouped again when unpickled: the
    in-memory plan itself is not meant to leave its process."""
    plan: object
    sizes: tuple

    def __reduce__(self):
        plan = self.plan
        return _rebuilt, (_small_ints(plan.gather, plan.src_size), _small_ints(plan.scatter, plan.size),
                          plan.src_size, plan.size, self.sizes)

    @property
    def nbytes(self) -> int:
        """What the pair's plan holds, its reverse grouping (made at the first reverse pass) counted in: the
        edges' rows twice (the index plans and the frozen copies), the grouping by destination and by source
        (edge ids and rows per edge, offsets per row) and the counts per destination row."""
        plan = self.plan
        return 8 * (8 * plan.n_edges + 2 * plan.size + plan.src_size + 2)


def _rebuilt(g, t, src_rows, dst_rows, sizes):
    g, t = (np.asarray(a, np.int64) for a in (g, t))
    return PairPlan(gather_scatter_plan(g, t, src_size=src_rows, dim_size=dst_rows), sizes)


def _small_ints(a, bound: int) -> np.ndarray:
    """`a` (integers in [0, bound)) as int32 where `bound` allows: half the bytes to send or spill."""
    return np.asarray(a, np.int32 if bound < 2**31 else np.int64)


class Box(np.ndarray):
    """A one-element object array: a block of a Dask array of plans or pieces. Its own type so that Dask can
    size it by its element (`cyscatter.dask._edges` registers that with ``dask.sizeof``), not by the 8 bytes of
    the reference: a worker then spills the plans by their real size when memory runs short."""


def box(value, ndim: int) -> np.ndarray:
    """`value` as the one element of an object array of `ndim` dims: a block of a Dask array of plans."""
    out = np.empty((1,) * ndim, object).view(Box)
    out.reshape(-1)[0] = value
    return out


def unbox(block):
    return block.reshape(-1)[0] if isinstance(block, np.ndarray) and block.dtype == object else block


# ---- the plan: edge rows, buckets by (s, d), a plan per pair -------------------------------------------------

def edge_rows(*coords, dims, mode, arg, dims_arg, block_info=None):
    """Flat rows of one index block (in the flattened shape `dims`); IndexError naming `arg` under mode='raise'."""
    from cyscatter._backends.host import precheck
    try:
        plan = plan_index(None, dims, mode, arg=arg, dims_arg=dims_arg,
                          coords=parse_coords(coords if len(coords) > 1 else coords[0], arg))
        precheck(plan)
    except IndexError as err:
        where = ", ".join(f"{lo}:{hi}" for lo, hi in block_info[0]["array-location"]) if block_info else "?"
        raise IndexError(f"{err} [the position counts from the {arg} chunk [{where}]]") from None
    return plan.flat.reshape(plan.shape)


def bucket_edges(g, t, *, src_bounds, dst_bounds) -> dict:
    """{(s, d): (positions in the chunk, local source rows, local destination rows)} for one edge chunk, each in
    edge order; edges with an end outside the rows (dropped by the mode) are in none."""
    g = np.asarray(g).reshape(-1).astype(np.int64, copy=False)
    t = np.asarray(t).reshape(-1).astype(np.int64, copy=False)
    ns, nd = len(src_bounds) - 1, len(dst_bounds) - 1
    valid = (g >= 0) & (g < src_bounds[-1]) & (t >= 0) & (t < dst_bounds[-1])
    # the pieces live until the last call's weights are taken from them: int32 where positions and local rows
    # fit (12 bytes per edge, not 24)
    small = g.size < 2**31 and max(np.diff(src_bounds).max(), np.diff(dst_bounds).max()) < 2**31
    narrow = np.int32 if small else np.int64
    if ns * nd == 1:
        pos = np.arange(g.size, dtype=narrow) if valid.all() else np.flatnonzero(valid).astype(narrow)
        return {(0, 0): (pos, g[pos].astype(narrow), t[pos].astype(narrow))}
    s = np.searchsorted(src_bounds, g, "right") - 1 if ns > 1 else np.zeros(g.size, np.int64)
    d = np.searchsorted(dst_bounds, t, "right") - 1 if nd > 1 else np.zeros(g.size, np.int64)
    key = np.where(valid, s * nd + d, ns * nd)
    # a stable sort of small integers: NumPy's radix sort for 16-bit keys (edge order kept within a pair)
    key = key.astype(np.int16 if ns * nd < 2**15 - 1 else np.int64)
    order = np.argsort(key, kind="stable")
    cuts = np.searchsorted(key[order], np.arange(ns * nd + 1))
    pieces = {}
    for k in range(ns * nd):
        pos = order[cuts[k]:cuts[k + 1]]   # increasing: the sort is stable
        si, di = divmod(k, nd)
        pieces[(si, di)] = (pos.astype(narrow), (g[pos] - src_bounds[si]).astype(narrow),
                            (t[pos] - dst_bounds[di]).astype(narrow))
    return pieces


def piece_of(bucket, *, pair):
    return box(bucket[pair], 3)


def pair_plan(pieces, *, src_rows: int, dst_rows: int):
    """The in-memory plan of one (s, d) pair from its pieces of every edge chunk."""
    pieces = [unbox(p) for p in pieces]
    g = np.concatenate([p[1] for p in pieces]).astype(np.int64, copy=False) if pieces else np.zeros(0, np.int64)
    t = np.concatenate([p[2] for p in pieces]).astype(np.int64, copy=False) if pieces else np.zeros(0, np.int64)
    plan = gather_scatter_plan(g, t, src_size=src_rows, dim_size=dst_rows)
    return box(PairPlan(plan, tuple(len(p[0]) for p in pieces)), 2)


def pair_weight(w_blocks, pieces, *, w_dims: int):
    """The weights of one pair's edges, in its plan's order, from the weight blocks of every edge chunk."""
    parts = []
    for w, piece in zip(w_blocks, pieces):
        w = w.reshape((-1,) + w.shape[w.ndim - w_dims:] if w_dims else (-1,))
        parts.append(w[unbox(piece)[0]])
    return np.concatenate(parts)


# ---- the forward pass: one partial per block pair -------------------------------------------------------------

def _flat_src(src, nb: int, m: int, rows: int):
    return src.reshape(src.shape[:nb] + (rows,) + src.shape[nb + m:])


class EdgePartial(NamedTuple):
    """One block pair's partial of a destination block: the destination rows its edges reach (local,
    increasing; None for every row) with their values (outer, len(rows), inner) in the compute dtype and counts
    (per row, or per element for the NaN-skipping ops; None without a count). `size` and `identity` rebuild the
    whole block (the other rows hold the op's identity, no count)."""
    work3: np.ndarray
    counts: np.ndarray | None
    rows: np.ndarray | None
    size: int
    identity: object


def edge_partial(src, pair, w, *, op, nb, m, count, threads):
    """The `EdgePartial` of one block pair: the pair's messages reduced from the op's identity into the
    destination partition's rows by the fused kernel (counts per row, or per element for the NaN-skipping ops
    on floats, when `count`), kept for the rows its edges reach only where that takes fewer bytes."""
    op = get_op(op)
    plan = unbox(pair).plan
    call = prepare("gather_scatter", _flat_src(src, nb, m, plan.src_size), (None, None), op, weight=w, plan=plan,
                   axis=nb)
    outer, inner, vdtype = call.outer, call.inner, call.vdtype
    if call.w is not None and vdtype.kind in "iu" and call.compute != vdtype:
        # as the in-memory forward: integer messages formed (and wrapped) in their own dtype, then scattered
        msgs3, keep = messages(rows_view(call.src, vdtype, outer, plan.src_size, inner), plan, call.w, call.heads,
                               call.feat, vdtype)
        work3, counts = _blocks.scatter_partial(msgs3, plan.scatter[keep], op=op.name,
                                                result_dtype=call.result_dtype, nb=1, rows=(0, plan.size),
                                                count=count)
        return _sparse(work3, counts, plan, op.identity(call.result_dtype))
    out3 = fresh_table((outer, plan.size, inner), call.compute, call.identity)
    src3 = rows_view(call.src, out3.dtype, outer, plan.src_size, inner)
    counts = None
    if count and op.skips_nan and out3.dtype.kind in "fc":
        counts = np.zeros(out3.shape, np.int64 if plan.n_edges >= 2**31 - 1 else np.int32)
        run_forward(op, src3, plan, call.w, call.heads, call.feat, out3, threads, counts=counts)
        counts = counts.astype(np.int64)
    else:
        run_forward(op, src3, plan, call.w, call.heads, call.feat, out3, threads)
        if count:
            counts = np.array(plan.counts, np.int64)
    return _sparse(out3, counts, plan, call.identity)


def _sparse(work3, counts, plan, identity) -> EdgePartial:
    """The partial as the rows the pair's edges reach (plan.counts > 0), where that is fewer bytes than the whole
    block: with k of n rows reached, k * (row + index) bytes against n * row."""
    n = work3.shape[1]
    reached = np.flatnonzero(plan.counts)
    if n and reached.size < n:
        row = work3.nbytes // n + (0 if counts is None else counts.nbytes // n)
        rows = reached.astype(np.int32 if n < 2**31 else np.int64)
        if rows.size * (row + rows.itemsize) < n * row:
            if counts is not None:
                counts = counts[:, rows] if counts.ndim == 3 else counts[rows]
            return EdgePartial(work3[:, rows], counts, rows, n, identity)
    return EdgePartial(work3, counts, None, n, identity)


def _dense(part: EdgePartial, copy: bool):
    """(work3, counts) of the whole destination block from a partial (a copy when `copy`: a task must not change
    its inputs, which Dask may hand to a retry)."""
    if part.rows is None:
        counts = part.counts
        return (part.work3.copy(), None if counts is None else counts.copy()) if copy else (part.work3, counts)
    outer, _, inner = part.work3.shape
    work3 = fresh_table((outer, part.size, inner), part.work3.dtype, part.identity)
    work3[:, part.rows] = part.work3
    counts = None
    if part.counts is not None:
        if part.counts.ndim == 3:
            counts = np.zeros(work3.shape, part.counts.dtype)
            counts[:, part.rows] = part.counts
        else:
            counts = np.zeros(part.size, part.counts.dtype)
            counts[part.rows] = part.counts
    return work3, counts


def merge_edge_partials(parts, *, op):
    """One whole-block partial from the partials of several pairs, merged in order by the op's combine rule
    (`Op.combine`): each touches only the rows it holds. Holds one block and the `parts`."""
    merge = get_op(get_op(op).combine)
    first = parts[0]
    work3, counts = _dense(first, copy=True)
    size = first.size
    for part in parts[1:]:
        rows = np.arange(size) if part.rows is None else part.rows.astype(np.int64)
        run_scatter(merge, part.work3, IndexPlan(rows, rows.shape, (size,), "drop", (rows,)), work3)
        if counts is not None:
            if part.rows is None:
                counts += part.counts
            elif counts.ndim == 3:
                counts[:, part.rows] += part.counts
            else:
                counts[part.rows] += part.counts
    return EdgePartial(work3, counts, None, size, first.identity)


def finish_edge_partial(part, *, op, result_dtype, fill, shape):
    """The output block of `shape` from the partial that merges every pair (`_blocks.finish_partial`)."""
    work3, counts = _dense(part, copy=False)
    return _blocks.finish_partial((work3, counts), op=op, result_dtype=result_dtype, fill=fill, shape=shape)


# ---- the reverse passes: the local statistic, each pair's share -----------------------------------------------

def local_stat(src, pair, w, out, *, op, nb, m):
    """The pair's summable statistic (see the module docstring) as an (outer, rows, inner)-broadcastable array
    of float64, or None for the ops whose reverse rule does not divide (add, sub, nansum)."""
    op = get_op(op)
    plan = unbox(pair).plan
    if not (op.selects or op.counts):
        return None
    if op.counts and not op.skips_nan:
        return np.asarray(plan.counts, np.float64)[None, :, None]
    call = prepare("gather_scatter", _flat_src(src, nb, m, plan.src_size), (None, None), op, weight=w, plan=plan,
                   axis=nb)
    outer, inner = call.outer, call.inner
    if not op.selects:   # nanmean: the non-NaN messages of each element, as the forward kernel counts them
        work = fresh_table((outer, plan.size, inner), call.compute, call.identity)
        counts = np.zeros(work.shape, np.int64 if plan.n_edges >= 2**31 - 1 else np.int32)
        run_forward(op, rows_view(call.src, work.dtype, outer, plan.src_size, inner), plan, call.w, call.heads,
                    call.feat, work, 1, counts=counts)
        return counts.astype(np.float64)
    # max/min, fmax/fmin: the messages that tie the output element, compared in the forward's dtype
    dtype = call.compute if call.vdtype.kind in "fc" else call.vdtype
    msgs3, keep = messages(rows_view(call.src, call.vdtype, outer, plan.src_size, inner), plan, call.w, call.heads,
                           call.feat, dtype)
    out3 = np.asarray(out).reshape(outer, plan.size, inner).astype(dtype, copy=False)
    rows = plan.scatter[keep]
    wins = _winners(np, msgs3, out3[:, rows], op.skips_nan)
    return _scatter(wins.astype(np.float64), rows, "add", dim_size=plan.size, axis=1)


def product_stat(src, pair, w, *, op, nb, m):
    """mul/nanprod: the pair's (product of its nonzero messages, count of its zero messages) per output element,
    (outer, rows, inner) each; a NaN message of nanprod counts as 1 (absent). Products of the other pairs' stats
    give each pair the factor that makes its in-memory (exclusive products) rule the whole call's."""
    op = get_op(op)
    plan = unbox(pair).plan
    call = prepare("gather_scatter", _flat_src(src, nb, m, plan.src_size), (None, None), op, weight=w, plan=plan,
                   axis=nb)
    outer, inner = call.outer, call.inner
    dtype = np.result_type(call.compute if call.vdtype.kind in "fc" else call.vdtype, np.float64)
    msgs3, keep = messages(rows_view(call.src, call.vdtype, outer, plan.src_size, inner), plan, call.w, call.heads,
                           call.feat, dtype)
    return _product_pair(msgs3, plan.scatter[keep], plan.size, op.skips_nan)


def _product_pair(values3, rows, size, skip_nan):
    zero = values3 == 0
    one = zero | np.isnan(values3) if skip_nan else zero
    with np.errstate(over="ignore", invalid="ignore"):
        prod3 = _scatter(np.where(one, 1, values3), rows, "mul", dim_size=size, axis=1)
    return prod3, _scatter(zero.astype(np.int64), rows, "add", dim_size=size, axis=1)


def product_extra(a, *, nb, md):
    """An initial dst block (B + D + F) as a product statistic (itself where nonzero, its zeros counted)."""
    a = np.asarray(a)
    a3 = a.astype(np.result_type(a.dtype, np.float64), copy=False).reshape(
        prod(a.shape[:nb]), prod(a.shape[nb:nb + md]), prod(a.shape[nb + md:]))
    zero = a3 == 0
    return np.where(zero, 1, a3), zero.astype(np.int64)


def mul_stats(parts):
    """Product statistics combined: the products multiply, the zero counts add; None for none."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    total, zeros = parts[0]
    with np.errstate(over="ignore", invalid="ignore"):
        for p, z in parts[1:]:
            total, zeros = total * p, zeros + z
    return total, zeros


def product_factor(others, like):
    """The product of the other pairs' entries in a dtype `like` can be scaled by: their nonzero product, times 0
    where one of them is 0 (so NaN or inf times 0 is NaN, as the in-memory products give it)."""
    if others is None:
        return None
    total, zeros = others
    with np.errstate(invalid="ignore"):
        factor = np.where(zeros > 0, total * 0, total)
    if like.kind in "fc" and factor.dtype.kind == like.kind:
        factor = factor.astype(like, copy=False)
    return factor


def _times(grad, factor, *, nb, rows):
    if factor is None:
        return grad
    outer, inner = prod(grad.shape[:nb]), prod(grad.shape[nb + 1:])
    with np.errstate(invalid="ignore"):
        return (grad.reshape(outer, rows, inner) * factor).reshape(grad.shape[:nb] + (rows,) + grad.shape[nb + 1:])


def add_stats(parts):
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    total = np.array(parts[0], np.float64)
    for p in parts[1:]:
        total = total + p
    return total


def _phi(op, stat):
    return np.sqrt(stat) if get_op(op).sqrt_counts else stat


def scaled(op, grad, local, total, *, nb, rows):
    """`grad` (B + rows + F) times phi(local) / phi(total) (0 where the total is 0); itself where that is 1."""
    if local is None:
        return grad
    outer, inner = prod(grad.shape[:nb]), prod(grad.shape[nb + 1:])
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(total > 0, _phi(op, local) / _phi(op, np.maximum(total, 1)), 0.0)
    if np.all(factor == 1):
        return grad
    real = grad.dtype if grad.dtype.kind in "fc" else np.dtype(np.float64)
    factor = factor.astype(np.empty(0, real).real.dtype)
    return (grad.reshape(outer, rows, inner) * factor).reshape(grad.shape)


def _share(op, grad_f, src, pair, w, out_f, total, *, nb, m, rows):
    """The pair's cotangent: scaled by its local statistic, or (mul, nanprod) by the other pairs' product."""
    if get_op(op).partials in PRODUCTS:
        return _times(grad_f, product_factor(total, grad_f.dtype), nb=nb, rows=rows)
    return scaled(op, grad_f, local_stat(src, pair, w, out_f, op=op, nb=nb, m=m), total, nb=nb, rows=rows)


PRODUCTS = ("products", "nan_products")


def vjp_src_pair(src, pair, grad, out, total, w, *, op, nb, m, md, threads):
    """One pair's share of the src cotangent: shape of the src block."""
    plan = unbox(pair).plan
    src_f, grad_f, out_f = _flatten(src, grad, out, nb, m, md, plan)
    grad_f = _share(op, grad_f, src, pair, w, out_f, total, nb=nb, m=m, rows=plan.size)
    res = gather_scatter_vjp_src(op, grad_f, src_f, out=out_f, weight=w, plan=plan, axis=nb, num_threads=threads)
    return res.reshape(src.shape)


def vjp_weight_pair(src, pair, grad, out, total, w, *, op, nb, m, md, threads):
    """One pair's share of the weight cotangent: (its edges,) + the weight's trailing dims."""
    plan = unbox(pair).plan
    src_f, grad_f, out_f = _flatten(src, grad, out, nb, m, md, plan)
    grad_f = _share(op, grad_f, src, pair, w, out_f, total, nb=nb, m=m, rows=plan.size)
    return gather_scatter_vjp_weight(op, grad_f, src_f, out=out_f, weight=w, plan=plan, axis=nb,
                                     num_threads=threads)


def jvp_pair(src, pair, out, src_dot, w, w_dot, others=None, *, op, nb, m, md, threads):
    """(tangent3 times phi(local), local) of one pair: partials that add up across pairs (see `jvp_finish`)."""
    plan = unbox(pair).plan
    src_f, _, out_f = _flatten(src, None, out, nb, m, md, plan)
    dot_f = None if src_dot is None else _flat_src(src_dot, nb, m, plan.src_size)
    tangent = gather_scatter_jvp(op, src_f, out=out_f, src_dot=dot_f, weight=w, weight_dot=w_dot, plan=plan,
                                 axis=nb, num_threads=threads)
    t3 = tangent.reshape(prod(tangent.shape[:nb]), plan.size, prod(tangent.shape[nb + 1:]))
    if get_op(op).partials in PRODUCTS:   # the pair's tangent times the other pairs' product: they add up
        return _times(t3, product_factor(others, t3.dtype), nb=1, rows=plan.size), None
    local = local_stat(src, pair, w, out_f, op=op, nb=nb, m=m)
    if local is None:
        return t3, None
    return t3 * _phi(op, local).astype(np.empty(0, t3.dtype).real.dtype), local


def jvp_combine(parts):
    t3 = parts[0][0].copy()
    for other, _ in parts[1:]:
        t3 += other
    return t3, add_stats([p[1] for p in parts])


def jvp_finish(part, *, op, shape):
    t3, total = part
    if total is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            div = _phi(op, np.maximum(total, 1)).astype(np.empty(0, t3.dtype).real.dtype)
            t3 = np.where(total > 0, t3 / div, 0)
    return t3.astype(t3.dtype, copy=False).reshape(shape)


def _flatten(src, grad, out, nb, m, md, plan):
    """src as B + (src rows,) + F and grad/out (B + D_d + F) as B + (rows,) + F."""
    def rows_of(a):
        return None if a is None else a.reshape(a.shape[:nb] + (plan.size,) + a.shape[nb + md:])
    return _flat_src(src, nb, m, plan.src_size), rows_of(grad), rows_of(out)


def add_arrays(parts):
    total = parts[0].copy()
    for p in parts[1:]:
        total += p
    return total


def weight_assemble(pieces, *, n, shape):
    """The weight cotangent of one edge chunk (`shape`: I_e + W) from the (positions, values) of its pairs and
    batch/feature blocks: each edge lies in one pair, the batch/feature blocks add."""
    first = pieces[0][1]
    out = np.zeros((n,) + first.shape[1:], first.dtype)
    for pos, values in pieces:
        out[pos] += values
    return out.reshape(shape)


def weight_piece(res, pair, piece, *, e):
    """The slice of a pair's weight cotangent `res` that edge chunk `e` gave, with its positions in the chunk."""
    off = sum(unbox(pair).sizes[:e])
    pos = unbox(piece)[0]
    return pos, res[off:off + len(pos)]


def canonical(a, *, nb, md):
    """An output-shaped block (B + D + F) as (outer, rows, inner) float64: a statistic's extra term."""
    return np.asarray(a, np.float64).reshape(prod(a.shape[:nb]), prod(a.shape[nb:nb + md]), prod(a.shape[nb + md:]))


def winners_of(values, best, *, skip_nan=False):
    """1.0 where `values` ties `best` (max/min's winners, as the in-memory rules compare them), else 0.0."""
    return _winners(np, values, best, skip_nan).astype(np.float64)
