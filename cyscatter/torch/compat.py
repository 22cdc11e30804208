"""The torch_scatter API on cyscatter's kernels: `scatter`, `scatter_*`, `segment_*_csr/coo`, `gather_csr/coo`.

Signatures, broadcasting of `index` and results follow pytorch_scatter 2.x (``torch_scatter/scatter.py``,
``segment_csr.py``, ``segment_coo.py``): empty max/min groups give 0 and their argmax/argmin the size of `dim`,
integer means round down (`scatter_mean`, `segment_coo`) or toward zero (`segment_csr`), ``out=`` accumulates
into the given tensor. Where cyscatter differs on purpose it keeps its own rule, listed in ``docs/torch.rst``:
gradients of tied max/min winners are split evenly (torch_scatter gives all to the argmax), and mul's gradient
is exact with zeros (torch_scatter divides by src).
"""
from __future__ import annotations

import itertools
import math

import torch

from cyscatter.torch import native

# ---- torch_scatter's index broadcasting --------------------------------------------------------------------------


def _int(value, name: str) -> int:
    """torch_scatter's int-only sizes: a float (even 2.0), a bool or a string is refused, naming the argument."""
    return native.as_size(value, name, prefix="")


def _dim(dim: int, src: torch.Tensor) -> int:
    dim = _int(dim, "dim")
    if not -src.dim() <= dim < max(src.dim(), 1):
        raise IndexError(f"dim {dim} is out of range for src of {src.dim()} dims")
    return dim % max(src.dim(), 1)


def broadcast(index: torch.Tensor, src: torch.Tensor, dim: int) -> torch.Tensor:
    """torch_scatter's ``broadcast``: a 1-D index is laid along `dim`, then expanded to `src`'s shape."""
    if index.dim() == 1:
        index = index.view([1] * dim + [-1] + [1] * (src.dim() - dim - 1))
    while index.dim() < src.dim():
        index = index.unsqueeze(-1)
    return index.expand(src.shape)


def _along(index: torch.Tensor, src: torch.Tensor, dim: int):
    """The 1-D index when `index` varies along `dim` only (the common case, no copy), else None."""
    if index.dim() == 1:
        return index if index.shape[0] == src.shape[dim] else None
    full = broadcast(index, src, dim)
    if all(s == 0 or n == 1 for d, (s, n) in enumerate(zip(full.stride(), full.shape)) if d != dim):
        for d in reversed(range(full.dim())):
            if d != dim:
                full = full.select(d, 0)
        return full
    return None


def _flat(src: torch.Tensor, index: torch.Tensor, dim: int, dim_size: int):
    """A general index (its values vary along other dims too) as one 1-D scatter: the other dims become rows."""
    full = broadcast(index, src, dim)
    moved_src, moved_index = src.movedim(dim, -1), full.movedim(dim, -1)
    lead = moved_src.shape[:-1]
    rows = math.prod(lead)
    offsets = torch.arange(rows, dtype=torch.int64, device=src.device).mul_(dim_size).view(*lead, 1)
    flat_index = (moved_index.to(torch.int64) + offsets).reshape(-1)

    def unflatten(flat_out: torch.Tensor) -> torch.Tensor:
        return flat_out.reshape(*lead, dim_size).movedim(-1, dim)
    return moved_src.reshape(-1), flat_index, rows * dim_size, unflatten


def _size(index, dim_size, out, dim):
    if out is not None:
        return out.shape[dim]
    if dim_size is not None:
        return _int(dim_size, "dim_size")
    return native._dim_size(None, index)


