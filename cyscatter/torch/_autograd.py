"""Autograd formulas of the custom ops, from the core's split reverse functions.

First order runs the core's fused VJPs (`_reverse_ops`). When the backward itself is differentiated
(``create_graph=True``: grad mode is on inside the backward), each formula is written instead with differentiable
pieces, so second and higher derivatives follow:

- ops whose partial derivatives are locally constant (add, sub, mean, sqrt_n, max, min, set, first and the
  NaN-skipping twins but nanprod; `cyscatter.OPS`' ``partials == ""``): ``grad_src = P * gather(g)`` with the
  partials ``P`` the core's VJP of a unit cotangent (1 / count, tie shares, winners), a constant;
- gather and gather_segment (linear) are each the adjoint of scatter-add / segment-add, which are custom ops with
  these same formulas, so the pair differentiates to any order;
- softmax, log_softmax, logsumexp, var and std: their VJPs written with `gather` and scatter-add;
- gather_scatter: the VJP of its unfused form ``scatter(gather(src) * weight)``.

mul, div and nanprod (value-dependent partials), nanvar/nanstd and the scans but add differentiate once: their
backward is the core's VJP op, whose own backward raises NotImplementedError rather than returning a wrong value.

Every formula calls its pieces through `_func.call`, so that under ``torch.func`` (where these formulas run in the
ops' autograd.Functions) the pieces are differentiable there too.
"""
from __future__ import annotations

import torch

import cyscatter as cs
from cyscatter.torch import _func
from cyscatter.torch import _library as F
from cyscatter.torch import _reverse_ops as R
from cyscatter.torch._bridge import plan_of, tensor
from cyscatter.torch._func import call, save


def _second_order() -> bool:
    """True inside a backward that is itself being differentiated (``create_graph=True``)."""
    return torch.is_grad_enabled()


def once_only(ctx, *grads):
    raise NotImplementedError(f"cyscatter.torch differentiates {ctx.what} once only: the derivative of its "
                              "gradient (double backward) is not implemented")


def once_only_forward(ctx, *tangents):
    raise NotImplementedError(f"cyscatter.torch differentiates {ctx.what} once only: the forward-mode derivative "
                              "of its gradient is not implemented")


def _remember_name(name):
    def setup_context(ctx, inputs, output):
        named = {"scatter_vjp_src": "scatter", "scatter_vjp_dst": "scatter_into"}
        ctx.what = f"{named[name]} with op {inputs[0]!r}" if name in named else name
    return setup_context


for _name in ("scatter_vjp_src", "scatter_vjp_dst", "gather_scatter_vjp", "segment_vjp_src", "softmax_vjp",
              "moment_vjp", "scan_vjp", "quantile_vjp"):
    getattr(R, _name).register_autograd(once_only, setup_context=_remember_name(_name))
    _func.register(_name, _remember_name(_name), once_only, once_only_forward)


def _gather(g, index, axis, mode):
    return call("gather", g, index, axis, mode, None)


def _scatter_add(v, index, dim_size, axis, mode):
    return call("scatter", v, index, "add", dim_size, axis, mode, None)


def _broadcast_back(grad, src):
    """The cotangent of a src that was broadcast along the index dims: summed back to src's shape."""
    if grad is None or grad.shape == src.shape:
        return grad
    return grad.sum_to_size(src.shape)


# ---- scatter, scatter_into, gather --------------------------------------------------------------------------------

def _scatter_setup(ctx, inputs, output):
    src, index, op, _dim_size, axis, mode, _fill_value = inputs
    ctx.op, ctx.axis, ctx.mode = cs.get_op(op), axis, mode
    save(ctx, src, index, output)


def _scatter_backward(ctx, g):
    src, index, out = ctx.saved_tensors
    op, axis, mode = ctx.op, ctx.axis, ctx.mode
    if op.name in ("add", "sub") and not op.skips_nan:
        grad = _gather(g, index, axis, mode).to(src.dtype)
        grad = -grad if op.negates else grad
    elif _second_order() and not op.partials:
        partials = call("scatter_vjp_src", op.name, torch.ones_like(out), src.detach(), index, out.detach(), None,
                        axis, mode)
        grad = partials * _gather(g, index, axis, mode)
    else:
        grad = call("scatter_vjp_src", op.name, g, src, index, out, None, axis, mode)
    return _broadcast_back(grad, src), None, None, None, None, None, None


F.scatter.register_autograd(_scatter_backward, setup_context=_scatter_setup)


def _scatter_into_setup(ctx, inputs, output):
    dst, src, index, op, axis, mode = inputs
    ctx.op, ctx.axis, ctx.mode = cs.get_op(op), axis, mode
    save(ctx, dst, src, index, output)


