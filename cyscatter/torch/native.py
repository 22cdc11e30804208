"""cyscatter's own API on tensors: the functions of `cyscatter`, with tensors in and tensors out.

Each function takes the arguments of its `cyscatter` namesake (same defaults, ops, modes and errors) and returns
a tensor that owns the array cyscatter computed (no copy); the inputs are read in place. The float results are
differentiable (`torch.autograd`, double backward where `cyscatter.torch._autograd` says so; ``torch.func`` and
forward-mode AD through `cyscatter.torch._forward`) and every function
is a ``torch.library`` custom op (``torch.ops.cyscatter.*``) with a fake kernel, so ``torch.compile`` traces it
when the output's size is given (`dim_size`; otherwise it is read from the index, which needs the data).

The ``*_`` functions (`scatter_into_`, `gather_into_`) and ``out=`` update the given tensor in place (torch's
convention) and are not differentiable; `scatter_into` returns an updated copy and is.

The index is one integer tensor (the tuple-of-coordinates form of the NumPy API is not offered here).
"""
from __future__ import annotations

import operator

import torch

import cyscatter as cs
from cyscatter._arrays.integers import as_int
from cyscatter._arrays.keywords import HINTS, hide_catch_all, unexpected_keywords
from cyscatter._registry.ops import ORDER_STATS
from cyscatter.torch import (
    _forward,  # noqa: F401  (registers the autograd and forward formulas)
    _vmap,  # noqa: F401  (registers the batching rules)
)
from cyscatter.torch._bridge import array, plan_handle, tensor
from cyscatter.torch._func import call, has_tangent

ops = torch.ops.cyscatter
_INT64_MAX = 2**63 - 1

__all__ = [
    "gather",
    "gather_into_",
    "gather_scatter",
    "gather_scatter_plan",
    "gather_segment",
    "scatter",
    "scatter_all",
    "scatter_any",
    "scatter_argmax",
    "scatter_argmin",
    "scatter_count",
    "scatter_into",
    "scatter_into_",
    "scatter_log_softmax",
    "scatter_logsumexp",
    "scatter_nanargmax",
    "scatter_nanargmin",
    "scatter_nanquantile",
    "scatter_nanstd",
    "scatter_nanvar",
    "scatter_quantile",
    "scatter_scan",
    "scatter_softmax",
    "scatter_std",
    "scatter_var",
    "segment",
    "segment_ids",
]


# ---- arguments ----------------------------------------------------------------------------------------------------

