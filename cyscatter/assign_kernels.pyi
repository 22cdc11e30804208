# Type stubs of the compiled cyscatter.assign_kernels module (see assign_kernels.pyx for the loop).
from typing import Any

import numpy as np
import numpy.typing as npt

def winners(index: npt.NDArray[np.integer[Any]], winner: npt.NDArray[np.int64],
            counts: npt.NDArray[np.int64] | None = ..., last: bool = ..., mode: int = ...) -> int: ...
def nan_assign(src: npt.NDArray[np.inexact[Any]], index: npt.NDArray[np.integer[Any]],
               out: npt.NDArray[np.inexact[Any]], last: bool = ...) -> None: ...
