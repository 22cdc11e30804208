"""The implementations the benchmark compares: cyscatter and each optional peer a NumPy user would pick.

`IMPLEMENTATIONS` maps a name to a builder ``build(workload, src, index, threads) -> run``; ``run()`` computes
the full result once (re-initialising any output it reuses) and returns it, or the builder returns None when
the peer has no way to express the workload. Outputs are allocated once through NumPy where the peer can write
into a given array; `ALLOCATES` names those that cannot (their rows include their own allocation).
Each `run` sets its peer's thread count itself, so runs of different thread counts can be interleaved.
"""
from __future__ import annotations

import importlib.util

import numpy as np

IDENTITY = {"add": 0.0, "mean": 0.0, "max": -np.inf}


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _out(w, src, fill=0.0):
    rows = w.size if w.kind == "scatter" else w.n
    return np.full((rows,) + src.shape[1:], fill, src.dtype)


def _counts_divide(out, index, size):
    counts = np.maximum(np.bincount(index, minlength=size), 1).astype(out.dtype)
    out /= counts.reshape((-1,) + (1,) * (out.ndim - 1))
    return out


# ---- cyscatter ---------------------------------------------------------------------------------------------------

def cyscatter_call(w, src, index, threads):
    """The allocating call a user writes (gather: gather_into a reused output, as the peers' out=)."""
    import cyscatter as cs
    if w.kind == "gather":
        out = _out(w, src)
        return lambda: cs.gather_into(out, src, index, num_threads=threads)
    return lambda: cs.scatter(src, index, w.op, dim_size=w.size, num_threads=threads)


def cyscatter_into(w, src, index, threads):
    import cyscatter as cs
    if w.kind == "gather" or w.op == "mean":
        return None
    out = _out(w, src)

    def run():
        out.fill(IDENTITY[w.op])
        return cs.scatter_into(out, src, index, w.op, num_threads=threads)
    return run


def cyscatter_out(w, src, index, threads):
    """The allocating call's `out=` form (NumPy's meaning: the result written into a reused array, from the
    identity): what the peers with a preallocated output do, without the fresh output's page faults."""
    import cyscatter as cs
    if w.kind == "gather":
        return None
    out = _out(w, src)
    return lambda: cs.scatter(src, index, w.op, dim_size=w.size, out=out, num_threads=threads)


# ---- NumPy -------------------------------------------------------------------------------------------------------

def numpy_take(w, src, index, threads):
    """np.take allocating (with out= NumPy buffers the result under mode="raise": slower)."""
    if threads != 1 or w.kind != "gather":
        return None
    return lambda: np.take(src, index, axis=0)


def numpy_at(w, src, index, threads):
    if threads != 1 or w.kind != "scatter":
        return None
    out = _out(w, src)
    ufunc = np.maximum if w.op == "max" else np.add

    def run():
        out.fill(IDENTITY[w.op])
        ufunc.at(out, index, src)
        return _counts_divide(out, index, w.size) if w.op == "mean" else out
    return run


def numpy_bincount(w, src, index, threads):
    """np.bincount with weights: vectors only, add and mean (it always returns float64)."""
    if threads != 1 or w.kind != "scatter" or w.width != 1 or w.op not in ("add", "mean"):
        return None
    if w.op == "add":
        return lambda: np.bincount(index, weights=src, minlength=w.size)
    return lambda: np.bincount(index, weights=src, minlength=w.size) / np.maximum(
        np.bincount(index, minlength=w.size), 1)


# ---- numpy_groupies, numba -----------------------------------------------------------------------------------------

def groupies(w, src, index, threads):
    if threads != 1 or w.kind != "scatter":
        return None
    from numpy_groupies import aggregate_numba
    func = {"add": "sum", "max": "max", "mean": "mean"}[w.op]
    axis = 0 if src.ndim == 2 else None
    return lambda: aggregate_numba.aggregate(index, src, func=func, size=w.size, fill_value=IDENTITY[w.op],
                                             axis=axis, dtype=src.dtype)


_NUMBA = {}


def _numba_kernels():
    """Plain numba loops (what a compiled loop achieves) and prange versions, compiled once."""
    if _NUMBA:
        return _NUMBA
    import numba

    @numba.njit(nogil=True)
    def scatter_rows(out, index, src, use_max):
        for k in range(index.shape[0]):
            j = index[k]
            for f in range(src.shape[1]):
                if use_max:
                    out[j, f] = max(out[j, f], src[k, f])
                else:
                    out[j, f] += src[k, f]

    @numba.njit(nogil=True, parallel=True)
    def scatter_rows_par(out, index, src, use_max, parts):
        # race-free without atomics: each thread owns a block of feature columns (or, for vectors, a range of
        # destination rows, scanning the whole index)
        width, size = src.shape[1], out.shape[0]
        for p in numba.prange(parts):
            f0, f1 = (p * width) // parts, ((p + 1) * width) // parts
            lo, hi = 0, size
            if width < parts:
                f0, f1 = 0, width
                lo, hi = (p * size) // parts, ((p + 1) * size) // parts
            for k in range(index.shape[0]):
                j = index[k]
                if j < lo or j >= hi:
                    continue
                for f in range(f0, f1):
                    if use_max:
                        out[j, f] = max(out[j, f], src[k, f])
                    else:
                        out[j, f] += src[k, f]

    @numba.njit(nogil=True)
    def gather_rows(out, index, src):
        for k in range(index.shape[0]):
            out[k, :] = src[index[k], :]

    @numba.njit(nogil=True, parallel=True)
    def gather_rows_par(out, index, src):
        for k in numba.prange(index.shape[0]):
            out[k, :] = src[index[k], :]

    _NUMBA.update(numba=numba, scatter=scatter_rows, scatter_par=scatter_rows_par, gather=gather_rows,
                  gather_par=gather_rows_par)
    return _NUMBA


