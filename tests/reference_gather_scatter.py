"""Independent references for gather_scatter and its reverse functions: plain loops over the edges, built on the
plain-loop scatter of tests/reference.py, no cyscatter code.

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
    for k in np.ndindex(*gc[0].shape):
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
    return ref_scatter(msgs, targets, op, dim_size=dims, axis=len(batch), fill_value=fill_value)


def _ties(m, o):
    return (np.isnan(m) & np.isnan(o)) | ((m == o) & (np.signbit(m) == np.signbit(o)))


def ref_gather_scatter_vjp(op, g, src, gather_index, scatter_index, out, *, weight=None, dim_size=None, axis=0,
                           mode="raise"):
    """(grad_src, grad_weight) for add, sub, mean, sqrt_n, max, min by explicit loops: each edge's coefficient is
    1, -1, 1 / count, 1 / sqrt(count), or (max/min) 1 / (tied winners) where its message equals the output."""
    src, g = np.asarray(src, np.float64), np.asarray(g, np.float64)
    edges, batch, feat, dims = kept_edges(src.shape, gather_index, scatter_index, dim_size=dim_size, axis=axis,
                                          mode=mode)
    w_all = None if weight is None else np.asarray(weight, np.float64)
    gi_shape = _coords(gather_index)[0].shape
    grad_src = np.zeros_like(src)
    grad_w = np.zeros(gi_shape if w_all is None else w_all.shape)
    count = {}
    for _, _, d in edges:
        count[d] = count.get(d, 0) + 1
    msg = {}
    for k, s, d in edges:
        w = 1.0 if w_all is None else _edge_weight(w_all, k, feat)
        for b in np.ndindex(*batch):
            msg[(k, b)] = src[b + s] * w
    ties = {}
    if op in ("max", "min"):
        for k, s, d in edges:
            for b in np.ndindex(*batch):
                ties[(b, d)] = ties.get((b, d), 0) + _ties(msg[(k, b)], out[b + d])
    for k, s, d in edges:
        w = 1.0 if w_all is None else _edge_weight(w_all, k, feat)
        for b in np.ndindex(*batch):
            if op in ("add", "sub", "mean", "sqrt_n"):
                coef = {"add": 1.0, "sub": -1.0, "mean": 1.0 / count[d], "sqrt_n": 1.0 / np.sqrt(count[d])}[op]
            else:
                hit = _ties(msg[(k, b)], out[b + d])
                coef = np.where(hit, 1.0 / np.maximum(ties[(b, d)], 1), 0.0)
            grad_src[b + s] += coef * w * g[b + d]
            per_feature = coef * g[b + d] * src[b + s]
            if w_all is None:
                grad_w[k] += per_feature.sum()
            else:
                extra = tuple(range(np.ndim(w_all) - len(gi_shape), len(feat)))
                summed = per_feature.sum(axis=extra) if extra else per_feature
                wk_shape = np.shape(w_all[k])
                grad_w[k] += np.sum(summed, axis=tuple(i for i, n in enumerate(wk_shape) if n == 1),
                                    keepdims=True).reshape(wk_shape) if wk_shape else summed
    return grad_src, grad_w
