"""Static types of `cyscatter._reverse.softmax`: type checkers read this stub in place of softmax.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode

@overload
def scatter_logsumexp_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_logsumexp_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_logsumexp_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_logsumexp_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_logsumexp_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_logsumexp_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                          axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_softmax_vjp(grad_out: DeviceArray, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: DeviceIndex, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_softmax_jvp(out: DeviceArray, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_softmax_jvp(out: ArrayInput, index: DeviceIndex, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_log_softmax_vjp(grad_out: DeviceArray, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_log_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: DeviceIndex, *,
                            dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_log_softmax_vjp(grad_out: ArrayInput, out: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_log_softmax_jvp(out: DeviceArray, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_log_softmax_jvp(out: ArrayInput, index: DeviceIndex, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_log_softmax_jvp(out: ArrayInput, index: IndexLike, src_dot: ArrayInput, *, dim_size: DimSize | None = ...,
                            axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...
