"""Static types of `cyscatter._api.argext`: type checkers read this stub in place of argext.py."""
from typing import Any, Callable, SupportsIndex, overload

import numpy as np
from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode, _FuncT

@overload
def scatter_argmax(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: SupportsIndex | float | None = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_argmax(src: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: SupportsIndex | float | None = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_argmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: SupportsIndex | float | None = ..., mode: Mode = ...) -> NDArray[np.int64]: ...

@overload
def scatter_argmin(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: SupportsIndex | float | None = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_argmin(src: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: SupportsIndex | float | None = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_argmin(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: SupportsIndex | float | None = ..., mode: Mode = ...) -> NDArray[np.int64]: ...

@overload
def scatter_nanargmax(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ...,
                      axis: SupportsIndex = ..., fill_value: SupportsIndex | float | None = ...,
                      mode: Mode = ...) -> Any: ...
@overload
def scatter_nanargmax(src: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ...,
                      axis: SupportsIndex = ..., fill_value: SupportsIndex | float | None = ...,
                      mode: Mode = ...) -> Any: ...
@overload
def scatter_nanargmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                      axis: SupportsIndex = ..., fill_value: SupportsIndex | float | None = ...,
                      mode: Mode = ...) -> NDArray[np.int64]: ...

@overload
def scatter_nanargmin(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ...,
                      axis: SupportsIndex = ..., fill_value: SupportsIndex | float | None = ...,
                      mode: Mode = ...) -> Any: ...
@overload
def scatter_nanargmin(src: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ...,
                      axis: SupportsIndex = ..., fill_value: SupportsIndex | float | None = ...,
                      mode: Mode = ...) -> Any: ...
@overload
def scatter_nanargmin(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                      axis: SupportsIndex = ..., fill_value: SupportsIndex | float | None = ...,
                      mode: Mode = ...) -> NDArray[np.int64]: ...

# the helpers that other modules import from here
def arg_doc(which: str, zero: str, example: str, result: str, template: str = ...) -> Callable[[_FuncT], _FuncT]: ...
