"""A host stand-in for CuPy, so that the GPU backend's Python code runs in CI machines without a GPU.

`installed()` puts a fake ``cupy`` module in ``sys.modules`` for the duration of a test: its arrays are a
NumPy subclass that declares itself a CUDA array, its functions are NumPy's returning that subclass, and its
`ElementwiseKernel` runs a NumPy emulation of each cyscatter kernel, chosen by the kernel's name. The emulation
checks what the CUDA kernels rely on (raw arguments 1-d and C-contiguous, matching dtypes, in-bounds rows) and
applies atomic updates in a shuffled order, as concurrent threads would. The CUDA code itself is checked by
nvcc (test_cuda_build.py) and, on a GPU machine, by the real CuPy backend.
"""
from __future__ import annotations

import contextlib
import functools
import sys
import types

import numpy as np

from reference import UPDATE


class ndarray(np.ndarray):
    """A 'device' array: CuPy's type name, ``__cuda_array_interface__``, ``.get()`` and ``.data.ptr``."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False), "version": 3}

    def __dlpack_device__(self):
        return (2, 0)   # kDLCUDA, device 0: what a real CuPy array reports

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])

    def get(self):
        return np.array(self.view(np.ndarray))


ndarray.__module__ = "cupy"


def _device(x):
    if isinstance(x, np.ndarray) and not isinstance(x, ndarray):
        return x.view(ndarray)
    if isinstance(x, tuple):
        return tuple(_device(v) for v in x)
    return x


def _host(x):
    if isinstance(x, ndarray):
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_host(v) for v in x)
    return x


def _wrap(func):
    @functools.wraps(func)
    def call(*args, **kwargs):
        return _device(func(*_host(args), **{k: _host(v) for k, v in kwargs.items()}))
    return call


def asarray(a, dtype=None):
    if isinstance(a, ndarray):
        return a if dtype is None else a.astype(dtype, copy=False)
    return np.array(a, dtype=dtype).view(ndarray)   # a copy, as a transfer to the device is


# ---- the kernels ----------------------------------------------------------------------------------------------

def _raw(a, dtype=None):
    assert isinstance(a, ndarray) and a.ndim == 1 and a.flags.c_contiguous, "raw kernel arguments are 1-d, C order"
    assert dtype is None or a.dtype == dtype, (a.dtype, dtype)
    return a.view(np.ndarray)


def _combine(update, cur, new):
    with np.errstate(all="ignore"):
        return UPDATE[update](cur, new)


def _scatter(update, src, index, n, inner, n_dst, out):
    out3 = _raw(out, src.dtype).reshape(-1, n_dst, inner)
    src3, index = np.asarray(src).view(np.ndarray).reshape(-1, n, inner), _raw(index)
    for k in np.random.default_rng().permutation(n):   # threads arrive in any order
        if 0 <= index[k] < n_dst:
            out3[:, index[k]] = _combine(update, out3[:, index[k]], src3[:, k])


def _scatter_ordered(update, src, order, indptr, n, inner, n_dst, out):
    assert out.dtype == src.dtype and out.flags.c_contiguous
    src3, out3 = _raw(src).reshape(-1, n, inner), out.view(np.ndarray).reshape(-1, n_dst, inner)
    for j in range(n_dst):
        for p in range(indptr[j], indptr[j + 1]):
            out3[:, j] = _combine(update, out3[:, j], src3[:, order[p]])


def _count_rows(j, n_dst, counts):
    j = np.asarray(j).view(np.ndarray)
    np.add.at(_raw(counts, np.int64), j[(j >= 0) & (j < n_dst)], 1)


def _winner(last, j, n_dst, winner):
    """atomicMax / atomicMin of each entry's position on its row's slot, threads arriving in a shuffled order."""
    j, slots = np.asarray(j).view(np.ndarray), _raw(winner, np.int64)
    for k in np.random.default_rng().permutation(j.shape[0]):
        if 0 <= j[k] < n_dst:
            slots[j[k]] = max(slots[j[k]], k) if last else min(slots[j[k]], k)


def _gather(src, index, n, inner, n_src, out):
    assert out.dtype == src.dtype and out.dtype.kind == "u", "gather moves unsigned items"
    src3, index, out3 = _raw(src).reshape(-1, n_src, inner), _raw(index), out.view(np.ndarray).reshape(-1, n, inner)
    for k in range(n):
        if 0 <= index[k] < n_src:
            out3[:, k] = src3[:, index[k]]


def _exclusive_products(src, order, indptr, n, inner, n_groups, partials, size):
    outer = size // (n_groups * inner)   # not from src: a group-less call may have no entries at all
    assert size == outer * n_groups * inner
    src3, part3 = _raw(src).reshape(outer, n, inner), _raw(partials, src.dtype).reshape(outer, n, inner)
    for g in range(n_groups):
        members = order[indptr[g]:indptr[g + 1]]
        for pos, k in enumerate(members):
            others = np.delete(members, pos)
            part3[:, k] = np.prod(src3[:, others], axis=1) if len(others) else 1



# ---- the fused gather-scatter's kernels (cyscatter._reverse.gather_scatter_cuda): one thread per (outer, edge, feature) --

def _edges(src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, size):
    """(src3, [(edge, s, d, w)] for the kept edges in a shuffled order): w the edge's weight per feature or None."""
    outer = size // max(n_edges * inner, 1)
    assert size == outer * n_edges * inner and inner % heads == 0
    src3 = _raw(src).reshape(outer, n_src, inner)
    gather, scatter, w = _raw(gather, np.int64), _raw(scatter, np.int64), _raw(weight, src.dtype)
    assert gather.shape == scatter.shape == (n_edges,) and (not weighted or w.shape == (n_edges * heads,))
    kept = []
    for e in np.random.default_rng().permutation(n_edges):   # threads arrive in any order
        s, d = gather[e], scatter[e]
        if 0 <= s < n_src and 0 <= d < n_dst:
            kept.append((e, s, d, np.repeat(w[e * heads:(e + 1) * heads], inner // heads) if weighted else None))
    return src3, kept


def _message(x, w):
    with np.errstate(all="ignore"):
        return x if w is None else w * x   # in the value type, weight first, as the kernel


def _tied(m, o):
    return np.where(np.isnan(m), np.isnan(o), (m == o) & (np.signbit(m) == np.signbit(o)))


# the reverse kernels' selections (cyscatter._backends.cuda_kernels.SELECTS), on the message m and the output element o
SELECTS = {
    "tied": _tied,
    "won": lambda m, o: ~np.isnan(m) & _tied(m, o),
    "present": lambda m, o: ~np.isnan(m),
}


def _count_present(counts3, d, message):
    """counts3[:, d] += 1 where the message is not NaN (complex: either part), as the counted kernels."""
    counts3[:, d] += ~np.isnan(message)


def _counted_as_named(run, counted: bool):
    """`run`, checking that a counted kernel is passed its counts array and an uncounted one none (the number
    of raw arguments is the kernel's signature)."""
    def call(*args, size):
        assert len(args) == 11 + counted, "counts passed to exactly the counted kernels"
        return run(*args, size=size)
    return call


def _gather_scatter(update, src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, out,
                    counts=None, *, size):
    src3, kept = _edges(src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, size)
    out3 = _raw(out, src.dtype).reshape(-1, n_dst, inner)
    counts3 = None if counts is None else _raw(counts).reshape(out3.shape)
    assert counts3 is None or counts3.dtype in (np.int32, np.int64)
    for _, s, d, w in kept:
        message = _message(src3[:, s], w)
        out3[:, d] = _combine(update, out3[:, d], message)
        if counts3 is not None:
            _count_present(counts3, d, message)


def _gather_scatter_ordered(update, src, indptr, cols, edge_ids, weight, weighted, n_dst, inner, heads, n_src, out,
                            counts=None, *, size):
    out3 = _raw(out, src.dtype).reshape(-1, n_dst, inner)
    assert size == out3.size
    counts3 = None if counts is None else _raw(counts).reshape(out3.shape)
    assert counts3 is None or (counts3.dtype in (np.int32, np.int64) and not counts3.any())
    src3, w = _raw(src).reshape(out3.shape[0], n_src, inner), _raw(weight, src.dtype)
    indptr, cols, edge_ids = _raw(indptr, np.int64), _raw(cols, np.int64), _raw(edge_ids, np.int64)
    for r in range(n_dst):
        for p in range(indptr[r], indptr[r + 1]):
            e = edge_ids[p]
            we = np.repeat(w[e * heads:(e + 1) * heads], inner // heads) if weighted else None
            message = _message(src3[:, cols[p]], we)
            out3[:, r] = _combine(update, out3[:, r], message)
            if counts3 is not None:
                _count_present(counts3, r, message)


def _edge_counts(select, src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, out, ties,
                 size):
    src3, kept = _edges(src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, size)
    out3, ties3 = _raw(out, src.dtype).reshape(-1, n_dst, inner), _raw(ties, np.int64).reshape(-1, n_dst, inner)
    for _, s, d, w in kept:
        ties3[:, d] += select(_message(src3[:, s], w), out3[:, d])


def _shares_back(select, src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, out, share,
                 result, size):
    src3, kept = _edges(src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, size)
    out3, share3 = _raw(out, src.dtype).reshape(-1, n_dst, inner), _raw(share, src.dtype).reshape(-1, n_dst, inner)
    result3 = _raw(result, src.dtype).reshape(src3.shape)
    for _, s, d, w in kept:
        chosen = select(_message(src3[:, s], w), out3[:, d])
        result3[:, s] += np.where(chosen, _message(share3[:, d], w), 0)


def _tangents(select, src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, out, src_dot,
              use_src_dot, weight_dot, use_weight_dot, acc, size):
    src3, kept = _edges(src, gather, scatter, weight, weighted, n_edges, inner, heads, n_src, n_dst, size)
    out3, acc3 = _raw(out, src.dtype).reshape(-1, n_dst, inner), _raw(acc, src.dtype).reshape(-1, n_dst, inner)
    dot3, w_dot = _raw(src_dot, src.dtype).reshape(src3.shape) if use_src_dot else None, _raw(weight_dot, src.dtype)
    for e, s, d, w in kept:
        tangent = np.zeros_like(src3[:, s])
        if use_src_dot:
            tangent = _message(dot3[:, s], w)
        if use_weight_dot:
            tangent = tangent + np.repeat(w_dot[e * heads:(e + 1) * heads], inner // heads) * src3[:, s]
        acc3[:, d] += np.where(select(_message(src3[:, s], w), out3[:, d]), tangent, 0)


def _edge_dots(select, g, src, gather, scatter, n_edges, outer, inner, heads, n_src, n_dst, *rest, size):
    out, weight, weighted, result = rest if select else (None, None, False, rest[0])
    assert size == n_edges * heads and inner % heads == 0 and len(rest) == (4 if select else 1)
    g3, src3 = _raw(g).reshape(outer, n_dst, inner), _raw(src, g.dtype).reshape(outer, n_src, inner)
    gather, scatter, res = _raw(gather, np.int64), _raw(scatter, np.int64), _raw(result, g.dtype)
    chunk = inner // max(heads, 1)
    for e in range(n_edges):
        s, d = gather[e], scatter[e]
        for h in range(heads):
            acc = g.dtype.type(0)
            if 0 <= s < n_src and 0 <= d < n_dst:
                for o in range(outer):
                    for f in range(h * chunk, (h + 1) * chunk):
                        x = src3[o, s, f]
                        if select and not select(_message(x, _raw(weight)[e * heads + h] if weighted else None),
                                                 _raw(out).reshape(outer, n_dst, inner)[o, d, f]):
                            continue
                        acc = acc + g3[o, d, f] * x
            res[e * heads + h] = acc


_SELECTING_KERNELS = {"cyscatter_edge_counts_": _edge_counts, "cyscatter_shares_back_": _shares_back,
                      "cyscatter_tangents_": _tangents, "cyscatter_edge_dots_": _edge_dots}


def _kernel_for(name):
    if name.startswith("cyscatter_gather_scatter_"):   # ordered or atomic, counted or not
        run = _gather_scatter_ordered if "_ordered_" in name else _gather_scatter
        return _counted_as_named(functools.partial(run, name.rpartition("_")[2]), "_counted_" in name)
    if name == "cyscatter_edge_dots":
        return functools.partial(_edge_dots, None)
    for prefix, run in _SELECTING_KERNELS.items():
        if name.startswith(prefix):
            return functools.partial(run, SELECTS[name[len(prefix):]])
    if name.startswith("cyscatter_scatter_ordered_"):
        return functools.partial(_scatter_ordered, name.rpartition("_")[2])
    if name.startswith("cyscatter_scatter_"):
        return functools.partial(_scatter, name.rpartition("_")[2])
    if name.startswith("cyscatter_winner_"):
        return functools.partial(_winner, name.endswith("_last"))
    return {"cyscatter_count_rows": _count_rows, "cyscatter_gather": _gather,
            "cyscatter_exclusive_products": _exclusive_products}[name]



class ElementwiseKernel:
    def __init__(self, in_params, out_params, operation, name, preamble="", no_return=False):
        assert "#ifndef CYSCATTER_CUDA_ATOMICS_CUH" in preamble and no_return
        self.run = _kernel_for(name)

    def __call__(self, *args, **kwargs):
        self.run(*args, **kwargs)


# ---- the module -----------------------------------------------------------------------------------------------

def _module() -> types.ModuleType:
    cupy = types.ModuleType("cupy")
    cupy.EMULATED = True
    cupy.__getattr__ = lambda name: _wrap(getattr(np, name))   # zeros, where, argsort, bincount, ...
    cupy.ndarray, cupy.ElementwiseKernel, cupy.asarray = ndarray, ElementwiseKernel, asarray
    cupy.array = lambda a, dtype=None, order="K": np.array(_host(a), dtype=dtype, order=order).view(ndarray)
    return cupy


@contextlib.contextmanager
def installed():
    """Run the GPU backend on the emulation (sys.modules and the kernel cache restored afterwards)."""
    from cyscatter._backends import cuda_kernels as _cuda_kernels

    saved = {name: sys.modules.pop(name) for name in ("cupy", "cyscatter._backends.cuda") if name in sys.modules}
    sys.modules["cupy"] = _module()
    _cuda_kernels.build.cache_clear()
    try:
        yield sys.modules["cupy"]
    finally:
        for name in ("cupy", "cyscatter._backends.cuda"):
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        _cuda_kernels.build.cache_clear()
