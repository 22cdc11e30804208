"""scatter and scatter_into: the public scatter-reduce functions (NNlib's `scatter` and `scatter!`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter import kernels
from cyscatter._api.quantile import median
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends import calls
from cyscatter._docs import fill_doc
from cyscatter._plan.prepare import prepare
from cyscatter._plan.values import flag
from cyscatter._registry.ops import FAST, ORDER_STATS
from cyscatter._runtime.threads import check_threads

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike, _DstT


@fill_doc
def scatter(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize | None = None,
            axis: SupportsIndex = 0, fill_value: FillValue | None = None, dtype: DTypeLike | None = None,
            out: Any = None, mode: Mode = "raise", indices_are_sorted: bool = False,
            num_threads: SupportsIndex | None = None, **porting: object) -> Any:
    """Scatter-reduce `src` into a new array: ``out[b, index[k], f] = op(out[b, index[k], f], src[b, k, f])``.

    NNlib's ``scatter(op, src, idx; dstsize)``, in NumPy conventions: index dims first, feature dims last.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Values; B = ``src.shape[:axis]`` batch dims, I the index shape, F feature dims. Its dims at the index
        position may be 1, broadcast over the entries, and a shorter `src` gets leading 1s (``scatter(1.0,
        idx)`` counts); B and F are read off `src` itself (a ``(F,)`` src is not a row: use ``src[None]``).
        The broadcasting rules: :doc:`/semantics`.
    {index}
    {op_median}
    dim_size : int or tuple of m ints, optional
        Destination shape D addressed by the index. Default: the largest entry + 1 per coordinate (0 for an
        empty index).
    {axis}
    fill_value : scalar, optional
        Value of the destination positions that no index entry reaches (default: the op's identity; 0 for
        mean). Cast to the output dtype with NumPy's ``same_kind`` rule.
    dtype : dtype, optional
        The accumulator and result dtype, as NumPy's ``np.add.reduce(..., dtype=)``: `src` is cast to it
        first, under NumPy's ``same_kind`` rule (float to int raises TypeError naming `dtype`), then reduced as
        a `src` of that dtype (div and mean of an integer `dtype` still give float64). Default: the dtype of
        `src`.
    out : ndarray, optional
        An array of exactly the result's shape B + D + F and dtype (byte order aside) that receives the result
        and is returned (NumPy's ``out=``). It starts from the op's identity (or `fill_value`): its values are
        not read; to reduce *into* existing values (pytorch_scatter's ``out=``) use `scatter_into`. Without
        `dim_size`, D is read off its shape. A wrong shape or a read-only `out` raises ValueError, a wrong
        dtype or a non-array TypeError, all naming `out`; on any error `out` is left as it was. Python scalar
        `src` against `out` (NEP 50) and broadcasting: :doc:`/semantics`.
    {mode}
    {indices_are_sorted}
    {threads}

    Returns
    -------
    out : ndarray, shape B + D + F
        The dtype of `src` (or `dtype`), except float64 for integer `src` with div, mean and sqrt_n;
        C-ordered, aligned to a cache line when large (:doc:`/performance`). The `out` object itself when one
        is given.

    Raises
    ------
    {raises}

    Notes
    -----
    {semantics}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter(np.array([1., 2., 3., 4.]), np.array([0, 2, 0, 2]), "add")
    array([4., 0., 6.])
    >>> cs.scatter(np.array([[1, 2], [3, 4], [5, 6]]), np.array([1, 0, 1]), "max")
    array([[3, 4],
           [5, 6]])
    >>> cs.scatter(np.arange(4.), (np.array([0, 1, 1, 0]), np.array([0, 0, 1, 1])), "mean")
    array([[0., 3.],
           [1., 2.]])
    >>> cs.scatter(1, np.array([0, 2, 0]))   # a scalar src broadcasts over the entries
    array([2, 0, 1])
    """
    if porting:
        raise unexpected_keywords("scatter", porting)
    threads = check_threads(num_threads)
    if type(op) is str and op in FAST and type(axis) is int and axis == 0 and mode == "raise" \
            and fill_value is None and type(src) is np.ndarray and indices_are_sorted is False \
            and dtype is None and out is None \
            and (dim_size is None or type(dim_size) is int and 0 <= dim_size < 2 ** 62):
        opcode, identities = FAST[op]
        simple = kernels.scatter_simple(src, index, opcode, identities.get(src.dtype), dim_size, threads)
        if simple is not None:
            return simple
    # None (no hint) reads as False; anything else must be a bool (a string is not taken for its truth value)
    indices_are_sorted = flag("indices_are_sorted", indices_are_sorted, none_is_false=True)
    if type(op) is str and op in ORDER_STATS:
        return median(src, index, ORDER_STATS[op], dim_size=dim_size, axis=axis, fill_value=fill_value, mode=mode,
                      dtype=dtype, out=out)
    call = prepare("scatter", src, index, op, dim_size=dim_size, axis=axis, mode=mode, fill_value=fill_value,
                   dtype=dtype, out=out)
    return calls.scatter_fresh(call, indices_are_sorted, threads)


@fill_doc
def scatter_into(dst: _DstT, src: ArrayInput, index: IndexLike, op: OpLike = "add", *, axis: SupportsIndex = 0,
                 mode: Mode = "raise", indices_are_sorted: bool = False,
                 num_threads: SupportsIndex | None = None, **porting: object) -> _DstT:
    """Scatter-reduce `src` into `dst` in place: ``dst[b, index[k], f] = op(dst[b, index[k], f], src[b, k, f])``.

    NNlib's ``scatter!(op, dst, src, idx)``. For ``op="mean"`` the mean of each group is *added* to `dst`
    (NNlib); rows no entry reaches keep their values. ``op="sqrt_n"`` follows mean's convention: each group's
    ``sum / sqrt(count)`` is added to `dst`, rows no entry reaches keep their values (``dst`` is not a member
    of the group and does not count).

    Parameters
    ----------
    dst : ndarray, shape B + D + F
        Destination, updated in place; any layout, but writeable and without overlapping elements.
    src : array_like or scalar, shape broadcastable to B + I + F
        Values, cast to ``dst.dtype`` (NumPy ``same_kind``; a Python int, float or complex is taken by value,
        as NumPy 2 does: ``1`` goes into a uint8 `dst`, ``300`` raises ValueError, ``1.5`` into an int `dst`
        TypeError). `src` broadcasts (NumPy's rules) against B + I + F, with B and F from `dst`: the shape
        NumPy's ``ufunc.at(dst, idx, src)``, JAX's ``dst.at[idx].add(src)`` and CuPy's ``cupyx.scatter_add``
        broadcast it to. A scalar or 0-d array updates every entry, a row ``(F,)`` is applied at each entry,
        ``(n, 1)`` is broadcast over F, a size-1 batch dim over the batch. A shape that does not broadcast
        raises ValueError naming both shapes. On the CPU broadcast entries are read through stride-0 views,
        never copied (a scalar with F > 1 becomes one row; on the GPU CuPy copies). When `src` or `index`
        share memory with `dst`, the result is as if they had been copied first.
    {index}
    {op}
    {axis}
    {mode}
    {indices_are_sorted}
    {threads}

    Returns
    -------
    dst : ndarray
        The same object, updated.

    Raises
    ------
    {raises}
    TypeError
        Also for div/mean into an integer `dst` (their results are not integers).

    Notes
    -----
    {semantics}
    On any exception `dst` is left exactly as it was.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> dst = np.array([10., 20., 30.])
    >>> cs.scatter_into(dst, np.array([1., 2., 3.]), np.array([2, 0, 2]), "sub")
    array([ 8., 20., 26.])
    >>> cs.scatter_into(np.zeros(3, np.int64), 1, np.array([2, 0, 2]))   # a scalar src: counts
    array([1, 0, 2])
    >>> cs.scatter_into(np.zeros((2, 2)), np.array([1., 10.]), np.array([1, 1, 0]), "add")   # a row
    array([[ 1., 10.],
           [ 2., 20.]])
    """
    if porting:
        raise unexpected_keywords("scatter_into", porting)
    threads = check_threads(num_threads)
    if type(op) is str and op in FAST and type(axis) is int and axis == 0 and mode == "raise" \
            and type(dst) is np.ndarray and indices_are_sorted is False:
        opcode, identities = FAST[op]
        if kernels.scatter_into_simple(dst, src, index, opcode, dst.dtype in identities, threads):
            return dst
    # None (no hint) reads as False; anything else must be a bool (a string is not taken for its truth value)
    indices_are_sorted = flag("indices_are_sorted", indices_are_sorted, none_is_false=True)
    call = prepare("scatter_into", src, index, op, dst=dst, axis=axis, mode=mode)
    return calls.scatter_into(call, indices_are_sorted, threads)
