"""Reverse-mode rules of every op, on the canonical (outer, rows, inner) view: `RULES`, one `Rules` per family that
an op's `Op.rule` names.

Each rule gets a `Reverse` context and the cotangent of the output, and returns the cotangent of src
(``vjp_src``: shape (outer, n, inner)) or of the initial destination (``vjp_dst``: (outer, size, inner)).
The conventions, decided here once:
- mean divides by the group size, sqrt_n by its square root; empty groups pass nothing (never NaN);
- mul uses the exact product of the *other* members of the group (prefix x suffix products), so zeros in a
  group give the right gradient; no division by src;
- max/min split the cotangent evenly among all tied winners, the initial dst value counting as a candidate
  (central finite differences agree; autograd's own ``np.max`` does the same);
- entries dropped under mode="drop" get zero; positions an allocating scatter filled pass nothing;
- assignments (set / last, first) pass a row's cotangent to its winning entry only (the last / first entry in
  index order that reached it), and to the initial dst only where no entry reached the row.
- the NaN-skipping ops (nansum, nanprod, nanmean, fmax, fmin) are their twins over the non-NaN entries: a NaN
  src entry gets zero; nanmean divides by the element's non-NaN count; fmax/fmin's winners are non-NaN (a NaN
  initial dst is never one: fmax replaced it), ties split as max/min's.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cyscatter import fused_kernels, kernels
from cyscatter._backends import assign as _assign
from cyscatter._backends import host as _canonical
from cyscatter._backends.context import Reverse
from cyscatter._registry.ops import get_op


def _winners(xp, a: np.ndarray, best: np.ndarray, skip_nan: bool = False) -> np.ndarray:
    """Entries equal to the reduced value; -0.0 and +0.0 are not equal here (the forward pass orders them).
    NaN entries win a NaN result under max/min, never under fmax/fmin (`skip_nan`)."""
    same = a == best
    if a.dtype.kind == "f":
        same &= xp.signbit(a) == xp.signbit(best)
    return same if skip_nan else same | (xp.isnan(a) & xp.isnan(best))


def _win_counts(ctx: Reverse, skip_nan: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(src winner mask, winners per destination, dst winner mask or None) for max/min (fmax/fmin: `skip_nan`)."""
    src3, out3, dst3 = ctx.exact or (ctx.src3, ctx.out3, ctx.dst3)
    src_win = _winners(ctx.xp, src3, ctx.take(out3), skip_nan) & ctx.valid3()
    nwin = ctx.put(src_win.astype(ctx.dtype))
    dst_win = None
    if dst3 is not None:
        # a NaN dst still holds a NaN result under fmax/fmin: that result is dst's, as on a row no entry reached
        dst_win = _winners(ctx.xp, dst3, out3)
        nwin += dst_win
    return src_win, nwin, dst_win


def _by_destination(ctx):
    """The entries grouped by output row (CSR: indptr, positions), dropped entries left out."""
    flat = np.ascontiguousarray(ctx.plan.flat, dtype=np.int64)
    positions = np.arange(flat.shape[0], dtype=np.int64)
    _, indptr, _, cols = fused_kernels.csr(flat, ctx.plan.size, positions, flat.shape[0], True)
    return indptr, cols


_NONE, _NO_WEIGHT = np.zeros(0, np.int64), {np.dtype(t): np.zeros((0, 1), t) for t in (np.float32, np.float64)}
# the half-precision srcs the selection kernels widen row by row themselves (kernels.StageCode's codes)
_WIDENED = {"float16": 1, "bfloat16": 2}


def _half_source(ctx):
    """(code, its bits as (outer, n, inner) uint16) for a float16/bfloat16 src still read in place that the CPU
    kernels widen a row at a time themselves (`fused_kernels.extreme_ties_half` and its siblings: each row
    converted exactly to the derivative dtype in a stack buffer, the values of the whole conversion without
    that n x F copy), else None. A src whose row elements lie apart (Fortran order) has its bits copied, a
    quarter of a float64 copy."""
    code = _WIDENED.get(ctx.source.array.dtype.name) if ctx.in_place else None
    if code is None or not ctx.be.fused_reverse or ctx.dtype not in (np.float32, np.float64):
        return None
    return code, _canonical._unit_inner_stride(ctx.source.array.view(np.uint16))


def _selection_src(ctx):
    """src as the selection kernels read it: `_half_source`'s pair, else (0, src3 C-contiguous)."""
    half = _half_source(ctx)
    return (0, np.ascontiguousarray(ctx.src3)) if half is None else half


