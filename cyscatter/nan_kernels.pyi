# Type stubs of the compiled cyscatter.nan_kernels module (see nan_kernels.pyx for the loop).
from typing import Any

import numpy as np
import numpy.typing as npt

def uncount(src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], counts: npt.NDArray[np.integer[Any]],
            num_threads: int = ...) -> int: ...