def _scatter_into_backward(ctx, g):
    dst, src, index, out = ctx.saved_tensors
    op, axis, mode = ctx.op.name, ctx.axis, ctx.mode
    need_dst, need_src = ctx.needs_input_grad[:2]
    if _second_order() and not ctx.op.partials:
        ones, d, s, o = torch.ones_like(out), dst.detach(), src.detach().to(dst.dtype), out.detach()
        grad_dst = call("scatter_vjp_dst", op, ones, d, s, index, o, axis, mode) * g if need_dst else None
        grad_src = (call("scatter_vjp_src", op, ones, s, index, o, d, axis, mode)
                    * _gather(g, index, axis, mode) if need_src else None)
    else:
        s = src.to(dst.dtype)
        grad_dst = call("scatter_vjp_dst", op, g, dst, s, index, out, axis, mode) if need_dst else None
        grad_src = call("scatter_vjp_src", op, g, s, index, out, dst, axis, mode) if need_src else None
    if grad_src is not None:
        grad_src = _broadcast_back(grad_src.to(src.dtype), src)
    return grad_dst, grad_src, None, None, None, None


F.scatter_into.register_autograd(_scatter_into_backward, setup_context=_scatter_into_setup)


def _gather_setup(ctx, inputs, output):
    src, index, axis, mode, fill_value = inputs
    ctx.axis, ctx.mode, ctx.rows = axis, mode, src.shape[axis]
    ctx.fill = None if fill_value is None else 0.0   # the tangent of a filled entry is 0
    save(ctx, index)


def _gather_backward(ctx, g):
    (index,) = ctx.saved_tensors
    return _scatter_add(g, index, ctx.rows, ctx.axis, ctx.mode), None, None, None, None


F.gather.register_autograd(_gather_backward, setup_context=_gather_setup)


# ---- gather_scatter -----------------------------------------------------------------------------------------------

def _gather_scatter_setup(ctx, inputs, output):
    src, gather_index, scatter_index, weight, op, dim_size, axis, mode, plan = inputs
    ctx.args = (op, dim_size, axis, mode, plan)
    ctx.plan = plan_of(plan)   # the handle finds the plan while it lives: the graph keeps it alive for the backward
    save(ctx, src, gather_index, scatter_index, weight, output)


def _gather_scatter_backward(ctx, g):
    src, gi, si, weight, out = ctx.saved_tensors
    op, dim_size, axis, mode, plan = ctx.args
    need_src, need_weight = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
    if _second_order():
        grad_src, grad_weight = _unfused_vjp(g, src, gi, si, weight, op, dim_size, axis, mode, plan,
                                             need_src, need_weight)
    else:
        args = (op, g, src, gi, si, out, weight, dim_size, axis, mode, plan)
        grad_src = call("gather_scatter_vjp", "src", *args) if need_src else None
        grad_weight = call("gather_scatter_vjp", "weight", *args) if need_weight else None
    return grad_src, None, None, grad_weight, None, None, None, None, None


def _unfused_vjp(g, src, gi, si, weight, op, dim_size, axis, mode, plan, need_src, need_weight):
    """The VJP of ``scatter(gather(src, gi) * weight, si)``, differentiable (the double backward's formula)."""
    if plan:
        the_plan = plan_of(plan)
        gi, si = tensor(the_plan.gather).reshape(-1), tensor(the_plan.scatter).reshape(-1)
        mode = "drop"
    mode = mode or "raise"

    def unfused(src, weight):
        messages = call("gather", src, gi, axis, mode, 0.0)
        if weight is not None:
            w = weight.reshape(weight.shape + (1,) * (messages.dim() - axis - weight.dim()))
            messages = messages * w
        return call("scatter", messages, si, op, dim_size, axis, mode, None)

    # torch.func's vjp, not the tape's: it also runs where the tensors are torch.func's (a pullback of
    # torch.func.vjp runs this backward with the transform's own tensors, which the tape does not follow)
    if weight is None:
        grads = torch.func.vjp(lambda s: unfused(s, None), src)[1](g)
    else:
        grads = torch.func.vjp(unfused, src, weight)[1](g)
    grads = iter(grad for grad, need in zip(grads, (need_src, need_weight), strict=False) if need)
    return (next(grads) if need_src else None), (next(grads) if need_weight else None)


F.gather_scatter.register_autograd(_gather_scatter_backward, setup_context=_gather_scatter_setup)


# ---- segments -----------------------------------------------------------------------------------------------------

def _segment_setup(ctx, inputs, output):
    src, indptr, op, axis, _fill_value = inputs
    ctx.op, ctx.axis = cs.get_op(op), axis
    save(ctx, src, indptr, output)


def _segment_backward(ctx, g):
    src, indptr, out = ctx.saved_tensors
    op, axis = ctx.op, ctx.axis
    if op.name == "add":
        grad = call("gather_segment", g, indptr, axis, src.shape[axis]).to(src.dtype)
    elif _second_order() and not op.partials:
        partials = call("segment_vjp_src", op.name, torch.ones_like(out), src.detach(), indptr, out.detach(), axis)
        grad = partials * call("gather_segment", g, indptr, axis, src.shape[axis])
    else:
        grad = call("segment_vjp_src", op.name, g, src, indptr, out, axis)
    return grad, None, None, None, None


