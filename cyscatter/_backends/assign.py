"""The assignment ops ("set" / "last" and "first"): a winner pass over the index, then a gather of the winners.

``out[b, index[k], f] = src[b, k, f]`` where several entries reach one row has a winner: the last entry in index
order for "set" (JAX's ``x.at[i].set(v)``, NumPy's ``a[i] = v`` on a 1-d index, numpy_groupies "last"), the
first for "first" (numpy_groupies "first"). Both backends find, per destination row, the position of its winning
entry (-1 where none), then move the winners' rows with the gather kernels, which move bytes: the result does
not depend on the thread count or on the order GPU threads arrive in.

- CPU: `assign_kernels.winners`, one serial pass in index order, then the core gather (parallel over rows).
- GPU: one thread per entry, ``atomicMax`` (last) / ``atomicMin`` (first) of its position on its row's slot, then
  the GPU gather; the max / min of positions is the last / first entry whatever the order of the atomics.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cyscatter import assign_kernels, kernels
from cyscatter._arrays.dtypes import float_kind
from cyscatter._backends.strided import apart
from cyscatter._registry.ops import get_op


def host_winners(plan: Any, last: bool, counts: np.ndarray | None = None) -> np.ndarray:
    """(size,) int64: the winning entry of each destination row of `plan`, -1 where none (counts added to
    `counts` when given). Raises the plan's IndexError under mode='raise' for an entry out of range."""
    winner = np.empty(plan.size, np.int64)
    status = assign_kernels.winners(plan.flat, winner, counts, last, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)
    return winner


def run_host(last: bool, src3: np.ndarray, plan: Any, out3: np.ndarray, counts: np.ndarray | None = None,
             threads: int = 0) -> None:
    """out3[o, j, f] = src3[o, winner[j], f] for the rows an entry reaches; the other rows keep their values."""
    winner = host_winners(plan, last, counts)
    # rows with elements apart (a Fortran-ordered dst or src) are moved in place by the any-strides gather
    gather = kernels.gather_apart if apart(src3) or apart(out3) else kernels.gather
    status = gather(src3, winner, out3, kernels.IndexMode.MODE_DROP, threads)
    if status >= 0:   # a dropping gather reports nothing
        raise AssertionError(f"gather refused winner position {status}")


def winners(be: Any, plan: Any, last: bool) -> Any:
    """The winner of each destination row (-1 where none) on backend `be` (for the reverse rules)."""
    if be.xp is np:
        return host_winners(plan, last)
    return be.assign_winners(plan, last)


def winner_mask(be: Any, plan: Any, last: bool) -> Any:
    """(n,) bool: whether each entry is the winner of its row (False for dropped entries)."""
    xp = be.xp
    win = winners(be, plan, last)
    flat = plan.flat
    valid = plan.valid()
    rows = xp.where(valid, flat, 0).astype(np.int64)
    positions = xp.arange(plan.n, dtype=np.int64)
    if plan.size == 0:
        return xp.zeros(plan.n, bool)
    return valid & (win[rows] == positions)


# ---- the NaN-skipping assignments (nanfirst / nanlast): a winner per element --------------------------------------

def skips_nan(src3: Any) -> bool:
    """Whether a NaN-skipping assignment needs winners per element: float or complex values (others hold no NaN,
    and take the row winners of their twin)."""
    return float_kind(src3.dtype) in "fc"


def element_winners(be: Any, src3: Any, plan: Any, last: bool) -> Any:
    """(outer, size, inner) int64: per output element, the position of its last (first) non-NaN entry in index
    order (NumPy's isnan; complex: either part), -1 (plan.n) where none: a max (min) scatter of the positions
    of the non-NaN entries, on backend `be` (its own reduction kernels; the winner is the same whatever order
    they combine in)."""
    xp = be.xp
    outer, n, inner = src3.shape
    none = -1 if last else n
    positions = xp.arange(n, dtype=np.int64)[None, :, None]
    pos3 = xp.full(src3.shape, none, np.int64)   # C-ordered whatever src3's strides: the scatter kernels' rows
    xp.copyto(pos3, xp.broadcast_to(positions, src3.shape), where=src3 == src3)
    win3 = be.fresh_table((outer, plan.size, inner), np.dtype(np.int64), np.int64(none))
    be.run_scatter(get_op("max" if last else "min"), pos3, plan, win3)
    return win3


def run_nan(be: Any, last: bool, src3: Any, plan: Any, out3: Any) -> None:
    """out3[o, j, f] = src3[o, w, f] for the last (first) non-NaN entry w of each element; elements without
    one keep their values."""
    if out3.size == 0:
        return
    win3 = element_winners(be, src3, plan, last)
    xp = be.xp
    has = (win3 >= 0) & (win3 < src3.shape[1])
    picked = xp.take_along_axis(src3, xp.where(has, win3, 0), axis=1) if src3.shape[1] else out3
    xp.copyto(out3, picked.astype(out3.dtype, copy=False), where=has)
