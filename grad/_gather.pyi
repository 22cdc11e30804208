"""Static types of `grad._gather`: type checkers read this stub in place of _gather.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import DTypeLike, NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, FillValue, IndexLike, Mode

@overload
def gather(src: DeviceArray, index: IndexLike, *, axis: SupportsIndex = ..., mode: Mode = ...,
           fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...) -> Any: ...
@overload
def gather(src: ArrayInput, index: DeviceIndex, *, axis: SupportsIndex = ..., mode: Mode = ...,
           fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...) -> Any: ...
@overload
def gather(src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = ..., mode: Mode = ...,
           fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...) -> NDArray[Any]: ...

@overload
def gather_into(dst: DeviceArray, src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = ...,
                mode: Mode = ...) -> Any: ...
@overload
def gather_into(dst: ArrayInput, src: ArrayInput, index: DeviceIndex, *, axis: SupportsIndex = ...,
                mode: Mode = ...) -> Any: ...
@overload
def gather_into(dst: ArrayInput, src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = ...,
                mode: Mode = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
def gather_vjp_src(grad_out, index, src_shape, *, axis=..., mode=...): ...
