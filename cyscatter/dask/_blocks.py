"""What one Dask task does to NumPy blocks: the per-chunk work of `cyscatter.dask`, through the core's canonical
helpers. Nothing here imports Dask; worker processes unpickle references to these functions.

A block of `src` has shape B_b + I_i + F_f (batch, index, feature dims of one chunk); `nb` is len(B), `span` the
number of dims between the batch and feature dims. Destination rows are numbered in the flattened destination
(C order), as `IndexPlan.flat` numbers them; a destination partition holds the rows [lo, hi).
"""
from __future__ import annotations

import numpy as np

from cyscatter._arrays.integers import prod
from cyscatter._backends.host import arg_winners, fresh_table, precheck, rows_view, run_gather, run_scatter
from cyscatter._backends.reduce import finish_fresh, run_counted
from cyscatter._plan.index import IndexPlan, parse_coords, plan_index, sized_by
from cyscatter._registry.ops import get_op


def _sizes(shape, nb: int, span: int) -> tuple[int, int, int]:
    """(outer, middle, inner) element counts of a block around its `span` index or destination dims."""
    return prod(shape[:nb]), prod(shape[nb:nb + span]), prod(shape[nb + span:])


def _rows_plan(flat: np.ndarray, size: int) -> IndexPlan:
    """Already-validated rows as a plan over `size` rows; rows outside [0, size) are skipped (mode='drop')."""
    return IndexPlan(flat, flat.shape, (size,), "drop", (flat,))


def flat_rows(*coords, dims, mode, block_info=None):
    """Destination rows of one index block (shape of the block); IndexError when mode='raise' meets a bad one."""
    try:
        plan = plan_index(None, dims, mode, coords=parse_coords(coords if len(coords) > 1 else coords[0]))
        precheck(plan)
    except IndexError as err:
        where = ", ".join(f"{lo}:{hi}" for lo, hi in block_info[0]["array-location"]) if block_info else "?"
        raise IndexError(f"{err} [the position counts from the index chunk [{where}]]") from None
    return plan.flat.reshape(plan.shape)


def checked_coord(*coords, k, dims, mode, block_info=None):
    """Coordinate `k` of one index block, unchanged, once `flat_rows` has checked the block (IndexError naming
    the index): where a function runs on another's graph that would name the index otherwise."""
    flat_rows(*coords, dims=dims, mode=mode, block_info=block_info)
    return coords[k]


def in_rows(flat, *, size):
    """True for the planned rows in [0, size): the entries a mode kept (it puts dropped ones outside)."""
    return (flat >= 0) & (flat < size)


# ---- scatter: partials, their combination, the finished block ----------------------------------------------

def scatter_partial(src, flat, *, op, result_dtype, nb, rows, count):
    """(work3, counts): one src block reduced from the op's identity into destination rows `rows` = (lo, hi).

    `work3` is (outer, hi - lo, inner) in the compute dtype; counts (entries per row, int64) only if `count`:
    for the NaN-skipping ops, non-NaN entries per element (shape of work3), which add up as row counts do.
    """
    op = get_op(op)
    lo, hi = rows
    outer, n, inner = _sizes(src.shape, nb, flat.ndim)
    work3 = fresh_table((outer, hi - lo, inner), op.compute_dtype(result_dtype), op.identity(result_dtype))
    src3 = rows_view(src, work3.dtype, outer, n, inner)
    counts = np.zeros(work3.shape if op.skips_nan else hi - lo, np.int64) if count else None
    # Shifted by lo, the rows of other partitions and dropped entries (all outside [0, size) and size >= hi)
    # fall outside [0, hi - lo), and the kernel skips them: no need to select this partition's entries first.
    flat = flat.reshape(-1) - np.int64(lo) if lo else flat.reshape(-1)
    counts = run_counted(run_scatter, op, src3, _rows_plan(flat, hi - lo), work3, counts)
    if count and op.skips_nan and counts.ndim == 1:   # no NaN in this block: its row counts, as element counts
        counts = np.broadcast_to(counts[None, :, None], work3.shape).copy()
    return work3, counts


def combine_partials(parts, *, op):
    """One partial from several of the same rows, merged in order with the op's combine rule (`Op.combine`)."""
    merge = get_op(get_op(op).combine)
    work3, counts = parts[0]
    work3 = work3.copy()            # a task must not change its inputs (Dask may hand them to a retry)
    counts = None if counts is None else counts.copy()
    every_row = _rows_plan(np.arange(work3.shape[1]), work3.shape[1])
    for other3, other_counts in parts[1:]:
        if merge.winner:   # an assignment: the later partial's reached rows win (set), or the earlier's (first)
            take = other_counts > 0 if merge.winner == "last" else (other_counts > 0) & (counts == 0)
            if take.ndim == 3:   # nanlast / nanfirst: element counts, a winner per element
                np.copyto(work3, other3, where=take)
            else:
                work3[:, take] = other3[:, take]
        else:
            run_scatter(merge, other3, every_row, work3)
        if counts is not None:
            counts += other_counts
    return work3, counts


