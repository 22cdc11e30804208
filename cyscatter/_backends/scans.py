"""The host's grouped scans (`_api.scan`'s `ScanView`): the scan kernels, with a running table of a row per
group met (the GPU backend sorts instead)."""
from __future__ import annotations

from typing import Any

import numpy as np

from cyscatter import scan_kernels
from cyscatter._registry.ops import Op


def scan_groups(plan: Any) -> tuple[np.ndarray, int]:
    """(flat, size) for a scan's running table: the plan's own, or where the groups far outnumber the entries
    (a huge dim_size) the groups met renumbered densely, so the table has a row per group met, not per group;
    entries out of range stay out of range (dropped, or reported at their position)."""
    if plan.size <= 4 * plan.n + 4096:
        return plan.flat, plan.size
    flat = plan.flat
    valid = (flat >= 0) & (flat < plan.size)
    groups, dense = np.unique(flat[valid], return_inverse=True)
    renumbered = np.full(flat.shape, -1, flat.dtype)
    renumbered[valid] = dense
    return renumbered, max(1, groups.size)


def group_scan(op: Op, src3: np.ndarray, plan: Any, ident: np.ndarray, reverse: bool, exclusive: bool, track: bool,
               sized: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """(out3, arg3 or None): the scan kernel; `ident` the op's identity (0-d, src3's dtype), `sized` the context
    that names the argument sizing the running table in a MemoryError."""
    out3 = np.empty(src3.shape, src3.dtype)
    arg3 = targ = None
    flat, size = scan_groups(plan)
    with sized:   # the running table has a row per group
        table = np.empty((size, src3.shape[2]), src3.dtype)
        if track:
            arg3 = np.empty(src3.shape, np.int64)
            targ = np.empty((size, src3.shape[2]), np.int64)
        status = scan_kernels.scan(op.opcode, src3, flat, out3, table, ident.reshape(1), reverse, exclusive,
                                   plan.kernel_mode, arg3, targ)
    if status >= 0:
        raise plan.error(status)
    return out3, arg3


def linear_scan(b3: np.ndarray, a3: np.ndarray, plan: Any, reverse: bool, exclusive: bool, sized: Any) -> np.ndarray:
    """The recurrence ``new = b + a * prev`` along each group (0 for dropped entries), by the scan kernels."""
    out3 = np.empty(b3.shape, b3.dtype)
    flat, size = scan_groups(plan)
    with sized:
        table = np.empty((size, b3.shape[2]), b3.dtype)
    status = scan_kernels.linear_scan(b3, np.ascontiguousarray(a3, b3.dtype), flat, out3, table, reverse,
                                      exclusive, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)
    return out3


def route(g3: np.ndarray, arg3: np.ndarray) -> np.ndarray:
    """g3[o, k, f] added at position arg3[o, k, f] (nothing where arg3 < 0): the adjoint of picking by arg3."""
    out3 = np.zeros(g3.shape, g3.dtype)
    scan_kernels.route(np.ascontiguousarray(g3), arg3, out3)
    return out3
