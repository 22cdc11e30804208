"""scatter_any / scatter_all on Dask arrays: the Dask max / min scatter of the 0/1 flags, as in memory."""
from __future__ import annotations

from typing import TYPE_CHECKING

import dask.array as da
import numpy as np

from cyscatter._api.logical import flags
from cyscatter._backends.select import backend_of
from cyscatter._plan.values import fill_for
from cyscatter.dask._scatter import scatter

if TYPE_CHECKING:
    from typing import Sequence, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode

_DOC = """Lazy ``cyscatter.scatter_{kind}``: ``src != 0`` as int32 flags (block by block), reduced by the Dask
    scatter with "{kernel}" (its partials and tree merge), then ``> 0``; the in-memory result for any chunking.

    Parameters
    ----------
    src : dask.array.Array or array_like, shape B + I + F
        Values of any number or bool dtype (NaN is nonzero).
    index : Dask or NumPy int array of shape I, or tuple of m of them
        As for ``cyscatter.dask.scatter``.
    dim_size : int or tuple of m ints
        Destination shape D. Required.
    axis : int, default 0
        Where the index dims start inside `src`, as for ``cyscatter.dask.scatter``.
    fill_value : bool, optional
        Value of the groups no entry reaches; default {empty} (``np.{kind}`` of an empty array).
    mode : {{"raise", "drop", "wrap", "clip", "normalize_drop"}}, default "raise"
        Out-of-range entries, as for ``cyscatter.dask.scatter``.
    dim_chunks : int or tuple of ints, optional
        Chunks of the output along the first destination axis, as for ``cyscatter.dask.scatter``.
    split_every : int, default 4
        Partials merged per task of the tree reduction.

    Returns
    -------
    out : dask.array.Array of bool, shape B + D + F
        Lazy; computes to ``cyscatter.scatter_{kind}``'s result.

    Raises
    ------
    TypeError
        A `src` of no number dtype, a non-integer index, a `fill_value` that is not a bool (or 0 / 1), a missing
        `dim_size`.
    ValueError, IndexError
        As ``cyscatter.dask.scatter``.
    """


def _lazy(kind, src, index, dim_size, axis, fill_value, mode, dim_chunks, split_every):
    fill = fill_for(fill_value, np.bool_)
    fill_int = None if fill is None else int(bool(fill[()]))
    if isinstance(src, da.Array):
        flags(backend_of(src=np.empty(0, src.dtype)), np.empty(0, src.dtype))   # the in-memory TypeError
        ones = da.map_blocks(lambda block: flags(backend_of(src=block), block), src, dtype=np.int32)
    else:
        arr = np.asarray(src)
        ones = flags(backend_of(src=arr), arr)
    return scatter(ones, index, "max" if kind == "any" else "min", dim_size=dim_size, axis=axis,
                   fill_value=fill_int, mode=mode, dim_chunks=dim_chunks, split_every=split_every) > 0


def scatter_any(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                fill_value: FillValue | None = None, mode: Mode = "raise",
                dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                split_every: SupportsIndex = 4) -> da.Array:
    result: da.Array = _lazy("any", src, index, dim_size, axis, fill_value, mode, dim_chunks, split_every)
    return result


def scatter_all(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                fill_value: FillValue | None = None, mode: Mode = "raise",
                dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
                split_every: SupportsIndex = 4) -> da.Array:
    result: da.Array = _lazy("all", src, index, dim_size, axis, fill_value, mode, dim_chunks, split_every)
    return result


scatter_any.__doc__ = _DOC.format(kind="any", kernel="max", empty="False")
scatter_all.__doc__ = _DOC.format(kind="all", kernel="min", empty="True")
