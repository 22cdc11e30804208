"""scatter_count: how many index entries reach each destination element (numpy_groupies' ``func="count"``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter import kernels
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.index import check_table_bytes, parse_coords, plan_index, sized_by
from cyscatter._plan.values import size_arg

if TYPE_CHECKING:
    from typing import Any

    from cyscatter._typing import DimSize, IndexLike, Mode


_LEAN_MODES = {"raise": kernels.IndexMode.MODE_RAISE, "drop": kernels.IndexMode.MODE_DROP}
_KERNEL_INDEX = (np.dtype(np.int32), np.dtype(np.int64))


@fill_doc
def scatter_count(index: IndexLike, dim_size: DimSize | None = None, *, mode: Mode = "raise", **porting: object) -> Any:
    """Number of index entries that reach each destination element: ``out[j] = #{{k : index[k] == j}}``.

    numpy_groupies' ``aggregate(index, ..., func="count")`` (alias ``"len"``), ``np.bincount`` for an n-d or
    tuple index with cyscatter's modes; equal to ``scatter(np.ones(index.shape, np.int64), index, "add")`` (and
    to the counts a ``scatter(..., "mean")`` divides by), without making the ones: the scatter kernel's
    counting pass over the planned flat destination rows, with no values (``cupy.bincount`` on the GPU).

    Parameters
    ----------
    {index}
    dim_size : int or tuple of m ints, optional
        Destination shape D addressed by the index. Default: the largest entry + 1 per coordinate (0 for an
        empty index).
    {mode}

    Returns
    -------
    out : int64 ndarray (NumPy or CuPy, as `index`), shape D
        Counts. Entries dropped by the mode are not counted; wrapped or clipped ones count where they land.
        No values take part, so there are no batch or feature dims (for a `src` of shape B + I + F the
        counts of every b and f are these) and no `axis`.

    Raises
    ------
    TypeError
        A non-integer index.
    ValueError
        An unknown mode, index arrays of different shapes, `dim_size` of the wrong length or negative.
    IndexError
        An out-of-range entry under ``mode="raise"``.

    Notes
    -----
    Not differentiable (integer counts): ``grad`` does not export it; call this function on the index, which
    carries no gradient. ``cyscatter.dask.scatter_count`` sums the counts of each index block.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_count(np.array([0, 2, 0, 2, 2]), 4)
    array([2, 0, 3, 0])
    >>> cs.scatter_count((np.array([0, 1, 1]), np.array([1, 0, 0])))
    array([[0, 1],
           [2, 0]])
    """
    if porting:
        raise unexpected_keywords("scatter_count", porting)
    if type(index) is np.ndarray and type(dim_size) is int and 0 <= dim_size < 2 ** 27 and mode in _LEAN_MODES \
            and index.dtype in _KERNEL_INDEX and index.flags.c_contiguous and index.flags.aligned:
        # the common case without the planning layer; an error is reported by the general path below
        counts = np.zeros(dim_size, np.int64)
        flat = index.reshape(-1)
        if kernels.scatter_reduce(kernels.OpCode.OP_ADD, np.empty((1, flat.size, 0), np.int64), flat,
                                  np.empty((1, dim_size, 0), np.int64), counts, _LEAN_MODES[mode]) < 0:
            return counts
    be = backend_of(index=index)
    coords = parse_coords(index, be=be)
    plan = plan_index(None, dim_size, mode, coords=coords)
    sized = size_arg(dim_size, plan)
    check_table_bytes((plan.size,), np.int64, *sized)
    with sized_by(*sized):
        # on the CPU the scatter kernel's counting pass, which checks the index too; on the GPU cupy.bincount
        counts = be.count_rows(plan)
    return counts.reshape(plan.dims)