def _selection_inputs(ctx, select: str):
    """(src, indptr, cols, dst3) for the selection kernels: src as `_selection_src` gives it, its entries grouped
    by output row, and the initial dst (a candidate of max/min and their twins; None for "present" or without
    one) in the derivative dtype."""
    src = _selection_src(ctx)
    indptr, cols = _by_destination(ctx)
    dst3 = None if ctx.dst3 is None or select == "present" else np.ascontiguousarray(ctx.dst3, dtype=ctx.dtype)
    return src, indptr, cols, dst3


def _ties_pass(src, indptr, cols, out3, g3, tangent3, result, dst3, select: str, average: bool = True) -> None:
    """`fused_kernels.extreme_ties` without weights (share mode, or tangent mode with `tangent3`), on src as
    `_selection_src` gives it."""
    code, s3 = src
    select = fused_kernels.SELECT_CODES[select]
    if code:
        fused_kernels.extreme_ties_half(code, s3, indptr, cols, out3, g3, out3 if tangent3 is None else tangent3,
                                        tangent3 is not None, result, 0, dst3, select=select, average=average)
        return
    no_weight = _NO_WEIGHT[s3.dtype]
    fused_kernels.extreme_ties(False, s3, indptr, cols, _NONE, no_weight, False, out3, g3,
                               s3 if tangent3 is None else tangent3, tangent3 is not None, no_weight, False, result,
                               0, dst3, select=select, average=average)


def _fused_shares(ctx, g3, select: str, average: bool = True):
    """CPU float32/64: (each output element's cotangent share among its selected entries, src as
    `_selection_src` gives it, out as the kernels read it) from the fused kernels of the selections
    (`Op.selection`): one pass over src by destination, no n x F temporaries (max/min's winners found as the
    forward's values, the initial dst a candidate; fmax/fmin: no NaN entry wins; "present", nanmean: the non-NaN
    entries, or, not `average` (nansum), the cotangent as it is). For "present" out is not read: the share
    stands in for it."""
    if select == "present" and not average:
        src = _selection_src(ctx)
        g3 = np.ascontiguousarray(g3, dtype=ctx.dtype)
        return g3, src, g3
    src, indptr, cols, dst3 = _selection_inputs(ctx, select)
    g3 = np.ascontiguousarray(g3, dtype=ctx.dtype)
    out3 = g3 if select == "present" else np.ascontiguousarray(ctx.out3, dtype=ctx.dtype)
    share = np.empty_like(g3)
    _ties_pass(src, indptr, cols, out3, g3, None, share, dst3, select)
    return share, src, share if select == "present" else out3


def _fused(ctx, select: str = "tied") -> bool:
    """Whether the one-pass CPU kernels (`fused_kernels`) serve this selection of the backend's arrays."""
    return ctx.be.fused_reverse and ctx.dtype in (np.float32, np.float64) and ctx.exact is None and (
        ctx.out3 is not None or select == "present")


def _selected_src(ctx, g3, select: str, average: bool = True):
    """vjp_src of the selecting ops on the CPU (float32/64): each entry gets its output element's share where
    it is selected, else 0 (the fused back pass: one pass over src, the shares read by destination)."""
    share, (code, s3), out3 = _fused_shares(ctx, g3, select, average)
    valid = ctx.plan.valid()
    by_entry = np.zeros(valid.shape[0] + 1, np.int64)
    np.cumsum(valid, out=by_entry[1:])
    flat = np.ascontiguousarray(ctx.plan.flat[valid], dtype=np.int64)
    result = np.empty(s3.shape, ctx.dtype)
    if code:
        fused_kernels.extreme_back_half(code, s3, by_entry, flat, out3, share, result, 0,
                                        select=fused_kernels.SELECT_CODES[select])
    else:
        fused_kernels.extreme_back(s3, by_entry, flat, _NONE, _NO_WEIGHT[s3.dtype], False, out3, share, result, 0,
                                   select=fused_kernels.SELECT_CODES[select])
    return result


