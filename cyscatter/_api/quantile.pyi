"""Static types of `cyscatter._api.quantile`: type checkers read this stub in place of quantile.py."""
from typing import Any, SupportsIndex, overload

import numpy as np
from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, FillValue, IndexLike, Mode

@overload
def scatter_quantile(src: DeviceArray, index: IndexLike, q: Any = ..., *, method: str = ...,
    dim_size: DimSize | None = ..., axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
    mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_quantile(src: ArrayInput, index: DeviceIndex, q: Any = ..., *, method: str = ...,
    dim_size: DimSize | None = ..., axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
    mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_quantile(src: ArrayInput, index: IndexLike, q: Any = ..., *, method: str = ...,
    dim_size: DimSize | None = ..., axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
    mode: Mode = ..., out: Any = ...) -> NDArray[Any]: ...

@overload
def scatter_nanquantile(src: DeviceArray, index: IndexLike, q: Any = ..., *, method: str = ...,
    dim_size: DimSize | None = ..., axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
    mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_nanquantile(src: ArrayInput, index: DeviceIndex, q: Any = ..., *, method: str = ...,
    dim_size: DimSize | None = ..., axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
    mode: Mode = ..., out: Any = ...) -> Any: ...
@overload
def scatter_nanquantile(src: ArrayInput, index: IndexLike, q: Any = ..., *, method: str = ...,
    dim_size: DimSize | None = ..., axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
    mode: Mode = ..., out: Any = ...) -> NDArray[Any]: ...

# the helpers that other modules import from here
METHODS: tuple[str, ...]
MEDIAN: str
def check_method(method: Any) -> str: ...
def check_q(q: Any) -> tuple[np.ndarray, bool]: ...
def result_dtype(dtype: Any, method: str, name: str) -> np.dtype: ...
def positions(xp: Any, n: Any, q: float, method: str) -> tuple[Any, Any, Any]: ...
class Sorted:
    perm: Any
    values: Any
    counts: Any
    starts: Any
    members: Any
    has_nan: Any
    def __init__(self, ctx: Any, skip_nan: bool) -> None: ...
    def at(self, rel: Any) -> Any: ...
def median(src: Any, index: Any, skip_nan: bool, *, dim_size: Any = ..., axis: Any = ..., fill_value: Any = ...,
           mode: Any = ..., dtype: Any = ..., out: Any = ..., name: str = ...) -> Any: ...
