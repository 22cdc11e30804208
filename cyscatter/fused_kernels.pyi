# Type stubs of the compiled cyscatter.fused_kernels module (see fused_kernels.pyx for the loops).
from typing import Any

import numpy as np
import numpy.typing as npt

def set_prefetch_edges(edges: int) -> None: ...
def _set_machine(l2_share: int, prefetch_bytes: int = ...) -> None: ...
def csr(key: npt.NDArray[np.int64], size: int, other: npt.NDArray[np.int64], other_size: int,
        drop: bool) -> tuple[int, npt.NDArray[np.int64] | None, npt.NDArray[np.int64] | None,
                             npt.NDArray[np.int64] | None]: ...
def forward(opcode: int, src: npt.NDArray[Any], indptr: npt.NDArray[np.int64], cols: npt.NDArray[np.int64],
            edge_ids: npt.NDArray[np.int64], weight: npt.NDArray[Any], weighted: bool, out: npt.NDArray[Any],
            num_threads: int, half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...) -> int: ...
def forward_nan(opcode: int, src: npt.NDArray[Any], indptr: npt.NDArray[np.int64], cols: npt.NDArray[np.int64],
                edge_ids: npt.NDArray[np.int64], weight: npt.NDArray[Any], weighted: bool, out: npt.NDArray[Any],
                counts: npt.NDArray[np.int32] | npt.NDArray[np.int64], counting: bool, num_threads: int,
                half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...) -> int: ...
def forward_half_src(opcode: int, src_code: int, src: npt.NDArray[np.uint16], indptr: npt.NDArray[np.int64],
                     cols: npt.NDArray[np.int64], edge_ids: npt.NDArray[np.int64], weight: npt.NDArray[Any],
                     weighted: bool, out: npt.NDArray[Any], num_threads: int,
                     half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...,
                     counts: npt.NDArray[np.int32] | npt.NDArray[np.int64] | None = ...) -> int: ...
def extreme_ties(is_max: bool, src: npt.NDArray[Any], indptr: npt.NDArray[np.int64],
                 cols: npt.NDArray[np.int64], edge_ids: npt.NDArray[np.int64], weight: npt.NDArray[Any],
                 weighted: bool, out: npt.NDArray[Any], grad_out: npt.NDArray[Any], tangent_src: npt.NDArray[Any],
                 use_tangent_src: bool, tangent_w: npt.NDArray[Any], use_tangent_w: bool, result: npt.NDArray[Any],
                 num_threads: int, dst_init: npt.NDArray[Any] | None = ..., select: int = ...,
                 average: bool = ..., half_weight: npt.NDArray[np.uint16] | None = ...,
                 weight_code: int = ...) -> None: ...
def extreme_back(src: npt.NDArray[Any], indptr: npt.NDArray[np.int64], cols: npt.NDArray[np.int64],
                 edge_ids: npt.NDArray[np.int64], weight: npt.NDArray[Any], weighted: bool, out: npt.NDArray[Any],
                 share: npt.NDArray[Any], result: npt.NDArray[Any], num_threads: int, select: int = ...,
                 half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...) -> None: ...
def extreme_ties_half(code: int, src: npt.NDArray[np.uint16], indptr: npt.NDArray[np.int64],
                      cols: npt.NDArray[np.int64], out: npt.NDArray[Any], grad_out: npt.NDArray[Any],
                      tangent_src: npt.NDArray[Any], use_tangent_src: bool, result: npt.NDArray[Any],
                      num_threads: int, dst_init: npt.NDArray[Any] | None = ..., select: int = ...,
                      average: bool = ..., edge_ids: npt.NDArray[np.int64] | None = ...,
                      weight: npt.NDArray[Any] | None = ..., tangent_w: npt.NDArray[Any] | None = ...,
                      half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...) -> None: ...
def extreme_back_half(code: int, src: npt.NDArray[np.uint16], indptr: npt.NDArray[np.int64],
                      cols: npt.NDArray[np.int64], out: npt.NDArray[Any], share: npt.NDArray[Any],
                      result: npt.NDArray[Any], num_threads: int, select: int = ...,
                      edge_ids: npt.NDArray[np.int64] | None = ..., weight: npt.NDArray[Any] | None = ...,
                      half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...) -> None: ...
def exclusive_products_half(code: int, src: npt.NDArray[np.uint16], order: npt.NDArray[np.int64],
                            indptr: npt.NDArray[np.int64], partials: npt.NDArray[Any],
                            nan_as_one: bool = ...) -> None: ...
def dots(g: npt.NDArray[Any], src: npt.NDArray[Any], gather: npt.NDArray[np.int64],
         scatter: npt.NDArray[np.int64], result: npt.NDArray[Any], out: npt.NDArray[Any], ties: int,
         weight: npt.NDArray[Any], weighted: bool, num_threads: int,
         half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...) -> None: ...
def dots_half(code: int, g: npt.NDArray[Any], src: npt.NDArray[np.uint16], gather: npt.NDArray[np.int64],
              scatter: npt.NDArray[np.int64], result: npt.NDArray[Any], out: npt.NDArray[Any], ties: int,
              weight: npt.NDArray[Any], weighted: bool, num_threads: int,
              half_weight: npt.NDArray[np.uint16] | None = ..., weight_code: int = ...) -> None: ...
