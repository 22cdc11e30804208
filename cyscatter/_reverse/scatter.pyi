"""Static types of `cyscatter._reverse.scatter`: type checkers read this stub in place of scatter.py."""
from typing import Any, Sequence, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, IndexLike, Mode, OpLike

@overload
def scatter_vjp_src(op: OpLike, grad_out: DeviceArray, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                    dst: ArrayInput | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, index: DeviceIndex, out: ArrayInput, *,
                    dst: ArrayInput | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, index: IndexLike, out: ArrayInput, *,
                    dst: ArrayInput | None = ..., axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_vjp_dst(op: OpLike, grad_out: DeviceArray, dst: ArrayInput, src: ArrayInput, index: IndexLike,
                    out: ArrayInput, *, axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_vjp_dst(op: OpLike, grad_out: ArrayInput, dst: ArrayInput, src: ArrayInput, index: DeviceIndex,
                    out: ArrayInput, *, axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def scatter_vjp_dst(op: OpLike, grad_out: ArrayInput, dst: ArrayInput, src: ArrayInput, index: IndexLike,
                    out: ArrayInput, *, axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def gather_vjp_src(grad_out: DeviceArray, index: IndexLike, src_shape: SupportsIndex | Sequence[SupportsIndex], *,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def gather_vjp_src(grad_out: ArrayInput, index: DeviceIndex, src_shape: SupportsIndex | Sequence[SupportsIndex], *,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def gather_vjp_src(grad_out: ArrayInput, index: IndexLike, src_shape: SupportsIndex | Sequence[SupportsIndex], *,
                   axis: SupportsIndex = ..., mode: Mode = ...) -> NDArray[Any]: ...

@overload
def scatter_jvp(op: OpLike, src: DeviceArray, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                dst: ArrayInput | None = ..., dst_dot: ArrayInput | None = ..., axis: SupportsIndex = ...,
                mode: Mode = ...) -> Any: ...
@overload
def scatter_jvp(op: OpLike, src: ArrayInput, index: DeviceIndex, out: ArrayInput, src_dot: ArrayInput, *,
                dst: ArrayInput | None = ..., dst_dot: ArrayInput | None = ..., axis: SupportsIndex = ...,
                mode: Mode = ...) -> Any: ...
@overload
def scatter_jvp(op: OpLike, src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput, *,
                dst: ArrayInput | None = ..., dst_dot: ArrayInput | None = ..., axis: SupportsIndex = ...,
                mode: Mode = ...) -> NDArray[Any]: ...

@overload
def gather_jvp(src_dot: DeviceArray, index: IndexLike, *, axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def gather_jvp(src_dot: ArrayInput, index: DeviceIndex, *, axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
@overload
def gather_jvp(src_dot: ArrayInput, index: IndexLike, *, axis: SupportsIndex = ...,
               mode: Mode = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
def others_product(src, index, dim_size, *, axis=..., mode=..., src_dot=...): ...
