"""Dtype classification shared by every layer: bfloat16 (from ml_dtypes, recognised without importing it) as a
float, number dtypes, native byte order, complex parts."""
from __future__ import annotations

import functools

import numpy as np

# The predicates below are pure functions of a dtype that every call asks several times: cached, a repeated
# question is answered in C (no Python frame).
_cached = functools.lru_cache(maxsize=1024)


@_cached
def is_bfloat16(dtype) -> bool:
    """`dtype` is ml_dtypes' bfloat16 (the one NumPy users have; JAX's and TensorFlow's too), recognised without
    importing ml_dtypes: its dtypes are of kind 'V' and name themselves."""
    return dtype.kind == "V" and dtype.itemsize == 2 and dtype.name == "bfloat16"


@_cached
def float_kind(dtype) -> str:
    """`dtype.kind`, with bfloat16 a float ("f") as NumPy's own floats."""
    return "f" if is_bfloat16(dtype) else dtype.kind


@_cached
def holds_numbers(dtype) -> bool:
    """Integers, floats (bfloat16 included) or complex; not bool, object, strings, datetimes or records."""
    return dtype.kind in "iufc" or is_bfloat16(dtype)


def item_aligned(a) -> bool:
    """Whether the kernels may load `a`'s items whole: NumPy's ``flags.aligned`` (True for arrays without the
    flag, such as CuPy's), and for a complex NumPy array, which NumPy aligns to one component, its address and
    strides also multiples of the item size."""
    if not getattr(getattr(a, "flags", None), "aligned", True):
        return False
    if a.dtype.kind != "c" or type(a) is not np.ndarray or a.size == 0:
        return True
    item = a.itemsize
    return a.ctypes.data % item == 0 and all(s % item == 0 for s, d in zip(a.strides, a.shape) if d > 1)


@_cached
def native(dtype) -> np.dtype:
    """`dtype` in the machine's byte order: the kernels and the dtype tables know only native dtypes."""
    return np.dtype(dtype).newbyteorder("=")


def parts(a):
    """The real and imaginary parts of a complex array as views (in-place work on them writes `a`), else `a`."""
    return (a.real, a.imag) if a.dtype.kind == "c" else (a,)

