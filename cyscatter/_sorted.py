"""The sorted-run path of scatter: runs of equal index entries reduced in a register (host arrays only)."""
from __future__ import annotations

import numpy as np

from cyscatter import group_kernels
from cyscatter._canonical import run_scatter
from cyscatter._ops import WINNERS


def run_scatter_runs(opcode: int, src3: np.ndarray, plan, out3: np.ndarray, counts: np.ndarray | None = None,
                     threads: int = 0):
    """`_canonical.run_scatter` for an index whose equal entries are adjacent (sorted): same result, faster.

    Only one-element rows gain from a register; wider rows go to the core kernel, which can use `threads`
    (the run kernel is not parallel)."""
    if src3.shape[2] != 1 or opcode in WINNERS:   # assignments: no reduction to keep in a register
        return run_scatter(opcode, src3, plan, out3, counts, threads)
    status = group_kernels.scatter_runs(opcode, src3, plan.flat, out3, counts, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)
