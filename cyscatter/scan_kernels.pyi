# Type stubs of the compiled cyscatter.scan_kernels module (see scan_kernels.pyx for the loops).
from typing import Any

import numpy as np
import numpy.typing as npt

def scan(opcode: int, src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], out: npt.NDArray[Any],
         table: npt.NDArray[Any], identity: npt.NDArray[Any], reverse: bool = ..., exclusive: bool = ...,
         mode: int = ..., arg: npt.NDArray[np.int64] | None = ..., targ: npt.NDArray[np.int64] | None = ...,
         keep_table: bool = ..., arg_offset: int = ...) -> int: ...
def linear_scan(b: npt.NDArray[Any], a: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], out: npt.NDArray[Any],
                table: npt.NDArray[Any], reverse: bool = ..., exclusive: bool = ..., mode: int = ...,
                keep_table: bool = ...) -> int: ...
def route(grad: npt.NDArray[Any], arg: npt.NDArray[np.int64], out: npt.NDArray[Any]) -> None: ...
