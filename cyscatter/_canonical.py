"""The canonical (outer, rows, inner) view every kernel works on, and the calls into the kernels.

`outer` is the product of the batch dims before `axis`, `rows` the index entries (src side) or destination
rows (dst side), `inner` the product of the feature dims. Reshaping is free for C-ordered inputs; other layouts
are copied once, here and nowhere else.
"""
from __future__ import annotations

import numpy as np

from cyscatter import _assign, kernels
from cyscatter._ops import WINNERS
from cyscatter._backend import host_asarray, where_is
from cyscatter._integers import as_int

# The backend interface (see `cyscatter._backend`): `cyscatter._cuda` provides the same names for CuPy arrays.
xp = np
asarray = host_asarray


def normalize_axis(axis, ndim: int, span: int, arg: str = "axis", array: str = "src") -> int:
    """`axis` such that dims [axis, axis + span) of an ndim-array (the argument `array`) hold the index; negative
    counts from the end."""
    axis = as_int(axis, f"{arg} must be an integer, got {axis!r}")
    normalized = axis + ndim if axis < 0 else axis
    if not 0 <= normalized <= ndim - span:
        raise ValueError(f"{arg}={axis} does not fit: {array} has {ndim} dims and the index needs {span} "
                         f"of them starting at {arg} (valid: {-ndim} .. {ndim - span})")
    return normalized


def prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def cast(arr: np.ndarray, dtype) -> np.ndarray:
    """``arr.astype(dtype, copy=False)``; a C-ordered float16 array to float32 (the dtype float16 accumulates in)
    through `kernels.half_to_float`: the same bits, 2.3x faster than NumPy's element-by-element cast
    (benchmarks/NOTES.md v26)."""
    if (arr.dtype == np.float16 and np.dtype(dtype) == np.float32 and type(arr) is np.ndarray and arr.size
            and arr.dtype.isnative and arr.flags.c_contiguous and arr.flags.aligned):
        out = np.empty(arr.shape, np.float32)
        kernels.half_to_float(arr.reshape(-1).view(np.uint16), out.reshape(-1))
        return out
    return arr.astype(dtype, copy=False)


def rows_view(arr: np.ndarray, dtype, outer: int, rows: int, inner: int) -> np.ndarray:
    """`arr` as an (outer, rows, inner) array of `dtype` with unit inner stride, copied only when needed.

    The kernels take ``[:, :, ::contiguous]`` views: rows may be strided (batch or index dims of any layout),
    the elements of one row must be adjacent.
    """
    a = cast(arr, dtype)
    if not a.flags.aligned:   # e.g. buffers unpickled from another process: the kernels load whole items
        a = a.copy()
    try:
        a3 = np.reshape(a, (outer, rows, inner), copy=False)
    except ValueError:
        return np.ascontiguousarray(a).reshape(outer, rows, inner)
    return _unit_inner_stride(a3)


def _unit_inner_stride(a3: np.ndarray) -> np.ndarray:
    if a3.strides[2] == a3.itemsize:
        return a3
    if a3.shape[2] <= 1:   # one element per row: any inner stride is as good as the unit one
        return np.lib.stride_tricks.as_strided(a3, strides=a3.strides[:2] + (a3.itemsize,),
                                               writeable=a3.flags.writeable)
    return np.ascontiguousarray(a3)


def writable_rows(dst: np.ndarray, dtype, outer: int, rows: int, inner: int) -> tuple[np.ndarray, bool]:
    """(work, direct): `dst` itself as (outer, rows, inner) when possible, else a converted copy to copy back."""
    if dst.dtype == dtype and dst.flags.aligned:
        try:
            d3 = np.reshape(dst, (outer, rows, inner), copy=False)
        except ValueError:
            d3 = None
        if d3 is not None and (d3.strides[2] == d3.itemsize or d3.shape[2] <= 1):
            return _unit_inner_stride(d3), True
    # np.array copies even a contiguous dst (ascontiguousarray would hand back a misaligned one unchanged)
    return np.array(dst, dtype=dtype, order="C").reshape(outer, rows, inner), False


def check_writable(dst, arg: str = "dst", array_type: type = np.ndarray) -> np.ndarray:
    """`dst` must be an `array_type` we may write: writeable and without elements that alias one another.

    Returns the array to write: `dst`, or for a subclass (np.matrix, a masked array) a plain view of its memory,
    since subclasses may refuse the reshapes the kernels need. Another library's array (a PyTorch CPU tensor) is
    written through its DLPack export, which never copies; one exported read-only (a JAX array) is refused, and
    so is an object without DLPack (pandas, xarray): `numpy.asarray` may hand back a copy, and writing a copy
    would lose the result."""
    if not isinstance(dst, array_type):
        library = array_type.__module__.partition('.')[0]
        if array_type is np.ndarray and hasattr(type(dst), "__dlpack__") and where_is(dst) == "host":
            dst = np.from_dlpack(dst)
            if not dst.flags.writeable:
                raise ValueError(f"{arg} is exported read-only through DLPack (as JAX arrays are): it cannot be "
                                 "written in place; use the functional form (scatter, gather), which returns "
                                 "a new array")
        else:
            raise TypeError(f"{arg} must be a {library}.{array_type.__name__} (or, on the CPU, an array that "
                            f"exports DLPack, such as a torch.Tensor) to be written in place, got "
                            f"{type(dst).__module__.partition('.')[0]}.{type(dst).__name__}")
    if not getattr(dst.flags, "writeable", True):   # CuPy arrays have no read-only flag
        raise ValueError(f"{arg} is read-only (flags.writeable is False)")
    if dst.size > 1 and _self_overlapping(dst):
        raise ValueError(f"{arg} has overlapping elements (strides {dst.strides} for shape {dst.shape}); "
                         "pass a copy")
    return dst if type(dst) is array_type else dst.view(array_type)


def _self_overlapping(a: np.ndarray) -> bool:
    # Sufficient test for distinct elements: sorted by |stride|, each stride must step over all smaller dims.
    extent = a.itemsize
    for size, stride in sorted(((s, abs(t)) for s, t in zip(a.shape, a.strides) if s > 1), key=lambda p: p[1]):
        if stride < extent:
            return True
        extent = stride * size
    return False


def run_scatter(opcode: int, src3: np.ndarray, plan, out3: np.ndarray, counts: np.ndarray | None = None,
                threads: int = 0) -> None:
    if not src3.flags.aligned:   # e.g. a partial unpickled from another process (cyscatter.dask)
        src3 = src3.copy()
    if opcode in WINNERS:   # an assignment: winner pass, then a gather (see cyscatter._assign)
        return _assign.run_host(WINNERS[opcode] == "last", src3, plan, out3, counts, threads)
    status = kernels.scatter_reduce(opcode, src3, plan.flat, out3, counts, plan.kernel_mode, threads)
    if status >= 0:
        raise plan.error(status)


def precheck(plan) -> None:
    """Under mode='raise', fail before an in-place write touches the destination."""
    if plan.mode == "raise" and plan.n:
        status = kernels.check_index(plan.flat, plan.size)
        if status >= 0:
            raise plan.error(status)


def run_gather(src3: np.ndarray, plan, out3: np.ndarray, threads: int = 0) -> None:
    if src3.dtype.hasobject:
        raise TypeError("gather does not support src dtype object")
    status = kernels.gather(src3, plan.flat, out3, plan.kernel_mode, threads)
    if status >= 0:
        raise plan.error(status)


exclusive_products = kernels.exclusive_products
