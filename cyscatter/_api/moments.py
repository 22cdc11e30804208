"""scatter_var and scatter_std: per-group variance and standard deviation with `ddof`, in two passes (group mean,
then the sum of squared deviations), from the core add and gather kernels."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._arrays.dtypes import is_bfloat16, parts
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends.reduce import counts3, new_counts, run_counted
from cyscatter._docs import fill_doc
from cyscatter._plan.groups import dst_shape, group_view
from cyscatter._plan.index import sized_by
from cyscatter._plan.values import size_arg
from cyscatter._registry.ops import get_op

if TYPE_CHECKING:
    from typing import Any, Callable, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, _FuncT


def _real(dtype) -> np.dtype:
    return np.finfo(dtype).dtype   # complex64 -> float32; the real float dtypes themselves


def group_means(ctx):
    """(group means (outer, size, inner) in the compute dtype, group counts (size,)); src read through the
    context's source (a float16/bfloat16 src converted by the scatter kernel as it reads it)."""
    counts = ctx.counts()
    with np.errstate(invalid="ignore"):   # a complex infinity over the count: NaN parts, np.var's NaN variance
        return ctx.put_src() / ctx.xp.maximum(counts, 1)[None, :, None].astype(_real(ctx.dtype)), counts


def deviations3(ctx):
    """(src - its group mean as (outer, n, inner), group counts as (size,)); dropped entries are not members."""
    mean, counts = group_means(ctx)
    return minus_taken(ctx, mean, ctx.src3), counts


def minus_taken(ctx, mean3, rows3, plan=None):
    """rows3 - mean3[:, flat, :] (`plan`: the rows' own, a chunk's), in the buffer of the gather: each fresh
    src-sized array costs its page faults (a large share of scatter_var's time on the W1 workload)."""
    taken = ctx.take(mean3.astype(ctx.dtype, copy=False), plan)
    with np.errstate(invalid="ignore"):   # inf - inf: the NaN variance of a group holding an infinity
        return ctx.xp.subtract(rows3, taken, out=taken)


def nan_means(ctx):
    """(the means of the non-NaN entries (complex: either part NaN) of each output element, their counts as
    integers broadcastable against (outer, size, inner): the entries per row, (1, size, 1), when src holds no
    NaN, else per element). nanmean's means and counts (its counting kernels on the host: no mask of src is
    made, and no counts-sized float array)."""
    xp, op = ctx.xp, get_op("nanmean")
    if ctx.in_place:
        # the NaN-skipping sums by the staged kernel, the counts of the non-NaN entries a chunk at a time (the
        # counting kernels read only arrays of their own dtype): the same sums and counts, no n x F copy
        sums = ctx.put_src(op, op.identity(ctx.dtype))
        counts = xp.zeros(sums.shape, np.int32 if ctx.plan.n < 2**31 - 1 else np.int64)
        for _, plan, rows3 in ctx.src_chunks():
            ctx.put(xp.logical_not(xp.isnan(rows3)).astype(counts.dtype), plan=plan, into=counts)
    else:
        shape3 = (ctx.src3.shape[0], ctx.plan.size, ctx.src3.shape[2])
        sums = ctx.be.fresh_table(shape3, op.compute_dtype(ctx.dtype), op.identity(ctx.dtype))
        counts = counts3(run_counted(ctx.be.run_scatter, op, ctx.src3, ctx.plan, sums,
                                     new_counts(op, shape3, xp, n=ctx.plan.n)))
    divisor = xp.maximum(counts, 1)
    for part in parts(sums):   # each part by the real count: correctly rounded, as reduce.divide
        xp.divide(part, divisor, out=part, dtype=part.dtype, casting="unsafe")
    return sums, counts


def nan_deviations3(ctx):
    """`deviations3` over the non-NaN entries: (deviations, NaN at NaN entries, the non-NaN counts of each output
    element as `nan_means` gives them, the means (outer, size, inner))."""
    sums, counts = nan_means(ctx)
    return minus_taken(ctx, sums, ctx.src3), counts, sums


