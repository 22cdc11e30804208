"""Static types of `cyscatter._api.scatter`: type checkers read this stub in place of scatter.py."""
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
    _DstT,
)

@overload
def scatter(src: DeviceArray, index: IndexLike, op: ReduceOpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            out: Any = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def scatter(src: ArrayInput, index: DeviceIndex, op: ReduceOpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            out: Any = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def scatter(src: ArrayInput, index: IndexLike, op: ReduceOpLike = ..., *, dim_size: DimSize | None = ...,
            axis: SupportsIndex = ..., fill_value: FillValue | None = ..., dtype: DTypeLike | None = ...,
            out: Any = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
            num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...

def scatter_into(dst: _DstT, src: ArrayInput, index: IndexLike, op: OpLike = ..., *, axis: SupportsIndex = ...,
                 mode: Mode = ..., indices_are_sorted: bool = ...,
                 num_threads: SupportsIndex | None = ...) -> _DstT: ...
