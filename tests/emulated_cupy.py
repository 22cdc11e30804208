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


def _gather(src, index, n, inner, n_src, out):
    assert out.dtype == src.dtype and out.dtype.kind == "u", "gather moves unsigned items"
    src3, index, out3 = _raw(src).reshape(-1, n_src, inner), _raw(index), out.view(np.ndarray).reshape(-1, n, inner)
    for k in range(n):
        if 0 <= index[k] < n_src:
            out3[:, k] = src3[:, index[k]]


def _exclusive_products(src, order, indptr, n, inner, n_groups, partials, size):
    src3, part3 = _raw(src).reshape(-1, n, inner), _raw(partials, src.dtype).reshape(-1, n, inner)
    assert size == src3.shape[0] * n_groups * inner
    for g in range(n_groups):
        members = order[indptr[g]:indptr[g + 1]]
        for pos, k in enumerate(members):
            others = np.delete(members, pos)
            part3[:, k] = np.prod(src3[:, others], axis=1) if len(others) else 1


def _kernel_for(name):
    if name.startswith("cyscatter_scatter_ordered_"):
        return functools.partial(_scatter_ordered, name.rpartition("_")[2])
    if name.startswith("cyscatter_scatter_"):
        return functools.partial(_scatter, name.rpartition("_")[2])
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
    from cyscatter import _cuda_kernels

    saved = {name: sys.modules.pop(name) for name in ("cupy", "cyscatter._cuda") if name in sys.modules}
    sys.modules["cupy"] = _module()
    _cuda_kernels.build.cache_clear()
    try:
        yield sys.modules["cupy"]
    finally:
        for name in ("cupy", "cyscatter._cuda"):
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        _cuda_kernels.build.cache_clear()