def selected_tangents(ctx, dot3, op):
    """scatter_jvp's src part for the selecting ops on the CPU (float32/64), or None where it does not apply:
    the tangents of each output element's selected entries, averaged (max/min, fmax/fmin, nanmean) or summed
    (nansum), in one pass by destination (no n x F coefficients); the initial dst counts as a candidate of
    max/min and their twins (its own tangent is added by the caller)."""
    select = op.selection
    if not select or not _fused(ctx, select) or (op.counts and ctx.dst3 is not None):
        return None
    src, indptr, cols, dst3 = _selection_inputs(ctx, select)
    dot3 = np.ascontiguousarray(dot3, dtype=ctx.dtype)
    out3 = np.ascontiguousarray(ctx.out3, dtype=ctx.dtype)
    result = np.zeros(out3.shape, ctx.dtype)
    if result.size:
        _ties_pass(src, indptr, cols, out3, out3, dot3, result, dst3, select, average=op.splits)
    return result


def _extreme_src(ctx, g3, skip_nan: bool = False):
    xp = ctx.xp
    if _fused(ctx):
        return _selected_src(ctx, g3, "won" if skip_nan else "tied")
    src_win, nwin, _ = _win_counts(ctx, skip_nan)
    share = xp.where(nwin > 0, g3 / xp.maximum(nwin, 1), 0)   # nwin is 0 only where no entry landed
    return xp.where(src_win, ctx.take(share.astype(ctx.dtype, copy=False)), 0).astype(ctx.dtype, copy=False)


def _extreme_dst(ctx, g3, skip_nan: bool = False):
    xp = ctx.xp
    if _fused(ctx):
        share = _fused_shares(ctx, g3, "won" if skip_nan else "tied")[0]
        return np.where(_winners(xp, ctx.dst3, ctx.out3), share, 0).astype(ctx.dtype, copy=False)
    _, nwin, dst_win = _win_counts(ctx, skip_nan)
    return xp.where(dst_win, g3 / xp.maximum(nwin, 1), 0).astype(ctx.dtype, copy=False)


def _mean_src(ctx, g3, op: str = "mean"):
    """mean and sqrt_n: each entry gets its group's cotangent divided by the op's divisor (count, sqrt(count))."""
    per_group = g3 / get_op(op).divisor(ctx.counts(), ctx.dtype, ctx.xp).astype(ctx.dtype, copy=False)
    return ctx.take(per_group.astype(ctx.dtype, copy=False))


def exclusive_products(plan, src3: np.ndarray, tangent3: np.ndarray | None = None, be=_canonical):
    """Per entry: the product of the other src members of its group (dropped entries: 0), without division.

    With `tangent3` (CPU only), also its derivative along `tangent3`, returned as a pair (products, derivative).
    """
    order, indptr = plan.groups()
    partials = be.xp.zeros(src3.shape, src3.dtype)   # C-ordered even for a broadcast src3 (zeros_like keeps
    # the layout of src3, whose stride-0 rows could make the feature dim the outermost)
    if tangent3 is None:
        be.exclusive_products(src3, order, indptr, partials)
        return partials
    partials_dot = np.zeros(src3.shape, src3.dtype)
    kernels.exclusive_products_jvp(src3, tangent3, order, indptr, partials, partials_dot)
    return partials, partials_dot


def _others_product(ctx) -> np.ndarray:
    """Per entry: the initial value of its group times the product of the other src members of the group."""
    partials = exclusive_products(ctx.plan, ctx.src3, be=ctx.be)
    if ctx.dst3 is not None:
        partials *= ctx.take(ctx.dst3)
    return partials


def _half_others_product(ctx, half, nan_as_one: bool) -> np.ndarray:
    """`_others_product` of a `_half_source` (`fused_kernels.exclusive_products_half`), a NaN entry read as 1
    where `nan_as_one` (nanprod's src): the same bits, no converted copy of src."""
    code, bits = half
    order, indptr = ctx.plan.groups()
    partials = np.zeros(bits.shape, ctx.dtype)
    fused_kernels.exclusive_products_half(code, bits, order, indptr, partials, nan_as_one)
    if ctx.dst3 is not None:
        partials *= ctx.take(ctx.dst3)
    return partials


def _mul_src(ctx, g3):
    half = _half_source(ctx)
    return ctx.take(g3) * (_others_product(ctx) if half is None else _half_others_product(ctx, half, False))


def _mul_dst(ctx, g3):
    return g3 * ctx.put_src(get_op("mul"), start=1)


def _div_src(ctx, g3):
    # out = init / s1 / ... / sc, so d out / d s_k = -out / s_k: an entry's own src row and its group's values
    # (by chunks of src rows: no n x F conversion of a float16 src)
    def rows_grad(_, plan, rows3):
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = -(ctx.take(g3, plan) * ctx.take(ctx.out3, plan)) / rows3
        return ctx.xp.where(plan.valid()[None, :, None], grad, 0)
    return ctx.map_rows(rows_grad, ctx.dtype)


