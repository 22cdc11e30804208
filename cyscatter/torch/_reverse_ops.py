"""The core's split reverse functions as ``torch.library`` custom ops, each with a fake kernel.

The backward passes of `_autograd` call these (first order: the core's fused VJPs), so a compiled graph traces
its backward too. Each returns the cotangent of one input, shaped (and typed) like that input.
"""
from __future__ import annotations

import torch

import cyscatter as cs
from cyscatter.torch._bridge import array, plan_of, tensor

lib = torch.library


def _like(x: torch.Tensor, result) -> torch.Tensor:
    """The core's cotangent as a tensor of `x`'s dtype (the core computes low precisions in float32)."""
    t = tensor(result)
    return t if t.dtype == x.dtype else t.to(x.dtype)


@lib.custom_op("cyscatter::scatter_vjp_src", mutates_args=())
def scatter_vjp_src(op: str, grad_out: torch.Tensor, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor,
                    dst: torch.Tensor | None, axis: int, mode: str) -> torch.Tensor:
    return _like(src, cs.scatter_vjp_src(op, array(grad_out), array(src), array(index), array(out), dst=array(dst),
                                         axis=axis, mode=mode))


@scatter_vjp_src.register_fake
def _(op, grad_out, src, index, out, dst, axis, mode):
    return torch.empty_like(src)


@lib.custom_op("cyscatter::scatter_vjp_dst", mutates_args=())
def scatter_vjp_dst(op: str, grad_out: torch.Tensor, dst: torch.Tensor, src: torch.Tensor, index: torch.Tensor,
                    out: torch.Tensor, axis: int, mode: str) -> torch.Tensor:
    return _like(dst, cs.scatter_vjp_dst(op, array(grad_out), array(dst), array(src), array(index), array(out),
                                         axis=axis, mode=mode))


@scatter_vjp_dst.register_fake
def _(op, grad_out, dst, src, index, out, axis, mode):
    return torch.empty_like(dst)


@lib.custom_op("cyscatter::gather_scatter_vjp", mutates_args=())
def gather_scatter_vjp(wrt: str, op: str, grad_out: torch.Tensor, src: torch.Tensor,
                       gather_index: torch.Tensor | None, scatter_index: torch.Tensor | None,
                       out: torch.Tensor | None, weight: torch.Tensor | None, dim_size: int, axis: int,
                       mode: str | None, plan: int) -> torch.Tensor:
    """wrt: "src" (`gather_scatter_vjp_src`) or "weight" (`gather_scatter_vjp_weight`)."""
    fn = cs.gather_scatter_vjp_src if wrt == "src" else cs.gather_scatter_vjp_weight
    result = fn(op, array(grad_out), array(src), array(gather_index), array(scatter_index), array(out),
                weight=array(weight), dim_size=None if plan else dim_size, axis=axis, mode=mode, plan=plan_of(plan))
    like = src if wrt == "src" else weight
    return _like(like, result).reshape(like.shape)


@gather_scatter_vjp.register_fake
def _(wrt, op, grad_out, src, gather_index, scatter_index, out, weight, dim_size, axis, mode, plan):
    return torch.empty_like(src if wrt == "src" else weight)


@lib.custom_op("cyscatter::segment_vjp_src", mutates_args=())
def segment_vjp_src(op: str, grad_out: torch.Tensor, src: torch.Tensor, indptr: torch.Tensor, out: torch.Tensor,
                    axis: int) -> torch.Tensor:
    return _like(src, cs.segment_vjp_src(op, array(grad_out), array(src), array(indptr), array(out), axis=axis))


@segment_vjp_src.register_fake
def _(op, grad_out, src, indptr, out, axis):
    return torch.empty_like(src)


@lib.custom_op("cyscatter::softmax_vjp", mutates_args=())
def softmax_vjp(kind: str, grad_out: torch.Tensor, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor,
                dim_size: int, axis: int, mode: str) -> torch.Tensor:
    """kind: "softmax", "log_softmax" (from `out`) or "logsumexp" (from `src` and `out`)."""
    g, i, o = array(grad_out), array(index), array(out)
    if kind == "logsumexp":
        result = cs.scatter_logsumexp_vjp(g, array(src), i, o, axis=axis, mode=mode)
    else:
        result = getattr(cs, f"scatter_{kind}_vjp")(g, o, i, dim_size=None if dim_size < 0 else dim_size,
                                                    axis=axis, mode=mode)
    return _like(src, result)


@softmax_vjp.register_fake
def _(kind, grad_out, src, index, out, dim_size, axis, mode):
    return torch.empty_like(src)


@lib.custom_op("cyscatter::moment_vjp", mutates_args=())
def moment_vjp(kind: str, grad_out: torch.Tensor, src: torch.Tensor, index: torch.Tensor, out: torch.Tensor,
               ddof: float, axis: int, mode: str) -> torch.Tensor:
    return _like(src, getattr(cs, f"scatter_{kind}_vjp")(array(grad_out), array(src), array(index), array(out),
                                                         ddof=ddof, axis=axis, mode=mode))


@moment_vjp.register_fake
def _(kind, grad_out, src, index, out, ddof, axis, mode):
    return torch.empty_like(src)


@lib.custom_op("cyscatter::scan_vjp", mutates_args=())
def scan_vjp(op: str, grad_out: torch.Tensor, src: torch.Tensor, index: torch.Tensor, dim_size: int, axis: int,
             mode: str, exclusive: bool, reverse: bool) -> torch.Tensor:
    return _like(src, cs.scatter_scan_vjp(op, array(grad_out), array(src), array(index), dim_size=dim_size,
                                          axis=axis, mode=mode, exclusive=exclusive, reverse=reverse))


@scan_vjp.register_fake
def _(op, grad_out, src, index, dim_size, axis, mode, exclusive, reverse):
    return torch.empty_like(src)


@lib.custom_op("cyscatter::quantile_vjp", mutates_args=())
def quantile_vjp(grad_out: torch.Tensor, src: torch.Tensor, index: torch.Tensor, q: float, nan: bool, method: str,
                 axis: int, mode: str) -> torch.Tensor:
    fn = cs.scatter_nanquantile_vjp if nan else cs.scatter_quantile_vjp
    return _like(src, fn(array(grad_out), array(src), array(index), q, method=method, axis=axis, mode=mode))


@quantile_vjp.register_fake
def _(grad_out, src, index, q, nan, method, axis, mode):
    return torch.empty_like(src)
