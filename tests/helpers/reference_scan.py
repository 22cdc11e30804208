"""Reference of the grouped scans (`cyscatter.scatter_scan`): a plain loop over the index with a dict of running
values, in the documented element rules (tests/helpers/reference.py), no cyscatter code."""
from __future__ import annotations

import numpy as np

from reference import ALIASES, UPDATE, _resolve, compute_dtype, identity, result_dtype


def ref_scan(src, index, op="add", *, dim_size=None, axis=0, mode="raise", exclusive=False, reverse=False):
    op = ALIASES.get(op, op)
    src = np.asarray(src)
    coords = [np.asarray(c) for c in (index if isinstance(index, tuple) else (index,))]
    ishape = coords[0].shape if coords else ()
    axis = axis + src.ndim if axis < 0 else axis
    batch, feat = src.shape[:axis], src.shape[axis + len(ishape):]
    if dim_size is not None:
        dims = tuple(dim_size) if isinstance(dim_size, (tuple, list)) else (dim_size,)
    else:
        dims = tuple(int(c.max()) + 1 if c.size else 0 for c in coords)
    rdtype = result_dtype(op, src.dtype)
    cdtype = compute_dtype(op, rdtype)
    ident = np.asarray(identity(op, rdtype)).astype(cdtype)
    x = src.astype(cdtype)
    out = np.empty(src.shape, cdtype)
    positions = list(np.ndindex(*ishape))
    for b in np.ndindex(*batch):
        running = {}
        for k in (reversed(positions) if reverse else positions):
            group = tuple(_resolve(c[k], s, mode) for c, s in zip(coords, dims))
            if None in group:
                out[b + k] = ident
                continue
            prev = running.get(group, np.full(feat, ident, cdtype))
            new = np.asarray(UPDATE[op](prev, x[b + k])).astype(cdtype)
            out[b + k] = prev if exclusive else new
            running[group] = new
    return out.astype(rdtype)