def var3(ctx, ddof, skip_nan: bool = False):
    """(outer, size, inner) variance: sum of |deviation|^2 / (count - ddof); NaN where count - ddof <= 0.
    `skip_nan`: over the non-NaN entries of each element (numpy_groupies' nanvar, NumPy's np.nanvar).

    The deviations are taken a chunk of src rows at a time (`Reverse.src_chunks`) and their squares summed into
    one table: each element sees its squares in index order, so the bits of one pass over the whole converted
    src, without its n x F copy for a src read in place (float16/bfloat16)."""
    if skip_nan:
        mean, counts = nan_means(ctx)
    else:
        mean, counts = group_means(ctx)
        counts = counts[None, :, None]
    real = _real(ctx.dtype)
    dof = ctx.xp.subtract(counts, ddof, dtype=real)   # in the result's dtype: no float64 copy
    summed = ctx.xp.zeros(mean.shape, real)
    for _, plan, rows3 in ctx.src_chunks():
        dev = minus_taken(ctx, mean, rows3, plan)
        if dev.dtype.kind == "c":
            squares = dev.real * dev.real + dev.imag * dev.imag
        else:
            squares = ctx.xp.multiply(dev, dev, out=dev)   # dev is this pass's own buffer
        # the NaN entries' deviations are NaN: nansum leaves them out
        ctx.put(squares, get_op("nansum" if skip_nan else "add"), plan=plan, into=summed)
    with np.errstate(divide="ignore", invalid="ignore"):   # in place: no output-sized temporaries but dof's
        ctx.xp.divide(summed, dof, out=summed)
    ctx.xp.copyto(summed, np.nan, where=~(dof > 0))
    if skip_nan:
        # a member at +-inf makes the mean inf or NaN and its deviations NaN, which nansum would drop as it drops
        # the NaN members': np.nanvar's NaN, as var's sum gives it
        ctx.xp.copyto(summed, np.nan, where=~ctx.xp.isfinite(mean))
    return summed


def check_ddof(ddof) -> float:
    if (isinstance(ddof, (bool, np.bool_, complex, np.complexfloating)) or not np.isscalar(ddof)
            or not np.isreal(ddof)):   # complex refused even with a zero imaginary part, as NumPy's var
        raise TypeError(f"ddof must be a real number, got {ddof!r}")
    return float(ddof)


# ---- public functions --------------------------------------------------------------------------------------------

_DOC = """{title}

    pytorch_scatter's ``scatter_std`` (``unbiased=True`` is ``ddof=1``) and, per group, NumPy's
    ``np.{name}(group, ddof=ddof)``: the mean is taken first, then the squared deviations are summed (two
    passes, no cancellation of the one-pass formula).

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Integers (computed in float64), floats (float16 is computed in float32) or complex (the variance of
        a complex group is the mean of ``|x - mean|**2``, real, as in NumPy).
    {{index}}
    ddof : int or float, default 0
        Delta degrees of freedom: the divisor is ``count - ddof``.
    {{dim_size}}
    {{axis}}
    {{mode}}

    Returns
    -------
    out : ndarray, shape B + D + F
        Real float dtype of `src` (float64 for integers). Groups with ``count <= ddof`` (so every empty group, for ddof >= 0)
        give NaN: undefined, where NumPy divides by ``max(count - ddof, 0)`` (inf, or NaN for equal members, with a
        warning) and pytorch_scatter gives 0.

    Raises
    ------
    {{raises}}
    TypeError
        Also for a `ddof` that is not a real number.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_{name}(np.array([1., 3., 7., 4.]), np.array([0, 0, 2, 0]), ddof=1)
    array([{result}])
    """


def _moment_doc(title: str, name: str, result: str) -> Callable[[_FuncT], _FuncT]:
    def decorate(func: _FuncT) -> _FuncT:
        func.__doc__ = _DOC.format(title=title, name=name, result=result)
        return fill_doc(func)
    return decorate


