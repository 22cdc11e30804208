"""scatter_quantile, scatter_nanquantile and the median ops: per-group order statistics by one sort.

The entries are sorted by (group, value) on each column of the canonical (outer, n, inner) view (a value argsort,
NaN last as ``np.sort``, then a stable argsort by group), so every group is a run of sorted values starting at the
exclusive cumulative sum of the group counts. A quantile reads one or two positions of that run and interpolates
with NumPy's own formulas (``numpy.lib._function_base_impl._lerp`` for quantiles, ``np.mean`` of the middle pair
for the median), in the same dtypes, so the results are NumPy's per group bit for bit. The reverse functions
(`cyscatter._reverse.quantile`) read the same sort: `selection_weights`.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from cyscatter._arrays.dtypes import float_kind, native
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.groups import dst_shape, group_view, sizes_of_out
from cyscatter._plan.index import sized_by
from cyscatter._plan.values import fill_for, size_arg

if TYPE_CHECKING:
    from typing import Any, Callable, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, _FuncT

# NumPy's names; the other H&F methods of np.quantile (weibull, hazen, ...) are not offered
METHODS = ("linear", "lower", "higher", "nearest", "midpoint")
# methods that pick one member: the result keeps an integer src's dtype, as np.quantile does
_PICKING = ("lower", "higher", "nearest")
# the op names `scatter`, `segment` and `gather_scatter` take (see `cyscatter._registry.ops.ORDER_STATS`)
MEDIAN = "median"


def check_method(method) -> str:
    if method == MEDIAN or not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    return method


def check_q(q) -> tuple[np.ndarray, bool]:
    """(q as a float64 vector, whether q was a scalar); ValueError/TypeError naming `q` otherwise."""
    if hasattr(q, "__cuda_array_interface__"):   # a CuPy array: its few values, on the host
        q = q.get()
    try:
        arr = np.asarray(q)
    except (TypeError, ValueError):   # ragged sequences and objects NumPy cannot read
        raise TypeError(f"q must be a real number or a 1-d sequence of them, got {q!r}") from None
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"q must be a real number or a 1-d sequence of them, got {q!r}")
    if arr.ndim > 1:
        raise ValueError(f"q must be a scalar or 1-d, got shape {arr.shape}")
    vec = arr.astype(np.float64).reshape(-1)
    if not ((vec >= 0) & (vec <= 1)).all():   # NaN fails too
        raise ValueError(f"q must lie in [0, 1], got {q!r}")
    return vec, arr.ndim == 0


def result_dtype(dtype, method: str, name: str) -> np.dtype:
    """NumPy's result dtype of ``np.quantile(group, q, method=method)`` for a Python float q (``np.median``
    for the median): a float src keeps its dtype, an integer src gives float64 where values are interpolated
    and its own dtype where one member is picked; complex and bool raise TypeError naming `name`."""
    dtype = native(dtype)
    if dtype.kind in "iu":
        return dtype if method in _PICKING else np.dtype(np.float64)
    if float_kind(dtype) == "f":
        return dtype
    raise TypeError(f"{name} does not support src dtype {dtype} (supported: integers, float16/32/64, bfloat16)")


# ---- the sort and the positions ----------------------------------------------------------------------------------

class Sorted:
    """src (outer, n, inner) sorted by (group, value) per column, each column contiguous: `values` and `perm`
    (the entry at each sorted position) of shape (outer, inner, n), `keys` (n,) the group of each entry (size for a
    dropped one, which sorts last), `starts` (size,) of each group's run and `counts` (size,) of its kept entries,
    and the members each output element takes (`members`, (outer, size, inner): the counts, less the NaN entries
    when skipping NaN) with `has_nan` (the element holds a NaN and skips none: NumPy's NaN result), None for
    integer src. `values3`: src's values to sort in place of `ctx.src3`, in a dtype that orders and ties them as
    it does (a float16/bfloat16 src as it is, for the reverse functions: no converted copy)."""

    def __init__(self, ctx, skip_nan: bool, values3=None):
        xp, plan = ctx.xp, ctx.plan
        src3 = ctx.src3 if values3 is None else values3
        self.xp = xp
        valid = plan.valid()
        self.keys = keys = xp.where(valid, plan.flat, plan.size).astype(np.int64)
        columns = xp.ascontiguousarray(xp.moveaxis(src3, 1, 2))   # a sort along contiguous rows: 2x faster
        perm = xp.argsort(columns, axis=2)   # NaN last, as np.sort
        # then stably by group: least significant 16-bit digit first, each pass a radix sort (NumPy's stable sort
        # of 16-bit keys; its stable sort of wider ones is a timsort, 15x slower)
        shift = 0
        while shift == 0 or plan.size >> shift:
            digit = ((keys >> shift) & 0xFFFF).astype(np.uint16)[perm]
            perm = xp.take_along_axis(perm, xp.argsort(digit, axis=2, kind="stable"), axis=2)
            shift += 16
        self.perm, self.columns = perm, columns
        self.counts = xp.bincount(keys[valid], minlength=plan.size)[:plan.size]
        self.starts = xp.cumsum(self.counts) - self.counts
        counts3 = self.counts[None, :, None]
        self.members, self.has_nan = counts3, None
        if src3.dtype.kind == "f" or float_kind(src3.dtype) == "f":
            nans = ctx.put(xp.isnan(src3).astype(np.int64))
            if skip_nan:
                self.members = counts3 - nans
            else:
                self.has_nan = nans > 0

    def take(self, sorted_array, rel):
        """`sorted_array` (outer, inner, n: values, perm, or anything laid out as they are) at positions `rel`
        (outer, size, inner) of each group's run, as (outer, size, inner); clamped into the array (an empty group
        reads a neighbour's, which the caller replaces)."""
        xp = self.xp
        n = sorted_array.shape[2]
        pos = self.starts[None, :, None] + rel
        if n == 0:   # no entries: every group is empty
            return xp.zeros(pos.shape, sorted_array.dtype)
        pos = xp.moveaxis(xp.clip(pos, 0, n - 1), 1, 2)
        return xp.moveaxis(xp.take_along_axis(sorted_array, pos, axis=2), 2, 1)

    @cached_property
    def values(self):
        """The sorted values, (outer, inner, n) (the reverse functions read them all; a quantile reads a few)."""
        return self.xp.take_along_axis(self.columns, self.perm, axis=2)

    def at(self, rel):
        """The sorted values at positions `rel` of each group's run (see `take`): the entries `perm` names there."""
        if self.columns.shape[2] == 0:   # no entries: every group is empty
            return self.xp.zeros(rel.shape, self.columns.dtype)
        entries = self.xp.moveaxis(self.take(self.perm, rel), 1, 2)
        return self.xp.moveaxis(self.xp.take_along_axis(self.columns, entries, axis=2), 2, 1)


def positions(xp, n, q: float, method: str):
    """(lo, hi, t) of NumPy's quantile over n members: the 0-based positions of the two neighbours in the
    sorted run and the float64 interpolation weight (np.quantile's ``_get_indexes`` and ``_get_gamma``,
    including their gamma of ``virtual + 1`` at the top end); t is None for a method that picks one member."""
    virtual = (n - 1) * q
    if method in _PICKING:
        rounded = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.around}[method](virtual)
        pick = rounded.astype(np.int64)
        return pick, pick, None
    if method == MEDIAN:   # np.median: the middle member, or the middle pair (its weights are the reverse's)
        lo, hi = (n - 1) // 2, n // 2
        return lo, hi, xp.where(lo == hi, 0.0, 0.5)
    if method == "midpoint":
        virtual = 0.5 * (xp.floor(virtual) + xp.ceil(virtual))
    previous = xp.floor(virtual)
    above = virtual >= n - 1
    previous = xp.where(above, -1.0, previous)
    gamma = virtual - previous
    if method == "midpoint":
        gamma = xp.where(virtual % 1 == 0, 0.0, 0.5)
    lo = xp.where(above, n - 1, previous.astype(np.int64))
    hi = xp.where(above, n - 1, lo + 1)
    return lo, hi, gamma


