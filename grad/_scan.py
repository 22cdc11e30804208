"""`scatter_scan` (grouped cumulative add, mul, max, min) as autograd primitives.

add is linear and its VJP is the same scan run the other way (``reverse`` flipped), itself this primitive, so
derivatives of any order follow. max/min pick, for each output, the src element holding the running extremum
(positions from the core kernel, not differentiated); the pick is autograd's own indexing of `src`, whose
derivatives (getitem / untake) go to any order; ties: the first member to reach the extremum.

mul's VJP and JVP are those of the core's `scatter_scan_vjp` / `scatter_scan_jvp` (exact with zeros, no
division), written with two primitives whose own derivatives are again made of them, so derivatives of any
order follow: the exclusive mul scan (``before``) and the linear recurrence ``L(b, a)``: ``out = b + a * prev``
along each group (``out[k] = sum(b[j] * prod(a[i] for j < i <= k))``; with `exclusive`, each member's value
before its own step). With ``E = L_exclusive(b, a)`` (the value each member starts from) and ``T(g)`` the
transpose of ``b -> L(b, a)`` (``L(g, a)`` run the other way, exclusive; plus ``g`` itself for an inclusive
recurrence):

    d L(b, a) = L(db + da * E, a)          (forward)
    b-bar = T(g),   a-bar = E * T(g)       (reverse)

and the mul scan ``y`` of ``x``: ``dy = L(before * dx, x)``, ``x-bar = before * T(g)`` (0 for dropped entries).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp
from autograd.tracer import Box, getval

import cyscatter as cs
from cyscatter._api.scan import ScanView, scan_op
from cyscatter._plan.values import flag
from cyscatter._plan.index import index_shape, parse_coords, plan_index
from cyscatter._plan.layout import split_src
from grad._args import cast, require_inexact
from grad._primitive import primitive
from grad._where import where

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode
    from cyscatter._typing import ScanOpLike as OpLike


@primitive
def _scan_add(src, index, dim_size, axis, mode, exclusive, reverse):
    return cs.scatter_scan(src, index, "add", dim_size=dim_size, axis=axis, mode=mode, exclusive=exclusive,
                           reverse=reverse)


defvjp(_scan_add, lambda ans, src, index, dim_size, axis, mode, exclusive, reverse: lambda g: _scan_add(
    g, index, dim_size, axis, mode, exclusive, not reverse))
defjvp(_scan_add, lambda g, ans, src, index, dim_size, axis, mode, exclusive, reverse: _scan_add(
    g, index, dim_size, axis, mode, exclusive, reverse))


@primitive
def _scan_mul(src, index, dim_size, axis, mode, exclusive, reverse):
    return cs.scatter_scan(src, index, "mul", dim_size=dim_size, axis=axis, mode=mode, exclusive=exclusive,
                           reverse=reverse)


@primitive
def _linear(b, a, index, dim_size, axis, mode, exclusive, reverse):
    """``out = b + a * prev`` along each group, in scan order (0 for dropped entries): `ScanView.linear`."""
    view = ScanView("grad.scatter_scan", "add", b, index, dim_size, axis, mode, reverse, exclusive)
    given = np.result_type(np.asarray(b).dtype, np.asarray(a).dtype)
    dtype = np.result_type(given, np.float32)   # float16 runs in float32, as the forward scan, and is rounded back
    out3 = view.linear(view.rows(b, dtype), view.rows(a, dtype), reverse=view.reverse, exclusive=view.exclusive)
    out = view.finish(out3, dtype)
    return out.astype(given, copy=False) if given.kind in "fc" else out


def _valid(src, index, dim_size, axis, mode):
    """Bool mask shaped like `src` (broadcast, no copy): the entries that belong to a group (all but those the
    mode drops); None when every entry does."""
    if mode not in ("drop", "normalize_drop"):
        return None
    coords = parse_coords(index)
    shape = anp.shape(src)
    axis, _, _ = split_src(np.broadcast_to(np.empty((), np.uint8), shape), coords, axis, expanded_check=False)
    valid = plan_index(None, dim_size, mode, coords=coords).valid().reshape(index_shape(coords))
    return np.broadcast_to(valid.reshape(valid.shape + (1,) * (len(shape) - axis - valid.ndim)), shape)


def _transpose(g, a, index, dim_size, axis, mode, exclusive, reverse):
    """The adjoint of ``b -> L(b, a)``: ``sum(g[k] * prod(a[i] for j < i <= k))`` over the members k at and
    after j (after j for an exclusive L): the recurrence run the other way, exclusive; 0 for dropped entries."""
    after = _linear(a * g if not exclusive else g, a, index, dim_size, axis, mode, True, not reverse)
    if exclusive:
        return after
    valid = _valid(g, index, dim_size, axis, mode)
    return g + after if valid is None else where(valid, g + after, 0.0)


def _linear_jvp_a(g, ans, b, a, index, dim_size, axis, mode, exclusive, reverse):
    start = _linear(b, a, index, dim_size, axis, mode, True, reverse)
    return _linear(g * start, a, index, dim_size, axis, mode, exclusive, reverse)


def _linear_vjp_a(ans, b, a, index, dim_size, axis, mode, exclusive, reverse):
    start = _linear(b, a, index, dim_size, axis, mode, True, reverse)
    return lambda g: start * _transpose(g, a, index, dim_size, axis, mode, exclusive, reverse)


defvjp(_linear,
       lambda ans, b, a, *args: lambda g: _transpose(g, a, *args),
       _linear_vjp_a)
defjvp(_linear,
       lambda g, ans, b, a, *args: _linear(g, a, *args),
       _linear_jvp_a)


def _mul_before(src, index, dim_size, axis, mode, exclusive, reverse):
    return _scan_mul(src, index, dim_size, axis, mode, True, reverse)


def _wide(x):
    """float16 as float32 (a differentiable cast): the precision the core's rules and the forward scan keep."""
    return cast(x, np.float32) if np.result_type(getval(x)) == np.float16 else x