def _check_out(out, src, dim, expected=None):
    """torch_scatter's checks of ``out=`` before anything is written: a tensor of src's dtype, shaped like the
    result (`expected`; by default src's shape with any size along `dim`)."""
    if out is None:
        return
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if out.dtype != src.dtype:
        raise RuntimeError(f"out has dtype {out.dtype} but src has {src.dtype}: Expected self.dtype to be equal to "
                           "src.dtype (torch_scatter accumulates into out without casting)")
    if expected is None:
        expected = [*src.shape[:dim], out.shape[dim] if out.dim() == src.dim() else "any",
                    *src.shape[dim + 1:]]
        ok = out.dim() == src.dim() and all(e == "any" or e == n for e, n in zip(expected, out.shape))
    else:
        ok = tuple(out.shape) == tuple(expected)
    if not ok:
        raise ValueError(f"out has shape {tuple(out.shape)} but the result has shape "
                         f"({', '.join(map(str, expected))})")


def _reduce(src, index, dim, dim_size, op, **kw):
    """cyscatter's scatter of `op` along `dim` with torch_scatter's index broadcasting."""
    line = _along(index, src, dim)
    if line is not None:
        return native.scatter(src, line, op, dim_size=dim_size, axis=dim, **kw)
    flat_src, flat_index, size, unflatten = _flat(src, index, dim, dim_size)
    return unflatten(native.scatter(flat_src, flat_index, op, dim_size=size, **kw))


def _into_out(out, result, combine):
    """torch_scatter's ``out=``: combine the given tensor with the result, in place."""
    # combine may save `out` for its backward (mul does): it must see a copy, not the tensor overwritten next
    before = out.clone() if torch.is_grad_enabled() and (out.requires_grad or result.requires_grad) else out
    return out.copy_(combine(before, result))


# ---- scatter ------------------------------------------------------------------------------------------------------

def scatter_sum(src, index, dim=-1, out=None, dim_size=None):
    """torch_scatter's ``scatter_sum``: ``out[..., i, ...] += src[..., j, ...]`` where ``index[j] == i``."""
    dim = _dim(dim, src)
    _check_out(out, src, dim)
    result = _reduce(src, index, dim, _size(index, dim_size, out, dim), "add")
    return result if out is None else _into_out(out, result, torch.add)


scatter_add = scatter_sum


def scatter_mul(src, index, dim=-1, out=None, dim_size=None):
    """torch_scatter's ``scatter_mul``: the product of each group (empty: 1), times `out` when given."""
    dim = _dim(dim, src)
    _check_out(out, src, dim)
    result = _reduce(src, index, dim, _size(index, dim_size, out, dim), "mul")
    return result if out is None else _into_out(out, result, torch.mul)


def scatter_mean(src, index, dim=-1, out=None, dim_size=None):
    """torch_scatter's ``scatter_mean``: sum over count (empty: 0); integers round down (floor division)."""
    dim = _dim(dim, src)
    _check_out(out, src, dim)
    size = _size(index, dim_size, out, dim)
    if out is None and src.is_floating_point():
        return _reduce(src, index, dim, size, "mean")
    total = scatter_sum(src, index, dim, out, size)
    count = _reduce(torch.ones_like(src), index, dim, size, "add").clamp_(min=1)
    if total.is_floating_point():
        return total / count if out is None else out.div_(count)
    if out is None:
        return torch.div(total, count, rounding_mode="floor")
    return out.div_(count, rounding_mode="floor")


def _extreme(src, index, dim, out, dim_size, which):
    dim = _dim(dim, src)
    _check_out(out, src, dim)
    size = _size(index, dim_size, out, dim)
    line = _along(index, src, dim)
    n = src.shape[dim]
    if line is not None:
        values = native.scatter(src, line, which, dim_size=size, axis=dim)
        arg = native.scatter_argmax(src, line, dim_size=size, axis=dim, fill_value=n) if which == "max" else \
            native.scatter_argmin(src, line, dim_size=size, axis=dim, fill_value=n)
    else:
        flat_src, flat_index, flat_size, unflatten = _flat(src, index, dim, size)
        values = unflatten(native.scatter(flat_src, flat_index, which, dim_size=flat_size))
        argfn = native.scatter_argmax if which == "max" else native.scatter_argmin
        flat_arg = argfn(flat_src, flat_index, dim_size=flat_size, fill_value=-1)
        arg = unflatten(torch.where(flat_arg < 0, n, flat_arg % max(n, 1)))
    empty = arg == n
    if out is None:
        return values.masked_fill(empty, 0), arg
    # torch_scatter compares each entry with out's value and keeps out's on ties ('>' for max, '<' for min)
    wins = (values > out) if which == "max" else (values < out)
    wins &= ~empty
    merged = torch.where(wins, values, out)
    arg = torch.where(wins, arg, n)
    return _into_out(out, merged, lambda _o, m: m), arg