def _div_dst(ctx, g3):
    with np.errstate(divide="ignore", invalid="ignore"):
        return g3 * ctx.put_src(get_op("div"), start=1)


def _identity_dst(ctx, g3):
    return g3


def _assign_src(last: bool):
    """vjp_src of an assignment: g[index[k]] for the winning entry k of each row, 0 for the others."""
    def vjp_src(ctx, g3):
        won = _assign.winner_mask(ctx.be, ctx.plan, last)[None, :, None]
        return ctx.xp.where(won, ctx.take(g3), 0).astype(g3.dtype, copy=False)
    return vjp_src


def _assign_dst(ctx, g3):
    """vjp_dst of an assignment: g where no entry reached the row (the initial value survives), else 0."""
    return ctx.xp.where((ctx.counts() == 0)[None, :, None], g3, 0).astype(g3.dtype, copy=False)


# ---- the NaN-skipping twins ------------------------------------------------------------------------------------

def _not_nan(ctx) -> np.ndarray:
    return ctx.src3 == ctx.src3   # NumPy's isnan negated; complex: NaN in either part


def _present(rows3) -> np.ndarray:
    """`_not_nan` of a chunk of src rows."""
    return rows3 == rows3  # noqa: PLR0124 (the NaN test of every dtype, complex included)


def _nansum_src(ctx, g3):
    if ctx.in_place:   # a half-precision src by chunks: each entry's own row decides (the fused pass reads it whole)
        return ctx.map_rows(lambda _, plan, rows3: ctx.xp.where(_present(rows3), ctx.take(g3, plan), 0), ctx.dtype)
    if _fused(ctx, "present"):
        return _selected_src(ctx, g3, "present", average=False)   # (nansum does not split)
    return ctx.xp.where(_not_nan(ctx), ctx.take(g3), 0).astype(ctx.dtype, copy=False)


def _nanmean_src(ctx, g3):
    if _fused(ctx, "present") and not ctx.in_place:
        return _selected_src(ctx, g3, "present")
    # non-NaN entries per output element, then each entry's share: by chunks of src rows where it is read in place
    counts = ctx.put_rows(lambda _, plan, rows3: _present(rows3), ctx.dtype)
    per_element = (g3 / ctx.xp.maximum(counts, 1)).astype(ctx.dtype, copy=False)
    return ctx.map_rows(lambda _, plan, rows3: ctx.xp.where(_present(rows3), ctx.take(per_element, plan), 0),
                        ctx.dtype)


def _without_nan(ctx) -> Reverse:
    """The context with NaN src entries replaced by 1 (nanprod's rules are mul's on that src)."""
    return Reverse(ctx.be, ctx.plan, ctx.xp.where(_not_nan(ctx), ctx.src3, 1).astype(ctx.dtype, copy=False),
                   ctx.out3, ctx.dst3)


def _nanprod_src(ctx, g3):
    half = _half_source(ctx)
    if half is None:
        return ctx.xp.where(_not_nan(ctx), _mul_src(_without_nan(ctx), g3), 0).astype(ctx.dtype, copy=False)
    grad = (ctx.take(g3) * _half_others_product(ctx, half, True)).astype(ctx.dtype, copy=False)
    for rows, _, rows3 in ctx.src_chunks():   # a NaN entry gets 0, by chunks of src rows
        np.copyto(grad[:, rows], 0, where=~_present(rows3))
    return grad


def _nanprod_dst(ctx, g3):
    if not ctx.in_place:
        return _mul_dst(_without_nan(ctx), g3)
    # the product of each group's non-NaN entries, by chunks of src rows (each element's updates in index order)
    return g3 * ctx.put_rows(lambda _, plan, rows3: ctx.xp.where(_present(rows3), rows3, 1), ctx.dtype,
                             get_op("mul"), start=1)


