"""Static types of `cyscatter._reverse.quantile`: type checkers read this stub in place of quantile.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode

@overload
def scatter_quantile_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, q: Any = ..., *,
    method: str = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_quantile_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, q: Any = ..., *,
    method: str = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_quantile_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, q: Any = ..., *,
    method: str = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanquantile_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, q: Any = ..., *,
    method: str = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanquantile_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, q: Any = ..., *,
    method: str = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanquantile_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, q: Any = ..., *,
    method: str = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_quantile_jvp(src: DeviceArray, index: IndexLike, src_dot: ArrayInput, q: Any = ..., *,
    method: str = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_quantile_jvp(src: ArrayInput, index: DeviceIndex, src_dot: ArrayInput, q: Any = ..., *,
    method: str = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_quantile_jvp(src: ArrayInput, index: IndexLike, src_dot: ArrayInput, q: Any = ..., *,
    method: str = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanquantile_jvp(src: DeviceArray, index: IndexLike, src_dot: ArrayInput, q: Any = ..., *,
    method: str = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanquantile_jvp(src: ArrayInput, index: DeviceIndex, src_dot: ArrayInput, q: Any = ..., *,
    method: str = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanquantile_jvp(src: ArrayInput, index: IndexLike, src_dot: ArrayInput, q: Any = ..., *,
    method: str = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
def selection_weights(ctx: Any, qs: Any, method: str, skip_nan: bool, values3: Any = ...) -> Any: ...
