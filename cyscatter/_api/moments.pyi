"""Static types of `cyscatter._api.moments`: type checkers read this stub in place of moments.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode

@overload
def scatter_var(src: DeviceArray, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_var(src: ArrayInput, index: DeviceIndex, *, ddof: float = ..., dim_size: DimSize | None = ...,
                axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_var(src: ArrayInput, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_std(src: DeviceArray, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_std(src: ArrayInput, index: DeviceIndex, *, ddof: float = ..., dim_size: DimSize | None = ...,
                axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_std(src: ArrayInput, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanvar(src: DeviceArray, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanvar(src: ArrayInput, index: DeviceIndex, *, ddof: float = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanvar(src: ArrayInput, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanstd(src: DeviceArray, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanstd(src: ArrayInput, index: DeviceIndex, *, ddof: float = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanstd(src: ArrayInput, index: IndexLike, *, ddof: float = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
def deviations3(ctx): ...
def nan_deviations3(ctx): ...
def check_ddof(ddof) -> float: ...
