# Type stubs of the compiled cyscatter.kernels module (see kernels.pyx for the loops).
import enum

import numpy as np
import numpy.typing as npt

BOUNDS_CHECKED: bool

class OpCode(enum.IntEnum):
    OP_ADD: int
    OP_SUB: int
    OP_MUL: int
    OP_DIV: int
    OP_MAX: int
    OP_MIN: int

class IndexMode(enum.IntEnum):
    MODE_RAISE: int
    MODE_DROP: int

def scatter_reduce(opcode: int, src: npt.NDArray, index: npt.NDArray[np.integer], out: npt.NDArray,
                   counts: npt.NDArray[np.int64] | None = ..., mode: int = ...) -> int: ...
def gather(src: npt.NDArray, index: npt.NDArray[np.integer], out: npt.NDArray, mode: int = ...) -> int: ...
def check_index(index: npt.NDArray[np.integer], size: int) -> int: ...
def exclusive_products(src: npt.NDArray, order: npt.NDArray[np.int64], indptr: npt.NDArray[np.int64],
                       partials: npt.NDArray) -> None: ...
def exclusive_products_jvp(src: npt.NDArray, tangent: npt.NDArray, order: npt.NDArray[np.int64],
                           indptr: npt.NDArray[np.int64], partials: npt.NDArray,
                           partials_dot: npt.NDArray) -> None: ...
def fresh_table(shape: tuple[int, ...], dtype: npt.DTypeLike, identity: object) -> npt.NDArray: ...
