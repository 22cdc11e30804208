"""Static types of `cyscatter._api.softmax`: type checkers read this stub in place of softmax.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode

@overload
def scatter_logsumexp(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                      mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_logsumexp(src: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                      mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_logsumexp(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                      mode: Mode = ..., out: Any = ...) -> NDArray[Any]: ...

@overload
def scatter_softmax(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                    mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_softmax(src: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                    mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                    mode: Mode = ..., out: Any = ...) -> NDArray[Any]: ...

@overload
def scatter_log_softmax(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_log_softmax(src: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_log_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                        mode: Mode = ..., out: Any = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
def mask_dropped(ctx, a3, value, plan=None): ...
