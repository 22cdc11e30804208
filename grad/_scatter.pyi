"""Static types of `grad._scatter`: type checkers read this stub in place of _scatter.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import DTypeLike, NDArray

from cyscatter._typing import (
    ArrayInput,
    DeviceArray,
    DeviceIndex,
    DimSize,
    FillValue,
    IndexLike,
    Mode,
    OpLike,
    ReduceOpLike,
)

@overload
def scatter(src: DeviceArray, index: IndexLike, op: ReduceOpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def scatter(src: ArrayInput, index: DeviceIndex, op: ReduceOpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def scatter(src: ArrayInput, index: IndexLike, op: ReduceOpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...

@overload
def scatter_into(dst: DeviceArray, src: ArrayInput, index: IndexLike, op: OpLike = ..., *, axis: SupportsIndex = ...,
                 mode: Mode = ...) -> Any: ...
@overload
def scatter_into(dst: ArrayInput, src: ArrayInput, index: DeviceIndex, op: OpLike = ..., *, axis: SupportsIndex = ...,
                 mode: Mode = ...) -> Any: ...
@overload
def scatter_into(dst: ArrayInput, src: ArrayInput, index: IndexLike, op: OpLike = ..., *, axis: SupportsIndex = ...,
                 mode: Mode = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
def _expanded(src, index, axis, table_shape=...) -> tuple: ...
def _broadcast(x, shape): ...
def _unbroadcast(g, shape): ...

# the partials' builders, keyed by the registry's `Op.partials` family (read by the registry's tests)
_VALUE_DEPENDENT: dict[str, Any]
def _constant_partials(op: Any, ans: Any, dst: Any, src: Any, lin: Any, wrt_src: Any, wrt_dst: Any) -> Any: ...
def _partials_rule(op: Any) -> Any: ...
