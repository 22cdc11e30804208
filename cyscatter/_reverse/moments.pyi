"""Static types of `cyscatter._reverse.moments`: type checkers read this stub in place of moments.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, IndexLike, Mode

@overload
def scatter_var_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_var_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_var_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_var_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_var_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_var_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_std_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_std_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_std_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_std_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_std_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_std_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                    axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanvar_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanvar_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanvar_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanvar_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanvar_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanvar_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanstd_vjp(grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanstd_vjp(grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanstd_vjp(grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_nanstd_jvp(src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanstd_jvp(src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_nanstd_jvp(src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *, ddof: float = ...,
                       axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...
