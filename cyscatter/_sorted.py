"""The sorted-run path of scatter: runs of equal index entries reduced in a register (host arrays only)."""
from __future__ import annotations

import numpy as np

from cyscatter import group_kernels


def run_scatter_runs(opcode: int, src3: np.ndarray, plan, out3: np.ndarray, counts: np.ndarray | None = None,
                     threads: int = 0):
    """`_canonical.run_scatter` for an index whose equal entries are adjacent (sorted): same result, faster.

    One thread: the run kernel is not parallel (`threads` is accepted for the common signature)."""
    status = group_kernels.scatter_runs(opcode, src3, plan.flat, out3, counts, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)