def _lerp(xp, a, b, t, dtype):
    """np.quantile's ``_lerp`` with its weak Python-float weight: t (and 1 - t, taken in float64) cast to the
    value dtype, every step in that dtype."""
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    diff = b - a
    out = a + diff * t.astype(dtype)
    return xp.where(t >= 0.5, b - diff * (1 - t).astype(dtype), out)


def _mean_pair(xp, a, b, dtype):
    """np.mean of the middle pair (np.median): float16 summed in float32 and rounded once, integers in float64."""
    acc = np.dtype(np.float32) if dtype == np.float16 else dtype
    return ((a.astype(acc) + b.astype(acc)) / acc.type(2)).astype(dtype)


def quantile3(ctx, qs, method: str, skip_nan: bool, result, fill):
    """(nq, outer, size, inner) quantiles of each group of ctx, in `result`; empty groups get `fill`."""
    xp = ctx.xp
    srt = Sorted(ctx, skip_nan)
    n = srt.members
    shape3 = (ctx.src3.shape[0], ctx.plan.size, ctx.src3.shape[2])
    n = xp.broadcast_to(n, shape3)
    out = xp.empty((len(qs),) + shape3, result)
    last = srt.at(n - 1) if srt.has_nan is not None else None
    for i, q in enumerate(qs):
        lo, hi, t = positions(xp, n, float(q), method)
        a = srt.at(lo)
        if t is None:
            value = a.astype(result, copy=False)
        elif method == MEDIAN:   # + 0: np.median's mean starts its sum at +0.0, so a zero median is never -0.0
            value = _mean_pair(xp, a, srt.at(hi), result) + result.type(0)
        else:
            value = _lerp(xp, a, srt.at(hi), t, result)
        if last is not None:   # a NaN member: NumPy's result is the NaN that sorts last
            value = xp.where(srt.has_nan, last.astype(result, copy=False), value)
        out[i] = xp.where(n > 0, value, fill)
    return out


