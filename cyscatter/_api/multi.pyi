"""Static types of `cyscatter._api.multi`: type checkers read this stub in place of multi.py."""
from typing import Any, Sequence, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DimSize, IndexLike, Mode

@overload
def scatter_multi(src: DeviceArray, index: IndexLike, ops: Sequence[str] = ..., *, dim_size: DimSize | None = ...,
                  axis: SupportsIndex = ..., mode: Mode = ..., ddof: float = ...) -> Any: ...
@overload
def scatter_multi(src: ArrayInput, index: IndexLike, ops: Sequence[str] = ..., *, dim_size: DimSize | None = ...,
                  axis: SupportsIndex = ..., mode: Mode = ..., ddof: float = ...) -> NDArray[Any]: ...

@overload
def segment_multi(src: DeviceArray, indptr: ArrayInput, ops: Sequence[str] = ..., *, axis: SupportsIndex = ...,
                  ddof: float = ...) -> Any: ...
@overload
def segment_multi(src: ArrayInput, indptr: ArrayInput, ops: Sequence[str] = ..., *, axis: SupportsIndex = ...,
                  ddof: float = ...) -> NDArray[Any]: ...

@overload
def gather_scatter_multi(src: DeviceArray, gather_index: IndexLike, scatter_index: IndexLike,
                         ops: Sequence[str] = ..., *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                         ddof: float = ...) -> Any: ...
@overload
def gather_scatter_multi(src: ArrayInput, gather_index: IndexLike, scatter_index: IndexLike,
                         ops: Sequence[str] = ..., *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                         ddof: float = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
MOMENTS: tuple[str, ...]
def parse_ops(ops: Any) -> tuple[Any, ...]: ...
def stack_results(results: Any, xp: Any) -> Any: ...
def split_results(a: Any, k: int, feature_dims: bool, xp: Any) -> Any: ...
def feature_dims(src: Any, index: Any, axis: Any) -> bool: ...
