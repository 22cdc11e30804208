"""`dtype=` and `out=` of the allocating `scatter` and `gather` (NumPy's meaning).

`dtype` chooses the dtype `src` is cast to before the call (as ``np.add.reduce(dtype=)``, but under NumPy's
``same_kind`` rule, where NumPy's reductions cast unsafely: ``np.add.reduce([1.5, 2.5], dtype=int)`` is 3);
`out` is an array of exactly the result's shape and dtype that receives the result, which starts from the
identity or fill as a fresh output does (not from `out`'s values: that is `scatter_into`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cyscatter._ops import is_bfloat16, native


def check_dtype_arg(dtype: Any, src_dtype: np.dtype, numbers: bool = True) -> np.dtype | None:
    """`dtype` as a native NumPy dtype `src_dtype` casts to under ``same_kind`` (None stays None); TypeError
    naming `dtype` otherwise. `numbers`: only number dtypes (scatter); else any but object (gather)."""
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype={dtype!r} is not a NumPy dtype") from None
    if dt.hasobject or (numbers and dt.kind in "VSUaMm" and not is_bfloat16(dt)):
        raise TypeError(f"dtype={dt} holds no numbers: pass an integer, float or complex dtype")
    if not np.can_cast(src_dtype, dt, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src_dtype} to dtype={dt} under NumPy's same_kind rule (as "
                        f"scatter_into casts); to truncate, cast src yourself: src.astype({str(dt)!r})")
    return native(dt)


def check_out(be: Any, out: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """The array to write for `out` (a writeable array of backend `be` of exactly `shape` and `dtype`, byte order
    aside); ValueError / TypeError naming `out` otherwise."""
    if not isinstance(out, be.xp.ndarray) and not hasattr(type(out), "__dlpack__"):
        raise TypeError(f"out must be an ndarray of the result's shape {tuple(shape)} and dtype {dtype}, got "
                        f"{type(out).__module__.partition('.')[0]}.{type(out).__name__}")
    target = be.check_writable(out, "out")
    if target.shape != tuple(shape):
        raise ValueError(f"out has shape {target.shape} but the result has shape {tuple(shape)}")
    if native(target.dtype) != dtype:
        raise TypeError(f"out has dtype {target.dtype} but the result dtype is {dtype} (dtype= chooses it)")
    return target


def direct(be: Any, target: Any, compute_dtype: np.dtype, *inputs: Any) -> bool:
    """Whether the kernels may write straight into `target`: C-contiguous, aligned, native, of the compute dtype,
    sharing no memory with the inputs (else the result is made in a work table and copied in)."""
    return (type(target) is be.xp.ndarray and target.flags.c_contiguous and getattr(target.flags, "aligned", True)
            and target.dtype == compute_dtype and target.dtype.isnative
            and not any(be.xp.may_share_memory(target, a) for a in inputs))


def write_out(be: Any, target: Any, result: Any, original: Any) -> Any:
    """Copy `result` into `target` (the checked `out`) and return the object the caller passed."""
    be.xp.copyto(target, result.reshape(target.shape))
    return original