def _tensor(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"cyscatter.torch: {name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def _in_place(dst: torch.Tensor, name: str, *inputs) -> None:
    """torch's refusals for an in-place or ``out=`` call that autograd cannot follow (these calls are not
    differentiable, so a gradient would otherwise be dropped without a word)."""
    if not torch.compiler.is_compiling() and has_tangent((dst, *inputs)):
        raise RuntimeError(f"cyscatter.torch: {name} is written in place, which forward-mode AD (torch.func.jvp, "
                           "torch.autograd.forward_ad) does not follow; use the functional form (no out=, "
                           "scatter_into instead of scatter_into_)")
    if not torch.is_grad_enabled():
        return
    if dst.is_leaf and dst.requires_grad:
        raise RuntimeError(f"cyscatter.torch: {name} is a leaf Variable that requires grad and is being used in "
                           "an in-place operation")
    if dst.requires_grad or any(t is not None and t.requires_grad for t in inputs):
        raise RuntimeError("cyscatter.torch: functions with out=... arguments (and the in-place *_ functions) "
                           "don't support automatic differentiation, but one of the arguments requires grad; "
                           "use the functional form (no out=, scatter_into instead of scatter_into_)")


def _no_porting(function: str, porting: dict) -> None:
    if porting:
        raise unexpected_keywords(function, porting)


def _index(index, name: str = "index") -> torch.Tensor:
    index = _tensor(index, name)
    if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == torch.bool:
        raise TypeError(f"cyscatter.torch: {name} must be an integer tensor, got {index.dtype}")
    return index


def as_size(value, name: str, prefix: str = "cyscatter.torch: ") -> int:
    """`value` as a Python int, as the core takes sizes and axes: a bool (or a bool tensor) is a TypeError, not 0
    or 1."""
    error = f"{prefix}{name} must be an int, got {type(value).__name__} {value!r}"
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
        raise TypeError(error)
    return as_int(value, error)


def _dim_size(dim_size, index: torch.Tensor) -> int:
    """`dim_size`, or one more than the largest index (which reads the data: give it under torch.compile)."""
    if dim_size is not None:
        return as_size(dim_size, "dim_size")
    if index.device.type == "meta":
        raise ValueError("cyscatter.torch: index is on device 'meta', which holds no values to read dim_size "
                         "from: pass dim_size= (an int)")
    if torch.compiler.is_compiling():
        raise ValueError("cyscatter.torch: pass dim_size= (an int) under torch.compile: the output's size would "
                         "otherwise be read from the index's values, which a compiled graph does not know")
    size = int(index.max()) + 1 if index.numel() else 0
    if size > _INT64_MAX:
        raise ValueError(f"index holds {size - 1}: the inferred dim_size {size} is larger than a tensor dimension "
                         "can be; pass dim_size (with mode='drop', 'wrap', 'clip' or 'normalize_drop')")
    return size


def _axis(axis, src: torch.Tensor, index_dims: int = 1) -> int:
    """`axis` counted from the front of the output's B + D + F dims (a negative one from their end)."""
    axis = as_size(axis, "axis")
    out_dims = src.dim() - index_dims + 1
    if not -out_dims <= axis < out_dims:
        raise ValueError(f"axis {axis} is out of range for src of shape {tuple(src.shape)} and an index of "
                         f"{index_dims} dims")
    return axis % out_dims


def _op(op) -> str:
    return cs.get_op(op).name


def _median(op) -> bool | None:
    """For "median" / "nanmedian" (order statistics, not registry ops): whether NaN is skipped; else None."""
    return ORDER_STATS.get(op) if isinstance(op, str) else None


def _quantile(src, index, q, nan, method, dim_size, axis, mode, fill_value):
    return call("quantile", src, index, float(q), nan, method, dim_size, axis, mode, _float(fill_value))


def _float(value):
    return None if value is None else float(value)


# ---- scatter and gather -------------------------------------------------------------------------------------------

@hide_catch_all
def scatter(src, index, op="add", *, dim_size=None, axis=0, fill_value=None, mode="raise", out=None, **porting):
    """`cyscatter.scatter` on tensors: ``out[j] = op over {src[k] : index[k] == j}`` along `axis`.

    Parameters
    ----------
    src : Tensor, shape B + I + F
        Values, on the CPU (or CUDA with CuPy installed); read in place.
    index : integer Tensor, shape I
        Destination of each entry along `axis`.
    op : str, default "add"
        Any op of `cyscatter.OPS` ("add", "mean", "max", "mul", ...), as `cyscatter.scatter`.
    dim_size : int, optional
        Output rows D; default ``index.max() + 1``, which reads the index (give it under ``torch.compile``).
    axis, fill_value, mode
        As `cyscatter.scatter`.
    out : Tensor, shape B + (dim_size,) + F, optional
        Written in place and returned (not differentiable).

    Returns
    -------
    Tensor, shape B + (dim_size,) + F
        Owns the array cyscatter computed (no copy); its dtype is cyscatter's (mean of integers: float64).
        Differentiable in `src` (ties of max/min split the gradient, as ``torch.scatter_reduce``).

    Raises
    ------
    TypeError
        `src`/`index` not tensors, or a non-integer `index`; else as `cyscatter.scatter`.
    ValueError, IndexError
        An `axis` out of range; else as `cyscatter.scatter` (an index entry out of range: IndexError).
    """
    _no_porting("scatter", porting)
    src, index = _tensor(src, "src"), _index(index)
    axis = _axis(axis, src, index.dim())
    if _median(op) is not None:
        if out is not None:
            _in_place(_tensor(out, "out"), "out", src)
            dim_size = out.shape[axis]
        result = _quantile(src, index, 0.5, _median(op), "linear", _dim_size(dim_size, index), axis, mode,
                           fill_value)
        return result if out is None else out.copy_(result)
    if out is not None:
        out = _tensor(out, "out")
        _in_place(out, "out", src)
        ops.scatter_out(src, index, _op(op), out, axis, mode, _float(fill_value))
        return out
    return call("scatter", src, index, _op(op), _dim_size(dim_size, index), axis, mode, _float(fill_value))


@hide_catch_all
def scatter_into(dst, src, index, op="add", *, axis=0, mode="raise", **porting):
    """Functional, differentiable `cyscatter.scatter_into`: a new tensor, `dst` updated by the scatter."""
    _no_porting("scatter_into", porting)
    dst, src, index = _tensor(dst, "dst"), _tensor(src, "src"), _index(index)
    return call("scatter_into", dst, src, index, _op(op), _axis(axis, dst), mode)


@hide_catch_all
def scatter_into_(dst, src, index, op="add", *, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_into` in place: updates and returns `dst` (not differentiable)."""
    _no_porting("scatter_into_", porting)
    dst, src, index = _tensor(dst, "dst"), _tensor(src, "src"), _index(index)
    _in_place(dst, "dst", src)
    ops.scatter_into_(dst, src, index, _op(op), _axis(axis, dst), mode)
    return dst


@hide_catch_all
def gather(src, index, *, axis=0, mode="raise", fill_value=None, out=None, **porting):
    """`cyscatter.gather` on tensors: ``out[..., k, ...] = src[..., index[k], ...]``; ``out=`` as `gather_into_`."""
    _no_porting("gather", porting)
    src, index = _tensor(src, "src"), _index(index)
    axis = _axis(axis, src)
    if out is not None:
        if fill_value is not None:
            raise TypeError("gather(out=...) fills nothing: pass fill_value without out")
        return gather_into_(out, src, index, axis=axis, mode=mode)
    return call("gather", src, index, axis, mode, _float(fill_value))


@hide_catch_all
def gather_into_(dst, src, index, *, axis=0, mode="raise", **porting):
    """`cyscatter.gather_into`: writes the gathered rows into `dst` in place and returns it."""
    _no_porting("gather_into_", porting)
    dst, src, index = _tensor(dst, "dst"), _tensor(src, "src"), _index(index)
    _in_place(dst, "dst", src)
    ops.gather_into_(dst, src, index, _axis(axis, src), mode)
    return dst


@hide_catch_all
def gather_scatter_plan(gather_index, scatter_index, *, src_size=None, dim_size=None, mode="raise", **porting):
    """`cyscatter.gather_scatter_plan` from index tensors (read in place)."""
    _no_porting("gather_scatter_plan", porting)
    return cs.gather_scatter_plan(array(_index(gather_index, "gather_index")),
                                  array(_index(scatter_index, "scatter_index")), src_size=src_size,
                                  dim_size=dim_size, mode=mode)


@hide_catch_all
def gather_scatter(src, gather_index=None, scatter_index=None, op="add", *, weight=None, dim_size=None, axis=0,
                   mode=None, plan=None, **porting):
    """`cyscatter.gather_scatter` on tensors: ``out[d] = op over edges e into d of weight[e] * src[gather_index[e]]``
    in one pass, with no E x F message tensor.

    Parameters
    ----------
    src : Tensor, shape B + (S,) + F
        Node rows along `axis`.
    gather_index, scatter_index : integer Tensor, shape (E,), optional
        Source and destination row of each edge (both may be omitted when `plan` is given).
    op : str, default "add"
        As `cyscatter.gather_scatter` ("add", "mean", "max", "min", ...).
    weight : Tensor, shape (E,) or (E, 1, ...), optional
        Per-edge factor, differentiable.
    dim_size : int, optional
        Destination rows; default ``scatter_index.max() + 1`` (the plan's when a plan is given).
    axis, mode
        As `cyscatter.gather_scatter`.
    plan : GatherScatterPlan, optional
        From `gather_scatter_plan`: the edges grouped once, for the forward and both reverse passes.

    Returns
    -------
    Tensor, shape B + (dim_size,) + F
        Differentiable in `src` and `weight` (first order by the core's fused VJPs, second order through the
        unfused form).

    Raises
    ------
    TypeError
        Neither `scatter_index` nor `plan`; arguments that are not tensors; else as `cyscatter.gather_scatter`.
    """
    _no_porting("gather_scatter", porting)
    for name, value in (("gather_index", gather_index), ("scatter_index", scatter_index)):
        if isinstance(value, str):
            raise TypeError(f"cyscatter.torch.gather_scatter: {name} must be a torch.Tensor, got the string "
                            f"{value!r}: op comes after both indices, gather_scatter(src, gather_index, "
                            f"scatter_index, op) ({HINTS['edge_index']})")
    src = _tensor(src, "src")
    gi = None if gather_index is None else _index(gather_index, "gather_index")
    si = None if scatter_index is None else _index(scatter_index, "scatter_index")
    weight = None if weight is None else _tensor(weight, "weight")
    if plan is not None:
        size = int(plan.size)
    elif si is None:
        raise TypeError("gather_scatter needs scatter_index or a plan")
    else:
        size = _dim_size(dim_size, si)
    if _median(op) is not None and plan is None and weight is None:
        messages = src if gi is None else call("gather", src, gi, _axis(axis, src), mode or "raise", None)
        return _quantile(messages, si, 0.5, _median(op), "linear", size, _axis(axis, src), mode or "raise", None)
    return call("gather_scatter", src, gi, si, weight, _op(op), size, _axis(axis, src), mode, plan_handle(plan))


# ---- segments -----------------------------------------------------------------------------------------------------

def _segment_axis(axis, src, indptr):
    return indptr.dim() - 1 if axis is None else _axis(axis, src)


@hide_catch_all
def segment(src, indptr, op="add", *, axis=None, fill_value=None, **porting):
    """`cyscatter.segment`: ``out[i] = op over src[indptr[i]:indptr[i+1]]`` along `axis` (CSR segments)."""
    _no_porting("segment", porting)
    src, indptr = _tensor(src, "src"), _index(indptr, "indptr")
    if _median(op) is not None and indptr.dim() == 1:
        return _quantile(src, segment_ids(indptr), 0.5, _median(op), "linear", indptr.shape[0] - 1,
                         _segment_axis(axis, src, indptr), "raise", fill_value)
    return call("segment", src, indptr, _op(op), _segment_axis(axis, src, indptr), _float(fill_value))


@hide_catch_all
def gather_segment(src, indptr, *, axis=None, total=None, **porting):
    """`cyscatter.gather_segment`: row i of `src` repeated ``indptr[i+1] - indptr[i]`` times along `axis`.

    `total` (``indptr[-1]``, the result's length) lets torch.compile size the result without the data.
    """
    _no_porting("gather_segment", porting)
    src, indptr = _tensor(src, "src"), _index(indptr, "indptr")
    total = int(indptr[..., -1].max()) if total is None else as_size(total, "total")
    return call("gather_segment", src, indptr, _segment_axis(axis, src, indptr), total)


@hide_catch_all
def segment_ids(indptr, **porting):
    """`cyscatter.segment_ids`: the segment of each position, int64."""
    _no_porting("segment_ids", porting)
    return tensor(cs.segment_ids(array(_index(indptr, "indptr"))))


# ---- group statistics ---------------------------------------------------------------------------------------------

def _softmax(kind, src, index, dim_size, axis, mode):
    src, index = _tensor(src, "src"), _index(index)
    # softmax and log_softmax are shaped like src: without dim_size the kernel infers it (-1), so that
    # torch.compile traces the call without reading the index
    size = -1 if dim_size is None and kind != "logsumexp" else _dim_size(dim_size, index)
    return call("softmax", src, index, kind, size, _axis(axis, src, index.dim()), mode)


@hide_catch_all
def scatter_softmax(src, index, *, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_softmax`: the softmax of each group, shaped like `src`."""
    _no_porting("scatter_softmax", porting)
    return _softmax("softmax", src, index, dim_size, axis, mode)


@hide_catch_all
def scatter_log_softmax(src, index, *, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_log_softmax`: the log-softmax of each group, shaped like `src`."""
    _no_porting("scatter_log_softmax", porting)
    return _softmax("log_softmax", src, index, dim_size, axis, mode)


@hide_catch_all
def scatter_logsumexp(src, index, *, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_logsumexp`: ``log(sum(exp(src)))`` per group (empty groups: -inf)."""
    _no_porting("scatter_logsumexp", porting)
    return _softmax("logsumexp", src, index, dim_size, axis, mode)


@hide_catch_all
def scatter_quantile(src, index, q=0.5, *, method="linear", dim_size=None, axis=0, fill_value=None, mode="raise",
                     **porting):
    """`cyscatter.scatter_quantile` of one scalar `q` (NumPy's quantile per group); differentiable once in
    `src` (`cyscatter.scatter_quantile_vjp`)."""
    _no_porting("scatter_quantile", porting)
    src, index = _tensor(src, "src"), _index(index)
    return _quantile(src, index, q, False, method, _dim_size(dim_size, index), _axis(axis, src, index.dim()), mode,
                     fill_value)


@hide_catch_all
def scatter_nanquantile(src, index, q=0.5, *, method="linear", dim_size=None, axis=0, fill_value=None,
                        mode="raise", **porting):
    """`cyscatter.scatter_nanquantile`: `scatter_quantile` skipping NaN (NumPy's nanquantile per group)."""
    _no_porting("scatter_nanquantile", porting)
    src, index = _tensor(src, "src"), _index(index)
    return _quantile(src, index, q, True, method, _dim_size(dim_size, index), _axis(axis, src, index.dim()), mode,
                     fill_value)


def _moment(kind, src, index, ddof, dim_size, axis, mode):
    src, index = _tensor(src, "src"), _index(index)
    return call("moment", src, index, kind, float(ddof), _dim_size(dim_size, index), _axis(axis, src, index.dim()), mode)


@hide_catch_all
def scatter_var(src, index, *, ddof=0, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_var`: the variance of each group (NumPy's `ddof`)."""
    _no_porting("scatter_var", porting)
    return _moment("var", src, index, ddof, dim_size, axis, mode)


@hide_catch_all
def scatter_std(src, index, *, ddof=0, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_std`: the standard deviation of each group (NumPy's `ddof`)."""
    _no_porting("scatter_std", porting)
    return _moment("std", src, index, ddof, dim_size, axis, mode)


@hide_catch_all
def scatter_nanvar(src, index, *, ddof=0, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_nanvar`: `scatter_var` over the non-NaN entries."""
    _no_porting("scatter_nanvar", porting)
    return _moment("nanvar", src, index, ddof, dim_size, axis, mode)


@hide_catch_all
def scatter_nanstd(src, index, *, ddof=0, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_nanstd`: `scatter_std` over the non-NaN entries."""
    _no_porting("scatter_nanstd", porting)
    return _moment("nanstd", src, index, ddof, dim_size, axis, mode)


def _argext(kind, src, index, dim_size, axis, fill_value, mode):
    src, index = _tensor(src, "src"), _index(index)
    fill = None if fill_value is None else operator.index(fill_value)
    return ops.argext(src.detach(), index, kind, _dim_size(dim_size, index), _axis(axis, src, index.dim()), mode, fill)


@hide_catch_all
def scatter_argmax(src, index, *, dim_size=None, axis=0, fill_value=None, mode="raise", **porting):
    """`cyscatter.scatter_argmax`: the position along `axis` of each group's maximum, int64."""
    _no_porting("scatter_argmax", porting)
    return _argext("argmax", src, index, dim_size, axis, fill_value, mode)


@hide_catch_all
def scatter_argmin(src, index, *, dim_size=None, axis=0, fill_value=None, mode="raise", **porting):
    """`cyscatter.scatter_argmin`: the position along `axis` of each group's minimum, int64."""
    _no_porting("scatter_argmin", porting)
    return _argext("argmin", src, index, dim_size, axis, fill_value, mode)


@hide_catch_all
def scatter_nanargmax(src, index, *, dim_size=None, axis=0, fill_value=None, mode="raise", **porting):
    """`cyscatter.scatter_nanargmax`: `scatter_argmax` skipping NaN."""
    _no_porting("scatter_nanargmax", porting)
    return _argext("nanargmax", src, index, dim_size, axis, fill_value, mode)


@hide_catch_all
def scatter_nanargmin(src, index, *, dim_size=None, axis=0, fill_value=None, mode="raise", **porting):
    """`cyscatter.scatter_nanargmin`: `scatter_argmin` skipping NaN."""
    _no_porting("scatter_nanargmin", porting)
    return _argext("nanargmin", src, index, dim_size, axis, fill_value, mode)


@hide_catch_all
def scatter_count(index, dim_size=None, *, mode="raise", **porting):
    """`cyscatter.scatter_count`: the number of entries of each group, int64."""
    _no_porting("scatter_count", porting)
    index = _index(index)
    return ops.count(index, _dim_size(dim_size, index), mode)


def _logical(kind, src, index, dim_size, axis, mode):
    src, index = _tensor(src, "src"), _index(index)
    return ops.logical(src.detach(), index, kind, _dim_size(dim_size, index), _axis(axis, src, index.dim()), mode)


@hide_catch_all
def scatter_any(src, index, *, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_any`: whether any entry of each group is nonzero, bool."""
    _no_porting("scatter_any", porting)
    return _logical("any", src, index, dim_size, axis, mode)


@hide_catch_all
def scatter_all(src, index, *, dim_size=None, axis=0, mode="raise", **porting):
    """`cyscatter.scatter_all`: whether every entry of each group is nonzero (empty: True), bool."""
    _no_porting("scatter_all", porting)
    return _logical("all", src, index, dim_size, axis, mode)


@hide_catch_all
def scatter_scan(src, index, op="add", *, dim_size=None, axis=0, mode="raise", exclusive=False, reverse=False, **porting):
    """`cyscatter.scatter_scan`: the running add, mul, max or min within each group, shaped like `src`."""
    _no_porting("scatter_scan", porting)
    src, index = _tensor(src, "src"), _index(index)
    return call("scan", src, index, _op(op), _dim_size(dim_size, index), _axis(axis, src, index.dim()), mode,
                    bool(exclusive), bool(reverse))
