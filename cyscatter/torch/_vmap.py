"""Batching rules (``torch.vmap``, and so ``jacrev``, ``jacfwd``, ``hessian``, per-sample gradients) of the
custom ops laid out along `axis`.

Each such op takes its data as ``B + ... `` with the reduced or gathered dimension at `axis` (full rank: the
wrappers broadcast nothing below the op), so a batch of calls that share the index is one call with the batch as
one more leading dimension: the batched data moved to the front, the unbatched data expanded (a view), the axis
one further. A batched index (a different grouping per batch entry) runs one call per entry. The ops over
segments and gather_scatter (whose ``indptr`` and ``weight`` align with the data by their own rules) keep
torch's per-entry fallback.
"""
from __future__ import annotations

import torch

ops = torch.ops.cyscatter

_ALONG_AXIS = ("scatter", "scatter_into", "gather", "softmax", "moment", "scan", "quantile", "argext", "logical",
               "scatter_vjp_src", "scatter_vjp_dst", "scatter_jvp", "softmax_vjp", "softmax_jvp", "moment_vjp",
               "moment_jvp", "scan_vjp", "scan_jvp", "quantile_vjp", "quantile_jvp")


def _per_entry(op, info, in_dims, args):
    entries = [op(*(a if d is None else a.select(d, i) for a, d in zip(args, in_dims, strict=True)))
               for i in range(info.batch_size)]
    return torch.stack(entries), 0


def _rule(name: str):
    op = getattr(ops, name)
    names = [a.name for a in op.default._schema.arguments]
    axis_at, index_at = names.index("axis"), names.index("index")

    def rule(info, in_dims, *args):
        if in_dims[index_at] is not None:
            return _per_entry(op, info, in_dims, args)
        args = list(args)
        for i, (a, d) in enumerate(zip(args, in_dims, strict=True)):
            if isinstance(a, torch.Tensor) and i != index_at:
                args[i] = a.expand(info.batch_size, *a.shape) if d is None else a.movedim(d, 0)
        args[axis_at] += 1
        return op(*args), 0
    return rule


for _name in _ALONG_AXIS:
    torch.library.register_vmap(f"cyscatter::{_name}", _rule(_name))
