"""scatter_any and scatter_all: a bool per group, whether any / all of its entries are nonzero (numpy_groupies'
``func="any"`` / ``"all"``), run on the max / min scatter kernels over 0/1 flags (no new kernel, no op code)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.scatter import scatter
from cyscatter._arrays.dtypes import holds_numbers
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.values import fill_for

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode


def flags(be: Any, src: Any) -> Any:
    """int32 0/1 of ``src != 0`` (NaN counts as nonzero, as in ``np.any``) on backend `be` (in one pass on the CPU:
    int32 is a kernel dtype of max/min, so no widening copy follows)."""
    if src.dtype.kind != "b" and not holds_numbers(src.dtype):
        raise TypeError(f"scatter_any/scatter_all need numbers or bools; src dtype {src.dtype} has no truth value "
                        "per element here")
    return be.nonzero_flags(src)


def _logical(kind, src, index, dim_size, axis, fill_value, mode, indices_are_sorted, num_threads):
    be = backend_of(src=src, index=index)
    src = be.asarray(src)
    fill = fill_for(fill_value, np.bool_, be.xp)   # the fill_value errors of a bool output
    fill_int = None if fill is None else int(bool(fill[()]))
    # max of the flags: 1 when any is; min: 0 when any is not; an empty group keeps the int32 identity
    # (INT_MIN for max, INT_MAX for min), so `> 0` gives False for any and True for all
    result = scatter(flags(be, src), index, "max" if kind == "any" else "min", dim_size=dim_size, axis=axis,
                     fill_value=fill_int, mode=mode, indices_are_sorted=indices_are_sorted,
                     num_threads=num_threads)
    return be.xp.asarray(result > 0)   # an array for a 0-d result too (NumPy's `>` gives a scalar there)


_DOC = """Whether {what} of each group's entries {verb} nonzero: ``out[j] = {formula}``.

    numpy_groupies' ``aggregate(index, src, func="{kind}")``, with cyscatter's index kinds, `axis` and modes.
    Not PyG's ``reduce="any"`` (``torch_geometric.utils.scatter``), which is an assignment (the last value
    written wins), the op "set" elsewhere in this issue. Runs on the {kernel} scatter kernel over the 0/1 flags
    ``src != 0`` (int32, made in one pass), so no per-element Python and no op code of its own.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Values of any number or bool dtype; NaN is nonzero (``np.{kind}``'s rule), and so is a complex value
        with either part nonzero.
    {{index}}
    dim_size : int or tuple of m ints, optional
        Destination shape D addressed by the index. Default: the largest entry + 1 per coordinate.
    {{axis}}
    fill_value : bool, optional
        Value of the groups no entry reaches. Default {empty} (the identity of ``{logical}``: ``np.{kind}`` of
        an empty array is {empty}). numpy_groupies fills empty groups with its ``fill_value=0`` (False) for
        both: pass ``fill_value=False`` for its result. 0 and 1 are taken as bools; another value raises.
    {{mode}}
    {{indices_are_sorted}}
    {{threads_move}}

    Returns
    -------
    out : bool ndarray (NumPy or CuPy, as `src`), shape B + D + F
        Per group, whether {what} of its entries {verb} nonzero; the groups no entry reaches hold `fill_value`.

    Raises
    ------
    TypeError
        A `src` of no number dtype (strings, object), a non-integer index, a `fill_value` that is not a bool
        (or 0 / 1).
    ValueError
        Unknown mode, mismatched shapes, `dim_size` of the wrong length or negative.
    IndexError
        An out-of-range entry under ``mode="raise"``.

    Notes
    -----
    Not differentiable (a bool result): ``grad`` does not export it. ``cyscatter.dask.scatter_{kind}`` merges
    the blocks' partial results with {kernel}.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_{kind}(np.array([0., 2., 0., 0.]), np.array([0, 0, 2, 2]), dim_size=4)
    array([{example}])
    """


def scatter_any(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                fill_value: FillValue | None = None, mode: Mode = "raise", indices_are_sorted: bool = False,
                num_threads: SupportsIndex | None = None, **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_any", porting)
    return _logical("any", src, index, dim_size, axis, fill_value, mode, indices_are_sorted, num_threads)


def scatter_all(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                fill_value: FillValue | None = None, mode: Mode = "raise", indices_are_sorted: bool = False,
                num_threads: SupportsIndex | None = None, **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_all", porting)
    return _logical("all", src, index, dim_size, axis, fill_value, mode, indices_are_sorted, num_threads)


scatter_any.__doc__ = _DOC.format(what="any", verb="is", formula="any(src[k] != 0 for k with index[k] == j)",
                                  kind="any", kernel="max", empty="False", logical="or",
                                  example=" True, False, False, False")
scatter_all.__doc__ = _DOC.format(what="all", verb="are", formula="all(src[k] != 0 for k with index[k] == j)",
                                  kind="all", kernel="min", empty="True", logical="and",
                                  example="False,  True, False,  True")
fill_doc(scatter_any)
fill_doc(scatter_all)