def _moment(name, src, index, ddof, dim_size, axis, mode, std: bool, skip_nan: bool = False):
    """The group variances (or their square roots), in the real dtype of `src`."""
    ddof = check_ddof(ddof)
    # a C-ordered src by chunks too where that costs no time (var/std: 0.91-1.04x, about 5 MB against src's size
    # for 200000 x 64); the NaN-skipping twins' chunked passes were 1.35x slower there
    ctx, result, batch, feat = group_view(name, src, index, dim_size, axis, mode, complex_ok=True, layout=True,
                                          contiguous=not skip_nan)
    real = result if is_bfloat16(result) else np.finfo(result).dtype   # complex64 -> float32
    with sized_by(*size_arg(dim_size, ctx.plan)):
        var = var3(ctx, ddof, skip_nan)
        out = (ctx.xp.sqrt(var) if std else var).astype(real, copy=False)
    return out.reshape(dst_shape(ctx, batch, feat))


@_moment_doc("Variance of each group: ``out[b, j, f] = sum(|src[b, k, f] - mean_j|**2) / (count_j - ddof)``.",
             "var", "2.33333333,        nan,        nan")
def scatter_var(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_var", porting)
    return _moment("scatter_var", src, index, ddof, dim_size, axis, mode, std=False)


@_moment_doc("Standard deviation of each group: ``out = sqrt(scatter_var(src, index, ddof=ddof))``.",
             "std", "1.52752523,        nan,        nan")
def scatter_std(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_std", porting)
    return _moment("scatter_std", src, index, ddof, dim_size, axis, mode, std=True)


_NAN_DOC = """{title}

    numpy_groupies' ``aggregate(..., func="nan{name}", ddof=ddof)`` and, per group, NumPy's
    ``np.nan{name}(group, ddof=ddof)``: `scatter_{name}` over the non-NaN members of each output element (complex:
    NaN in either part), with the count of those members in the divisor. Integers have no NaN: `scatter_{name}`.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Integers (computed in float64), floats (float16 in float32) or complex (a real result, as NumPy).
    {{index}}
    ddof : int or float, default 0
        Delta degrees of freedom: the divisor is ``count - ddof``, count the element's non-NaN members.
    {{dim_size}}
    {{axis}}
    {{mode}}

    Returns
    -------
    out : ndarray, shape B + D + F
        Real float dtype of `src` (float64 for integers). Elements with ``count <= ddof`` (so empty and all-NaN
        groups) give NaN, as ``np.nanvar`` does (without its warning); numpy_groupies gives inf where the
        members differ.

    Raises
    ------
    {{raises}}
    TypeError
        Also for a `ddof` that is not a real number.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_nan{name}(np.array([1., np.nan, 3., 7., 4.]), np.array([0, 0, 0, 2, 0]), ddof=1)
    array([{result}])
    """


def _nan_moment_doc(title: str, name: str, result: str) -> Callable[[_FuncT], _FuncT]:
    def decorate(func: _FuncT) -> _FuncT:
        func.__doc__ = _NAN_DOC.format(title=title, name=name, result=result)
        return fill_doc(func)
    return decorate


@_nan_moment_doc("Variance of each group's non-NaN members: `scatter_var` with NaN entries left out.",
                 "var", "2.33333333,        nan,        nan")
def scatter_nanvar(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_nanvar", porting)
    return _moment("scatter_nanvar", src, index, ddof, dim_size, axis, mode, std=False, skip_nan=True)


@_nan_moment_doc("Standard deviation of each group's non-NaN members: ``sqrt(scatter_nanvar(...))``.",
                 "std", "1.52752523,        nan,        nan")
def scatter_nanstd(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_nanstd", porting)
    return _moment("scatter_nanstd", src, index, ddof, dim_size, axis, mode, std=True, skip_nan=True)
