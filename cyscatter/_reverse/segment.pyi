"""Static types of `cyscatter._reverse.segment`: type checkers read this stub in place of segment.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, FillValue, OpLike

@overload
def segment_vjp_src(op: OpLike, grad_out: DeviceArray, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, *,
                    axis: SupportsIndex | None = ..., initial: FillValue | None = ...) -> Any: ...
@overload
def segment_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, *,
                    axis: SupportsIndex | None = ..., initial: FillValue | None = ...) -> NDArray[Any]: ...

@overload
def segment_jvp(op: OpLike, src: DeviceArray, indptr: ArrayInput, out: ArrayInput, src_dot: ArrayInput, *,
                axis: SupportsIndex | None = ..., initial: FillValue | None = ...) -> Any: ...
@overload
def segment_jvp(op: OpLike, src: ArrayInput, indptr: ArrayInput, out: ArrayInput, src_dot: ArrayInput, *,
                axis: SupportsIndex | None = ..., initial: FillValue | None = ...) -> NDArray[Any]: ...

@overload
def gather_segment_vjp_src(grad_out: DeviceArray, indptr: ArrayInput, *, axis: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_segment_vjp_src(grad_out: ArrayInput, indptr: ArrayInput, *,
                           axis: SupportsIndex | None = ...) -> NDArray[Any]: ...

@overload
def segment_ranges_vjp_src(op: OpLike, grad_out: DeviceArray, src: ArrayInput, starts: ArrayInput,
                           stops: ArrayInput, out: ArrayInput, *, axis: SupportsIndex = ...,
                           initial: FillValue | None = ...) -> Any: ...
@overload
def segment_ranges_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, starts: ArrayInput,
                           stops: ArrayInput, out: ArrayInput, *, axis: SupportsIndex = ...,
                           initial: FillValue | None = ...) -> NDArray[Any]: ...

@overload
def segment_ranges_jvp(op: OpLike, src: DeviceArray, starts: ArrayInput, stops: ArrayInput, out: ArrayInput,
                       src_dot: ArrayInput, *, axis: SupportsIndex = ...,
                       initial: FillValue | None = ...) -> Any: ...
@overload
def segment_ranges_jvp(op: OpLike, src: ArrayInput, starts: ArrayInput, stops: ArrayInput, out: ArrayInput,
                       src_dot: ArrayInput, *, axis: SupportsIndex = ...,
                       initial: FillValue | None = ...) -> NDArray[Any]: ...
