"""The custom ops under ``torch.func`` and forward-mode AD: each differentiable op also as an autograd.Function.

``register_autograd`` gives a custom op reverse mode only, in an autograd.Function without ``setup_context``,
which ``torch.func`` refuses; and a forward-mode tangent passes through a custom op unseen. So each
differentiable op is also an autograd.Function with ``setup_context`` (its `_autograd` formulas), a ``jvp``
(`_forward`) and ``generate_vmap_rule`` (its pieces are custom ops, which vmap loops over). `call` runs that
Function where it is needed (a torch.func transform is active, or an argument carries a tangent) and the bare op
otherwise: dynamo cannot trace an autograd.Function with a ``jvp``, while it traces the op and its
``register_autograd`` formulas, and plain reverse mode keeps its cost.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd import forward_ad

ops = torch.ops.cyscatter
_FUNCTIONS: dict[str, type[torch.autograd.Function]] = {}


def has_tangent(args) -> bool:
    """Whether a tensor argument carries a forward-mode tangent (forward_ad's or torch.func.jvp's)."""
    if forward_ad._current_level < 0:   # no dual level entered: no tangents anywhere
        return False
    return any(isinstance(a, torch.Tensor) and forward_ad.unpack_dual(a).tangent is not None for a in args)


def _transformed(args) -> bool:
    return torch._C._are_functorch_transforms_active() or has_tangent(args)


def _same_device(name: str, args) -> None:
    """Refuse a meta tensor beside real ones: the dispatcher would run the meta (fake) kernel and return
    uninitialised memory. All-meta calls (fake kernels, torch.compile) and the core's own device checks (CPU and
    CUDA) are left as they are."""
    devices = {a.device for a in args if isinstance(a, torch.Tensor)}
    if len(devices) < 2 or not any(d.type == "meta" for d in devices):
        return
    arguments = getattr(ops, name).default._schema.arguments
    where = ", ".join(f"{arg.name} on {a.device}" for arg, a in zip(arguments, args) if isinstance(a, torch.Tensor))
    raise ValueError(f"cyscatter.torch: expected all tensors of one call on one device, got {where} (a meta tensor "
                     "holds no values: move every argument to the meta device, or none)")


def call(name: str, *args):
    """``torch.ops.cyscatter.<name>(*args)``, through its autograd.Function under torch.func or forward AD."""
    _same_device(name, args)
    if not torch.compiler.is_compiling() and name in _FUNCTIONS and _transformed(args):
        return _FUNCTIONS[name].apply(*args)
    return getattr(ops, name)(*args)


def save(ctx, *tensors) -> None:
    """`ctx.save_for_backward`, and for the jvp too when `ctx` belongs to one of this module's Functions."""
    ctx.save_for_backward(*tensors)
    if getattr(ctx, "forward_too", False):
        ctx.save_for_forward(*tensors)


def register(name: str, setup: Callable, backward: Callable, jvp: Callable) -> None:
    """Op `name` as an autograd.Function: `setup(ctx, inputs, output)` and `backward(ctx, *grads)` as for
    ``register_autograd``, `jvp(ctx, *tangents)` the output's tangent (a tangent of None: zero)."""
    op = getattr(ops, name)

    def forward(*args):
        return op(*args)

    def setup_context(ctx, inputs, output):
        ctx.forward_too = True
        setup(ctx, inputs, output)

    _FUNCTIONS[name] = type(f"{name}_function", (torch.autograd.Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward), "jvp": staticmethod(jvp), "generate_vmap_rule": True})
