"""Backend dispatch: NumPy arrays run on the Cython kernels, CuPy (CUDA) arrays on the GPU kernels.

Every public function starts with one `backend_of(...)` call naming its array arguments; the module it returns
(`cyscatter._canonical` or `cyscatter._cuda`) supplies the array namespace (``xp``) and the canonical-view
helpers, so the validation and the semantics are written once for both. Device arrays are recognised by their
type (``__cuda_array_interface__``), without importing CuPy: `import cyscatter` never does.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

import numpy as np


def is_device_array(a) -> bool:
    """True for a CUDA array (CuPy, or anything exporting ``__cuda_array_interface__``), by its type alone."""
    return hasattr(type(a), "__cuda_array_interface__")


def array_module(a) -> ModuleType:
    """numpy, or cupy for a CuPy array (already imported when one exists)."""
    return sys.modules["cupy"] if type(a).__module__.partition(".")[0] == "cupy" else np


def _where(a) -> str | None:
    if is_device_array(a):
        return "gpu"
    if isinstance(a, np.ndarray):
        return "host"
    return None   # lists, scalars, None: taken by whichever backend the arrays choose


def _describe(a) -> str:
    kind = type(a)
    return f"a {kind.__module__.partition('.')[0]}.{kind.__name__} ({'GPU' if is_device_array(a) else 'host'})"


def backend_of(**arrays) -> ModuleType:
    """The backend module for these named arguments (tuple values: each member counts).

    Raises TypeError naming one argument on each side when host (NumPy) and device (CUDA) arrays are mixed.
    """
    seen = {}
    for name, value in arrays.items():
        members = value if isinstance(value, tuple) else (value,)
        for i, member in enumerate(members):
            where = _where(member)
            if where is not None and where not in seen:
                seen[where] = (name if len(members) == 1 else f"{name}[{i}]", member)
    if len(seen) == 2:
        (gpu_name, gpu), (host_name, host) = seen["gpu"], seen["host"]
        raise TypeError(f"{gpu_name} is {_describe(gpu)} but {host_name} is {_describe(host)}: pass all arrays "
                        f"on one device (cupy.asarray(...) moves host arrays to the GPU, .get() brings them back)")
    if "gpu" not in seen:
        return importlib.import_module("cyscatter._canonical")
    try:
        return importlib.import_module("cyscatter._cuda")
    except ImportError as exc:
        raise ImportError(f"{seen['gpu'][0]} is a CUDA array; cyscatter runs those with CuPy, which is not "
                          "installed (pip install 'cyscatter[gpu]')") from exc
