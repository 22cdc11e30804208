"""Types for annotating code that calls cyscatter.

    from cyscatter.typing import ScatterOp, Mode

    def pool(x: NDArray[np.float64], index: NDArray[np.int64], op: ScatterOp = "max") -> NDArray[np.float64]:
        return cyscatter.scatter(x, index, op)

ScatterOp
    ``Literal`` of every op name and alias `scatter` accepts (``"add"``, ``"sum"``, ``"mean"``, ...).
ScanOp, ScanOpLike
    ``Literal`` of the ops `scatter_scan` takes (add, mul, max, min and their aliases); it or an ``Op``.
Mode
    ``Literal`` of the out-of-range index modes: ``"raise"``, ``"drop"``, ``"wrap"``, ``"clip"``,
    ``"normalize_drop"``.
Op, OpLike
    A registry entry (the class of `cyscatter.OPS` and `cyscatter.get_op`); ``ScatterOp`` or an ``Op``.
ArrayInput, IndexLike
    What the array and index arguments accept (an index may be a tuple of arrays, one per indexed axis).
DLPackArray
    An array exporting DLPack (``__dlpack__``, ``__dlpack_device__``), one of the kinds `ArrayInput` takes.
DeviceArray, DeviceIndex
    A GPU array (``__cuda_array_interface__``: CuPy) and an index of them. A call whose first array argument or
    index is one runs on the GPU and is typed as returning ``Any`` (CuPy has no type information); every other
    call is typed as returning a NumPy array, ``numpy.typing.NDArray``.
DimSize, FillValue
    A destination shape (an int or a sequence of ints) and a fill scalar.
"""
from __future__ import annotations

from cyscatter._registry.ops import Op
from cyscatter._typing import (
                               ArrayInput,
                               DeviceArray,
                               DeviceIndex,
                               DimSize,
                               DLPackArray,
                               FillValue,
                               IndexLike,
                               Mode,
                               OpLike,
                               ScanOp,
                               ScanOpLike,
                               ScatterOp,
)

__all__ = ["ScatterOp", "ScanOp", "ScanOpLike", "Mode", "Op", "OpLike", "ArrayInput", "IndexLike", "DLPackArray", "DeviceArray", "DeviceIndex",
           "DimSize", "FillValue"]
