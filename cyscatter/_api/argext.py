"""scatter_argmax and scatter_argmin: the position of each group's max/min winner."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.gather import gather
from cyscatter._api.scatter import scatter
from cyscatter._arrays.integers import prod
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends.chunks import chunked_source
from cyscatter._backends.context import Reverse
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.index import check_table_bytes, index_shape, parse_coords, plan_index, sized_by
from cyscatter._plan.layout import expand_cast, expand_src, src_layout
from cyscatter._plan.values import fill_for, size_arg
from cyscatter._registry.ops import get_op

if TYPE_CHECKING:
    from typing import Any, Callable, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, _FuncT


def with_fill(arg, n: int, fill):
    """`arg` with the empty-group sentinel `n` replaced by `fill` (from `fill_for`; None: kept), in place."""
    if fill is not None and int(fill) != n:
        arg[arg == n] = fill[()]
    return arg


def _scatter_arg(name: str, src, index, dim_size, axis, mode, fill_value=None):
    be = backend_of(src=src, index=index)
    fill = fill_for(fill_value, np.int64, be.xp)
    if be.arg_winners is None:   # a backend without a winners kernel (the GPU): composed from scatter and gather
        arg = _scatter_arg_by_scatter(be, name, src, index, dim_size, axis, mode)
        return with_fill(arg, prod(index_shape(parse_coords(index, be=be))), fill)
    op = get_op(name)
    src = be.asarray(src)
    try:
        compute = op.compute_dtype(op.result_dtype(src.dtype))
    except TypeError as err:   # the registry names the op; the caller called a function of its own
        fun = f"scatter_{'nan' if op.skips_nan else ''}arg{'max' if op.larger_wins else 'min'}"
        raise TypeError(str(err).replace(f"op {op.name!r}", fun)) from None
    coords = parse_coords(index, be=be)
    axis, batch, feat, expected = src_layout(src.shape, coords, axis)
    src = expand_cast(src, expected, len(feat), compute, be.xp)
    plan = plan_index(index, dim_size, mode, coords=coords)
    outer, inner = prod(batch), prod(feat)
    sized = size_arg(dim_size, plan)
    check_table_bytes((outer, plan.size, inner), np.int64, *sized)
    source = chunked_source(src, compute, outer, plan.n, inner)
    with sized_by(*sized):
        if source is not None:
            arg = _chunked_winners(be, op, source, plan, compute)
        else:
            _, arg = be.arg_winners(op, be.rows_view(src, compute, outer, plan.n, inner), plan, plan.size)
    return with_fill(arg, plan.n, fill).reshape(batch + plan.dims + feat)


def _chunked_winners(be, op, source, plan, compute):
    """`arg_winners`' positions for a src read in place (float16/bfloat16, `chunked_source`), with no n x F
    float32 copy: each group's max/min (fmax/fmin) by the staged scatter, then, a chunk of converted rows at a
    time, the smallest position of a member tied with it (equal, zeros of the same sign, NaN with NaN unless the
    op skips NaN) by a scatter "min". The kernel replaces its winner only by a strictly better member, so its
    winner is that first tied member: the same positions, and an empty or (fmax/fmin) all-NaN group has none."""
    ctx = Reverse(be, plan, None, None, None, dtype=compute, source=source)
    best = ctx.put_src(op, op.identity(compute))
    arg = np.full(best.shape, plan.n, np.int64)
    for rows, part, rows3 in ctx.src_chunks():
        taken = ctx.take(best, part)
        wins = (rows3 == taken) & (np.signbit(rows3) == np.signbit(taken))
        if not op.skips_nan:
            wins |= np.isnan(rows3) & np.isnan(taken)
        wins &= part.valid()[None, :, None]
        positions = np.where(wins, np.arange(rows.start, rows.stop, dtype=np.int64)[None, :, None], plan.n)
        be.run_scatter(get_op("min"), positions, part, arg)
    return arg


def _scatter_arg_by_scatter(be, name, src, index, dim_size, axis, mode):
    """`_scatter_arg` from the public scatter and gather, for a backend without a winners kernel (the GPU): each
    group's extreme by scatter, its winners are the members equal to it (NaN equal to NaN, and the sign of a zero
    must match, as -0.0 == +0.0 numerically), and a scatter "min" of the winners' positions picks the smallest
    one whatever order the atomics run in.
    For fmax/fmin (nanargmax/nanargmin) the extreme is never NaN (an all-NaN group keeps the identity), so a NaN
    member never wins and an all-NaN group has no winner: it is an empty group."""
    xp = be.xp
    src = be.asarray(src)
    coords = parse_coords(index, be=be)
    axis, batch, feat, expected = src_layout(src.shape, coords, axis)
    src = expand_src(src, expected, len(feat), xp)
    extreme = scatter(src, index, name, dim_size=dim_size, axis=axis, mode=mode)
    mine = gather(extreme, index, axis=axis, mode=mode)   # dropped entries get 0: the final scatter drops them
    wins = mine == src
    if src.dtype.kind == "f":
        wins = (wins & (xp.signbit(mine) == xp.signbit(src))) | (xp.isnan(mine) & xp.isnan(src))
    ishape = src.shape[len(batch):src.ndim - len(feat)]
    n = prod(ishape)
    positions = xp.arange(n, dtype=np.int64).reshape((1,) * len(batch) + ishape + (1,) * len(feat))
    candidates = xp.where(wins, positions, np.int64(n))
    dims = extreme.shape[len(batch):extreme.ndim - len(feat)]
    return scatter(candidates, index, "min", dim_size=dims, axis=axis, mode=mode, fill_value=n)


_DOC = """Position of each group's {which} winner: ``out[b, j, f] = k`` of the winning ``src[b, k, f]`` with
    ``index[k] == j``.

    The second result of pytorch_scatter's ``scatter_{which}`` (whose empty-group sentinel is n too), but
    deterministic: the winner follows the rules of ``scatter(..., "{which}")`` (NaN wins, {zero}) and
    ties go to the *smallest* position whatever the order of the updates (pytorch_scatter leaves ties on
    the GPU to timing). CuPy arrays get the same integers: there the group {which} comes from
    ``scatter(..., "{which}")``, its winners are the members equal to it (NaN to NaN, a zero of the same sign),
    and a ``scatter(..., "min")`` of the winners' positions picks the smallest, whatever order the atomics
    take.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Integers or floats (complex has no order and raises TypeError).
    {{index}}
    dim_size : int or tuple of m ints, optional
        Destination shape D. Default: the largest entry + 1 per coordinate.
    {{axis}}
    fill_value : int, optional
        Position given to empty groups instead of the sentinel ``n`` (e.g. -1, as numpy_groupies'
        ``aggregate(..., func="argmax", fill_value=-1)``). Checked as ``scatter``'s `fill_value` for an int64
        output: an integer, or a float that is an exact integer (2.0); 2.5, strings, arrays raise TypeError,
        values out of the int64 range ValueError.
    {{mode}}

    Returns
    -------
    out : int64 ndarray (NumPy or CuPy, as `src`), shape B + D + F
        Positions k in ``range(n)``, ``n = prod(I)``: the flat (C-order) position of the winner in the index,
        i.e. along the index dims of `src` (``np.unravel_index(k, I)`` for an n-d index). Empty groups, and
        groups whose every entry was dropped, get `fill_value`, by default the sentinel ``n``, which is never a
        valid position.

    Raises
    ------
    {{raises}}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_arg{which}(np.array([{example}]), np.array([0, 0, 2, 0]))
    array([{result}])
    """


def arg_doc(which: str, zero: str, example: str, result: str, template: str = _DOC) -> Callable[[_FuncT], _FuncT]:
    """Fill `template` for argmax or argmin (also used by cyscatter.dask)."""
    def decorate(func: _FuncT) -> _FuncT:
        func.__doc__ = template.format(which=which, zero=zero, example=example, result=result)
        return fill_doc(func)
    return decorate


@arg_doc("max", "+0.0 beats -0.0", "3., 5., 1., 5.", "1, 4, 2")
def scatter_argmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                   fill_value: SupportsIndex | float | None = None, mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_argmax", porting)
    return _scatter_arg("max", src, index, dim_size, axis, mode, fill_value)


@arg_doc("min", "-0.0 beats +0.0", "3., 5., 1., 3.", "0, 4, 2")
def scatter_argmin(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                   fill_value: SupportsIndex | float | None = None, mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_argmin", porting)
    return _scatter_arg("min", src, index, dim_size, axis, mode, fill_value)


_NAN_DOC = """Position of each group's {which} winner among its non-NaN members: numpy_groupies'
    ``aggregate(..., func="nan{which}")`` and NumPy's ``np.nan{which}`` per group.

    As `scatter_{which}` (ties to the smallest position, {zero}, `fill_value`, modes, CuPy), with
    the NaN entries (complex has no order) left out: the winner is that of the NaN-skipping scatter op
    (``"nanmax"``/``"nanmin"``, NumPy's ``np.fmax``/``np.fmin``). A group whose members are all NaN is an
    empty group and gets `fill_value` (by default the sentinel ``n``), as numpy_groupies gives its fill_value
    there; NumPy's ``np.nan{which}`` raises ValueError on an all-NaN slice instead. Integers have no NaN: the
    result is `scatter_{which}`'s.
    A separate function, not a ``skipna=`` argument, because that is how both peers spell it (``np.nanargmax``,
    ``func="nanargmax"``), next to the ``"nansum"``/``"nanmax"`` ops.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Integers or floats (complex raises TypeError).
    {{index}}
    dim_size : int or tuple of m ints, optional
        Destination shape D. Default: the largest entry + 1 per coordinate.
    {{axis}}
    fill_value : int, optional
        Position given to empty and all-NaN groups instead of the sentinel ``n``.
    {{mode}}

    Returns
    -------
    out : int64 ndarray (NumPy or CuPy, as `src`), shape B + D + F
        Positions k in ``range(n)`` (flat, C order, along the index dims) of non-NaN winners; `fill_value` or
        ``n`` where a group has no non-NaN member.

    Raises
    ------
    {{raises}}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_nan{which}(np.array([{example}]), np.array([0, 0, 2, 0, 2]))
    array([{result}])
    """


@arg_doc("argmax", "+0.0 beats -0.0", "3., np.nan, 1., 5., np.nan", "3, 5, 2", _NAN_DOC)
def scatter_nanargmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None,
                      axis: SupportsIndex = 0, fill_value: SupportsIndex | float | None = None,
                      mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_nanargmax", porting)
    return _scatter_arg("fmax", src, index, dim_size, axis, mode, fill_value)


@arg_doc("argmin", "-0.0 beats +0.0", "3., np.nan, 1., 5., np.nan", "0, 5, 2", _NAN_DOC)
def scatter_nanargmin(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = None,
                      axis: SupportsIndex = 0, fill_value: SupportsIndex | float | None = None,
                      mode: Mode = "raise", **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_nanargmin", porting)
    return _scatter_arg("fmin", src, index, dim_size, axis, mode, fill_value)
