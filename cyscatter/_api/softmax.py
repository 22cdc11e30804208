"""scatter_logsumexp, scatter_softmax and scatter_log_softmax: numerically stable, from the core max, add and
gather kernels (each group is shifted by its own maximum before `exp`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._docs import fill_doc
from cyscatter._plan.groups import dst_shape, group_view, sizes_of_out, src_shape
from cyscatter._plan.index import sized_by
from cyscatter._plan.values import check_out, size_arg
from cyscatter._registry.ops import get_op

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, _FuncT


def group_max(ctx):
    return ctx.put_src(get_op("max"), -np.inf)


def _exp_sums(ctx, shift, log: bool = False):
    """(outer, size, inner) sums of exp(src - shift of the group) (then their log), a chunk of src rows at a
    time (`Reverse.src_chunks`): every element sees its terms in index order, the bits of one whole pass."""
    xp = ctx.xp
    sums = xp.zeros(shift.shape, ctx.dtype)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for _, plan, rows3 in ctx.src_chunks():
            ctx.put(xp.exp(rows3 - ctx.take(shift, plan)), plan=plan, into=sums)
        return xp.log(sums) if log else sums


def logsumexp3(ctx):
    """(outer, size, inner) log-sum-exp of each group of src; -inf for empty groups."""
    xp, peak = ctx.xp, group_max(ctx)
    shift = xp.where(xp.isfinite(peak), peak, 0)   # scipy's rule: a group without a finite max is not shifted
    with np.errstate(invalid="ignore"):
        return _exp_sums(ctx, shift, log=True) + shift


def softmax3(ctx, dtype=None):
    """(outer, n, inner) softmax of src within its group, in `dtype` (default the compute dtype); 0 for entries
    dropped by mode='drop'. A src read in place takes two passes by chunks (the sums, then each entry's share):
    exp is taken twice, each time the same bits, and no n x F array but the result."""
    if not ctx.in_place:   # src held whole already: one exp, its array reused for the shares
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            shifted = ctx.xp.exp(ctx.src3 - ctx.take(group_max(ctx)))
            probs = ctx.xp.divide(shifted, ctx.take(ctx.put(shifted)), out=shifted)
        return mask_dropped(ctx, probs, 0).astype(ctx.dtype if dtype is None else dtype, copy=False)
    peak = group_max(ctx)
    sums = _exp_sums(ctx, peak)

    def chunk_probs(_, plan, rows3):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            shifted = ctx.xp.exp(rows3 - ctx.take(peak, plan))
            return mask_dropped(ctx, shifted / ctx.take(sums, plan), 0, plan)
    return ctx.map_rows(chunk_probs, ctx.dtype if dtype is None else dtype)


def log_softmax3(ctx, dtype=None):
    """(outer, n, inner) log-softmax of src within its group, in `dtype` (default the compute dtype); -inf for
    entries dropped by mode='drop'. By chunks for a src read in place, as `softmax3`."""
    if not ctx.in_place:
        xp = ctx.xp
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            shifted = ctx.src3 - ctx.take(group_max(ctx))
            logp = shifted - ctx.take(xp.log(ctx.put(xp.exp(shifted))))
        return mask_dropped(ctx, logp, -np.inf).astype(ctx.dtype if dtype is None else dtype, copy=False)
    peak = group_max(ctx)
    log_sums = _exp_sums(ctx, peak, log=True)

    def chunk_logp(_, plan, rows3):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            shifted = rows3 - ctx.take(peak, plan)
            return mask_dropped(ctx, shifted - ctx.take(log_sums, plan), -np.inf, plan)
    return ctx.map_rows(chunk_logp, ctx.dtype if dtype is None else dtype)


def mask_dropped(ctx, a3, value, plan=None):
    """`a3` (outer, n, inner) with `value` at the entries dropped under mode='drop' (the others belong to a group);
    `plan`: a3's rows' own (a chunk's)."""
    plan = ctx.plan if plan is None else plan
    if not plan.drops:
        return a3
    return ctx.xp.where(plan.valid()[None, :, None], a3, a3.dtype.type(value))


def _check_out(ctx, out, shape, result):
    """The checked array of `out` (`check_out`'s rules and errors; these functions take no dtype=)."""
    try:
        return check_out(ctx.be, out, shape, result)
    except TypeError as error:
        raise TypeError(str(error).replace(" (the dtype= argument chooses another)", "")) from None


def _finish(result, target, out):
    """`result`, or `out` once `target` (its checked array) holds it: made whole first, so `out` may be `src`."""
    if target is None:
        return result
    target[...] = result
    return out


# ---- public functions --------------------------------------------------------------------------------------------

_NONFINITE = """A group whose maximum is +inf or NaN gives NaN for each member, and so does a group whose members
    are all -inf (0/0), as ``scipy.special.softmax`` and ``torch.softmax`` do; a -inf member of a group with a
    finite maximum gets exactly 0 (log-softmax: -inf). Entries dropped under ``mode="drop"`` belong to no group:
    softmax 0, log-softmax -inf."""


def _softmax_doc(func: _FuncT) -> _FuncT:
    func.__doc__ = func.__doc__.replace("{nonfinite}", _NONFINITE)
    return fill_doc(func)


@fill_doc
def scatter_logsumexp(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                      mode: Mode = "raise", out: Any = None, **porting: object) -> Any:
    """Log-sum-exp of each group: ``out[b, j, f] = log(sum(exp(src[b, k, f]) for k with index[k] == j))``.

    pytorch_scatter's ``scatter_logsumexp``; per group it equals ``scipy.special.logsumexp``. Computed as
    ``m + log(sum(exp(src - m)))`` with m the group maximum (from the core max kernel), so it neither
    overflows nor underflows for large ``|src|`` (1e4 in float32 is fine).

    Parameters
    ----------
    {group_args_broadcast}
    out : ndarray, optional
        An array of exactly the result's shape B + D + F and dtype (byte order aside) that receives the result
        and is returned (NumPy's ``out=``); its values are not read. With `out` and no `dim_size`, D is read off
        `out`'s shape. pytorch_scatter's ``out=`` differs: its values join each group as further members (use
        ``np.logaddexp(out, scatter_logsumexp(...))`` for that). A wrong shape raises ValueError, a wrong dtype
        or a non-array TypeError, a read-only `out` ValueError, all naming `out`; on any error `out` is left as
        it was.

    Returns
    -------
    out : ndarray, shape B + D + F
        Float dtype of `src` (float64 for integers). Empty groups, and groups whose members are all -inf,
        give -inf (the log of an empty sum, as scipy); a +inf member gives +inf, a NaN member NaN.

    Raises
    ------
    {raises}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_logsumexp(np.array([0., 0., 1e4]), np.array([0, 0, 2]))
    array([6.93147181e-01,           -inf, 1.00000000e+04])
    """
    if porting:
        raise unexpected_keywords("scatter_logsumexp", porting)
    dim_size, dims_arg = sizes_of_out(out, index, axis, dim_size)
    ctx, result, batch, feat = group_view("scatter_logsumexp", src, index, dim_size, axis, mode,
                                          dims_arg=dims_arg, layout=True, contiguous=True)
    target = None if out is None else _check_out(ctx, out, dst_shape(ctx, batch, feat), result)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        lse = logsumexp3(ctx).astype(result, copy=False)
    return _finish(lse.reshape(dst_shape(ctx, batch, feat)), target, out)


@_softmax_doc
def scatter_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                    mode: Mode = "raise", out: Any = None, **porting: object) -> Any:
    """Softmax within each group: ``out[b, k, f] = exp(src[b, k, f] - m) / sum(exp(src[b, k', f] - m))`` over
    the members k' of k's group (``index[k'] == index[k]``), m the group maximum.

    pytorch_scatter's ``scatter_softmax`` (and the attention weights of graph networks). Subtracting the group
    maximum keeps ``exp`` in range, so inputs of +-1e4 neither overflow nor underflow.

    Parameters
    ----------
    {group_args}
    out : ndarray, optional
        An array of exactly `src`'s shape and the result dtype (byte order aside) that receives the result and
        is returned (NumPy's ``out=``); its values are not read, so ``out=src`` computes in place (a float
        `src` of the result dtype). A wrong shape raises ValueError, a wrong dtype or a non-array TypeError, a
        read-only `out` ValueError, all naming `out`; on any error `out` is left as it was.

    Returns
    -------
    out : ndarray, shape B + I + F (the shape of `src`)
        Float dtype of `src` (float64 for integers); each group sums to 1.

    Raises
    ------
    {raises}

    Notes
    -----
    {nonfinite}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_softmax(np.array([1e4, 1e4, -1e4, 3.]), np.array([0, 0, 1, 1]))
    array([0.5, 0.5, 0. , 1. ])
    """
    if porting:
        raise unexpected_keywords("scatter_softmax", porting)
    ctx, result, batch, feat = group_view("scatter_softmax", src, index, dim_size, axis, mode,
                                          broadcast=False)
    target = None if out is None else _check_out(ctx, out, src_shape(ctx, batch, feat), result)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        probs = softmax3(ctx, result)
    return _finish(probs.reshape(src_shape(ctx, batch, feat)), target, out)


@_softmax_doc
def scatter_log_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                        mode: Mode = "raise", out: Any = None, **porting: object) -> Any:
    """Log-softmax within each group: ``out[b, k, f] = src[b, k, f] - m - log(sum(exp(src[b, k', f] - m)))``
    over the members k' of k's group, m the group maximum.

    pytorch_scatter's ``scatter_log_softmax``. More accurate than ``log(scatter_softmax(...))`` for small
    probabilities (it never rounds them to 0 first).

    Parameters
    ----------
    {group_args}
    out : ndarray, optional
        An array of exactly `src`'s shape and the result dtype (byte order aside) that receives the result and
        is returned (NumPy's ``out=``); its values are not read, so ``out=src`` computes in place (a float
        `src` of the result dtype). A wrong shape raises ValueError, a wrong dtype or a non-array TypeError, a
        read-only `out` ValueError, all naming `out`; on any error `out` is left as it was.

    Returns
    -------
    out : ndarray, shape B + I + F (the shape of `src`)
        Float dtype of `src` (float64 for integers).

    Raises
    ------
    {raises}

    Notes
    -----
    {nonfinite}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_log_softmax(np.array([0., 0., -np.inf, 5.]), np.array([0, 0, 1, 1]))
    array([-0.69314718, -0.69314718,        -inf,  0.        ])
    """
    if porting:
        raise unexpected_keywords("scatter_log_softmax", porting)
    ctx, result, batch, feat = group_view("scatter_log_softmax", src, index, dim_size, axis, mode,
                                          broadcast=False, layout=True, contiguous=True)
    target = None if out is None else _check_out(ctx, out, src_shape(ctx, batch, feat), result)
    with sized_by(*size_arg(dim_size, ctx.plan)):
        probs = log_softmax3(ctx, result)
    return _finish(probs.reshape(src_shape(ctx, batch, feat)), target, out)
