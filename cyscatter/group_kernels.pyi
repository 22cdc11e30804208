# Type stubs of the compiled cyscatter.group_kernels module (see group_kernels.pyx for the loops).
from typing import Any

import numpy as np
import numpy.typing as npt

def segment_reduce(opcode: int, src: npt.NDArray[Any], indptr: npt.NDArray[np.integer[Any]],
                   out: npt.NDArray[Any]) -> int: ...
def segment_reduce_counted(opcode: int, src: npt.NDArray[Any], indptr: npt.NDArray[np.integer[Any]],
                           out: npt.NDArray[Any], counts: npt.NDArray[np.int32] | npt.NDArray[np.int64],
                           counting: bool = ...) -> int: ...
def scatter_runs(opcode: int, src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], out: npt.NDArray[Any],
                 counts: npt.NDArray[np.int64] | None = ..., mode: int = ...) -> int: ...
def scatter_arg(opcode: int, src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], best: npt.NDArray[Any],
                arg: npt.NDArray[np.int64], mode: int = ...) -> int: ...
def multi_reduce(src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], work: npt.NDArray[Any], sum_at: int,
                 max_at: int, min_at: int, counts: npt.NDArray[np.int64], mode: int = ...,
                 num_threads: int = ...) -> int: ...
def multi_squares(src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], work: npt.NDArray[Any],
                  num_threads: int = ...) -> None: ...
