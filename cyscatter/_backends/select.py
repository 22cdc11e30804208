"""`backend_of`: the backend module for a call's arrays (host NumPy arrays or CUDA arrays), or a TypeError
naming the argument that no backend can take."""
from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np

from cyscatter._arrays.protocols import _describe, check_foreign, refuse_bfloat16_on_gpu, where_is
from cyscatter._backends import host


def backend_of(**arrays) -> ModuleType:
    """The backend module for these named arguments (tuple values: each member counts).

    NumPy arrays (and None) alone answer at once: the host, without a protocol query.

    Raises TypeError naming the argument for a tensor that requires grad, one on a device neither backend
    runs on, and (naming one argument on each side) for host and CUDA arrays mixed in one call.
    """
    for value in arrays.values():   # a plain loop: this runs on every call
        kind = type(value)
        if kind is tuple:
            for member in value:
                if type(member) is not np.ndarray:
                    break
            else:
                continue
            break
        elif kind is not np.ndarray and value is not None:
            break
    else:
        return host
    seen = {}
    for name, value in arrays.items():
        members = value if isinstance(value, tuple) else (value,)
        for i, member in enumerate(members):
            where = where_is(member)
            label = name if len(members) == 1 else f"{name}[{i}]"
            if where is None:
                if type(member).__module__.partition(".")[0] == "autograd":   # NumPy would make an object array
                    raise TypeError(f"{label} is an autograd {type(member).__name__} (a value being differentiated): "
                                    "cyscatter computes with NumPy and would drop autograd's trace; differentiate "
                                    "through the grad package (import grad: grad.scatter, grad.gather, "
                                    "grad.gather_scatter, ...), whose functions autograd traces")
                continue
            if type(member) is not np.ndarray:
                check_foreign(label, member, where)
            if where not in seen:
                seen[where] = (label, member)
    if len(seen) == 2:
        (gpu_name, gpu), (host_name, on_host) = seen["gpu"], seen["host"]
        raise TypeError(f"{gpu_name} is {_describe(gpu)} but {host_name} is {_describe(on_host)}: pass all arrays "
                        f"on one device (cupy.asarray(...) moves host arrays to the GPU, .get() brings them back)")
    if "gpu" not in seen:
        return host
    for name, value in arrays.items():
        members = value if isinstance(value, tuple) else (value,)
        for i, member in enumerate(members):
            refuse_bfloat16_on_gpu(name if len(members) == 1 else f"{name}[{i}]", getattr(member, "dtype", None))
    try:
        return importlib.import_module("cyscatter._backends.cuda")
    except ImportError as exc:
        raise ImportError(f"{seen['gpu'][0]} is a CUDA array; cyscatter runs those with CuPy, which is not "
                          "installed (pip install 'cyscatter[gpu]')") from exc
