"""Static types of `cyscatter._api.logical`: type checkers read this stub in place of logical.py."""
from typing import Any, SupportsIndex, overload

import numpy as np
from numpy.typing import NDArray

from cyscatter._typing import ArrayInput, DeviceArray, DimSize, FillValue, IndexLike, Mode

@overload
def scatter_any(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                fill_value: FillValue | None = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
                num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def scatter_any(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                fill_value: FillValue | None = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
                num_threads: SupportsIndex | None = ...) -> NDArray[np.bool_]: ...

@overload
def scatter_all(src: DeviceArray, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                fill_value: FillValue | None = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
                num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def scatter_all(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                fill_value: FillValue | None = ..., mode: Mode = ..., indices_are_sorted: bool = ...,
                num_threads: SupportsIndex | None = ...) -> NDArray[np.bool_]: ...

# the helpers that other modules import from here
def flags(be: Any, src: Any) -> Any: ...