def _numba(w, src, index, threads, parallel):
    nb = _numba_kernels()
    out = _out(w, src)
    src2, out2 = src.reshape(src.shape[0], -1), out.reshape(out.shape[0], -1)

    def run():
        if parallel:   # 2.6 µs a call, a sixth of the small workload: only where threads are used
            nb["numba"].set_num_threads(threads)
        if w.kind == "gather":
            (nb["gather_par"] if parallel else nb["gather"])(out2, index, src2)
            return out
        out.fill(IDENTITY[w.op])
        if parallel:
            nb["scatter_par"](out2, index, src2, w.op == "max", threads)
        else:
            nb["scatter"](out2, index, src2, w.op == "max")
        return _counts_divide(out, index, w.size) if w.op == "mean" else out
    return run


def numba_loop(w, src, index, threads):
    return _numba(w, src, index, 1, False) if threads == 1 else None


def numba_prange(w, src, index, threads):
    return _numba(w, src, index, threads, True) if threads > 1 else None


# ---- PyTorch -------------------------------------------------------------------------------------------------------

def _torch(w, src, index, threads, scatter_reduce: bool):
    import torch
    src_t, index_t = torch.from_numpy(src), torch.from_numpy(index)
    out = _out(w, src)
    out_t = torch.from_numpy(out)
    if w.kind == "gather":
        if scatter_reduce:
            return None

        def run():
            torch.set_num_threads(threads)
            torch.index_select(src_t, 0, index_t, out=out_t)
            return out
        return run
    reduce = {"add": "sum", "max": "amax", "mean": "mean"}[w.op]
    expanded = index_t.view(-1, *([1] * (src.ndim - 1))).expand_as(src_t)   # a stride-0 view, no copy

    def run():
        torch.set_num_threads(threads)
        out_t.fill_(IDENTITY[w.op])
        if scatter_reduce:
            out_t.scatter_reduce_(0, expanded, src_t, reduce, include_self=False)
        elif w.op == "add":
            out_t.index_add_(0, index_t, src_t)
        else:
            out_t.index_reduce_(0, index_t, src_t, reduce, include_self=False)
        return out
    return run


def torch_index(w, src, index, threads):
    return _torch(w, src, index, threads, False)


def torch_scatter_reduce(w, src, index, threads):
    return _torch(w, src, index, threads, True)


# ---- JAX (run in a worker process per thread count: its threads are fixed when it is imported) --------------------

def jax_segment(w, src, index, threads):
    import jax
    import jax.numpy as jnp
    s, i = jax.device_put(src), jax.device_put(index)
    ordered = w.index == "sorted"
    if w.kind == "gather":
        f = jax.jit(lambda s, i: jnp.take(s, i, axis=0))
    elif w.op == "add":
        f = jax.jit(lambda s, i: jax.ops.segment_sum(s, i, w.size, indices_are_sorted=ordered))
    elif w.op == "max":
        f = jax.jit(lambda s, i: jax.ops.segment_max(s, i, w.size, indices_are_sorted=ordered))
    else:
        def mean(s, i):
            total = jax.ops.segment_sum(s, i, w.size, indices_are_sorted=ordered)
            counts = jax.ops.segment_sum(jnp.ones(i.shape, s.dtype), i, w.size, indices_are_sorted=ordered)
            return total / jnp.maximum(counts, 1).reshape((-1,) + (1,) * (s.ndim - 1))
        f = jax.jit(mean)
    return lambda: f(s, i).block_until_ready()


# name -> (builder, module it needs, peer?)
IMPLEMENTATIONS = {
    "cyscatter": (cyscatter_call, "cyscatter", False),
    "cyscatter scatter_into": (cyscatter_into, "cyscatter", False),
    "cyscatter out=": (cyscatter_out, "cyscatter", False),
    "numpy ufunc.at": (numpy_at, "numpy", True),
    "numpy take": (numpy_take, "numpy", True),
    "numpy bincount": (numpy_bincount, "numpy", True),
    "numpy_groupies (numba)": (groupies, "numpy_groupies", True),
    "numba loop": (numba_loop, "numba", True),
    "numba prange": (numba_prange, "numba", True),
    "torch index_add_/index_reduce_/index_select": (torch_index, "torch", True),
    "torch scatter_reduce_": (torch_scatter_reduce, "torch", True),
    "jax segment_* / take": (jax_segment, "jax", True),
}
ALLOCATES = {"cyscatter", "numpy take", "numpy bincount", "numpy_groupies (numba)", "jax segment_* / take"}
WORKER_ONLY = {"jax segment_* / take"}