F.segment.register_autograd(_segment_backward, setup_context=_segment_setup)


def _gather_segment_setup(ctx, inputs, output):
    _src, indptr, axis, total = inputs
    ctx.axis, ctx.total = axis, total
    save(ctx, indptr)


def _gather_segment_backward(ctx, g):
    (indptr,) = ctx.saved_tensors
    return call("segment", g, indptr, "add", ctx.axis, None), None, None, None


F.gather_segment.register_autograd(_gather_segment_backward, setup_context=_gather_segment_setup)


# ---- softmax, log_softmax, logsumexp, var, std --------------------------------------------------------------------

def _softmax_setup(ctx, inputs, output):
    src, index, kind, dim_size, axis, mode = inputs
    ctx.args = (kind, dim_size, axis, mode)
    save(ctx, src, index, output)


def _softmax_backward(ctx, g):
    src, index, out = ctx.saved_tensors
    kind, dim_size, axis, mode = ctx.args
    if not _second_order():
        return call("softmax_vjp", kind, g, src, index, out, dim_size, axis, mode), None, None, None, None, None
    if dim_size < 0:   # inferred in the forward; the double backward's scatter-add needs it (eager only)
        dim_size = int(index.max()) + 1 if index.numel() else 0
    if kind == "softmax":
        grad = out * (g - _gather(_scatter_add(g * out, index, dim_size, axis, mode), index, axis, mode))
    elif kind == "log_softmax":
        grad = g - out.exp() * _gather(_scatter_add(g, index, dim_size, axis, mode), index, axis, mode)
    else:   # logsumexp: softmax(src) per group times the group's cotangent
        grad = _gather(g, index, axis, mode) * (src - _gather(out, index, axis, mode)).exp()
    return grad, None, None, None, None, None


F.softmax.register_autograd(_softmax_backward, setup_context=_softmax_setup)


def _moment_setup(ctx, inputs, output):
    src, index, kind, ddof, dim_size, axis, mode = inputs
    ctx.args = (kind, ddof, dim_size, axis, mode)
    save(ctx, src, index, output)


def _moment_backward(ctx, g):
    src, index, out = ctx.saved_tensors
    kind, ddof, dim_size, axis, mode = ctx.args
    if not _second_order() or kind not in ("var", "std"):
        return call("moment_vjp", kind, g, src, index, out, ddof, axis, mode), None, None, None, None, None, None
    # d var_j / d src_k = 2 (src_k - mean_j) / (n_j - ddof); std_j = sqrt(var_j) divides that by 2 std_j
    n = call("count", index, dim_size, mode).to(src.dtype)
    n = n.reshape(n.shape + (1,) * (out.dim() - axis - 1))
    mean = call("scatter", src, index, "mean", dim_size, axis, mode, None)
    scale = 2 * g / (n - ddof) if kind == "var" else g / ((n - ddof) * out)
    grad = _gather(scale, index, axis, mode) * (src - _gather(mean, index, axis, mode))
    return grad, None, None, None, None, None, None


F.moment.register_autograd(_moment_backward, setup_context=_moment_setup)


# ---- scans --------------------------------------------------------------------------------------------------------

def _scan_setup(ctx, inputs, output):
    src, index, op, dim_size, axis, mode, exclusive, reverse = inputs
    ctx.args = (cs.get_op(op).name, dim_size, axis, mode, exclusive, reverse)
    save(ctx, src, index, output)


def _scan_backward(ctx, g):
    src, index, _ = ctx.saved_tensors
    op, dim_size, axis, mode, exclusive, reverse = ctx.args
    none = (None,) * 7
    if not _second_order() or op != "add":
        return (call("scan_vjp", op, g, src, index, dim_size, axis, mode, exclusive, reverse), *none)
    # a running sum's adjoint is the running sum in the other direction (linear, so differentiable again)
    return (call("scan", g, index, "add", dim_size, axis, mode, exclusive, not reverse).to(src.dtype), *none)


F.scan.register_autograd(_scan_backward, setup_context=_scan_setup)


# ---- quantiles (median) ---------------------------------------------------------------------------------------------

def _quantile_setup(ctx, inputs, output):
    src, index, q, nan, method, dim_size, axis, mode, _fill_value = inputs
    # the median's derivatives are those of q = 0.5, "linear" (`cyscatter.scatter_quantile_vjp`)
    method = "linear" if method == "median" else method
    ctx.args, ctx.dim_size = (q, nan, method, axis, mode), dim_size
    save(ctx, src, index, output)


def _quantile_backward(ctx, g):
    src, index, _ = ctx.saved_tensors
    return (call("quantile_vjp", g, src, index, *ctx.args), *(None,) * 8)


F.quantile.register_autograd(_quantile_backward, setup_context=_quantile_setup)
