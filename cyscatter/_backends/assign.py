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
    status = kernels.gather(src3, winner, out3, kernels.IndexMode.MODE_DROP, threads)
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