def scatter_max(src, index, dim=-1, out=None, dim_size=None):
    """torch_scatter's ``scatter_max``: ``(max of each group, its position along dim)``; empty groups give
    ``(0, src.size(dim))``."""
    return _extreme(src, index, dim, out, dim_size, "max")


def scatter_min(src, index, dim=-1, out=None, dim_size=None):
    """torch_scatter's ``scatter_min``: ``(min of each group, its position along dim)``; empty groups give
    ``(0, src.size(dim))``."""
    return _extreme(src, index, dim, out, dim_size, "min")


def scatter(src, index, dim=-1, out=None, dim_size=None, reduce="sum"):
    """torch_scatter's ``scatter``: `reduce` in "sum"/"add", "mul", "mean", "min", "max" (values only)."""
    if reduce in ("sum", "add"):
        return scatter_sum(src, index, dim, out, dim_size)
    if reduce == "mul":
        return scatter_mul(src, index, dim, out, dim_size)
    if reduce == "mean":
        return scatter_mean(src, index, dim, out, dim_size)
    if reduce == "min":
        return scatter_min(src, index, dim, out, dim_size)[0]
    if reduce == "max":
        return scatter_max(src, index, dim, out, dim_size)[0]
    raise ValueError(f"reduce must be one of 'sum', 'add', 'mul', 'mean', 'min', 'max', got {reduce!r}")


# ---- segments (CSR: indptr; COO: a sorted index) ------------------------------------------------------------------

_SEGMENT_REDUCES = ("sum", "add", "mean", "min", "max")


def _check_reduce(reduce):
    if reduce not in _SEGMENT_REDUCES:
        raise ValueError(f"reduce must be one of {', '.join(map(repr, _SEGMENT_REDUCES))}, got {reduce!r}")


def segment_csr(src, indptr, out=None, reduce="sum"):
    """torch_scatter's ``segment_csr``: reduce ``src[indptr[i]:indptr[i+1]]`` along ``dim = indptr.dim() - 1``.

    Returns the values for every reduce, as torch_scatter 2.x does; ``segment_min_csr`` / ``segment_max_csr``
    return ``(values, arg)``.
    """
    result = _segment_csr(src, indptr, out, reduce)
    return result[0] if reduce in ("min", "max") else result


def _segment_csr(src, indptr, out, reduce):
    """`segment_csr`, with ``(values, arg)`` for "min"/"max"."""
    _check_reduce(reduce)
    dim = indptr.dim() - 1
    if indptr.dim() > 1:
        indptr = indptr.expand(*src.shape[:dim], indptr.shape[-1])
    n, op = src.shape[dim], "add" if reduce in ("sum", "add") else reduce
    _check_out(out, src, dim, [*src.shape[:dim], indptr.shape[-1] - 1, *src.shape[dim + 1:]])
    if reduce in ("min", "max"):
        values = native.segment(src, indptr, reduce, fill_value=0)
        argfn = native.scatter_argmax if reduce == "max" else native.scatter_argmin
        arg = values.new_empty(values.shape, dtype=torch.int64)
        # one batch row at a time: each row of a batched indptr cuts its own row of src
        for b in itertools.product(*map(range, indptr.shape[:-1])):
            ids = native.segment_ids(indptr[b])
            arg[b] = argfn(src[b], ids, dim_size=indptr.shape[-1] - 1, axis=0, fill_value=n)
        if out is not None:
            _into_out(out, values, lambda _o, v: v)
            values = out
        return values, arg
    if reduce == "mean" and not src.is_floating_point():
        total = native.segment(src, indptr, "add")
        lengths = (indptr[..., 1:] - indptr[..., :-1]).clamp(min=1)
        lengths = lengths.reshape(lengths.shape + (1,) * (total.dim() - lengths.dim()))
        result = torch.div(total, lengths.to(total.dtype), rounding_mode="trunc")
    else:
        result = native.segment(src, indptr, op)
    return result if out is None else _into_out(out, result, lambda _o, r: r)


