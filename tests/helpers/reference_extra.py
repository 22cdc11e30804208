"""Independent references for the group ops beyond the core: plain Python loops over groups, written from the
documented rules (docs/semantics.rst, "More reductions"), sharing no code with cyscatter.

Groups are lists of index positions in index order; the float ops are computed in float64 with the `math`
module, so the comparisons use tolerances (the transcendental functions may round differently from NumPy's
vector loops). The integer-valued ops (argmax/argmin, segment, sorted scatter) compare exactly.
"""
from __future__ import annotations

import math

import numpy as np

from reference import UPDATE, _resolve, compute_dtype, divide_parts, identity, result_dtype


def layout(src, index, axis):
    """(src, coords, batch shape, index shape, feature shape, axis >= 0) of a scatter-like call."""
    src = np.asarray(src)
    coords = [np.asarray(c) for c in (index if isinstance(index, tuple) else (index,))]
    ishape = coords[0].shape if coords else ()   # NumPy: no arrays broadcast to ()
    if axis < 0:
        axis += src.ndim
    return src, coords, src.shape[:axis], ishape, src.shape[axis + len(ishape):], axis


def groups(coords, ishape, dims, mode):
    """{target tuple: [flat index positions k in order]} and the flat positions of dropped entries."""
    members, dropped = {}, []
    for flat, k in enumerate(np.ndindex(*ishape)):
        target = tuple(_resolve(c[k], s, mode) for c, s in zip(coords, dims))
        if None in target:
            dropped.append(flat)
        else:
            members.setdefault(target, []).append(flat)
    return members, dropped


def _dims(coords, dim_size):
    if dim_size is None:
        return tuple(int(c.max()) + 1 if c.size else 0 for c in coords)
    return tuple(dim_size) if isinstance(dim_size, (tuple, list)) else (dim_size,)


def _value(src, b, ishape, flat, f):
    return src[b + np.unravel_index(flat, ishape) + f]


# ---- argmax / argmin -------------------------------------------------------------------------------------------

def _beats(kind, cur, new):
    """Whether `new` strictly beats `cur`: NaN wins, then larger (max) / smaller (min), then the signed zero."""
    cur_nan, new_nan = cur != cur, new != new
    if new_nan or cur_nan:
        return new_nan and not cur_nan
    if new == cur:
        if new == 0 and isinstance(new, (float, np.floating)):
            neg_cur, neg_new = math.copysign(1, cur) < 0, math.copysign(1, new) < 0
            return (neg_cur and not neg_new) if kind == "max" else (neg_new and not neg_cur)
        return False
    return new > cur if kind == "max" else new < cur


def ref_scatter_arg(src, index, kind, *, dim_size=None, axis=0, mode="raise"):
    src, coords, batch, ishape, feat, axis = layout(src, index, axis)
    dims = _dims(coords, dim_size)
    n = int(np.prod(ishape, dtype=np.int64))
    out = np.full(batch + dims + feat, n, np.int64)
    members, _ = groups(coords, ishape, dims, mode)
    for target, ks in members.items():
        for b in np.ndindex(*batch):
            for f in np.ndindex(*feat):
                best, arg = None, n
                for k in ks:
                    v = _value(src, b, ishape, k, f).item()
                    if best is None or _beats(kind, best, v):
                        best, arg = v, k
                out[b + target + f] = arg
    return out


# ---- CSR segments ----------------------------------------------------------------------------------------------

def ref_segment(src, indptr, op, *, axis=0, fill_value=None, initial=None):
    """Row-by-row updates in order, as scatter with the segment ids would do; from `initial` where given
    (torch.segment_reduce's: mean divides initial + sum by the count; an assignment's empty segments get it)."""
    op = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "last": "set"}.get(op, op)
    src = np.asarray(src)
    axis = axis + src.ndim if axis < 0 else axis
    rows = np.moveaxis(src, axis, 0)
    rdtype = result_dtype(op, src.dtype)
    cdtype = compute_dtype(op, rdtype)
    nseg = len(indptr) - 1
    if initial is not None and op in ("set", "first"):
        fill_value, initial = (initial if fill_value is None else fill_value), None
    start = identity(op, rdtype) if initial is None else np.array(initial).astype(rdtype).astype(cdtype)
    acc = np.full((nseg,) + rows.shape[1:], start, cdtype)
    for s in range(nseg):
        count = int(indptr[s + 1]) - int(indptr[s])
        for p in range(int(indptr[s]), int(indptr[s + 1])):
            if op == "first" and p > int(indptr[s]):   # the first row of the segment wins
                break
            acc[s] = UPDATE[op](acc[s], rows[p].astype(cdtype))
        if op in ("mean", "sqrt_n") and count:
            acc[s] = divide_parts(acc[s], acc.real.dtype.type(count) if op == "mean"
                                  else np.sqrt(acc.real.dtype.type(count)))
        if count == 0 and fill_value is not None:
            acc[s] = fill_value
    return np.moveaxis(acc.astype(rdtype), 0, axis)


