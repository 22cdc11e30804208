"""cyscatter's scatter and gather as PyTorch ``autograd.Function``s, built from the split reverse functions.

A complete recipe (tested by ``tests/docs/test_docs.py`` with ``torch.autograd.gradcheck``): the forward passes run
cyscatter on CPU tensors, the backward passes run ``cyscatter.scatter_vjp_src`` / ``scatter_vjp_dst`` /
``gather_vjp_src``. First order only (``once_differentiable``): a second order needs the backward written as
another Function, as the ``grad`` package does for autograd.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.autograd.function import once_differentiable

import cyscatter as cs


def _np(t: torch.Tensor) -> np.ndarray:
    """A CPU tensor as a NumPy array sharing its memory (cyscatter refuses tensors that require grad)."""
    return t.detach().numpy()


class Scatter(torch.autograd.Function):
    """``out = cyscatter.scatter(src, index, op, dim_size=dim_size)``, differentiable in `src`."""

    @staticmethod
    def forward(ctx, src, index, op="add", dim_size=None):
        out = torch.from_numpy(cs.scatter(_np(src), _np(index), op, dim_size=dim_size))
        ctx.op = op
        ctx.save_for_backward(src, index, out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        src, index, out = ctx.saved_tensors
        grad_src = cs.scatter_vjp_src(ctx.op, _np(grad_out), _np(src), _np(index), _np(out))
        return torch.from_numpy(grad_src), None, None, None


class ScatterInto(torch.autograd.Function):
    """Functional ``cyscatter.scatter_into``: a new tensor ``op``-updated from `dst`, differentiable in both."""

    @staticmethod
    def forward(ctx, dst, src, index, op="add"):
        out = torch.from_numpy(cs.scatter_into(_np(dst).copy(), _np(src), _np(index), op))
        ctx.op = op
        ctx.save_for_backward(dst, src, index, out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        dst, src, index, out = ctx.saved_tensors
        g, d, s, i, o = _np(grad_out), _np(dst), _np(src), _np(index), _np(out)
        grad_dst = cs.scatter_vjp_dst(ctx.op, g, d, s, i, o)
        grad_src = cs.scatter_vjp_src(ctx.op, g, s, i, o, dst=d)
        return torch.from_numpy(grad_dst), torch.from_numpy(grad_src), None, None


class Gather(torch.autograd.Function):
    """``out = cyscatter.gather(src, index)``, differentiable in `src`."""

    @staticmethod
    def forward(ctx, src, index):
        ctx.src_shape = tuple(src.shape)
        ctx.save_for_backward(index)
        return torch.from_numpy(cs.gather(_np(src), _np(index)))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return torch.from_numpy(cs.gather_vjp_src(_np(grad_out), _np(index), ctx.src_shape)), None


def scatter(src, index, op="add", dim_size=None):
    """Differentiable scatter of a CPU tensor."""
    return Scatter.apply(src, index, op, dim_size)


def scatter_into(dst, src, index, op="add"):
    """Differentiable, functional scatter into a copy of `dst`."""
    return ScatterInto.apply(dst, src, index, op)


def gather(src, index):
    """Differentiable gather of a CPU tensor."""
    return Gather.apply(src, index)