def default_fill(result, fill_value, xp):
    """`fill_value` in the result dtype; by default NaN for a float result (``np.quantile`` of an empty group)
    and 0 for an integer one (numpy_groupies' fill)."""
    fill = fill_for(fill_value, result, xp)
    if fill is None:
        fill = xp.asarray(np.nan if result.kind == "f" or float_kind(result) == "f" else 0, dtype=result)
    return fill


def order_stat(name, src, index, qs, method, skip_nan, dim_size, axis, mode, fill_value, *, scalar=False,
               dtype=None, out=None, dims_from_out=False):
    """The quantiles of each group, B + D + F for a `scalar` q, else (nq,) + B + D + F, in NumPy's result dtype
    (see `result_dtype`); written into `out` (checked before anything is computed) when given, D read off it
    without `dim_size` where `dims_from_out` (`scatter`'s rule; scatter_quantile's `out` must fit the index)."""
    be = backend_of(src=src, index=index)
    arr = be.asarray(src)
    if dtype is not None:
        dtype = native(np.dtype(dtype))
        if not np.can_cast(arr.dtype, dtype, "same_kind"):
            raise TypeError(f"dtype={dtype} for {name}: cannot cast src dtype {arr.dtype} to it (same_kind)")
        arr = arr.astype(dtype)
    result = result_dtype(arr.dtype, method, name)
    dim_size, dims_arg = sizes_of_out(out if dims_from_out else None, index, axis, dim_size,
                                      lead=0 if scalar else 1)
    ctx, _, batch, feat = group_view(name, arr, index, dim_size, axis, mode, compute=native(arr.dtype),
                                     dims_arg=dims_arg)
    fill = default_fill(result, fill_value, ctx.xp)
    shape = dst_shape(ctx, batch, feat)
    if not scalar:
        shape = (len(qs),) + shape
    if out is not None:
        check_out(out, shape, result, be)
    with sized_by(*size_arg(dim_size, ctx.plan)), np.errstate(invalid="ignore", over="ignore"):
        values = quantile3(ctx, qs, method, skip_nan, result, fill).reshape(shape)
    if out is None:
        return values
    be.xp.copyto(out, values)
    return out


def check_out(out, shape, dtype, be):
    """`out` must be a writeable array of this backend with exactly `shape` and `dtype` (byte order aside)."""
    if not isinstance(out, be.xp.ndarray):
        raise TypeError(f"out must be an array of the arguments' library, got {type(out).__name__}")
    if native(out.dtype) != dtype:
        raise TypeError(f"out dtype {out.dtype} != the result dtype {dtype}")
    if tuple(out.shape) != shape:
        raise ValueError(f"out shape {tuple(out.shape)} != the result shape {shape}")
    be.check_writable(out, "out")


# ---- public functions --------------------------------------------------------------------------------------------

