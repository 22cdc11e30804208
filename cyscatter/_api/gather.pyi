"""Static types of `cyscatter._api.gather`: type checkers read this stub in place of gather.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import DTypeLike, NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, FillValue, IndexLike, Mode, _DstT

@overload
def gather(src: DeviceArray, index: IndexLike, *, axis: SupportsIndex = ..., mode: Mode = ...,
           fill_value: FillValue | None = ..., dtype: DTypeLike | None = ..., out: Any = ...,
           num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather(src: ArrayInput, index: DeviceIndex, *, axis: SupportsIndex = ..., mode: Mode = ...,
           fill_value: FillValue | None = ..., dtype: DTypeLike | None = ..., out: Any = ...,
           num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather(src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = ..., mode: Mode = ...,
           fill_value: FillValue | None = ..., dtype: DTypeLike | None = ..., out: Any = ...,
           num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...

def gather_into(dst: _DstT, src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = ..., mode: Mode = ...,
                num_threads: SupportsIndex | None = ...) -> _DstT: ...
