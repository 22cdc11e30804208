"""gather and gather_into: the public gather functions (NNlib's `gather` and `gather!`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter import kernels
from cyscatter._arrays.integers import prod
from cyscatter._arrays.protocols import refuse_bfloat16_on_gpu
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.index import parse_coords, plan_index
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import (
    _PYTHON_KIND,
    check_dtype_arg,
    check_out,
    direct,
    fill_for,
    python_scalar_as,
    write_out,
)
from cyscatter._arrays.dtypes import native
from cyscatter._runtime.threads import check_threads

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import (
        ArrayInput,
        FillValue,
        IndexLike,
        Mode,
        _DstT,
    )


def split_gather_src(src: np.ndarray, coords: tuple, axis, mode: str):
    """(plan, batch shape B, feature shape F) for gathering from `src` at `axis` with an m-coordinate index."""
    m = len(coords)
    axis = normalize_axis(axis, src.ndim, m)
    plan = plan_index(None, src.shape[axis:axis + m], mode, coords=coords, dims_arg="src.shape")
    return plan, src.shape[:axis], src.shape[axis + m:]


@fill_doc
def gather(src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0, mode: Mode = "raise",
           fill_value: FillValue | None = None, dtype: DTypeLike | None = None, out: Any = None,
           num_threads: SupportsIndex | None = None) -> Any:
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
    {threads}

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
    threads = check_threads(num_threads)
    if type(axis) is int and axis == 0 and mode == "raise" and type(src) is np.ndarray and dtype is None \
            and out is None:
        simple = kernels.gather_simple(src, index, threads)
        if simple is not None:
            return simple
    be = backend_of(src=src, index=index, out=out)
    out_dtype = getattr(out, "dtype", None)
    if type(src) in _PYTHON_KIND and dtype is None and isinstance(out_dtype, np.dtype):
        src = python_scalar_as(src, native(out_dtype), be.xp, "out")   # weak, as NumPy 2's (NEP 50) and scatter's
    src = be.asarray(src)
    if src.dtype.hasobject:
        raise TypeError(f"gather does not support src dtype {src.dtype}")
    if not src.dtype.isnative:   # results are native (the kernels move native items); a copy for this rare input
        src = src.astype(native(src.dtype))
    cast = check_dtype_arg(dtype, src.dtype, numbers=False)
    if be.xp is not np:
        refuse_bfloat16_on_gpu("dtype", cast)
    coords = parse_coords(index, xp=be.xp)
    plan, batch, feat = split_gather_src(src, coords, axis, mode)
    result_dtype = src.dtype if cast is None else cast
    fill = fill_for(fill_value, result_dtype, be.xp) if plan.drops else None
    shape = batch + plan.shape + feat
    target = None if out is None else check_out(be, out, shape, native(result_dtype))
    outer, inner = prod(batch), prod(feat)
    into = target is not None and direct(be, target, native(result_dtype), src, *coords)
    if into:
        be.precheck(plan)   # under mode="raise", before `out` is written
    if cast is not None and cast != src.dtype:
        src = src.astype(cast)
    src3 = be.rows_view(src, src.dtype, outer, plan.size, inner)
    n3 = (outer, plan.n, inner)
    if into:
        out3 = target.reshape(n3)
        if plan.drops:   # zero bytes by default, as a fresh output: also '' for strings
            out3[...] = be.xp.zeros((), out3.dtype) if fill is None else fill
    elif plan.drops:
        out3 = be.xp.zeros(n3, src.dtype)   # zero bytes: also '' for strings
        if fill is not None:
            out3[...] = fill
    else:
        out3 = be.xp.empty(n3, src.dtype)
    be.run_gather(src3, plan, out3, threads)
    if target is None:
        return out3.reshape(shape)
    return out if into else write_out(be, target, out3, out)


@fill_doc
def gather_into(dst: _DstT, src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0, mode: Mode = "raise",
                num_threads: SupportsIndex | None = None) -> _DstT:
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
    {threads}

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
    threads = check_threads(num_threads)
    be = backend_of(dst=dst, src=src, index=index)
    target, dst = dst, be.check_writable(dst)   # a subclass is written through a plain view
    src = be.asarray(src)
    for arg, arr in (("dst", dst), ("src", src)):
        if arr.dtype.hasobject:
            raise TypeError(f"gather_into does not support {arg} dtype {arr.dtype}")
    if not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src.dtype} to dst dtype {dst.dtype} (same_kind rule)")
    coords = parse_coords(index, xp=be.xp)
    plan, batch, feat = split_gather_src(src, coords, axis, mode)
    if dst.shape != batch + plan.shape + feat:
        raise ValueError(f"dst shape {dst.shape} != batch {batch} + index shape {plan.shape} + features {feat} "
                         f"(src shape {src.shape})")
    # no precheck pass: the gather kernels check every entry before writing (the GPU's plan is checked already)
    if be.xp.may_share_memory(src, dst):   # plan.flat is already a private copy unless it is an int32/int64 index
        src = src.copy()
    if be.xp.may_share_memory(plan.flat, dst):
        plan = plan_index(None, plan.dims, plan.mode, coords=(plan.flat.copy().reshape(plan.shape),))
    outer, inner = prod(batch), prod(feat)
    src3 = be.rows_view(src, dst.dtype, outer, plan.size, inner)
    work3, direct = be.writable_rows(dst, dst.dtype, outer, plan.n, inner)
    be.run_gather(src3, plan, work3, threads)
    if not direct:
        be.xp.copyto(dst, work3.reshape(dst.shape))
    return target
