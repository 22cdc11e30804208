# Type stubs of the compiled cyscatter.fused_kernels module (see fused_kernels.pyx for the loops).
import numpy as np
import numpy.typing as npt

def set_prefetch_edges(edges: int) -> None: ...
def csr(key: npt.NDArray[np.int64], size: int, other: npt.NDArray[np.int64], other_size: int,
        drop: bool) -> tuple[int, npt.NDArray[np.int64] | None, npt.NDArray[np.int64] | None,
                             npt.NDArray[np.int64] | None]: ...
def forward(opcode: int, src: npt.NDArray, indptr: npt.NDArray[np.int64], cols: npt.NDArray[np.int64],
            edge_ids: npt.NDArray[np.int64], weight: npt.NDArray, weighted: bool, out: npt.NDArray,
            num_threads: int) -> int: ...
def extreme_ties(is_max: bool, src: npt.NDArray, indptr: npt.NDArray[np.int64], cols: npt.NDArray[np.int64],
                 edge_ids: npt.NDArray[np.int64], weight: npt.NDArray, weighted: bool, out: npt.NDArray,
                 grad_out: npt.NDArray, tangent_src: npt.NDArray, use_tangent_src: bool, tangent_w: npt.NDArray,
                 use_tangent_w: bool, result: npt.NDArray, num_threads: int) -> None: ...
def extreme_back(src: npt.NDArray, indptr: npt.NDArray[np.int64], cols: npt.NDArray[np.int64],
                 edge_ids: npt.NDArray[np.int64], weight: npt.NDArray, weighted: bool, out: npt.NDArray,
                 share: npt.NDArray, result: npt.NDArray, num_threads: int) -> None: ...
def dots(g: npt.NDArray, src: npt.NDArray, gather: npt.NDArray[np.int64], scatter: npt.NDArray[np.int64],
         result: npt.NDArray, out: npt.NDArray, ties: int, weight: npt.NDArray, weighted: bool,
         num_threads: int) -> None: ...
