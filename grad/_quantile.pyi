"""Static types of `grad._quantile`: type checkers read this stub in place of _quantile.py."""
from typing import Any, SupportsIndex

from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode

def scatter_quantile(src: ArrayInput, index: IndexLike, q: Any = ..., *, method: str = ...,
                     dim_size: DimSize | None = ..., axis: SupportsIndex = ..., fill_value: FillValue | None = ...,
                     mode: Mode = ...) -> Any: ...
def scatter_nanquantile(src: ArrayInput, index: IndexLike, q: Any = ..., *, method: str = ...,
                        dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                        fill_value: FillValue | None = ..., mode: Mode = ...) -> Any: ...

# the helpers that other modules import from here
def order_stat_vjp(ans: Any, src: Any, index: Any, q: Any, method: str, skip_nan: bool, dim_size: Any, axis: Any,
                   mode: Any, fun: str) -> Any: ...
def order_stat_jvp(src_dot: Any, ans: Any, src: Any, index: Any, q: Any, method: str, skip_nan: bool,
                   dim_size: Any, axis: Any, mode: Any, fun: str) -> Any: ...