_DOC = """{title}

    Per group, NumPy's ``np.{numpy}(group, q, method=method)`` with `q` a Python float{nan_text}, bit for bit
    (the member or members are found by one sort by (group, value), then interpolated with NumPy's own
    formula in the same dtype); torch's ``quantile`` (its methods are NumPy's) and PyG's ``QuantileAggregation``
    (``interpolation=``) per group.

    Parameters
    ----------
    src : array_like, shape B + I + F, or broadcastable to it along I
        Real values: integers, float16/32/64 or bfloat16 (complex and bool raise TypeError).
    {{index}}
    q : float or 1-d sequence of floats in [0, 1]
        The quantile(s). A sequence of Q values puts its axis first in the result, as ``np.quantile`` and
        ``torch.quantile`` do.
    method : {{{{"linear", "lower", "higher", "nearest", "midpoint"}}}}, default "linear"
        NumPy's methods of the same names (NumPy's other H&F methods are not offered): "linear" interpolates
        ``a + (b - a) * t`` (``b - (b - a) * (1 - t)`` for ``t >= 0.5``, as NumPy), "midpoint" takes
        ``t = 0.5``, the others pick one member ("nearest": round half to even, as ``np.around``).
    {{dim_size}}
    {{axis}}
    fill_value : scalar, optional
        Value of the groups with no{member} members. Default NaN for a float result (``np.quantile`` of an
        empty array), 0 for an integer one (numpy_groupies' fill); cast with NumPy's ``same_kind`` rule.
    {{mode}}
    out : ndarray, optional
        Receives the result: exactly its shape and dtype, writeable (checked before anything is computed).

    Returns
    -------
    out : ndarray, shape B + D + F for a scalar `q`, else (Q,) + B + D + F
        The dtype of `src` for floats (float16 computed in float16, as NumPy does with a Python float q; an
        array q in ``np.quantile`` would promote float16/32 to float64); for integers float64, or the integer
        dtype itself with "lower", "higher" and "nearest" (NumPy's rule). Integers are converted to float64
        before interpolating, so ``b - a`` never wraps around (NumPy subtracts in the integer dtype:
        ``np.quantile(np.int8([-100, 100]), 0.5)`` is 128.0; here 0.0).{nan_rule}

    Raises
    ------
    {{raises}}
    ValueError
        Also for a `q` outside [0, 1] or of more than one dim, an unknown `method`, a wrong `out` shape.
    TypeError
        Also for a complex or bool `src`, a non-real `q`, a wrong `out` dtype.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src, index = np.array([1., 7., 3., {example_value}, 5.]), np.array([0, 0, 0, 2, 2])
    >>> cs.scatter_{numpy}(src, index, 0.5)
    array([{example_out}])
    >>> cs.scatter_{numpy}(src, index, [0.0, 1.0], method="lower")
    array([{example_2}])
    """


def _quantile_doc(title: str, numpy: str, nan_text: str, member: str, nan_rule: str, example_value: str,
                  example_out: str, example_2: str) -> Callable[[_FuncT], _FuncT]:
    def decorate(func: _FuncT) -> _FuncT:
        func.__doc__ = _DOC.format(title=title, numpy=numpy, nan_text=nan_text, member=member, nan_rule=nan_rule,
                                   example_value=example_value, example_out=example_out, example_2=example_2)
        return fill_doc(func)
    return decorate


@_quantile_doc("Quantile of each group: ``out[b, j, f] = np.quantile(src[b, index == j, f], q, method=method)``.",
               "quantile", "", "", " A group holding a NaN gives NaN (NumPy's rule).", "4.",
               "3. , nan, 4.5", "[ 1., nan,  4.],\n           [ 7., nan,  5.]")
def scatter_quantile(src: ArrayInput, index: IndexLike, q: Any = 0.5, *, method: str = "linear",
                     dim_size: DimSize | None = None, axis: SupportsIndex = 0, fill_value: FillValue | None = None,
                     mode: Mode = "raise", out: Any = None, **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_quantile", porting)
    qs, scalar = check_q(q)
    return order_stat("scatter_quantile", src, index, qs, check_method(method), False, dim_size, axis, mode,
                      fill_value, scalar=scalar, out=out)


@_quantile_doc("Quantile of each group's non-NaN members: `scatter_quantile` with NaN entries left out.",
               "nanquantile", " over the non-NaN members (``np.nanquantile``)", " non-NaN",
               " An element whose members are all NaN is an empty group (`fill_value`), as numpy_groupies; "
               "``np.nanquantile`` gives NaN with a warning.", "np.nan", " 3., nan,  5.",
               "[ 1., nan,  5.],\n           [ 7., nan,  5.]")
def scatter_nanquantile(src: ArrayInput, index: IndexLike, q: Any = 0.5, *, method: str = "linear",
                        dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                        fill_value: FillValue | None = None, mode: Mode = "raise", out: Any = None,
                        **porting: object) -> Any:
    if porting:
        raise unexpected_keywords("scatter_nanquantile", porting)
    qs, scalar = check_q(q)
    return order_stat("scatter_nanquantile", src, index, qs, check_method(method), True, dim_size, axis, mode,
                      fill_value, scalar=scalar, out=out)


def median(src, index, skip_nan: bool, *, dim_size=None, axis=0, fill_value=None, mode="raise", dtype=None,
           out=None, name="scatter"):
    """`scatter`'s op "median" ("nanmedian" with `skip_nan`): ``np.median`` (``np.nanmedian``) of each group."""
    return order_stat(name, src, index, np.array([0.5]), MEDIAN, skip_nan, dim_size, axis, mode, fill_value,
                      scalar=True, dtype=dtype, out=out, dims_from_out=True)
