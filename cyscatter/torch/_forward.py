"""Forward-mode formulas (``jvp``) of the custom ops, and the autograd.Functions that carry them (`_func`).

The linear cases (scatter, scatter_into and segment with a linear op, gather_scatter with a linear op, bilinear
in `src` and `weight`; gather, gather_segment and the add scan) apply the op itself to the tangents, so they
differentiate again to any order, forward or reverse. The others run the core's JVPs (`cyscatter.scatter_jvp`,
`gather_scatter_jvp`, `segment_jvp`, `scatter_softmax_jvp`, ...) as custom ops; differentiating one of those again
(a JVP of a JVP, or the gradient of a JVP) raises NotImplementedError naming it. Hessians by forward over reverse
(``jacfwd(jacrev(f))``) run the reverse formulas' forward derivatives, so they exist wherever double backward
does.
"""
from __future__ import annotations

import torch

import cyscatter as cs
from cyscatter.torch import _autograd as A
from cyscatter.torch import _func
from cyscatter.torch._bridge import array, plan_of, tensor
from cyscatter.torch._func import call

lib = torch.library


def _like(x: torch.Tensor, result) -> torch.Tensor:
    t = tensor(result)
    return (t if t.dtype == x.dtype else t.to(x.dtype)).reshape(x.shape)


# ---- the core's JVPs as custom ops ---------------------------------------------------------------------------------

@lib.custom_op("cyscatter::scatter_jvp", mutates_args=())
def scatter_jvp(op: str, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor, src_dot: torch.Tensor,
                dst: torch.Tensor | None, dst_dot: torch.Tensor | None, axis: int, mode: str) -> torch.Tensor:
    return _like(out, cs.scatter_jvp(op, array(src), array(index), array(out), array(src_dot), dst=array(dst),
                                     dst_dot=array(dst_dot), axis=axis, mode=mode))


@lib.custom_op("cyscatter::gather_scatter_jvp", mutates_args=())
def gather_scatter_jvp(op: str, src: torch.Tensor, gather_index: torch.Tensor | None,
                       scatter_index: torch.Tensor | None, out: torch.Tensor, src_dot: torch.Tensor | None,
                       weight: torch.Tensor | None, weight_dot: torch.Tensor | None, dim_size: int, axis: int,
                       mode: str | None, plan: int) -> torch.Tensor:
    return _like(out, cs.gather_scatter_jvp(op, array(src), array(gather_index), array(scatter_index), array(out),
                                            array(src_dot), weight=array(weight), weight_dot=array(weight_dot),
                                            dim_size=None if plan else dim_size, axis=axis, mode=mode,
                                            plan=plan_of(plan)))


@lib.custom_op("cyscatter::segment_jvp", mutates_args=())
def segment_jvp(op: str, src: torch.Tensor, indptr: torch.Tensor, out: torch.Tensor, src_dot: torch.Tensor,
                axis: int) -> torch.Tensor:
    return _like(out, cs.segment_jvp(op, array(src), array(indptr), array(out), array(src_dot), axis=axis))


@lib.custom_op("cyscatter::softmax_jvp", mutates_args=())
def softmax_jvp(kind: str, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor, src_dot: torch.Tensor,
                dim_size: int, axis: int, mode: str) -> torch.Tensor:
    i, o, t = array(index), array(out), array(src_dot)
    if kind == "logsumexp":
        return _like(out, cs.scatter_logsumexp_jvp(array(src), i, o, t, axis=axis, mode=mode))
    return _like(out, getattr(cs, f"scatter_{kind}_jvp")(o, i, t, dim_size=None if dim_size < 0 else dim_size,
                                                          axis=axis, mode=mode))


@lib.custom_op("cyscatter::moment_jvp", mutates_args=())
def moment_jvp(kind: str, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor, src_dot: torch.Tensor,
               ddof: float, axis: int, mode: str) -> torch.Tensor:
    return _like(out, getattr(cs, f"scatter_{kind}_jvp")(array(src), array(index), array(out), array(src_dot),
                                                         ddof=ddof, axis=axis, mode=mode))


@lib.custom_op("cyscatter::scan_jvp", mutates_args=())
def scan_jvp(op: str, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor, src_dot: torch.Tensor,
             dim_size: int, axis: int, mode: str, exclusive: bool, reverse: bool) -> torch.Tensor:
    return _like(out, cs.scatter_scan_jvp(op, array(src), array(index), array(src_dot), dim_size=dim_size,
                                          axis=axis, mode=mode, exclusive=exclusive, reverse=reverse))


@lib.custom_op("cyscatter::quantile_jvp", mutates_args=())
def quantile_jvp(src: torch.Tensor, index: torch.Tensor, out: torch.Tensor, src_dot: torch.Tensor, q: float,
                 nan: bool, method: str, dim_size: int, axis: int, mode: str) -> torch.Tensor:
    fn = cs.scatter_nanquantile_jvp if nan else cs.scatter_quantile_jvp
    return _like(out, fn(array(src), array(index), array(src_dot), q, method=method, dim_size=dim_size, axis=axis,
                         mode=mode))


def _fake_like(position: int):
    """A fake kernel for a JVP op: the tangent is shaped and typed like the output, argument `position`."""
    def fake(*args):
        return torch.empty_like(args[position])
    return fake