def ref_gather_segment(src, indptr, *, axis=0):
    src = np.asarray(src)
    axis = axis + src.ndim if axis < 0 else axis
    rows = np.moveaxis(src, axis, 0)
    out = [rows[s] for s in range(len(indptr) - 1) for _ in range(int(indptr[s + 1]) - int(indptr[s]))]
    shape = (int(indptr[-1]),) + rows.shape[1:]
    return np.moveaxis(np.array(out, dtype=src.dtype).reshape(shape), 0, axis)


# ---- softmax family ----------------------------------------------------------------------------------------------

def _group_values(src, ks, b, ishape, f):
    return [float(_value(src, b, ishape, k, f)) for k in ks]


def _lse(xs):
    """log(sum(exp(x))): -inf for no members or all -inf, NaN if any NaN, +inf if any +inf."""
    if any(math.isnan(x) for x in xs):
        return math.nan
    if not xs or all(x == -math.inf for x in xs):
        return -math.inf
    m = max(xs)
    if m == math.inf:
        return math.inf
    return m + math.log(math.fsum(math.exp(x - m) for x in xs))


def _finite_max(xs):
    """The group maximum when it is finite (softmax is defined), else None (the group is all NaN)."""
    if any(math.isnan(x) for x in xs):
        return None
    m = max(xs)
    return m if math.isfinite(m) else None


def ref_logsumexp(src, index, *, dim_size=None, axis=0, mode="raise"):
    src, coords, batch, ishape, feat, axis = layout(src, index, axis)
    dims = _dims(coords, dim_size)
    out = np.full(batch + dims + feat, -np.inf)
    members, _ = groups(coords, ishape, dims, mode)
    for target, ks in members.items():
        for b in np.ndindex(*batch):
            for f in np.ndindex(*feat):
                out[b + target + f] = _lse(_group_values(src, ks, b, ishape, f))
    return out


def ref_softmax(src, index, *, log=False, dim_size=None, axis=0, mode="raise"):
    src, coords, batch, ishape, feat, axis = layout(src, index, axis)
    dims = _dims(coords, dim_size)
    out = np.full(src.shape, -np.inf if log else 0.0)
    members, _ = groups(coords, ishape, dims, mode)
    for ks in members.values():
        for b in np.ndindex(*batch):
            for f in np.ndindex(*feat):
                xs = _group_values(src, ks, b, ishape, f)
                m = _finite_max(xs)
                total = None if m is None else math.fsum(math.exp(x - m) for x in xs)
                for k, x in zip(ks, xs):
                    where = b + np.unravel_index(k, ishape) + f
                    if m is None:
                        out[where] = math.nan
                    elif log:
                        out[where] = (x - m) - math.log(total)
                    else:
                        out[where] = math.exp(x - m) / total
    return out


# ---- variance / standard deviation ---------------------------------------------------------------------------

def ref_var(src, index, *, ddof=0, std=False, dim_size=None, axis=0, mode="raise"):
    """NumPy's np.var / np.std of each group's values (NaN where count <= ddof)."""
    src, coords, batch, ishape, feat, axis = layout(src, index, axis)
    dims = _dims(coords, dim_size)
    out = np.full(batch + dims + feat, np.nan)
    members, _ = groups(coords, ishape, dims, mode)
    for target, ks in members.items():
        if len(ks) <= ddof:
            continue
        for b in np.ndindex(*batch):
            for f in np.ndindex(*feat):
                values = np.array([_value(src, b, ishape, k, f) for k in ks]).astype(np.complex128)
                values = values.real if src.dtype.kind != "c" else values
                out[b + target + f] = (np.std if std else np.var)(values, ddof=ddof)
    return out
