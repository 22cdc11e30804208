"""Static types of `cyscatter._api.ranges`: type checkers read this stub in place of ranges.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, FillValue, OpLike

@overload
def segment_ranges(src: DeviceArray, starts: ArrayInput, stops: ArrayInput, op: OpLike = ..., *,
                   axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
                   initial: FillValue | None = ...) -> Any: ...
@overload
def segment_ranges(src: ArrayInput, starts: ArrayInput, stops: ArrayInput, op: OpLike = ..., *,
                   axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
                   initial: FillValue | None = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
class Ranges:
    indptr: Any
    index: Any
    offset: int
    rows: int
    def __init__(self, starts: Any, stops: Any, rows: int, be: Any) -> None: ...
    def rows_of(self, src: Any, axis: int, be: Any) -> Any: ...
def ranges_index(starts: Any, stops: Any, rows: int, be: Any) -> Ranges: ...