def _like(x, src):
    """`x` rounded back to float16 where `src` is float16 (the derivatives take their primal's dtype)."""
    return cast(x, np.float16) if np.result_type(getval(src)) == np.float16 else x


defvjp(_scan_mul, lambda ans, src, *args: lambda g: _like(
    _mul_before(_wide(src), *args) * _transpose(_wide(g), _wide(src), *args), src))
defjvp(_scan_mul, lambda g, ans, src, *args: _like(
    _linear(_mul_before(_wide(src), *args) * _wide(g), _wide(src), *args), src))


def _scan_extreme(op, src, index, dim_size, axis, mode, exclusive, reverse):
    """max/min: src's element at the position of each running extremum (the op's identity where none)."""
    view = ScanView("grad.scatter_scan", op, getval(src), index, dim_size, axis, mode, reverse, exclusive)
    _, arg3 = view.scan(view.src3, track=True)
    outer, n, inner = view.src3.shape
    o = np.arange(outer).reshape(outer, 1, 1)
    f = np.arange(inner).reshape(1, 1, inner)
    flat = ((o * n + np.where(arg3 < 0, 0, arg3)) * inner + f).reshape(view.shape)
    picked = anp.reshape(src, (-1,))[flat] if flat.size else anp.reshape(src, view.shape)
    return where((arg3 >= 0).reshape(view.shape), picked, view.identity(view.result))


def scatter_scan(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize | None = None,
                 axis: SupportsIndex = 0, mode: Mode = "raise", exclusive: bool = False, reverse: bool = False) -> Any:
    """Differentiable `cyscatter.scatter_scan` (same parameters, result and errors).

    Every op to any order, forward and reverse mode; mul's derivatives are exact where `src` holds zeros (no
    division: products of the other members, as ``torch.cumprod``'s gradient). max/min send each cotangent to
    the first member that reached the running extremum.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Values (float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_scan`.
    op : {"add", "mul", "max", "min", "nansum", "nanprod", "fmax", "fmin"}, default "add"
        As in `cyscatter.scatter_scan`; a NaN entry of a NaN-skipping op has derivative 0.
    dim_size, axis, mode, exclusive, reverse : optional
        As in `cyscatter.scatter_scan` (keyword-only).

    Returns
    -------
    out : ndarray, shape of `src`
        The result of `cyscatter.scatter_scan`.
    """
    entry = scan_op(op)
    if isinstance(src, Box):   # being differentiated
        require_inexact(src, "src", "scatter_scan")
    if entry.skips_nan:   # the twin's scan with each NaN entry the identity (a constant: its derivative is 0)
        value = getval(src)
        if np.result_type(value).kind in "fc":
            src = where(np.isnan(value), entry.identity(np.result_type(value)), src)
        entry = cs.get_op(entry.twin)
    args = (index, dim_size, axis, mode, flag("exclusive", exclusive), flag("reverse", reverse))
    if entry.linear:
        return _scan_add(src, *args)
    if entry.selects:
        return _scan_extreme(entry.name, src, *args)
    return _scan_mul(src, *args)