def _what(name: str):
    def setup_context(ctx, inputs, output):
        ctx.what = f"the forward-mode derivative {name}"
    return setup_context


for _op, _out_position in ((scatter_jvp, 3), (gather_scatter_jvp, 4), (segment_jvp, 3), (softmax_jvp, 3),
                           (moment_jvp, 3), (scan_jvp, 3), (quantile_jvp, 2)):
    _name = _op._name.split("::")[-1]
    _op.register_fake(_fake_like(_out_position))
    _op.register_autograd(A.once_only, setup_context=_what(_name))
    _func.register(_name, _what(_name), A.once_only, A.once_only_forward)


# ---- the forward formulas -----------------------------------------------------------------------------------------

def _zero_if_none(tangent, like: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(like) if tangent is None else tangent


def _scatter_jvp(ctx, t_src, *_):
    src, index, out = ctx.saved_tensors
    op, axis, mode = ctx.op, ctx.axis, ctx.mode
    t_src = _zero_if_none(t_src, src)
    if op.linear:
        return call("scatter", t_src, index, op.name, out.shape[axis], axis, mode, None).to(out.dtype)
    return call("scatter_jvp", op.name, src, index, out, t_src, None, None, axis, mode)


def _scatter_into_jvp(ctx, t_dst, t_src, *_):
    dst, src, index, out = ctx.saved_tensors
    op, axis, mode = ctx.op, ctx.axis, ctx.mode
    t_dst, t_src = _zero_if_none(t_dst, dst), _zero_if_none(t_src, src).to(dst.dtype)
    if op.linear:
        return call("scatter_into", t_dst, t_src, index, op.name, axis, mode)
    return call("scatter_jvp", op.name, src.to(dst.dtype), index, out, t_src, dst, t_dst, axis, mode)


def _gather_jvp(ctx, t_src, *_):
    (index,) = ctx.saved_tensors
    return call("gather", t_src, index, ctx.axis, ctx.mode, ctx.fill)


def _gather_scatter_jvp(ctx, t_src, _gi, _si, t_weight, *_):
    src, gi, si, weight, out = ctx.saved_tensors
    op, dim_size, axis, mode, plan = ctx.args
    if not cs.get_op(op).linear:
        return call("gather_scatter_jvp", op, src, gi, si, out, t_src, weight, t_weight, dim_size, axis, mode, plan)
    # a linear op of weight * gathered src: bilinear, one term per tangent
    tangent = torch.zeros_like(out)
    if t_src is not None:
        tangent = tangent + call("gather_scatter", t_src, gi, si, weight, op, dim_size, axis, mode, plan)
    if t_weight is not None:
        tangent = tangent + call("gather_scatter", src, gi, si, t_weight, op, dim_size, axis, mode, plan)
    return tangent


def _segment_jvp(ctx, t_src, *_):
    src, indptr, out = ctx.saved_tensors
    op, axis = ctx.op, ctx.axis
    t_src = _zero_if_none(t_src, src)
    if op.linear:
        return call("segment", t_src, indptr, op.name, axis, None).to(out.dtype)
    return call("segment_jvp", op.name, src, indptr, out, t_src, axis)


def _gather_segment_jvp(ctx, t_src, *_):
    (indptr,) = ctx.saved_tensors
    return call("gather_segment", t_src, indptr, ctx.axis, ctx.total)


def _softmax_jvp(ctx, t_src, *_):
    src, index, out = ctx.saved_tensors
    kind, dim_size, axis, mode = ctx.args
    return call("softmax_jvp", kind, src, index, out, _zero_if_none(t_src, src), dim_size, axis, mode)


def _moment_jvp(ctx, t_src, *_):
    src, index, out = ctx.saved_tensors
    kind, ddof, _dim_size, axis, mode = ctx.args
    return call("moment_jvp", kind, src, index, out, _zero_if_none(t_src, src), ddof, axis, mode)


def _scan_jvp(ctx, t_src, *_):
    src, index, out = ctx.saved_tensors
    op, dim_size, axis, mode, exclusive, reverse = ctx.args
    t_src = _zero_if_none(t_src, src)
    if op == "add":
        return call("scan", t_src, index, "add", dim_size, axis, mode, exclusive, reverse).to(out.dtype)
    return call("scan_jvp", op, src, index, out, t_src, dim_size, axis, mode, exclusive, reverse)


def _quantile_jvp(ctx, t_src, *_):
    src, index, out = ctx.saved_tensors
    q, nan, method, axis, mode = ctx.args
    return call("quantile_jvp", src, index, out, _zero_if_none(t_src, src), q, nan, method, ctx.dim_size, axis,
                mode)


for _name, _jvp in (("scatter", _scatter_jvp), ("scatter_into", _scatter_into_jvp), ("gather", _gather_jvp),
                    ("gather_scatter", _gather_scatter_jvp), ("segment", _segment_jvp),
                    ("gather_segment", _gather_segment_jvp), ("softmax", _softmax_jvp), ("moment", _moment_jvp),
                    ("scan", _scan_jvp), ("quantile", _quantile_jvp)):
    _func.register(_name, getattr(A, f"_{_name}_setup"), getattr(A, f"_{_name}_backward"), _jvp)
