"""torch_scatter's ``composite`` functions on cyscatter's fused kernels: `scatter_softmax`,
`scatter_log_softmax`, `scatter_logsumexp`, `scatter_std` (signatures of pytorch_scatter 2.x).

cyscatter computes each in one fused pass per group (no max-shift round trip through Python), exactly:
the `eps` arguments, which torch_scatter adds inside its logarithms, are accepted and not used, so results can
differ from torch_scatter's by about `eps` relative where a group's sum of exponentials is tiny.
"""
from __future__ import annotations

import torch

from cyscatter.torch import native
from cyscatter.torch.compat import _along, _dim, _flat, _size, broadcast, check_distinct, scatter_sum


def _float_only(name, src):
    if not torch.is_floating_point(src):
        raise ValueError(f"`{name}` can only be computed over tensors with floating point data types, got "
                         f"{src.dtype}")


def _grouped(fn, src, index, dim, dim_size, **kw):
    """fn(src, index_1d, dim_size=, axis=) with torch_scatter's index broadcasting, for a group-shaped result."""
    line = _along(index, src, dim)
    size = _size(index, dim_size, None, dim)
    if line is not None:
        return fn(src, line, dim_size=size, axis=dim, **kw)
    flat_src, flat_index, flat_size, unflatten = _flat(src, index, dim, size)
    return unflatten(fn(flat_src, flat_index, dim_size=flat_size, **kw))


def _elementwise(fn, src, index, dim, dim_size):
    """fn for a result shaped like `src` (softmax, log_softmax)."""
    line = _along(index, src, dim)
    if line is not None:   # the native function needs no size for a result shaped like src (torch.compile)
        return fn(src, line, dim_size=None if dim_size is None else _size(index, dim_size, None, dim), axis=dim)
    size = _size(index, dim_size, None, dim)
    flat_src, flat_index, flat_size, _ = _flat(src, index, dim, size)
    flat = fn(flat_src, flat_index, dim_size=flat_size)
    return flat.reshape(src.movedim(dim, -1).shape).movedim(-1, dim)


def scatter_softmax(src, index, dim=-1, dim_size=None):
    """torch_scatter's ``scatter_softmax``: the softmax of each group, shaped like `src`."""
    _float_only("scatter_softmax", src)
    return _elementwise(native.scatter_softmax, src, index, _dim(dim, src), dim_size)


def scatter_log_softmax(src, index, dim=-1, eps=1e-12, dim_size=None):
    """torch_scatter's ``scatter_log_softmax``: the log-softmax of each group (`eps` unused, see module)."""
    _float_only("scatter_log_softmax", src)
    return _elementwise(native.scatter_log_softmax, src, index, _dim(dim, src), dim_size)


def scatter_logsumexp(src, index, dim=-1, out=None, dim_size=None, eps=1e-12):
    """torch_scatter's ``scatter_logsumexp``: ``log(sum(exp(src)))`` per group; empty groups give 0. With
    ``out=``, out's values take part (``logaddexp(out, group)``) and groups without entries keep out's value."""
    _float_only("scatter_logsumexp", src)
    dim = _dim(dim, src)
    if out is not None:
        check_distinct(out)
        dim_size = out.shape[dim]
    result = _grouped(native.scatter_logsumexp, src, index, dim, dim_size)
    empty = torch.isneginf(result)
    if out is None:
        return result.masked_fill(empty, 0.0)
    return out.copy_(torch.where(empty, out, torch.logaddexp(out, result)))


def scatter_std(src, index, dim=-1, out=None, dim_size=None, unbiased=True):
    """torch_scatter's ``scatter_std``: the standard deviation of each group, divided by ``max(count - 1, 1)``
    when `unbiased` (else by ``max(count, 1)``); empty groups give 0. ``out=`` adds out's values to the squared
    deviations' sums, as torch_scatter does. A std of 0 (one member, or equal members) has gradient 0, as
    `cyscatter.torch.native.scatter_std`'s (torch_scatter's gradient there is NaN: the derivative of sqrt at 0)."""
    dim = _dim(dim, src)
    if out is not None:
        check_distinct(out)
    size = _size(index, dim_size, out, dim)
    count = scatter_sum(torch.ones_like(src), index, dim, None, size)
    if out is None:
        std = _grouped(native.scatter_std, src, index, dim, size)   # divided by count (NaN for empty groups)
        scale = count / (count - 1).clamp(min=1) if unbiased else count / count.clamp(min=1)
        return std.masked_fill(count == 0, 0.0) * scale.sqrt()
    mean = scatter_sum(src, index, dim, None, size) / count.clamp(min=1)
    full = broadcast(index, src, dim)
    squares = (src - mean.gather(dim, full)) ** 2
    total = scatter_sum(squares, index, dim, out, size)
    divisor = (count - 1).clamp(min=1) if unbiased else count.clamp(min=1)
    total.div_(divisor)
    positive = total > 0   # sqrt's derivative is infinite at 0: the double where gives 0 there, not inf * 0
    return total.copy_(torch.where(positive, torch.where(positive, total, 1.0).sqrt(), 0.0))
