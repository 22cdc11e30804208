"""Static types of `cyscatter._api.count`: type checkers read this stub in place of count.py."""
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from cyscatter._typing import DeviceIndex, DimSize, IndexLike, Mode

@overload
def scatter_count(index: DeviceIndex, dim_size: DimSize | None = ..., *, mode: Mode = ...) -> Any: ...
@overload
def scatter_count(index: IndexLike, dim_size: DimSize | None = ..., *, mode: Mode = ...) -> NDArray[np.int64]: ...