def _nan_assign_src(last: bool):
    """vjp_src of nanlast / nanfirst: g at each element's winning non-NaN entry, 0 elsewhere."""
    def vjp_src(ctx, g3):
        if not _assign.skips_nan(_values(ctx)):   # integers and bools: the twin's row winners
            return _assign_src(last)(ctx, g3)
        if ctx.in_place and ctx.plan.size:   # a half-precision src by chunks: the same positions, no n x F copy
            win3 = _chunked_winners(ctx, last)
            return ctx.map_rows(lambda rows, plan, _: ctx.xp.where(ctx.take(win3, plan) == _positions(ctx, rows),
                                                                   ctx.take(g3, plan), 0), g3.dtype)
        win3 = _assign.element_winners(ctx.be, ctx.src3, ctx.plan, last)
        positions = ctx.xp.arange(ctx.src3.shape[1], dtype=np.int64)[None, :, None]
        return ctx.xp.where(ctx.take(win3) == positions, ctx.take(g3), 0).astype(g3.dtype, copy=False) \
            if ctx.plan.size else ctx.xp.zeros(ctx.src3.shape, g3.dtype)
    return vjp_src


def _values(ctx):
    """What tells the dtype of src's values: src read in place, or src3 (which converts it when made)."""
    return ctx.source if ctx.in_place else ctx.src3


def _positions(ctx, rows):
    return ctx.xp.arange(rows.start, rows.stop, dtype=np.int64)[None, :, None]


def _chunked_winners(ctx, last: bool):
    """`_assign.element_winners` by chunks of src rows: a max (min) scatter of the non-NaN entries' positions,
    exact whatever order it combines in, so the same positions."""
    none = -1 if last else ctx.plan.n
    return ctx.put_rows(lambda rows, _, rows3: ctx.xp.where(_present(rows3), _positions(ctx, rows), none), np.int64,
                        get_op("max" if last else "min"), start=none)


def _nan_assign_dst(ctx, g3):
    """vjp_dst of nanlast / nanfirst: g where no non-NaN entry reached the element (dst's value survives)."""
    if not _assign.skips_nan(_values(ctx)):
        return _assign_dst(ctx, g3)
    if ctx.in_place:   # a half-precision src by chunks: the non-NaN entries counted, no n x F copy
        reached = ctx.put_rows(lambda _, plan, rows3: _present(rows3), np.int64) > 0
        return ctx.xp.where(reached, 0, g3).astype(g3.dtype, copy=False)
    reached = ctx.put(_not_nan(ctx).astype(np.int64)) > 0
    return ctx.xp.where(reached, 0, g3).astype(g3.dtype, copy=False)


@dataclass(frozen=True)
class Rules:
    """An op family's reverse rules: each takes a `Reverse` context and the output's cotangent (outer, size, inner)
    and returns the cotangent of src (outer, n, inner) or of the initial dst (outer, size, inner)."""

    vjp_src: Callable[[Reverse, Any], Any]
    vjp_dst: Callable[[Reverse, Any], Any]


# `Op.rule` -> its family's rules. max and min (and fmax and fmin) share theirs: the winners are the entries equal
# to the kept value, whichever way the op orders them.
RULES: dict[str, Rules] = {
    "linear": Rules(vjp_src=lambda ctx, g3: ctx.take(g3), vjp_dst=_identity_dst),
    "negated": Rules(vjp_src=lambda ctx, g3: -ctx.take(g3), vjp_dst=_identity_dst),
    "mean": Rules(vjp_src=_mean_src, vjp_dst=_identity_dst),
    "sqrt_n": Rules(vjp_src=lambda ctx, g3: _mean_src(ctx, g3, "sqrt_n"), vjp_dst=_identity_dst),
    "products": Rules(vjp_src=_mul_src, vjp_dst=_mul_dst),
    "quotient": Rules(vjp_src=_div_src, vjp_dst=_div_dst),
    "extreme": Rules(vjp_src=_extreme_src, vjp_dst=_extreme_dst),
    "assign_last": Rules(vjp_src=_assign_src(True), vjp_dst=_assign_dst),
    "assign_first": Rules(vjp_src=_assign_src(False), vjp_dst=_assign_dst),
    "nansum": Rules(vjp_src=_nansum_src, vjp_dst=_identity_dst),
    "nanmean": Rules(vjp_src=_nanmean_src, vjp_dst=_identity_dst),
    "nanprod": Rules(vjp_src=_nanprod_src, vjp_dst=_nanprod_dst),
    "nan_extreme": Rules(vjp_src=lambda ctx, g3: _extreme_src(ctx, g3, True),
                         vjp_dst=lambda ctx, g3: _extreme_dst(ctx, g3, True)),
    "nan_assign_last": Rules(vjp_src=_nan_assign_src(True), vjp_dst=_nan_assign_dst),
    "nan_assign_first": Rules(vjp_src=_nan_assign_src(False), vjp_dst=_nan_assign_dst),
}
