"""Grouped scans: the running (cumulative) add, mul, max and min of each group, in index order.

``out[k] = op(src[p] for the p <= k with index[p] == index[k])``: numpy_groupies' ``aggregate(..., func="cumsum")``
(also "cumprod", "cummax", "cummin") and pandas' ``groupby().cumsum()``, on cyscatter's NNlib layout (index dims
first, feature dims last, batch dims before `axis`). The CPU runs one pass over the index with a running value
per destination row (`cyscatter.scan_kernels`); CuPy arrays take a deterministic sort-then-segmented-scan path
built from CuPy's own functions (`cyscatter._backends.sorted_scan`); each backend runs them as its `group_scan`,
`linear_scan` and `route`. The reverse functions (`scatter_scan_vjp`, `scatter_scan_jvp`) are scans too: add's is
the scan run the other way, max/min route each cotangent to the member holding the running extremum, mul's are
linear recurrences along the group (exact with zeros, no division).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from cyscatter._arrays.dtypes import is_bfloat16
from cyscatter._arrays.integers import prod
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends import chunks
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.index import parse_coords, plan_index, sized_by
from cyscatter._plan.layout import split_src
from cyscatter._plan.values import flag, size_arg
from cyscatter._registry.ops import OPS, get_op

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import NDArray

    from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode, _FuncT
    from cyscatter._typing import ScanOpLike as OpLike


# the ops a scan takes (`Op.scans`), for the message that names them
SCAN_OPS = tuple(op.name for op in OPS if op.scans)


def scan_op(op):
    """The registry entry of a scan op; ValueError naming the op for the others."""
    entry = get_op(op)
    if not entry.scans:
        raise ValueError(f"scatter_scan takes the ops {', '.join(SCAN_OPS)} (and their aliases), got {op!r}")
    return entry




class ScanView:
    """A grouped scan's inputs on the canonical (outer, n, inner) view: backend, index plan, shapes, dtypes."""

    def __init__(self, name, op, src, index, dim_size, axis, mode, reverse, exclusive, src_arg="src",
                 chunked=False):
        self.op = scan_op(op)
        self.be = backend_of(**{src_arg: src}, index=index)
        src = self.be.asarray(src)
        self.shape = src.shape
        self.result = self.op.result_dtype(src.dtype)
        self.compute = self.op.compute_dtype(self.result)
        coords = parse_coords(index, be=self.be)
        axis, batch, feat = split_src(src, coords, axis, src_arg)
        self.plan = plan_index(None, dim_size, mode, coords=coords)
        self.sized = size_arg(dim_size, self.plan)
        self.outer, self.inner = prod(batch), prod(feat)
        # no table of dim_size rows is made (the host's has a row per group met): any dim_size the index takes
        self.reverse, self.exclusive = flag("reverse", reverse), flag("exclusive", exclusive)
        # `chunked` (the forward scan): a float16/bfloat16 src read a block of converted rows at a time
        # (`scan`), with no n x F copy in the compute dtype; src3 is then None
        self.source = chunks.chunked_source(src, self.compute, self.outer, self.plan.n, self.inner) \
            if chunked else None
        self.src3 = self.rows(src) if self.source is None else None
        self.name = name
        # a NaN-skipping scan is its twin's over src with each NaN entry (complex: either part) made the
        # identity, so the running value carries through it (np.nancumsum's NaN as 0); `present3` marks the
        # others for the reverse functions (None: every entry counts)
        self.present3 = None
        self.nan_is_identity = self.op.skips_nan and np.dtype(self.compute).kind in "fc"
        if self.op.skips_nan:
            self.op = get_op(self.op.twin)
            if self.src3 is not None and self.src3.dtype.kind in "fc":
                present = self.src3 == self.src3
                if not bool(present.all()):
                    self.present3 = present
                    self.src3 = self.xp.where(present, self.src3, self.identity()[()])
            elif self.source is not None and self.nan_is_identity:
                # a src read by blocks is marked in its own dtype (a bool per entry, no converted copy); the
                # blocks make its NaN entries the identity as they convert them (`nan_is_identity`)
                present = (src == src).reshape(self.outer, self.plan.n, self.inner)
                if not bool(present.all()):
                    self.present3 = present

    @property
    def xp(self):
        return self.be.xp

    def rows(self, a, dtype=None):
        return self.be.rows_view(self.be.asarray(a), dtype or self.compute, self.outer, self.plan.n, self.inner)

    def identity(self, dtype=None):
        # the identity of the result dtype (int8's minimum for max, not int64's), held in the compute dtype
        return np.asarray(self.op.identity(self.result)).astype(dtype or self.compute)

    def finish(self, out3, dtype=None):
        return out3.astype(dtype or self.result, copy=False).reshape(self.shape)

    def scan(self, src3, op=None, *, reverse=None, exclusive=None, track=False):
        """(out3, arg3 or None): the scan of src3 (outer, n, inner) under this view's index."""
        op = op or self.op
        reverse = self.reverse if reverse is None else reverse
        exclusive = self.exclusive if exclusive is None else exclusive
        ident = np.asarray(op.identity(self.result)).astype(src3.dtype)
        # the CPU keeps a running table with a row per group: a MemoryError names what sized it
        return self.be.group_scan(op, src3, self.plan, ident, reverse, exclusive, track, sized_by(*self.sized))

    def linear(self, b3, a3, *, reverse, exclusive):
        """The recurrence ``new = b + a * prev`` along each group (0 for dropped entries)."""
        return self.be.linear_scan(b3, a3, self.plan, reverse, exclusive, sized_by(*self.sized))

    def valid3(self):
        return self.plan.valid()[None, :, None]

    def absent_to_zero(self, a3):
        """`a3` with 0 at the NaN entries of a NaN-skipping scan (their derivatives: they take no part)."""
        if self.present3 is None:
            return a3
        return self.xp.where(self.present3, a3, a3.dtype.type(0))

    def pick(self, v3, arg3):
        """v3[o, arg3[o, k, f], f] (0 where arg3 < 0): the value at the position each output came from."""
        xp = self.xp
        # a src read by blocks (the host's): the positions' temporaries a block of output rows each, not n x F
        n = arg3.shape[1]
        if self.source is None:
            picked = xp.take_along_axis(v3, xp.where(arg3 < 0, 0, arg3), axis=1)
            return xp.where(arg3 < 0, v3.dtype.type(0), picked)
        step = max(1, chunks.ROW_CHUNK_BYTES // max(1, 8 * arg3.size // max(1, n)))
        out3 = xp.empty(arg3.shape, v3.dtype)
        for r0 in range(0, n, step):
            arg = arg3[:, r0:r0 + step]
            picked = xp.take_along_axis(v3, xp.where(arg < 0, 0, arg), axis=1)
            out3[:, r0:r0 + step] = xp.where(arg < 0, v3.dtype.type(0), picked)
        return out3

    def route(self, g3, arg3):
        """The adjoint of `pick`: g3[o, k, f] added at position arg3[o, k, f] (nothing where arg3 < 0)."""
        return self.be.route(g3, arg3)


# ---- public functions --------------------------------------------------------------------------------------------

FLAGS_DOC = """exclusive : bool, default False
        Leave each entry's own value out: ``out[k]`` combines the members before k (the op's identity for a
        group's first member), as ``jnp.cumsum`` users build by shifting; numpy_groupies has no such option.
    reverse : bool, default False
        Scan each group from its last member to its first (``jax.lax.cumsum(..., reverse=True)``): ``out[k]``
        combines the members at and after k."""


def _scan_doc(func: _FuncT) -> _FuncT:
    func.__doc__ = func.__doc__.replace("{flags}", FLAGS_DOC)
    return fill_doc(func)


# The overloads of this module stay here, not in a scan.pyi as elsewhere: other modules use its ScanView class,
# which a stub would have to repeat member by member.
@overload
def scatter_scan(src: DeviceArray, index: IndexLike, op: OpLike = ..., *, dim_size: DimSize | None = ...,
                 axis: SupportsIndex = ..., mode: Mode = ..., exclusive: bool = ..., reverse: bool = ...) -> Any: ...
@overload
def scatter_scan(src: ArrayInput, index: DeviceIndex, op: OpLike = ..., *, dim_size: DimSize | None = ...,
                 axis: SupportsIndex = ..., mode: Mode = ..., exclusive: bool = ..., reverse: bool = ...) -> Any: ...
@overload
def scatter_scan(src: ArrayInput, index: IndexLike, op: OpLike = ..., *, dim_size: DimSize | None = ...,
                 axis: SupportsIndex = ..., mode: Mode = ..., exclusive: bool = ...,
                 reverse: bool = ...) -> NDArray[Any]: ...


@_scan_doc
def scatter_scan(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize | None = None,
                 axis: SupportsIndex = 0, mode: Mode = "raise", exclusive: bool = False, reverse: bool = False,
                 **porting: object) -> Any:
    """Grouped (segmented) scan: ``out[b, k, f] = op(src[b, p, f] for p <= k with index[p] == index[k])``.

    The running add, mul, max or min within each group, in index order, shaped like `src`: numpy_groupies'
    ``aggregate(index, src, func="cumsum")`` ("cumprod", "cummax", "cummin"; "nancumsum" for the NaN-skipping
    nansum), pandas' ``groupby(index).cumsum()``, a segment cumsum as TensorFlow and JAX users write it. Unlike those, the
    groups need not be sorted or contiguous, the dims before `axis` are batch dims and those after it features
    (NNlib's layout), and a tuple index groups by several coordinates. The CPU makes one pass over the index
    with a running value per destination row; updates follow the core's element rules (NaN wins max/min,
    ``-0.0 < +0.0``), so a group's last ``out`` equals `scatter`'s result for it, bit for bit.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Values: integers, floats or complex (not for max/min). Small integers, float16 and bfloat16 are
        computed as `scatter` computes them (int64, float32) and cast back, so integer sums wrap as NumPy's do;
        a NumPy src is converted a block of rows at a time (no converted copy of the whole src).
    {index}
    op : {{"add", "mul", "max", "min", "nansum", "nanprod", "fmax", "fmin"}}, default "add"
        The running op; aliases "sum", "prod", "amax", "amin", "nanadd", "nanmul", "nanmax", "nanmin". Others
        raise ValueError. The NaN-skipping twins treat a NaN entry (complex: either part) as the op's identity,
        so the running value carries through it: ``np.nancumsum`` / ``np.nancumprod`` per group (NaN as 0 / 1);
        fmax/fmin give the identity (-inf / +inf) before a group's first non-NaN entry, where
        ``np.fmax.accumulate`` keeps the NaN (an all-NaN group of ``scatter(..., "fmax")`` is empty too).
    {dim_size}
    {axis}
    {mode}
    {flags}

    Returns
    -------
    out : ndarray, shape of `src`
        The dtype of `src`. Entries dropped under ``mode="drop"`` (they belong to no group) get the op's
        identity: 0 for add, 1 for mul, -inf (the integer minimum) for max, +inf (maximum) for min.

    Raises
    ------
    TypeError
        Unknown op type, a non-integer index, an unsupported dtype (bool, object; complex for max/min), or
        NumPy and CuPy arrays mixed in one call (both named).
    ValueError
        An op without a running form (see `op`); unknown mode, mismatched shapes, a negative or wrongly sized
        `dim_size`, an `axis` that does not fit.
    IndexError
        An out-of-range index entry under ``mode="raise"``; nothing has been written when it is raised.

    Notes
    -----
    CuPy arrays are sorted by group (stably) and scanned in log2(n) whole-array steps, deterministic from run
    to run; float sums and products are then combined in a tree order, so their last bits can differ from the
    CPU's sequential order (max/min and integers do not). The gradients (`scatter_scan_vjp`, `grad`) route
    max/min's cotangent to the first member that reached the running extremum (ties: the earliest, as
    `scatter_argmax`; `scatter`'s gradient splits ties instead, a running extremum has one holder).

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_scan(np.array([1, 2, 3, 4, 5]), np.array([0, 1, 0, 1, 0]))
    array([1, 2, 4, 6, 9])
    >>> cs.scatter_scan(np.array([3., 1., 4., 1., 5.]), np.array([0, 0, 1, 0, 1]), "max")
    array([3., 3., 4., 3., 5.])
    >>> cs.scatter_scan(np.array([1, 2, 3, 4, 5]), np.array([0, 1, 0, 1, 0]), exclusive=True)
    array([0, 0, 1, 2, 4])
    """
    if porting:
        raise unexpected_keywords("scatter_scan", porting)
    view = ScanView("scatter_scan", op, src, index, dim_size, axis, mode, reverse, exclusive, chunked=True)
    if view.source is not None:
        result = np.empty(view.source.shape, view.result)
        chunks.scan_rows(view.op, view.source, view.plan, view.identity(), view.reverse, view.exclusive,
                         view.nan_is_identity, result, sized_by(*view.sized))
        return result.reshape(view.shape)
    out3, _ = view.scan(view.src3)
    return view.finish(out3)


def _reverse_view(name, op, src, index, other, other_name, dim_size, axis, mode, reverse, exclusive):
    from cyscatter._plan.values import _float_dtype, check_given, check_numeric, check_real_derivative
    check_given("src", src)
    check_given(other_name, other)
    backend_of(src=src, index=index, **{other_name: other})   # other's refusals too (a tensor needing grad, ...)
    # a float16/bfloat16 src is not converted whole (x3 None): add's derivatives are scans of the cotangent or
    # tangent alone, mul's and max/min's read src a block of widened rows at a time (`view.source`), a
    # NaN-skipping op's NaN entries made the identity in each block
    # (an integer src keeps the whole conversion: its float64 rounding can make ties the integers do not have)
    entry = scan_op(op)
    given = getattr(src, "dtype", None)
    half = isinstance(given, np.dtype) and (given == np.float16 or is_bfloat16(given))
    view = ScanView(name, op, src, index, dim_size, axis, mode, reverse, exclusive, chunked=entry.linear or half)
    other = check_numeric(view.be.asarray(other), other_name)
    check_real_derivative(other_name, other, np.empty(0, view.result))
    if other.shape != view.shape:
        raise ValueError(f"{name}: {other_name} shape {other.shape} != src shape {view.shape}")
    dtype = _float_dtype(np.empty(0, view.result), other)   # src's own dtype: float16/bfloat16 give float64
    x3 = None if view.src3 is None else view.rows(view.src3.reshape(view.shape), dtype)
    return view, dtype, x3, view.rows(other, dtype)


def _holders(view, x3):
    """arg3: the position each max/min scan output comes from, by blocks of a float16/bfloat16 src (its exact
    widening compares as the float64 conversion does), from an integer src as it is (2**53 + 1 beats 2**53,
    which float64 would tie), or from x3."""
    if view.source is not None:
        arg3 = chunks.scan_args(view.op, view.source, view.plan, view.identity(), view.reverse, view.exclusive,
                                sized_by(*view.sized), view.nan_is_identity)
    else:
        exact = view.src3 is not None and view.src3.dtype.kind in "iu"
        arg3 = view.scan(view.src3 if exact else x3, track=True)[1]
    return arg3 if view.present3 is None else _present_holders(view, arg3)


def _present_holders(view, arg3):
    """fmax/fmin's holders with no NaN entry among them. A NaN entry scans as the identity (-inf for fmax), so
    it holds an output while the running value is still the identity: every non-NaN member before it then holds
    the identity too and none is earlier, and a later one equal to it does not take over. The holder is the
    group's first non-NaN member in scan order, if it comes before the output (else none: no derivative)."""
    xp = view.xp
    unheld = arg3 < 0
    arg3[unheld] = 0   # (in place for the lookup, no second n x F int64 array; restored below)
    absent = ~xp.take_along_axis(view.present3, arg3, axis=1)
    arg3[unheld] = -1
    absent &= ~unheld
    del unheld
    if not bool(absent.any()):
        return arg3
    from cyscatter._api.scatter import scatter
    outer, n, inner = arg3.shape
    valid = view.plan.valid()
    groups, dense = xp.unique(view.plan.flat[valid], return_inverse=True)   # the groups met, numbered densely
    index = xp.zeros(n, np.int64)
    index[valid] = dense.reshape(-1)
    # each group's first non-NaN member per column: its smallest position (largest when the scan runs backwards)
    none = -1 if view.reverse else n
    positions = xp.arange(n, dtype=np.int32 if n < 2**31 - 1 else np.int64)[None, :, None]
    pos = xp.where(view.present3 & valid[None, :, None], positions, none)
    first = scatter(pos, index, "max" if view.reverse else "min", dim_size=max(1, groups.size), axis=1)
    o, k, f = xp.nonzero(absent)
    cand = first[o, index[k], f]
    before = (cand > k if view.exclusive else cand >= k) if view.reverse else \
        (cand < k if view.exclusive else cand <= k)
    arg3[o, k, f] = xp.where(before & (cand != none), cand, -1)
    return arg3


@overload
def scatter_scan_vjp(op: OpLike, grad_out: DeviceArray, src: ArrayInput, index: IndexLike, *,
                     dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...,
                     exclusive: bool = ..., reverse: bool = ...) -> Any: ...
@overload
def scatter_scan_vjp(op: OpLike, grad_out: ArrayInput, src: ArrayInput, index: IndexLike, *,
                     dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...,
                     exclusive: bool = ..., reverse: bool = ...) -> NDArray[Any]: ...


@_scan_doc
def scatter_scan_vjp(op: OpLike, grad_out: ArrayInput, src: ArrayInput, index: IndexLike, *,
                     dim_size: DimSize | None = None, axis: SupportsIndex = 0, mode: Mode = "raise",
                     exclusive: bool = False, reverse: bool = False, **porting: object) -> Any:
    """Gradient of `scatter_scan` w.r.t. `src`.

    add: the scan of `grad_out` run the other way within each group (``grad[p] = sum(g[k] for k >= p)``);
    max/min: each ``g[k]`` goes to the member whose value ``out[k]`` is (the first to reach the running
    extremum); mul: ``grad[p] = prod(x before p) * sum(g[k] * prod(x after p up to k))``, two scans with no
    division, so exact where `src` holds zeros; an inf member meeting a zero factor gives NaN there, as in torch
    and JAX (a running sum that is still empty carries nothing, though). Dropped entries get 0.

    Parameters
    ----------
    op : {{"add", "mul", "max", "min", "nansum", "nanprod", "fmax", "fmin"}}
        The op given to `scatter_scan` (a NaN entry of a NaN-skipping op gets a derivative of 0).
    grad_out : array_like, shape of `src`
        Cotangent of the output.
    src : array_like, shape B + I + F
        The `src` given to `scatter_scan`.
    {index}
    {dim_size}
    {axis}
    {mode}
    {flags}

    Returns
    -------
    grad_src : ndarray, shape of `src`
        NumPy's promotion of the dtypes of `src` and `grad_out`; float64 where that is an integer, float16 or
        bfloat16 dtype.

    Raises
    ------
    TypeError
        As `scatter_scan`; a `grad_out` that holds no numbers or a missing (None) argument.
    ValueError
        As `scatter_scan`; a `grad_out` not shaped like `src`.
    IndexError
        As `scatter_scan`.
    """
    if porting:
        raise unexpected_keywords("scatter_scan_vjp", porting)
    view, dtype, x3, g3 = _reverse_view("scatter_scan_vjp", op, src, index, grad_out, "grad_out", dim_size, axis,
                                        mode, reverse, exclusive)
    if view.op.linear:
        grad3, _ = view.scan(g3, reverse=not view.reverse)
    elif view.op.selects:
        grad3 = view.route(g3, _holders(view, x3))
    elif view.source is not None:
        grad3 = chunks.product_derivative(view.op, view.source, view.plan, g3, view.reverse, view.exclusive, True,
                                          sized_by(*view.sized), view.nan_is_identity)
    else:
        before, _ = view.scan(x3, exclusive=True)
        if view.exclusive:
            after = view.linear(g3, x3, reverse=not view.reverse, exclusive=True)
        else:
            after = g3 + view.linear(x3 * g3, x3, reverse=not view.reverse, exclusive=True)
        grad3 = view.xp.where(view.valid3(), before * after, dtype.type(0))
    return view.finish(view.absent_to_zero(grad3), dtype)


@overload
def scatter_scan_jvp(op: OpLike, src: DeviceArray, index: IndexLike, src_dot: ArrayInput, *,
                     dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...,
                     exclusive: bool = ..., reverse: bool = ...) -> Any: ...
@overload
def scatter_scan_jvp(op: OpLike, src: ArrayInput, index: IndexLike, src_dot: ArrayInput, *,
                     dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode = ...,
                     exclusive: bool = ..., reverse: bool = ...) -> NDArray[Any]: ...


@_scan_doc
def scatter_scan_jvp(op: OpLike, src: ArrayInput, index: IndexLike, src_dot: ArrayInput, *,
                     dim_size: DimSize | None = None, axis: SupportsIndex = 0, mode: Mode = "raise",
                     exclusive: bool = False, reverse: bool = False, **porting: object) -> Any:
    """Forward derivative of `scatter_scan`: the tangent of its output for a tangent `src_dot` of `src`.

    add: the scan of `src_dot`; max/min: ``src_dot`` at the member holding each running extremum; mul: the
    recurrence ``d = x[k] * d + prod(x before k) * src_dot[k]`` along each group (exact with zeros).

    Parameters
    ----------
    op : {{"add", "mul", "max", "min", "nansum", "nanprod", "fmax", "fmin"}}
        The op given to `scatter_scan` (a NaN entry of a NaN-skipping op gets a derivative of 0).
    src : array_like, shape B + I + F
        The `src` given to `scatter_scan`.
    {index}
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    {dim_size}
    {axis}
    {mode}
    {flags}

    Returns
    -------
    out_dot : ndarray, shape of `src`
        NumPy's promotion of the dtypes of `src` and `src_dot`; float64 where that is an integer, float16 or
        bfloat16 dtype.

    Raises
    ------
    TypeError
        As `scatter_scan`; a `src_dot` that holds no numbers or a missing (None) argument.
    ValueError
        As `scatter_scan`; a `src_dot` not shaped like `src`.
    IndexError
        As `scatter_scan`.
    """
    if porting:
        raise unexpected_keywords("scatter_scan_jvp", porting)
    view, dtype, x3, t3 = _reverse_view("scatter_scan_jvp", op, src, index, src_dot, "src_dot", dim_size, axis,
                                        mode, reverse, exclusive)
    t3 = view.absent_to_zero(t3)   # a NaN entry's tangent, whatever it is, does not reach the output
    if view.op.linear:
        out3, _ = view.scan(t3)
    elif view.op.selects:
        out3 = view.pick(t3, _holders(view, x3))
    elif view.source is not None:
        out3 = chunks.product_derivative(view.op, view.source, view.plan, t3, view.reverse, view.exclusive, False,
                                         sized_by(*view.sized), view.nan_is_identity)
    else:
        before, _ = view.scan(x3, exclusive=True)
        out3 = view.linear(before * t3, x3, reverse=view.reverse, exclusive=view.exclusive)
    return view.finish(out3, dtype)
