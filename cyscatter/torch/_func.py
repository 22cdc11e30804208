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


def call(name: str, *args):
    """``torch.ops.cyscatter.<name>(*args)``, through its autograd.Function under torch.func or forward AD."""
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
