"""Backend dispatch: host arrays run on the Cython kernels, CUDA arrays on the GPU kernels.

Every public function starts with one `backend_of(...)` call naming its array arguments; the module it returns
(`cyscatter._backends.host` or `cyscatter._backends.cuda`) supplies the array namespace (``xp``), `asarray` and the
canonical-view helpers, so the validation and the semantics are written once for both.

Where an array lives is asked of each object through the array protocols, never of its class: the class of a
PyTorch tensor or a JAX array defines ``__cuda_array_interface__`` whether the instance is on the CPU or not.
In order: ``__dlpack_device__`` (the DLPack device type), then ``__cuda_array_interface__`` on the instance,
then ``__array__`` / ``__array_interface__`` / ``__dlpack__`` (host). `import cyscatter` imports neither CuPy
nor any array library it meets.
"""
from __future__ import annotations

import functools
import inspect
import sys
from types import ModuleType

import numpy as np

from cyscatter._arrays.dtypes import is_bfloat16
from cyscatter._arrays.keywords import hinted

# DLPack device types (dlpack.h, DLDeviceType)
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM, _DL_ROCM_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 10, 11, 13
_DL_HOST = {_DL_CPU, _DL_CUDA_HOST, _DL_ROCM_HOST}   # memory the CPU can read in place
_DL_DEVICE = {_DL_CUDA, _DL_ROCM, _DL_CUDA_MANAGED}   # what CuPy takes
_DL_NAMES = {4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 12: "ExtDev", 14: "oneAPI", 15: "WebGPU",
             16: "Hexagon", 17: "MAIA"}


def _dlpack_device(a) -> int | None:
    """The DLPack device type of `a`, None when it exports none (or the export fails)."""
    if getattr(type(a), "__dlpack_device__", None) is None:
        return None
    try:
        return int(a.__dlpack_device__()[0])
    except Exception:   # a producer whose device query fails is judged by the other protocols
        return None


def where_is(a) -> str | None:
    """'host', 'gpu', 'other' (a device neither NumPy nor CuPy reads) or None (lists, scalars, None: these
    go wherever the arrays of the call go)."""
    if type(a) is np.ndarray:   # the common case, without a protocol call
        return "host"
    if isinstance(a, np.generic):   # a NumPy scalar is a scalar (CuPy's ufuncs take one too), not a host array
        return None
    device = _dlpack_device(a)
    if device is not None:
        return "host" if device in _DL_HOST else "gpu" if device in _DL_DEVICE else "other"
    try:
        if hasattr(a, "__cuda_array_interface__"):   # a property that raises AttributeError off the GPU
            return "gpu"
    except Exception:
        pass
    kind = type(a)
    if isinstance(a, np.ndarray) or hasattr(kind, "__array__") or hasattr(kind, "__array_interface__") \
            or hasattr(kind, "__dlpack__"):
        return "host"
    return None


def is_device_array(a) -> bool:
    """True for a CUDA array (CuPy's, or any object on a CUDA device by DLPack or ``__cuda_array_interface__``)."""
    return where_is(a) == "gpu"


def array_module(a) -> ModuleType:
    """numpy, or cupy for a CuPy array (already imported when one exists)."""
    return sys.modules["cupy"] if type(a).__module__.partition(".")[0] == "cupy" else np


def host_asarray(a, dtype=None) -> np.ndarray:
    """`a` as a NumPy array, without a copy where its layout allows (NumPy's `asarray` for anything with
    ``__array__`` or the array interface: NumPy arrays and subclasses, PyTorch CPU tensors, JAX CPU arrays,
    pandas and xarray objects, lists, scalars; `numpy.from_dlpack` for an object that only speaks DLPack)."""
    if type(a) is np.ndarray or isinstance(a, (list, tuple, int, float, complex, np.generic)) or a is None:
        return np.asarray(a, dtype)
    kind = type(a)
    if not hasattr(kind, "__array__") and not hasattr(kind, "__array_interface__") and hasattr(kind, "__dlpack__"):
        a = np.from_dlpack(a)
    return np.asarray(a, dtype)


def shape_of(a) -> tuple:
    """The shape of an array argument of any kind (a DLPack-only producer's through `numpy.from_dlpack`)."""
    return tuple(np.shape(np.from_dlpack(a) if _dlpack_only(a) else a))


def _describe(a, where: str | None = None) -> str:
    kind = type(a)
    where = where or where_is(a)
    place = {"gpu": "GPU", "host": "host"}.get(where, "device")
    return f"a {kind.__module__.partition('.')[0]}.{kind.__name__} ({place})"


def check_foreign(name: str, member, where: str | None = None) -> None:
    """TypeError naming `name` for another library's array no backend can take as it is (see `_refuse`), or
    that NumPy cannot read (a host array of a dtype NumPy lacks, such as torch's bfloat16, a sparse or meta
    tensor). Dask collections are left to cyscatter.dask (reading one would compute it)."""
    where = where or where_is(member)
    _refuse(name, member, where)
    if where == "host" and not hasattr(type(member), "__dask_graph__"):
        try:
            host_asarray(member)
        except Exception as err:   # torch raises RuntimeError/TypeError, DLPack BufferError
            raise TypeError(f"{name} is {_describe(member, where)} that NumPy cannot read as an array "
                            f"({type(err).__name__}: {err})") from None


