"""Independent references for gather_scatter and its reverse functions: plain loops over the edges, built on the
plain-loop scatter of tests/helpers/reference.py, no cyscatter code.

An edge whose gather or scatter entry is out of range under mode="drop" is dropped whole; the messages are
``weight[k] * src[b, s]`` rounded to the promoted dtype, applied in edge order.
"""
from __future__ import annotations

import numpy as np

from reference import _resolve, ref_scatter


def _coords(index):
    return [np.asarray(c) for c in (index if isinstance(index, tuple) else (index,))]


def kept_edges(src_shape, gather_index, scatter_index, *, dim_size=None, axis=0, mode="raise"):
    """(edges [(k, s, d)], batch, feature shape, D) of the edges that take part, in edge order."""
    gc, sc = _coords(gather_index), _coords(scatter_index)
    axis = axis + len(src_shape) if axis < 0 else axis
    src_dims = tuple(src_shape[axis:axis + len(gc)])
    if dim_size is None:
        dims = tuple(int(c.max()) + 1 if c.size else 0 for c in sc)
    else:
        dims = tuple(dim_size) if isinstance(dim_size, (tuple, list)) else (dim_size,)
    edges = []
    for k in np.ndindex(*(gc[0].shape if gc else ())):
        s = tuple(_resolve(c[k], n, mode) for c, n in zip(gc, src_dims))
        d = tuple(_resolve(c[k], n, mode) for c, n in zip(sc, dims))
        if None not in s and None not in d:
            edges.append((k, s, d))
    return edges, tuple(src_shape[:axis]), tuple(src_shape[axis + len(gc):]), dims


def _edge_weight(weight, k, feat):
    """weight[k] shaped to broadcast against a feature row (per-head weights over the leading feature dims)."""
    w = np.asarray(weight)[k]
    return np.reshape(w, np.shape(w) + (1,) * (len(feat) - np.ndim(w)))


def ref_gather_scatter(src, gather_index, scatter_index, op="add", *, weight=None, dim_size=None, axis=0,
                       fill_value=None, mode="raise"):
    src = np.asarray(src)
    edges, batch, feat, dims = kept_edges(src.shape, gather_index, scatter_index, dim_size=dim_size, axis=axis,
                                          mode=mode)
    mdtype = src.dtype if weight is None else np.result_type(src.dtype, np.asarray(weight).dtype)
    msgs = np.zeros(batch + (len(edges),) + feat, mdtype)
    for j, (k, s, _) in enumerate(edges):
        for b in np.ndindex(*batch):
            row = src[b + s]
            msgs[b + (j,)] = row if weight is None else row * _edge_weight(weight, k, feat)
    targets = tuple(np.array([d[i] for _, _, d in edges], np.int64) for i in range(len(dims)))
    if not dims:   # an empty scatter index tuple: the edges all land in the one row, a size-1 axis dropped after
        whole = ref_scatter(msgs, np.zeros(len(edges), np.int64), op, dim_size=1, axis=len(batch),
                            fill_value=fill_value)
        return whole.reshape(whole.shape[:len(batch)] + whole.shape[len(batch) + 1:])
    return ref_scatter(msgs, targets, op, dim_size=dims, axis=len(batch), fill_value=fill_value)


def _ties(m, o):
    return (np.isnan(m) & np.isnan(o)) | ((m == o) & (np.signbit(m) == np.signbit(o)))


# the messages each op passes an output element's cotangent to, and whether it divides it among them
_SELECTED = {
    "max": _ties, "min": _ties,
    "fmax": lambda m, o: ~np.isnan(m) & (m == o) & (np.signbit(m) == np.signbit(o)),
    "fmin": lambda m, o: ~np.isnan(m) & (m == o) & (np.signbit(m) == np.signbit(o)),
    "nansum": lambda m, o: ~np.isnan(m), "nanmean": lambda m, o: ~np.isnan(m),
}


def ref_gather_scatter_vjp(op, g, src, gather_index, scatter_index, out, *, weight=None, dim_size=None, axis=0,
                           mode="raise"):
    """(grad_src, grad_weight) for add, sub, mean, sqrt_n, max, min, fmax, fmin, nansum, nanmean by explicit
    loops: each edge's coefficient is 1, -1, 1 / count, 1 / sqrt(count), or, where the op selects its message,
    1 / (selected messages of the output element) (max/min: the tied winners, NaN tying NaN; fmax/fmin: the tied
    non-NaN winners; nanmean: the non-NaN messages) or 1 (nansum); an unselected message passes 0 (not 0 * NaN)."""
    src, g = np.asarray(src, np.float64), np.asarray(g, np.float64)
    edges, batch, feat, dims = kept_edges(src.shape, gather_index, scatter_index, dim_size=dim_size, axis=axis,
                                          mode=mode)
    w_all = None if weight is None else np.asarray(weight, np.float64)
    gi_shape = (_coords(gather_index) or [np.zeros(())])[0].shape
    grad_src = np.zeros_like(src)
    grad_w = np.zeros(gi_shape if w_all is None else w_all.shape)
    count = {}
    for _, _, d in edges:
        count[d] = count.get(d, 0) + 1
    msg = {}
    with np.errstate(invalid="ignore"):
        for k, s, d in edges:
            w = 1.0 if w_all is None else _edge_weight(w_all, k, feat)
            for b in np.ndindex(*batch):
                msg[(k, b)] = src[b + s] * w
    selected = {}
    if op in _SELECTED:
        for k, s, d in edges:
            for b in np.ndindex(*batch):
                selected[(b, d)] = selected.get((b, d), 0) + _SELECTED[op](msg[(k, b)], out[b + d])
    for k, s, d in edges:
        w = 1.0 if w_all is None else _edge_weight(w_all, k, feat)
        for b in np.ndindex(*batch):
            if op in ("add", "sub", "mean", "sqrt_n"):
                coef = {"add": 1.0, "sub": -1.0, "mean": 1.0 / count[d], "sqrt_n": 1.0 / np.sqrt(count[d])}[op]
                hit = True
            else:
                hit = _SELECTED[op](msg[(k, b)], out[b + d])
                share = 1.0 if op == "nansum" else 1.0 / np.maximum(selected[(b, d)], 1)
                coef = np.where(hit, share, 0.0)
            grad_src[b + s] += np.where(hit, coef * w * g[b + d], 0.0)
            per_feature = np.where(hit, coef * g[b + d] * src[b + s], 0.0)
            if w_all is None:
                grad_w[k] += per_feature.sum()
            else:
                extra = tuple(range(np.ndim(w_all) - len(gi_shape), len(feat)))
                summed = per_feature.sum(axis=extra) if extra else per_feature
                wk_shape = np.shape(w_all[k])
                grad_w[k] += np.sum(summed, axis=tuple(i for i, n in enumerate(wk_shape) if n == 1),
                                    keepdims=True).reshape(wk_shape) if wk_shape else summed
    return grad_src, grad_w