def segment_sum_csr(src, indptr, out=None):
    return segment_csr(src, indptr, out, "sum")


segment_add_csr = segment_sum_csr


def segment_mean_csr(src, indptr, out=None):
    return segment_csr(src, indptr, out, "mean")


def segment_min_csr(src, indptr, out=None):
    return _segment_csr(src, indptr, out, "min")


def segment_max_csr(src, indptr, out=None):
    return _segment_csr(src, indptr, out, "max")


def segment_coo(src, index, out=None, dim_size=None, reduce="sum"):
    """torch_scatter's ``segment_coo``: `scatter` along ``dim = index.dim() - 1`` with a sorted `index`.

    Returns the values for every reduce, as torch_scatter 2.x does; ``segment_min_coo`` / ``segment_max_coo``
    return ``(values, arg)``.
    """
    result = _segment_coo(src, index, out, dim_size, reduce)
    return result[0] if reduce in ("min", "max") else result


def _segment_coo(src, index, out, dim_size, reduce):
    """`segment_coo`, with ``(values, arg)`` for "min"/"max"."""
    _check_reduce(reduce)
    dim = index.dim() - 1
    if reduce == "max":
        return scatter_max(src, index, dim, out, dim_size)
    if reduce == "min":
        return scatter_min(src, index, dim, out, dim_size)
    if reduce == "mean":
        return scatter_mean(src, index, dim, out, dim_size)
    return scatter_sum(src, index, dim, out, dim_size)


def segment_sum_coo(src, index, out=None, dim_size=None):
    return segment_coo(src, index, out, dim_size, "sum")


segment_add_coo = segment_sum_coo


def segment_mean_coo(src, index, out=None, dim_size=None):
    return segment_coo(src, index, out, dim_size, "mean")


def segment_min_coo(src, index, out=None, dim_size=None):
    return _segment_coo(src, index, out, dim_size, "min")


def segment_max_coo(src, index, out=None, dim_size=None):
    return _segment_coo(src, index, out, dim_size, "max")


def gather_csr(src, indptr, out=None):
    """torch_scatter's ``gather_csr``: row i of `src` repeated ``indptr[i+1] - indptr[i]`` times."""
    dim = indptr.dim() - 1
    if out is not None:
        total = int(indptr[..., -1].max()) if indptr.numel() else 0
        _check_out(out, src, dim, [*src.shape[:dim], total, *src.shape[dim + 1:]])
    result = native.gather_segment(src, indptr, axis=dim)
    return result if out is None else _into_out(out, result, lambda _o, r: r)


def gather_coo(src, index, out=None):
    """torch_scatter's ``gather_coo``: ``out[..., j, ...] = src[..., index[j], ...]`` along ``index.dim() - 1``."""
    dim = index.dim() - 1
    line = _along(index, torch.empty(src.shape[:dim] + index.shape[-1:], device="meta"), dim)
    if line is None:
        result = src.gather(dim, index.expand(*src.shape[:dim], index.shape[-1], *src.shape[dim + 1:]))
    else:
        result = native.gather(src, line, axis=dim)
    return result if out is None else _into_out(out, result, lambda _o, r: r)
