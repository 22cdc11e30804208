"""Host rows whose elements are apart (a Fortran-ordered, column-strided or reversed array seen as (outer, rows,
inner)): the kernels' plain loops need a row's elements adjacent, so such rows are read or written a group of
columns at a time through a small C-ordered buffer instead of a copy of the whole array.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cyscatter import kernels

COLUMN_GROUP_BYTES = 1 << 20   # the C-ordered buffer of a group of columns


def apart(a3: np.ndarray) -> bool:
    """Whether the elements of a row of `a3` are not adjacent (and there is anything to address)."""
    return a3.shape[2] > 1 and a3.strides[2] != a3.itemsize and a3.size > 0


def group_buffer(a3: np.ndarray) -> np.ndarray:
    """An uninitialised C-ordered (outer, rows, width) buffer for groups of `width` of `a3`'s columns: about
    COLUMN_GROUP_BYTES, and at least a cache line of a row or an eighth of it, whichever is less (fewer passes
    over the index), so never more than an eighth of `a3` beyond COLUMN_GROUP_BYTES."""
    outer, rows, inner = a3.shape
    least = max(1, min(64 // a3.itemsize, inner // 8))
    width = min(inner, max(least, COLUMN_GROUP_BYTES // max(1, outer * rows * a3.itemsize)))
    return np.empty((outer, rows, width), a3.dtype)


def gather_groups(src3: np.ndarray, plan: Any, out3: np.ndarray, threads: int) -> None:
    """out3[o, k, :] = src3[o, flat[k], :] for a src3 whose row elements are apart (out3's adjacent): a group of
    src3's columns at a time made C-ordered, gathered into the same columns of out3. Under mode='raise' the first
    group's gather checks the whole index before writing anything."""
    buf = group_buffer(src3)
    inner, width = src3.shape[2], buf.shape[2]
    for f0 in range(0, inner, width):
        f1 = min(inner, f0 + width)
        part = buf[:, :, :f1 - f0]
        part[...] = src3[:, :, f0:f1]
        status = kernels.gather(part, plan.flat, out3[:, :, f0:f1], plan.kernel_mode, threads)
        if status >= 0:
            raise plan.error(status)
