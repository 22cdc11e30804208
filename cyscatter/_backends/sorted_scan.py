"""Grouped scans without a kernel of their own, for the GPU backend (`cyscatter._backends.cuda`): the valid entries
sorted by group (stably), then a segmented scan in log2(n) vectorised steps of the array module `xp`, deterministic
from run to run (float sums and products combine in a tree order, so their last bits can differ from the CPU's
sequential scan kernels; max/min and integers do not).
"""
from __future__ import annotations

import numpy as np


def _sorted_groups(xp, plan, reverse):
    """(order, group id of each sorted position, valid count): the valid entries sorted by group, stably, in scan
    order (positions decreasing within a group when `reverse`)."""
    n = plan.n
    key = xp.where(plan.valid(), plan.flat, plan.size)
    if reverse:
        order = (n - 1) - xp.argsort(key[::-1], kind="stable")
    else:
        order = xp.argsort(key, kind="stable")
    nvalid = int(plan.valid().sum())
    order = order[:nvalid]
    keys = key[order]
    head = xp.ones(nvalid, bool)
    if nvalid > 1:
        head[1:] = keys[1:] != keys[:-1]
    return order, xp.cumsum(head) - 1, head


def _segmented(xp, parts, gid, combine):
    """Hillis-Steele inclusive scan of the tuple of (outer, m, inner) arrays `parts` within runs of equal `gid`:
    ``combine(earlier, later)`` on tuples, log2(m) whole-array steps, the same order on every run (deterministic)."""
    m = gid.shape[0]
    d = 1
    while d < m:
        same = (gid[d:] == gid[:-d])[None, :, None]
        merged = combine(tuple(p[:, :-d] for p in parts), tuple(p[:, d:] for p in parts))
        parts = tuple(xp.concatenate([p[:, :d], xp.where(same, c, p[:, d:])], axis=1) for p, c in zip(parts, merged))
        d *= 2
    return parts


def _beats(xp, op, cur, new):
    """Whether `new` replaces `cur` under max/min: NaN wins, then larger (smaller), then +0.0 over -0.0."""
    better = new > cur if op.larger_wins else new < cur
    if cur.dtype.kind == "f":
        zeros = (new == 0) & (cur == 0)
        signed = xp.signbit(cur) & ~xp.signbit(new) if op.larger_wins else xp.signbit(new) & ~xp.signbit(cur)
        better = better | (zeros & signed) | (xp.isnan(new) & ~xp.isnan(cur))
    return better


def _unsort(xp, sorted3, order, head, exclusive, fill, shape, dtype):
    """Scatter the sorted scan back to index positions; shifted within each run for an exclusive scan."""
    if exclusive:
        shifted = xp.concatenate([xp.full(sorted3[:, :1].shape, fill, dtype), sorted3[:, :-1]], axis=1)
        sorted3 = xp.where(head[None, :, None], xp.asarray(fill, dtype), shifted)
    out3 = xp.full(shape, fill, dtype)
    out3[:, order, :] = sorted3
    return out3


def scan(xp, op, src3, plan, ident, reverse, exclusive, track):
    """(out3, arg3 or None): the inclusive or exclusive scan of `op` within each group, in index order (reversed
    with `reverse`); `arg3` (with `track`, max/min) the position each output came from, -1 for none. `ident` is
    the op's identity as a NumPy scalar (the fill of dropped entries and of each group's exclusive first)."""
    order, gid, head = _sorted_groups(xp, plan, reverse)
    vals = src3[:, order, :]
    if op.selects:
        pos = xp.broadcast_to(order[None, :, None], vals.shape).astype(np.int64)

        def pick(a, b):
            take = _beats(xp, op, a[0], b[0])
            return xp.where(take, b[0], a[0]), xp.where(take, b[1], a[1])
        vals, pos = _segmented(xp, (vals, pos), gid, pick)
    else:
        def step(a, b):
            return ((a[0] + b[0]) if op.linear else (a[0] * b[0]),)
        vals, = _segmented(xp, (vals,), gid, step)
        pos = None
    out3 = _unsort(xp, vals, order, head, exclusive, ident, src3.shape, src3.dtype)
    arg3 = _unsort(xp, pos, order, head, exclusive, -1, src3.shape, np.int64) if track else None
    return out3, arg3


def linear(xp, b3, a3, plan, reverse, exclusive):
    """``new = b + a * prev`` within groups: a scan of the affine maps x -> b + a x (composed in order)."""
    order, gid, head = _sorted_groups(xp, plan, reverse)

    def compose(first, then):   # x -> then.b + then.a * (first.b + first.a * x)
        # (a carried value of 0 stays 0 times an inf or NaN factor, as the CPU kernel's `_carried`)
        carried = then[0] * first[1]
        carried = xp.where((first[1] == 0) & (carried != carried), carried.dtype.type(0), carried)
        return then[0] * first[0], then[1] + carried
    _, b = _segmented(xp, (a3[:, order, :], b3[:, order, :]), gid, compose)
    return _unsort(xp, b, order, head, exclusive, 0, b3.shape, b3.dtype)


def route(xp, g3, arg3):
    """The adjoint of picking by `arg3`: g3[o, k, f] added at position arg3[o, k, f] (nothing where arg3 < 0), by
    one bincount over the flattened positions."""
    outer, n, inner = g3.shape
    keep = arg3 >= 0
    o = xp.arange(outer).reshape(outer, 1, 1)
    f = xp.arange(inner).reshape(1, 1, inner)
    flat = ((o * n + xp.where(keep, arg3, 0)) * inner + f)[keep]
    return xp.bincount(flat, weights=g3[keep], minlength=outer * n * inner).astype(g3.dtype).reshape(g3.shape)
