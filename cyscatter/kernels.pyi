# Type stubs of the compiled cyscatter.kernels module (see kernels.pyx for the loops).
import enum
from typing import Any

import numpy as np
import numpy.typing as npt

BOUNDS_CHECKED: bool

class OpCode(enum.IntEnum):
    OP_ADD = 0
    OP_SUB = 1
    OP_MUL = 2
    OP_DIV = 3
    OP_MAX = 4
    OP_MIN = 5
    OP_NANADD = 8
    OP_NANMUL = 9
    OP_FMAX = 10
    OP_FMIN = 11

class RoundFlag(enum.IntEnum):
    ROUND_OVERFLOW = 1
    ROUND_UNDERFLOW = 2

class StageCode(enum.IntEnum):
    STAGE_COPY = 0
    STAGE_HALF = 1
    STAGE_BFLOAT = 2
    STAGE_F4 = 3
    STAGE_I1 = 4
    STAGE_I2 = 5
    STAGE_I4 = 6
    STAGE_I8 = 7
    STAGE_U1 = 8
    STAGE_U2 = 9
    STAGE_U4 = 10
    STAGE_U8 = 11

class IndexMode(enum.IntEnum):
    MODE_RAISE = 0
    MODE_DROP = 1

def scatter_reduce(opcode: int, src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], out: npt.NDArray[Any],
                   counts: npt.NDArray[np.int64] | None = ..., mode: int = ..., num_threads: int = ...) -> int: ...
def scatter_staged(opcode: int, stage_code: int, src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]],
                   out: npt.NDArray[Any], counts: npt.NDArray[np.int64] | None = ..., mode: int = ...,
                   num_threads: int = ..., transpose: bool = ...) -> int: ...
def layout_add_ready(dtype: npt.DTypeLike, width: int) -> bool: ...
def stage_rows(stage_code: int, src: npt.NDArray[Any], out: npt.NDArray[Any]) -> None: ...
def round_half(src: npt.NDArray[np.float32], out: npt.NDArray[np.float16]) -> int: ...
def round_bfloat(src: npt.NDArray[np.float32], out: npt.NDArray[np.uint16]) -> None: ...
def _tune_convert_rows(on: bool | None = ...) -> bool: ...
def gather(src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], out: npt.NDArray[Any], mode: int = ...,
           num_threads: int = ...) -> int: ...
def gather_apart(src: npt.NDArray[Any], index: npt.NDArray[np.integer[Any]], out: npt.NDArray[Any], mode: int = ...,
                 num_threads: int = ...) -> int: ...
def check_index(index: npt.NDArray[np.integer[Any]], size: int) -> int: ...
def exclusive_products(src: npt.NDArray[Any], order: npt.NDArray[np.int64], indptr: npt.NDArray[np.int64],
                       partials: npt.NDArray[Any]) -> None: ...
def exclusive_products_jvp(src: npt.NDArray[Any], tangent: npt.NDArray[Any], order: npt.NDArray[np.int64],
                           indptr: npt.NDArray[np.int64], partials: npt.NDArray[Any],
                           partials_dot: npt.NDArray[Any]) -> None: ...
def half_to_float(src: npt.NDArray[np.uint16], dst: npt.NDArray[np.float32]) -> None: ...
def fresh_table(shape: tuple[int, ...], dtype: npt.DTypeLike, identity: object) -> npt.NDArray[Any]: ...
def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def _after_fork_in_child() -> None: ...
def _teams_have_started() -> bool: ...
def _set_machine(stream_min_bytes: int, l2_share: int, block_bytes: int, prefetch_bytes: int = ...,
                 partition_min_bytes: int = ...) -> None: ...
def _machine() -> dict[str, int]: ...
def _tune(prefetch_rows: int | None = ..., scatter_split: int | None = ..., min_work: int | None = ...,
          src_ahead: int | None = ..., lean_vectors: int | None = ..., stream: int | None = ...,
          partition: int | None = ..., block_bytes: int | None = ..., stage_bytes: int | None = ...,
          stage_step: int | None = ..., stage_bands: int | bool | None = ...,
          stage_band_bytes: int | None = ...) -> dict[str, int]: ...
def divide_by_counts(out: npt.NDArray[Any], counts: npt.NDArray[Any], num_threads: int = ...) -> bool: ...
# the fast paths of the public functions: None (or False) when the call is not the common case
def scatter_simple(src: npt.NDArray[Any], index: object, opcode: int, identity: object, dim_size: object,
                   num_threads: int) -> npt.NDArray[Any] | None: ...
def scatter_into_simple(dst: npt.NDArray[Any], src: object, index: object, opcode: int, allowed: bool,
                        num_threads: int) -> bool | None: ...
def gather_simple(src: npt.NDArray[Any], index: object, num_threads: int) -> npt.NDArray[Any] | None: ...
