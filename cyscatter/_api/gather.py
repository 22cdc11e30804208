"""gather and gather_into: the public gather functions (NNlib's `gather` and `gather!`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter import kernels
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends import calls
from cyscatter._docs import fill_doc
from cyscatter._plan.prepare import prepare
from cyscatter._runtime.threads import check_threads

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import ArrayInput, FillValue, IndexLike, Mode, _DstT




@fill_doc
def gather(src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0, mode: Mode = "raise",
           fill_value: FillValue | None = None, dtype: DTypeLike | None = None, out: Any = None,
           num_threads: SupportsIndex | None = None, **porting: object) -> Any:
    """Gather rows of `src`: ``out[b, k, f] = src[b, index[k], f]`` (tuple index: ``src[b, i0[k], ..., f]``).

    NNlib's ``gather(src, idx)``; for an integer index it equals ``np.take(src, index, axis)`` and for a
    tuple index NumPy's ``src[(slice(None),) * axis + index]``.

    Parameters
    ----------
    src : array_like, shape B + D + F
        Any dtype but object; D are the m dims the index addresses, starting at `axis`.
    {gather_index}
    {axis}
    {mode}
    fill_value : scalar, optional
        Value of the output rows whose entry is dropped under ``mode="drop"`` or ``"normalize_drop"``; default
        all-zero bytes (0, False, ''). ``mode="normalize_drop"`` with ``fill_value=np.nan`` is JAX's
        ``jnp.take`` default (``mode="fill"``; JAX's ``x[i]`` clips instead: ``mode="clip"`` here, after
        counting negatives from the end). Cast to ``src.dtype`` with NumPy's ``same_kind`` rule (2.5 into an
        integer array: TypeError).
    dtype : dtype, optional
        The result dtype: as if ``src.astype(dtype)`` were gathered (NumPy's ``same_kind`` rule; a float `src`
        into an integer `dtype` raises TypeError naming `dtype`); `fill_value` is cast to it. `src` is cast
        whole first, so for a `src` much larger than the result ``gather(...).astype(dtype)`` costs less.
        Default: the dtype of `src`.
    out : ndarray, optional
        An array of exactly the result's shape B + I + F and dtype (byte order aside) that receives the result
        and is returned (NumPy's ``np.take(..., out=)``); its values are not read (``gather_into`` is the
        NNlib ``gather!`` form, which keeps them for dropped entries). A C-contiguous native `out` sharing no
        memory with `src` or `index` is written in place, any other by a copy. ValueError (shape, read-only) or
        TypeError (dtype, not an array) naming `out`; on any error `out` is left as it was.
    {threads_move}

    Returns
    -------
    out : ndarray, shape B + I + F
        The gathered rows, dtype of `src` (or `dtype`); the `out` object itself when one is given.

    Raises
    ------
    {gather_raises}

    Notes
    -----
    CuPy inputs run on the GPU and give CuPy arrays; gather moves values without arithmetic, so they are exact.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.gather(np.array([1, 20, 300, 4000]), np.array([1, 3, 1]))
    array([  20, 4000,   20])
    >>> cs.gather(np.arange(15).reshape(3, 5), (np.array([0, 1]), np.array([1, 3])))
    array([1, 8])
    """
    if porting:
        raise unexpected_keywords("gather", porting)
    threads = check_threads(num_threads)
    if type(axis) is int and axis == 0 and mode == "raise" and type(src) is np.ndarray and dtype is None \
            and out is None:
        simple = kernels.gather_simple(src, index, threads)
        if simple is not None:
            return simple
    call = prepare("gather", src, index, axis=axis, mode=mode, fill_value=fill_value, dtype=dtype, out=out)
    return calls.gather(call, threads)


@fill_doc
def gather_into(dst: _DstT, src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0, mode: Mode = "raise",
                num_threads: SupportsIndex | None = None, **porting: object) -> _DstT:
    """Gather rows of `src` into `dst` in place: ``dst[b, k, f] = src[b, index[k], f]`` (NNlib's ``gather!``).

    Parameters
    ----------
    dst : ndarray, shape B + I + F
        Written in place (any layout; writeable, no overlapping elements). Rows whose entry is dropped under
        ``mode="drop"`` keep their values.
    src : array_like, shape B + D + F
        Cast to ``dst.dtype`` under NumPy's ``same_kind`` rule.
    {gather_index}
    {axis}
    {mode}
    {threads_move}

    Returns
    -------
    dst : ndarray
        The same object, updated.

    Raises
    ------
    {gather_raises}

    Notes
    -----
    CuPy inputs run on the GPU and give CuPy arrays; gather moves values without arithmetic, so they are exact.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.gather_into(np.zeros(2, int), np.array([5, 6, 7]), np.array([2, 0]))
    array([7, 5])
    """
    if porting:
        raise unexpected_keywords("gather_into", porting)
    threads = check_threads(num_threads)
    call = prepare("gather_into", src, index, dst=dst, axis=axis, mode=mode)
    return calls.gather_into(call, threads)