def finish_partial(part, *, op, result_dtype, fill, shape):
    """The output block of `shape` from the partial that combines every src block (`finish_fresh`)."""
    op = get_op(op)
    work3, counts = part
    if op.counts or fill is not None:
        work3 = work3.copy()
    return finish_fresh(op, work3, counts, fill, result_dtype).reshape(shape)


# ---- argmax / argmin: (winning value, global position) partials ---------------------------------------------

def arg_partial(src, flat, *, op, nb, rows, starts, ishape):
    """(best, arg): one block's max/min winners in destination rows `rows` = (lo, hi) and their positions in
    the whole flattened index of shape `ishape`, the block starting at `starts` along it (n = prod(ishape)
    where a row has no entry)."""
    op = get_op(op)
    lo, hi = rows
    outer, n, inner = _sizes(src.shape, nb, flat.ndim)
    src3 = rows_view(src, op.compute_dtype(op.result_dtype(src.dtype)), outer, n, inner)
    local = flat.reshape(-1) - np.int64(lo) if lo else flat.reshape(-1)   # other partitions: skipped (see above)
    best, arg = arg_winners(op, src3, _rows_plan(local, hi - lo), hi - lo)
    found = arg < n
    if flat.ndim:   # a 0-d index has one entry, at position 0 in the block and in the whole index alike
        where = np.unravel_index(arg[found], flat.shape)
        arg[found] = np.ravel_multi_index(tuple(w + s for w, s in zip(where, starts)), ishape)
    arg[~found] = prod(ishape)
    return best, arg


def combine_arg_partials(parts, *, op):
    """One (best, arg) from several of the same rows: per element the better value, the smaller position on a tie.

    Each pair is put to the core kernel as two candidates per row, the one of smaller position first, so the
    kernel's own rules decide (NaN wins, signed zeros ordered) and its tie rule (the first) keeps that one.
    """
    op = get_op(op)
    best, arg = parts[0]
    for other_best, other_arg in parts[1:]:
        size = best.shape[1]
        mine_first = arg <= other_arg
        values = np.concatenate([np.where(mine_first, best, other_best), np.where(mine_first, other_best, best)], 1)
        args = np.concatenate([np.where(mine_first, arg, other_arg), np.where(mine_first, other_arg, arg)], 1)
        rows = np.tile(np.arange(size), 2)
        best, pick = arg_winners(op, values, _rows_plan(rows, size), size)
        arg = np.take_along_axis(args, pick, axis=1)
    return best, arg


def finish_arg(part, *, shape, n=None, fill=None):
    arg = part[1].reshape(shape)
    if fill is not None and fill != n:
        arg = np.where(arg == n, np.int64(fill), arg)
    return arg


# ---- scatter_count: per-block counts, their sum ---------------------------------------------------------------

def count_rows(flat, *, size):
    """int64 (size,): entries of one block of planned rows per destination row (rows outside [0, size) were
    dropped by the mode)."""
    flat = flat.reshape(-1)
    valid = (flat >= 0) & (flat < size)
    if not valid.all():
        flat = flat[valid]
    return np.bincount(flat, minlength=size).astype(np.int64, copy=False)


def add_counts(parts):
    total = parts[0].copy()
    for part in parts[1:]:
        total += part
    return total


def finish_counts(counts, *, shape):
    return counts.reshape(shape)


# ---- gather: whole blocks, or one destination partition's share of the entries -----------------------------

def gather_block(src, flat, *, nb, m, fill):
    """Output block for one index block from a src block holding every destination row.

    Rows outside the destination (dropped entries) get `fill`; with `fill` None every entry is in range.
    """
    outer, size, inner = _sizes(src.shape, nb, m)
    src3 = rows_view(src, src.dtype, outer, size, inner)
    shape = (outer, flat.size, inner)
    out3 = np.empty(shape, src.dtype) if fill is None else np.full(shape, fill, src.dtype)
    run_gather(src3, _rows_plan(flat.reshape(-1), size), out3)
    return out3.reshape(src.shape[:nb] + flat.shape + src.shape[nb + m:])


