"""Tensors to arrays and back without a copy, the result dtypes of the fake (meta) kernels, and plan handles.

A CPU tensor shares its memory with the NumPy array ``tensor.numpy()`` and a NumPy array with
``torch.from_numpy(array)``; a CUDA tensor crosses to CuPy (cyscatter's GPU backend) and back through DLPack.
Nothing here copies data: the kernels read the tensors' own buffers and the tensors returned own the arrays that
cyscatter allocated.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np
import torch

import cyscatter as cs


def array(t: torch.Tensor | None):
    """The array viewing `t`'s memory: NumPy for a CPU tensor, CuPy (through DLPack) for a CUDA one."""
    if t is None:
        return None
    t = _unwrapped(t.detach())
    if t.device.type == "cpu":
        with torch._C._DisableFuncTorch():   # under torch.func, the views below would be wrapped again
            if t.dtype == torch.bfloat16:   # NumPy has no bfloat16: the same bits as ml_dtypes', which the core takes
                return t.view(torch.int16).numpy().view(_bfloat16())
            return t.resolve_conj().resolve_neg().numpy()
    if t.device.type == "cuda":
        try:
            import cupy
        except ImportError as error:   # pragma: no cover - depends on the environment
            raise TypeError("cyscatter.torch runs CUDA tensors on cyscatter's CuPy backend: pip install "
                            "'cyscatter[gpu]' (or move the tensor to the CPU)") from error
        return cupy.from_dlpack(t)
    raise TypeError(f"cyscatter.torch takes CPU or CUDA tensors, got a tensor on {t.device}")


def _unwrapped(t: torch.Tensor) -> torch.Tensor:
    """The tensor under torch.func's grad and jvp wrappers (which hold no storage of their own): the data that
    `array` reads is not differentiated, so the wrappers' values are the data. A vmap-batched tensor holds a
    batch the caller sees one entry of: refused."""
    if not torch._C._are_functorch_transforms_active():
        return t
    functorch = torch._C._functorch
    while functorch.is_functorch_wrapped_tensor(t):
        if functorch.is_batchedtensor(t):
            raise TypeError("cyscatter.torch reads this tensor's data outside a custom op, which torch.vmap "
                            "cannot batch: pass it from outside the vmapped function (an index, indptr or plan "
                            "shared by the batch)")
        t = functorch.get_unwrapped(t)
    return t


def tensor(a) -> torch.Tensor:
    """The tensor owning array `a` (the inverse of `array`): no copy."""
    if isinstance(a, np.ndarray):
        if not a.flags.writeable:   # from_numpy refuses read-only memory; a result cyscatter made is writeable
            a = a.copy()
        if a.dtype.name == "bfloat16":
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)
    if isinstance(a, np.generic):
        return torch.from_numpy(np.asarray(a).copy())
    return torch.from_dlpack(a)


# A table, not torch.empty(...).numpy(): the fake kernels run under FakeTensorMode, where new tensors are fake
_NUMPY_OF = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
             torch.int32: np.int32, torch.int64: np.int64, torch.uint16: np.uint16, torch.uint32: np.uint32,
             torch.uint64: np.uint64, torch.float16: np.float16, torch.float32: np.float32,
             torch.float64: np.float64, torch.complex64: np.complex64, torch.complex128: np.complex128}
_TORCH_OF = {np.dtype(v): k for k, v in _NUMPY_OF.items()}
# the dtypes a tensor can cross to cyscatter in (bfloat16 through ml_dtypes)
SUPPORTED_DTYPES = frozenset(_NUMPY_OF) | {torch.bfloat16}


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:   # pragma: no cover - depends on the environment
        raise TypeError("cyscatter.torch reads bfloat16 tensors as ml_dtypes.bfloat16 arrays: pip install ml_dtypes "
                        "(or convert the tensor with .float())") from None
    return np.dtype(ml_dtypes.bfloat16)


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    dtype = np.dtype(dtype)
    return torch.bfloat16 if dtype.name == "bfloat16" else _TORCH_OF[dtype]


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    if dtype == torch.bfloat16:
        return _bfloat16()
    try:
        return np.dtype(_NUMPY_OF[dtype])
    except KeyError:
        raise TypeError(f"cyscatter.torch has no NumPy dtype for {dtype}") from None


@functools.cache
def result_dtype(kind: str, dtype: torch.dtype, *args) -> torch.dtype:
    """The dtype cyscatter gives `kind` on `dtype`, read off a call on empty arrays (the fake kernels' dtype)."""
    src = np.empty(0, numpy_dtype(dtype))
    index = np.empty(0, np.int64)
    if kind == "scatter":
        out = cs.scatter(src, index, args[0], dim_size=1)
    elif kind == "gather_scatter":
        out = cs.gather_scatter(np.empty(1, src.dtype), index, index, args[0], dim_size=1)
    elif kind == "segment":
        out = cs.segment(src, np.zeros(2, np.int64), args[0])
    elif kind in ("logsumexp", "softmax", "log_softmax") or kind in ("var", "std", "nanvar", "nanstd"):
        out = getattr(cs, f"scatter_{kind}")(src, index, dim_size=1)
    elif kind == "quantile":
        out = cs.scatter_quantile(src, index, 0.5, dim_size=1)
    elif kind == "scan":
        out = cs.scatter_scan(src, index, args[0], dim_size=1)
    else:   # pragma: no cover - every caller names a kind above
        raise AssertionError(kind)
    return torch_dtype(out.dtype)


# ---- plans: custom ops take tensors and plain values, so a plan crosses as an integer handle ----------------------

_PLANS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def plan_handle(plan) -> int:
    """0 for no plan, else a key under which `plan` is found again while it lives."""
    if plan is None:
        return 0
    if not isinstance(plan, cs.GatherScatterPlan):
        raise TypeError(f"plan must be a cyscatter.GatherScatterPlan (from gather_scatter_plan), got "
                        f"{type(plan).__name__}")
    _PLANS[id(plan)] = plan
    return id(plan)


def plan_of(handle: int):
    if handle == 0:
        return None
    try:
        return _PLANS[handle]
    except KeyError:
        raise ValueError("the GatherScatterPlan of this call no longer exists (keep the plan alive while its "
                         "results are differentiated)") from None
