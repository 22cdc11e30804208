"""The planner: one `prepare` that validates a call's arguments once and returns a `Call`, everything a kernel
run needs (backend, op, index plan, canonical shapes and views, result and compute dtypes, fill, the checked
destination). The public functions read prepare -> backend run -> finish.

`kind` names the form of the call:

- ``"scatter"``: the allocating scatter (`src` defines B and F, or `out` does; D from `dim_size`, `out` or the
  index);
- ``"scatter_into"``: a scatter into `dst` (B, D and F from `dst`; `src` cast to its dtype);
- ``"gather"`` / ``"gather_into"``: rows of `src` at the index (D from `src`; into `dst`, cast to its dtype);
- ``"reverse"``: a split reverse function of scatter (`out` the forward result, `dst` its initial
  destination, `extra` the (name, array, "out" or "src") triples of the cotangents and tangents): the
  `Reverse` context of the op's rules, in the derivative dtype;
- ``"gather_scatter"``: message passing, `index` the pair (gather_index, scatter_index) or `plan` (an
  `EdgeCall`); with `cotangents` (name: array) a reverse call of `fun`, in the derivative dtype; `be` is the
  backend when the caller has found it already;
- ``"group"``: the float group ops built from the core kernels (softmax family, moments): a scatter layout
  whose result and compute dtypes follow the float rule of `float_dtypes` (or `dtype`, the compute dtype a
  reverse function asks for); `src_arg` names the array for the errors, and without `broadcast` it must have
  the shape B + I + F itself.

Checks run in the order the errors have always been raised in: op, devices, dtypes, index, layout, sizes, fill,
out. A prepared call is never validated again: the runners trust it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from cyscatter._arrays.dtypes import float_kind, holds_numbers, native
from cyscatter._backends.chunks import chunked_source
from cyscatter._backends.context import Reverse
from cyscatter._backends.select import backend_of
from cyscatter._plan.edges import check_weight, derivative_policy, dims_like, resolve, value_dtype
from cyscatter._plan.index import IndexPlan, check_table_bytes, parse_coords, plan_index
from cyscatter._plan.layout import expand_cast, normalize_axis, out_layout, split_src, src_layout
from cyscatter._plan.values import (
    _PYTHON_KIND,
    _float_dtype,
    check_dtype_arg,
    check_given,
    check_numeric,
    check_out,
    check_real_derivative,
    direct,
    fill_for,
    python_scalar_as,
    size_arg,
)
from cyscatter._registry.ops import _BY_NAME, Op, get_op, refuse_assignment


@dataclass(slots=True, eq=False)
class Call:
    """A validated call on the canonical view (outer, rows, inner).

    be : the backend module (`cyscatter._backends.host` or `.cuda`).
    op : the registry entry (None for gather).
    plan : the index plan (flat rows, index shape I, destination shape D, mode).
    batch, feat : B and F; outer, inner : their products.
    src : the source array, cast and expanded to B + I + F (scatter) or B + D + F (gather), not yet a view.
    shape : the result's shape. result_dtype, compute : the result's dtype and the kernels' dtype.
    fill : the fill value as a 0-d array of the result dtype, or None.
    target : the checked `out`/`dst` to write (None for a fresh result); `given` the object the caller passed.
    direct : the kernels write `target` itself (C-contiguous, of the compute dtype, no shared memory).
    """

    be: ModuleType
    op: Op | None
    plan: IndexPlan
    batch: tuple
    feat: tuple
    outer: int
    inner: int
    src: Any
    shape: tuple
    result_dtype: np.dtype
    compute: np.dtype
    fill: Any = None
    target: Any = None
    given: Any = None
    direct: bool = False
    size_arg: tuple = ("dim_size", None)
    gathers: bool = False
    identity: Any = None
    context: Any = None
    views: Any = None
    src_shape: tuple = ()
    expected: tuple = ()

    def src3(self, dtype=None) -> Any:
        """`src` as (outer, rows, inner) in `dtype` (default: the compute dtype); its rows are the index entries,
        or for a gather the source rows D."""
        rows = self.plan.size if self.gathers else self.plan.n
        return self.be.rows_view(self.src, self.compute if dtype is None else dtype, self.outer, rows, self.inner)

    def src_rows(self, dtype=None) -> Any:
        """What a scatter kernel run (`run_scatter` alone) reads `src` from: `src3`, or a source the backend
        converts and lays out a block at a time (`rows_source`) instead of a whole copy."""
        return self.be.rows_source(self.src, self.compute if dtype is None else dtype, self.outer, self.plan.n,
                                   self.inner)


# (op name, src dtype) -> (result dtype, compute dtype, identity in the result dtype): the registry's dtype rules,
# worked out once per pair (each is several Python calls, and a call reads them all)
_DTYPES: dict = {}


def dtype_rules(op: Op, dtype) -> tuple:
    """(result dtype, compute dtype, identity) of an allocating scatter of `op` on a `src` of `dtype`; TypeError
    for a dtype the op refuses."""
    key = (op.name, dtype)
    rules = _DTYPES.get(key)
    if rules is None:
        result = op.result_dtype(dtype)
        rules = _DTYPES[key] = (result, op.compute_dtype(result), op.identity(result))
    return rules


_WITH_OP = frozenset({"scatter", "scatter_into", "gather_scatter", "reverse"})   # the kinds that take an op


def prepare(kind: str, src, index, op=None, *, dst=None, out=None, dim_size=None, axis=0, mode: str = "raise",
            fill_value=None, dtype=None, name: str = "", complex_ok: bool = False, src_arg: str = "src",
            broadcast: bool = True, extra: tuple = (), weight=None, plan=None, cotangents: dict | None = None,
            fun: str = "gather_scatter", be: ModuleType | None = None, dims_arg: str = "dim_size") -> Any:
    """Validate a call of form `kind` (see the module docstring) once and return its `Call`."""
    if kind in _WITH_OP:   # a name's entry read directly; anything else gets get_op's checks and messages
        op = (_BY_NAME.get(op) if type(op) is str else None) or get_op(op)
    if kind == "scatter":
        return _scatter(op, src, index, dim_size, axis, mode, fill_value, dtype, out)
    if kind == "scatter_into":
        return _scatter_into(op, dst, src, index, axis, mode)
    if kind == "gather":
        return _gather(src, index, axis, mode, fill_value, dtype, out)
    if kind == "gather_into":
        return _gather_into(dst, src, index, axis, mode)
    if kind == "gather_scatter":
        gather_index, scatter_index = index
        return _edges(op, src, gather_index, scatter_index, weight, plan, dim_size, axis, mode, fill_value, out,
                      cotangents, fun, be)
    if kind == "reverse":
        return _reverse(op, src, index, out, dst, axis, mode, extra)
    if kind == "group":
        return _group(name, src, index, dim_size, axis, mode, dtype, complex_ok, src_arg, broadcast, dims_arg)
    raise ValueError(f"unknown call kind {kind!r}")


# tables up to this size cannot pass what an array can address: no need to ask `check_table_bytes`
_CHECKED_BYTES = 1 << 62


def _scalar_for_dtype(src, dtype, xp):
    """A Python scalar `src` taken by value in the `dtype=` asked for, as in out's (NEP 50): an int that does not
    fit is a ValueError, never a silent wrap-around; a dtype that is none is left to `check_dtype_arg`."""
    try:
        asked = native(np.dtype(dtype))
    except (TypeError, ValueError):
        return src
    return python_scalar_as(src, asked, xp, "result")


def _scatter(op: Op, src, index, dim_size, axis, mode, fill_value, dtype, out) -> Call:
    be = backend_of(src=src, index=index, out=out)
    xp = be.xp
    out_dtype = getattr(out, "dtype", None)
    if type(src) in _PYTHON_KIND and dtype is None and isinstance(out_dtype, np.dtype):
        src = python_scalar_as(src, out_dtype.newbyteorder("="), xp, "out")   # weak, as NumPy 2's (NEP 50)
    elif type(src) in _PYTHON_KIND and dtype is not None:
        src = _scalar_for_dtype(src, dtype, xp)
    if type(src) is not np.ndarray:
        src = be.asarray(src)
    cast = None if dtype is None else check_dtype_arg(dtype, src.dtype)
    if cast is not None:
        be.refuse_dtype("dtype", cast)
        try:
            op.check_dtype(cast)
        except TypeError as err:
            raise TypeError(f"dtype={cast}: {err}") from None
    result_dtype, compute, identity = dtype_rules(op, src.dtype if cast is None else cast)
    coords = parse_coords(index, be=be)
    if out is None:
        axis, batch, feat, expected = src_layout(src.shape, coords, axis)
    else:
        axis, batch, feat, expected = out_layout(src.shape, coords, axis, out)
    m = len(coords)
    dims_arg = "dim_size"
    if out is not None and dim_size is None and np.ndim(out) == len(batch) + m + len(feat):
        dim_size = tuple(int(d) for d in np.shape(out)[axis:axis + m])   # D from out, as scatter_into's dst
        dims_arg = "out.shape"
    plan = plan_index(None, dim_size, mode, coords=coords, dims_arg=dims_arg)
    fill = None if fill_value is None else fill_for(fill_value, result_dtype, xp)
    shape = batch + plan.dims + feat
    target = None if out is None else check_out(be, out, shape, result_dtype)
    # rows with elements apart are written in place by the assignments, and by the reductions where the entries
    # are fewer than the rows (`host._scatter_strided_out` runs down the columns); with more entries its column
    # groups cost more than a fresh table and a copy (50000 x 64 float32 from 100000 rows, one thread: add 10.7
    # ms against 4.7; benchmarks/bench_strided_out.py)
    into = target is not None and direct(be, target, compute, src, *coords,
                                         apart=bool(op.winner) or plan.n < plan.size,
                                         shape3=(math.prod(batch), plan.size, math.prod(feat)))
    if cast is not None and (cast != compute or src.shape != expected):
        src = src.astype(cast, copy=False)   # cast first (NumPy's dtype=), then to the compute dtype
    # else the one cast is to the compute dtype itself, left to the kernel's reading of src (`Call.src_rows`)
    sized = size_arg(dim_size, plan)
    outer, inner = math.prod(batch), math.prod(feat)
    nbytes = outer * plan.size * inner * compute.itemsize
    if not into and (nbytes > _CHECKED_BYTES or nbytes == 0):   # (an empty one may still have a huge dim)
        check_table_bytes(shape, compute, *sized)
    if src.shape != expected:
        src = expand_cast(src, expected, len(feat), compute, xp)
    return Call(be, op, plan, batch, feat, outer, inner, src, shape, result_dtype, compute, fill, target, out, into,
                sized, identity=identity)


def _exact_through(src: np.dtype, dst: np.dtype, compute: np.dtype) -> bool:
    """Whether casting `src` to `dst` and then to `compute` gives what casting it to `compute` at once gives: dst
    is the compute dtype itself, or src -> dst is an integer widening (exact, as dst -> compute is)."""
    return dst == compute or (src.kind in "iu" and dst.kind in "iu" and np.can_cast(src, dst, "safe"))


def _scatter_into(op: Op, dst, src, index, axis, mode) -> Call:
    be = backend_of(dst=dst, src=src, index=index)
    xp = be.xp
    given, dst = dst, be.check_writable(dst)   # a subclass is written through a plain view
    src = python_scalar_as(src, dst.dtype, xp) if type(src) in _PYTHON_KIND else be.asarray(src)
    op.check_dtype(dst.dtype, "dst")
    op.check_dtype(src.dtype)
    if op.true_division and dst.dtype.kind in "iu":
        raise TypeError(f"op {op.name!r} gives non-integer results; dst dtype {dst.dtype} cannot hold them")
    if not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src.dtype} to dst dtype {dst.dtype} (same_kind rule)")
    coords = parse_coords(index, be=be)
    axis, batch, feat, expected = src_layout(src.shape, coords, axis, table_shape=dst.shape)
    m = len(coords)
    if xp.may_share_memory(src, dst):   # as if src had been copied first
        src = src.copy()
    if any(xp.may_share_memory(c, dst) for c in coords):
        coords = type(coords)(tuple(c.copy() for c in coords), coords.shape, coords.be)
    plan = plan_index(None, dst.shape[axis:axis + m], mode, coords=coords, dims_arg="dst.shape")
    be.precheck(plan)   # under mode="raise", before dst is touched
    compute = op.compute_dtype(dst.dtype)
    if src.dtype != dst.dtype and not _exact_through(src.dtype, dst.dtype, compute):
        src = src.astype(dst.dtype)   # NumPy's ufunc.at casts src to dst's dtype first
    # else the kernel's reading of src converts it straight to the compute dtype (`Call.src_rows`): the same
    # values, without an n x F copy in dst's dtype
    src = expand_cast(src, expected, len(feat), compute, xp)   # after the casts: they see src's own size
    return Call(be, op, plan, batch, feat, math.prod(batch), math.prod(feat), src, dst.shape, dst.dtype, compute,
                None, dst, given)


def _gather(src, index, axis, mode, fill_value, dtype, out) -> Call:
    be = backend_of(src=src, index=index, out=out)
    xp = be.xp
    out_dtype = getattr(out, "dtype", None)
    if type(src) in _PYTHON_KIND and dtype is None and isinstance(out_dtype, np.dtype):
        src = python_scalar_as(src, native(out_dtype), xp, "out")   # weak, as NumPy 2's (NEP 50) and scatter's
    elif type(src) in _PYTHON_KIND and dtype is not None:
        src = _scalar_for_dtype(src, dtype, xp)
    src = be.asarray(src)
    if src.dtype.hasobject:
        raise TypeError(f"gather does not support src dtype {src.dtype}")
    if not src.dtype.isnative:   # results are native (the kernels move native items); a copy for this rare input
        src = src.astype(native(src.dtype))
    cast = check_dtype_arg(dtype, src.dtype, numbers=False)
    if cast is not None:
        be.refuse_dtype("dtype", cast)
    coords = parse_coords(index, be=be)
    m = len(coords)
    axis = normalize_axis(axis, src.ndim, m)
    plan = plan_index(None, src.shape[axis:axis + m], mode, coords=coords, dims_arg="src.shape")
    batch, feat = src.shape[:axis], src.shape[axis + m:]
    result_dtype = src.dtype if cast is None else cast
    fill = fill_for(fill_value, result_dtype, xp) if plan.drops else None
    shape = batch + plan.shape + feat
    target = None if out is None else check_out(be, out, shape, native(result_dtype))
    into = target is not None and direct(be, target, native(result_dtype), src, *coords, apart=True,
                                         shape3=(math.prod(batch), plan.n, math.prod(feat)))
    if cast is not None and cast != src.dtype:
        src = src.astype(cast)
    return Call(be, None, plan, batch, feat, math.prod(batch), math.prod(feat), src, shape, result_dtype,
                src.dtype, fill, target, out, into, gathers=True)


def _gather_into(dst, src, index, axis, mode) -> Call:
    be = backend_of(dst=dst, src=src, index=index)
    xp = be.xp
    given, dst = dst, be.check_writable(dst)   # a subclass is written through a plain view
    src = be.asarray(src)
    for arg, arr in (("dst", dst), ("src", src)):
        if arr.dtype.hasobject:
            raise TypeError(f"gather_into does not support {arg} dtype {arr.dtype}")
    if not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src.dtype} to dst dtype {dst.dtype} (same_kind rule)")
    coords = parse_coords(index, be=be)
    m = len(coords)
    axis = normalize_axis(axis, src.ndim, m)
    plan = plan_index(None, src.shape[axis:axis + m], mode, coords=coords, dims_arg="src.shape")
    batch, feat = src.shape[:axis], src.shape[axis + m:]
    if dst.shape != batch + plan.shape + feat:
        raise ValueError(f"dst shape {dst.shape} != batch {batch} + index shape {plan.shape} + features {feat} "
                         f"(src shape {src.shape})")
    # no precheck pass: the gather kernels check every entry before writing (the GPU's plan is checked already)
    if xp.may_share_memory(src, dst):   # plan.flat is already a private copy unless it is an int32/int64 index
        src = src.copy()
    if xp.may_share_memory(plan.flat, dst):
        plan = plan_index(None, plan.dims, plan.mode, coords=(plan.flat.copy().reshape(plan.shape),), be=be)
    return Call(be, None, plan, batch, feat, math.prod(batch), math.prod(feat), src, dst.shape, dst.dtype,
                dst.dtype, None, dst, given, gathers=True)


def float_dtypes(dtype, name: str, *, complex_ok: bool = False, arg: str = "src") -> tuple[np.dtype, np.dtype]:
    """(result dtype, compute dtype) of a float-valued group op: integers give float64, float16 computes in
    float32; complex only where `complex_ok`; TypeError naming the op and dtype otherwise. The dtypes are native
    (the kernels have no loops for swapped bytes; NumPy's ufuncs give native results too)."""
    dtype = native(dtype)
    if dtype.kind in "iu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if float_kind(dtype) == "f":   # float16 and bfloat16 compute in float32
        return dtype, np.dtype(np.float32) if dtype.itemsize == 2 else dtype
    if dtype.kind == "c" and complex_ok:
        return dtype, dtype
    allowed = "integers, float16/32/64, bfloat16" + (", complex64/128" if complex_ok else "")
    raise TypeError(f"{name} does not support {arg} dtype {dtype} (supported: {allowed})")


def _group(name, src, index, dim_size, axis, mode, compute, complex_ok, src_arg, broadcast, dims_arg) -> Call:
    be = backend_of(src=src, index=index)
    src = be.asarray(src)
    result, rule_compute = float_dtypes(src.dtype, name, complex_ok=complex_ok, arg=src_arg)
    coords = parse_coords(index, be=be)
    compute = compute or rule_compute
    if broadcast:
        axis, batch, feat, expected = src_layout(src.shape, coords, axis, src_arg)
        src = expand_cast(src, expected, len(feat), compute, be.xp)
    else:
        axis, batch, feat = split_src(src, coords, axis, src_arg)
    plan = plan_index(None, dim_size, mode, coords=coords, dims_arg=dims_arg)
    outer, inner = math.prod(batch), math.prod(feat)
    sized = size_arg(dim_size, plan)
    check_table_bytes(batch + plan.dims + feat, compute, *sized)
    return Call(be, None, plan, batch, feat, outer, inner, src, batch + plan.dims + feat, result, compute,
                size_arg=sized)


def _reverse(op, src, index, out, dst, axis, mode, extra) -> Call:
    """Validated shapes, the `Reverse` context shared by the VJPs and JVPs, and canonical views of the others.

    `extra` holds (name, array or None, "out" or "src") triples: further arrays shaped like `out` or `src`.
    The Call's `context` is the `Reverse` the rules read, `views` maps the name of each given extra array to its
    canonical view in the context's floating dtype (a src-like one broadcast as src is), `src_shape` is src's
    own shape and `expected` the shape B + I + F it broadcasts to; `shape` is out's.
    """
    check_given("out", out, " (the result of the forward scatter)")
    for name, arr, _ in extra[:1]:   # the cotangent or tangent the function is about; later extras are optional
        check_given(name, arr)
    check_given("src", src)
    extra = (("dst", dst, "out"), *extra)
    be = backend_of(src=src, index=index, out=out, **{name: a for name, a, _ in extra})
    arrays = {"src": be.asarray(src), "out": check_numeric(be.asarray(out), "out")}
    others = {name: (check_numeric(be.asarray(a), name) if name != "dst" else be.asarray(a), like)
              for name, a, like in extra if a is not None}
    src, out = arrays["src"], arrays["out"]
    for name, (arr, _) in others.items():
        if name != "dst":
            check_real_derivative(name, arr, src, out, others.get("dst", (None,))[0])
    op.check_dtype(src.dtype)   # the forward pass refused these; the rules would return zeros for them
    if "dst" in others:
        op.check_dtype(others["dst"][0].dtype, "dst")
    coords = parse_coords(index, be=be)
    # src (and its tangent) may broadcast to B + I + F, as in the forward call; src's own shape stays the one of
    # its cotangent (summed over the broadcast dims by `unbroadcast`)
    axis, batch, feat, expected = src_layout(src.shape, coords, axis, table_shape=out.shape, table_arg="out")
    m = len(coords)
    for name, (arr, like) in others.items():
        if arr.shape != arrays[like].shape:
            raise ValueError(f"{name} shape {arr.shape} != {like} shape {arrays[like].shape}")
    plan = plan_index(None, out.shape[axis:axis + m], mode, coords=coords, dims_arg="out.shape")
    be.precheck(plan)   # some rules (add's dst gradient) never reach a kernel that would report a bad entry
    dtype = _float_dtype(src, out, *(arr for arr, _ in others.values()))
    if src.dtype != out.dtype and not np.can_cast(src.dtype, out.dtype, "safe"):
        # the forward cast src to out's dtype (dtype=, or a dst of that dtype) before combining: the rules that
        # read src (max/min's winners, products) see the values it combined, not src's own
        src = src.astype(out.dtype)
    outer, inner = math.prod(batch), math.prod(feat)
    rows = {"src": plan.n, "out": plan.size}
    others = {name: (expand_cast(arr, expected, len(feat), dtype, be.xp) if like == "src" else arr, like)
              for name, (arr, like) in others.items()}
    views = {name: be.rows_view(arr, dtype, outer, rows[like], inner) for name, (arr, like) in others.items()}
    src_shape = src.shape
    exact = None
    key = np.result_type(src.dtype, out.dtype, *(() if "dst" not in others else (others["dst"][0].dtype,)))
    if op.selects and key.kind in "iu":   # max/min's winners among integers, compared as integers
        exact = (be.rows_view(expand_cast(src, expected, len(feat), key, be.xp), key, outer, plan.n, inner),
                 be.rows_view(out, key, outer, plan.size, inner),
                 None if "dst" not in others else be.rows_view(others["dst"][0], key, outer, plan.size, inner))
    src = expand_cast(src, expected, len(feat), dtype, be.xp)
    # src converted whole only for the rules that ask for `src3`; the others read it by chunks (`src_chunks`)
    ctx = Reverse(be, plan, functools.partial(be.rows_view, src, dtype, outer, plan.n, inner),
                  be.rows_view(out, dtype, outer, plan.size, inner), views.get("dst"), exact, dtype=dtype,
                  source=chunked_source(src, dtype, outer, plan.n, inner))
    return Call(be, op, plan, batch, feat, outer, inner, src, out.shape, dtype, dtype, context=ctx, views=views,
                src_shape=src_shape, expected=expected)


@dataclass(slots=True, eq=False)
class EdgeCall:
    """A validated gather_scatter call, forward or reverse: the backend, op and edge plan, `src` of shape
    B + S + F as an array, the weight with its trailing 1s dropped (`w`, None without one; `heads` the feature
    dims it spans, `w_shape` its own shape) and the messages' dtype `vdtype`. Forward: the result and compute
    dtypes, the identity and the fill. Reverse: the cotangents and tangents as arrays, the derivative dtype and
    whether the messages must be materialised."""

    be: ModuleType
    op: Op
    plan: Any
    axis: int
    batch: tuple
    feat: tuple
    outer: int
    inner: int
    src: Any
    w: Any
    heads: int
    w_shape: tuple | None
    vdtype: np.dtype
    result_dtype: np.dtype | None = None
    compute: np.dtype | None = None
    identity: Any = None
    fill: Any = None
    arrays: dict | None = None
    dtype: np.dtype | None = None
    materialise: bool = False

    @property
    def out_shape(self) -> tuple:
        return self.batch + self.plan.dims + self.feat


def _edges(op, src, gather_index, scatter_index, weight, plan, dim_size, axis, mode, fill_value, out, cotangents,
           fun, be) -> EdgeCall:
    reverse = cotangents is not None
    dims_arg = "dim_size"
    refuse_assignment(op, fun, "gather_scatter has no assignment forward" if reverse else
                      "its fused kernels reduce messages with atomics or in registers")
    if be is None:
        be = backend_of(src=src, gather_index=gather_index, scatter_index=scatter_index, weight=weight, out=out,
                        **(cotangents or {}))
    xp = be.xp
    if src is None:
        raise TypeError(f"{fun} needs src (the forward call's src), got None" if reverse else
                        "src must be an array of numbers, got None")
    if type(src) is not np.ndarray:
        src = be.asarray(src)
    gather_index, scatter_index = be.on_host((gather_index, scatter_index))   # the edges are planned there
    arrays = None
    if reverse:
        arrays = {}
        for name, a in cotangents.items():
            if a is not None:
                a = arrays[name] = a if type(a) is np.ndarray else be.asarray(a)
                if not holds_numbers(a.dtype):
                    raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
        if out is not None and "grad_out" in arrays and shape_of_any(be, out) != arrays["grad_out"].shape:
            # (as the other reverse functions: neither is taken for the right one, which sizes D below)
            raise ValueError(f"grad_out shape {arrays['grad_out'].shape} != out shape {shape_of_any(be, out)}")
        if plan is None and dim_size is None:
            dim_size = dims_like(out if out is not None else arrays.get("grad_out"), src, gather_index,
                                 scatter_index, axis)
            if dim_size is not None:   # (a bound error then names the array it was read from)
                dims_arg = "out.shape" if out is not None else "grad_out.shape"
    plan, axis, batch, feat = resolve(src, gather_index, scatter_index, plan, axis, dim_size, mode,
                                      dims_arg=dims_arg)
    w, heads = check_weight(weight, plan.index_shape, feat, op, be=be)
    w_shape = None if weight is None else shape_of_any(be, weight)   # before trailing 1s are dropped
    vdtype = value_dtype(src.dtype, w)
    call = EdgeCall(be, op, plan, axis, batch, feat, math.prod(batch), math.prod(feat), src, w, heads, w_shape,
                    vdtype, arrays=arrays)
    if reverse:
        call.dtype, call.materialise = derivative_policy(op, vdtype, arrays)
    else:
        call.result_dtype, call.compute, call.identity = dtype_rules(op, vdtype)
        call.fill = None if fill_value is None else fill_for(fill_value, call.result_dtype, xp)
    return call


def shape_of_any(be: ModuleType, a) -> tuple:
    """The shape of an array argument on either backend (CuPy arrays refuse NumPy's implicit conversion)."""
    if type(a) is np.ndarray:
        return a.shape
    return be.shape_of(a)
