"""Types of the public signatures, defined once; users import them from `cyscatter.typing`.

The op and mode names are `Literal` types so that a type checker catches ``op="avg"`` or ``mode="ignore"``;
`tests/toolchain/test_typing.py` checks that they list exactly what the op registry (`cyscatter._registry.ops`) and `MODES`
(`cyscatter._plan.index`) accept, so the registry stays the single source of truth.

Results: the public functions are overloaded on where their arrays live. A call whose first array argument or
whose index is a `DeviceArray` (a CuPy array, or any typed object exporting ``__cuda_array_interface__``: it runs
on the GPU and gives a CuPy array) is typed as returning `Any`; CuPy ships no type information, so to a type
checker a CuPy array is `Any` and takes that overload too. Every other call (NumPy arrays, Python scalars and
sequences, objects NumPy converts) is typed as returning a NumPy array, ``NDArray``.

The overloads are in a ``.pyi`` stub beside each module (``cyscatter/_api/scatter.pyi``, ``grad/_scatter.pyi``),
so that the code starts with each function's own signature. A type checker reads the stub in place of the module:
the stub also declares what other modules import from it, and mypy checks the stub, not the code, unless the
module's file is named on its command line (`tests/toolchain/test_stubs.py` compares the two; .ci/run checks the
code that way). `cyscatter._api.scan` keeps its overloads: a stub would have to repeat its `ScanView` class.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, Sequence, SupportsIndex, TypeAlias, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray  # cheap: NumPy has loaded its typing modules already

if TYPE_CHECKING:
    from cyscatter._registry.ops import Op
else:   # at run time the alias names the class without importing the registry (and the kernels) here
    Op = "cyscatter._registry.ops.Op"

# every name `scatter(..., op=...)` accepts: the registry's names and aliases, in the registry's order
ScatterOp = Literal["add", "sum", "sub", "mul", "prod", "div", "max", "amax", "min", "amin", "mean", "sqrt_n",
                    "set", "last", "first", "nansum", "nanadd", "nanprod", "nanmul", "fmax", "nanmax", "fmin",
                    "nanmin", "nanmean", "nanlast", "nanfirst"]
# the ops a grouped scan (`scatter_scan`) takes: add, mul, max, min and their aliases
ScanOp = Literal["add", "sum", "mul", "prod", "max", "amax", "min", "amin"]
# the out-of-range index modes (`cyscatter._plan.index.MODES`)
Mode = Literal["raise", "drop", "wrap", "clip", "normalize_drop"]

# an op name or a registry entry (`cyscatter.OPS`, `cyscatter.get_op`)
OpLike: TypeAlias = Union[ScatterOp, Op]
# the order statistics that scatter, segment and gather_scatter take besides the registry's ops
# (`cyscatter._registry.ops.ORDER_STATS`), and what those functions' `op` accepts
OrderStat = Literal["median", "nanmedian"]
ReduceOpLike: TypeAlias = Union[ScatterOp, OrderStat, Op]
ScanOpLike: TypeAlias = Union[ScanOp, Op]


class DeviceArray(Protocol):
    """An array in GPU memory, recognised as `cyscatter._arrays.protocols` recognises it: by ``__cuda_array_interface__``."""

    @property
    def __cuda_array_interface__(self) -> Any: ...


class DLPackArray(Protocol):
    """An array exporting DLPack (``__dlpack__`` and ``__dlpack_device__``): taken on the CPU through
    `numpy.from_dlpack`, on a CUDA device through CuPy (see `cyscatter._arrays.protocols`)."""

    # the Array API standard's signature (keyword-only), as torch, JAX and NumPy define it
    def __dlpack__(self, *, stream: Any = ..., max_version: Any = ..., dl_device: Any = ...,
                   copy: Any = ...) -> Any: ...

    def __dlpack_device__(self) -> tuple[Any, int]: ...


# a device index: one device array, or a tuple of them
DeviceIndex: TypeAlias = Union[DeviceArray, tuple[DeviceArray, ...]]

# an array argument: anything NumPy converts, a DLPack producer, or a device array
ArrayInput: TypeAlias = Union[ArrayLike, DLPackArray, DeviceArray]
# an integer index: one integer array, or a tuple of m arrays addressing m axes (NumPy advanced indexing)
IndexLike: TypeAlias = Union[ArrayInput, tuple[ArrayInput, ...]]
# a destination shape: one size per indexed axis (an int for one axis)
DimSize: TypeAlias = Union[SupportsIndex, Sequence[SupportsIndex], NDArray[np.integer[Any]]]
# a scalar for the untouched rows of an output, cast to its dtype (strings and bytes: gather of text)
FillValue: TypeAlias = Union[complex, str, bytes, np.generic]

__all__ = ["ScatterOp", "ScanOp", "Mode", "OpLike", "ScanOpLike", "ArrayInput", "IndexLike", "DeviceArray", "DLPackArray", "DeviceIndex",
           "DimSize", "FillValue", "OrderStat", "ReduceOpLike"]

if TYPE_CHECKING:
    from typing import Callable, TypeVar

    # `scatter_into`/`gather_into` return their `dst`, whatever array type it is
    # (a NumPy array, a CPU array written through DLPack such as a torch tensor, or a CuPy array)
    _DstT = TypeVar("_DstT", bound=Union[NDArray[Any], DLPackArray, DeviceArray])
    # a decorator that returns the function it is given (docstring fillers)
    _FuncT = TypeVar("_FuncT", bound=Callable[..., Any])