def gather_partial(src, flat, *, nb, m, lo):
    """(positions, values3): the entries of an index block whose rows a src block holds, from row `lo` on."""
    outer, size, inner = _sizes(src.shape, nb, m)
    src3 = rows_view(src, src.dtype, outer, size, inner)
    flat = flat.reshape(-1)
    keep = np.flatnonzero((flat >= lo) & (flat < lo + size))
    values3 = np.empty((outer, keep.size, inner), src.dtype)
    run_gather(src3, _rows_plan(flat[keep] - np.int64(lo), size), values3)
    return keep, values3


def gather_assemble(parts, *, shape, nb, ni, dtype, fill):
    """Output block of `shape` (B_b + I_i + F_f) from the (positions, values3) of every destination partition."""
    outer, n, inner = _sizes(shape, nb, ni)
    out3 = np.empty((outer, n, inner), dtype) if fill is None else np.full((outer, n, inner), fill, dtype)
    for keep, values3 in parts:
        out3[:, keep] = values3
    return out3.reshape(shape)


# ---- scatter_scan: per-chunk group totals, the carry from earlier chunks, each chunk's scan with its carry -------

def scan_total(src, flat, *, op, result_dtype, nb, size, dim_size):
    """(outer, size, inner) in the compute dtype: each group's total over one src block, the op's identity for
    the groups the block does not reach (`scatter_partial` over every destination row). A MemoryError names
    `dim_size` (the user's value), which sized the table."""
    with sized_by("dim_size", dim_size):
        work3, _ = scatter_partial(src, flat, op=op, result_dtype=result_dtype, nb=nb, rows=(0, size), count=False)
    return work3


def scan_carry(parts, *, op):
    """The running total of several chunks' totals, merged in scan order with the op's combine rule."""
    work3, _ = combine_partials([(part, None) for part in parts], op=op)
    return work3


def scan_block(src, flat, carry, *, op, nb, size, dim_size, exclusive, reverse):
    """One src block's grouped scan, started from its groups' `carry` (the running values of the chunks scanned
    before this one; None for the first). The carry rows enter the core kernel (`ScanView.scan`) as one extra
    entry per group ahead of the block's entries (after them with `reverse`), so the kernel's own rules combine
    them (NaN wins max/min, -0.0 < +0.0) in one pass; their outputs are left out. Out-of-range rows (already
    planned by the mode) are dropped and keep the op's identity."""
    from cyscatter._api.scan import ScanView
    view = ScanView("cyscatter.dask.scatter_scan", op, src, flat, size, nb, "drop", reverse, exclusive)
    view.sized = ("dim_size", dim_size)   # the running table's MemoryError names the user's dim_size
    if carry is None or not view.src3.size:
        out3, _ = view.scan(view.src3)
        return view.finish(out3)
    n = view.src3.shape[1]
    rows = np.arange(size, dtype=np.int64)
    flat = flat.reshape(-1).astype(np.int64, copy=False)
    parts, coords = ((view.src3, carry), (flat, rows)) if reverse else ((carry, view.src3), (rows, flat))
    seeded = ScanView("cyscatter.dask.scatter_scan", op, np.concatenate(parts, axis=1), np.concatenate(coords),
                      size, 1, "drop", reverse, exclusive)
    seeded.sized = view.sized
    # the concatenation is in the compute dtype (int64 for int8): the dropped entries' identity must still be
    # the result dtype's (int8's minimum for max), not int64's, which the cast back would wrap (to 0, -1)
    seeded.result = view.result
    out3, _ = seeded.scan(seeded.src3)
    out3 = out3[:, :n] if reverse else out3[:, size:]
    return view.finish(_nan_carry(op, view, out3, carry, flat, size))


def _nan_carry(op, view, out3, carry, flat, size):
    """`out3` where the running value the chunks before made is NaN (inf - inf in nansum, inf * 0 in nanprod):
    the kernel skips a NaN seed as it skips a NaN entry, but in memory such a running value stays in the sum.
    There the carry is combined with the block's own scan by the op's twin (add, mul), as memory would."""
    entry = get_op(op)
    if not (entry.skips_nan and entry.twin in ("add", "mul")) or carry.dtype.kind not in "fc":
        return out3
    lost = np.isnan(carry)
    if not lost.any():
        return out3
    ok = (flat >= 0) & (flat < size)
    at = np.zeros((carry.shape[0], flat.shape[0], carry.shape[2]), bool)
    at[:, ok] = lost[:, flat[ok]]
    plain, _ = view.scan(view.src3)
    seed = np.zeros_like(plain)
    seed[:, ok] = carry[:, flat[ok]]
    with np.errstate(invalid="ignore"):
        combined = seed + plain if entry.twin == "add" else seed * plain
    return np.where(at, combined, out3)