def _refuse(name: str, member, where: str | None) -> None:
    """TypeError for an argument no backend can take as it is."""
    if isinstance(member, np.ma.MaskedArray) and np.ma.getmask(member) is not np.ma.nomask and member.mask.any():
        nan = "" if "index" in name else " (values filled with NaN are left out by the NaN-skipping ops)"
        raise TypeError(f"{name} is a numpy.ma.MaskedArray with masked entries: cyscatter reads the data and would "
                        f"ignore the mask; pass {name}.filled(value) or keep only the unmasked entries{nan}")
    if where == "other":
        device = _dlpack_device(member)
        raise TypeError(f"{name} is {_describe(member, where)} on DLPack device type "
                        f"{_DL_NAMES.get(device, device)}: cyscatter runs on the CPU (NumPy) and on CUDA "
                        f"(CuPy); move {name} to the CPU first")
    if getattr(member, "requires_grad", False) is True and type(member).__module__.partition(".")[0] == "torch":
        raise TypeError(f"{name} is a torch.Tensor that requires grad: cyscatter computes with NumPy and would "
                        f"drop torch's autograd graph; pass {name}.detach(), or build a torch.autograd.Function "
                        "from cyscatter's split reverse functions (the documentation's 'Gradients' page, "
                        "docs/gradients.rst)")
    lazy = [bit for bit in ("neg", "conj") if callable(getattr(member, f"is_{bit}", None)) and
            type(member).__module__.partition(".")[0] == "torch" and getattr(member, f"is_{bit}")()]
    if lazy:   # torch's DLPack export drops these bits: the memory holds other numbers than the tensor shows
        raise TypeError(f"{name} is a torch.Tensor with its {lazy[0]} bit set (a lazy view whose memory holds "
                        f"other numbers than it shows); pass {name}.resolve_{lazy[0]}()")


def refuse_bfloat16_on_gpu(name: str, dtype) -> None:
    """TypeError naming `name` for a bfloat16 (ml_dtypes) array or `dtype=` in a GPU call: CuPy has no bfloat16."""
    if isinstance(dtype, np.dtype) and is_bfloat16(dtype) and name == "dtype":
        raise TypeError("dtype=bfloat16 with CuPy arrays: CuPy has no bfloat16, so the GPU backend cannot take it; "
                        "pass dtype=float32 or float16, or call with NumPy arrays")
    if isinstance(dtype, np.dtype) and is_bfloat16(dtype):
        raise TypeError(f"{name} has dtype bfloat16, which CuPy does not have: the GPU backend cannot take it; "
                        f"compute on the GPU in float32 or float16 (cast {name}), or call with NumPy arrays")


def _dlpack_only(a) -> bool:
    """A host array NumPy reads only through DLPack (no ``__array__``, no array interface)."""
    kind = type(a)
    return (hasattr(kind, "__dlpack__") and not hasattr(kind, "__array__")
            and not hasattr(kind, "__array_interface__") and where_is(a) == "host")


_PLAIN = {np.ndarray, int, float, bool, str, type(None)}


def _from_dlpack(a):
    if type(a) is tuple:
        return tuple(_from_dlpack(x) for x in a)
    return np.from_dlpack(a) if _dlpack_only(a) else a


def _foreign(a) -> bool:
    """Not a NumPy array, scalar, string or None (nor a tuple of only those): an object to check and convert."""
    kind = type(a)
    if kind in _PLAIN:
        return False
    if kind is tuple:
        return any(_foreign(x) for x in a)
    return where_is(a) is not None and not isinstance(a, np.ndarray)


def takes_foreign(fn):
    """`fn` checking other libraries' arrays by argument name (`check_foreign`) and taking host arrays that speak
    only DLPack as the NumPy arrays `numpy.from_dlpack` makes of them (sharing their memory), before `fn` runs:
    for `grad` and `cyscatter.dask`, whose functions read their arguments in many places (the core checks in
    `backend_of` and converts where it reads, at no cost per call)."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def taking_foreign(*args, **kwargs):
        try:
            for a in args:   # a plain loop: this runs on every call
                if type(a) not in _PLAIN and _foreign(a):
                    break
            else:
                for a in kwargs.values():
                    if type(a) not in _PLAIN and _foreign(a):
                        break
                else:
                    return fn(*args, **kwargs)
            for name, value in signature.bind_partial(*args, **kwargs).arguments.items():
                members = value if type(value) is tuple else (value,)
                for i, member in enumerate(members):
                    if _foreign(member):
                        check_foreign(name if len(members) == 1 else f"{name}[{i}]", member)
            return fn(*map(_from_dlpack, args), **{k: _from_dlpack(v) for k, v in kwargs.items()})
        except TypeError as err:   # a torch_scatter / JAX keyword: name the cyscatter spelling
            better = hinted(err, fn.__name__, kwargs, signature)
            if better is None:
                raise
            raise better from None

    return taking_foreign


def take_foreign_in(namespace: dict, names) -> None:
    """Replace the functions among `names` in a module's `namespace` by their `takes_foreign` form (same
    signature, doc and module): the public functions of a package, where user arrays come in."""
    for name in names:
        if inspect.isfunction(namespace.get(name)):
            namespace[name] = takes_foreign(namespace[name])


def host_index(index):
    """An index (array or tuple of arrays) on the host: gather_scatter's plan is validated and grouped there."""
    if isinstance(index, tuple):
        return tuple(host_index(part) for part in index)
    return index.get() if is_device_array(index) else index
