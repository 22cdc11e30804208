"""cyscatter.torch: cyscatter on PyTorch tensors, with autograd and torch.compile.

Two layers:

- `cyscatter.torch.native`: cyscatter's own API (`scatter(src, index, op, axis=...)`, `gather_scatter` with
  plans, segments, softmax, var/std, argmax, counts, scans) on tensors, as ``torch.ops.cyscatter`` custom ops;
- this namespace: the torch_scatter API (`scatter(src, index, dim=-1, out=None, dim_size=None, reduce="sum")`,
  `scatter_max` returning ``(out, argmax)``, `segment_csr`, `gather_csr`, `composite`...) with torch_scatter's
  conventions, so ``import cyscatter.torch as torch_scatter`` runs code written for torch_scatter.

Needs the `torch` extra (``pip install 'cyscatter[torch]'``); ``import cyscatter`` never imports torch.
"""
try:
    import torch as _torch  # noqa: F401  (only whether it imports)
except ImportError as error:   # pragma: no cover - depends on the environment
    raise ImportError("cyscatter.torch needs PyTorch: pip install 'cyscatter[torch]' (or pip install torch)"
                      ) from error

from cyscatter.torch import composite, native
from cyscatter.torch.compat import (
    gather_coo,
    gather_csr,
    scatter,
    scatter_add,
    scatter_max,
    scatter_mean,
    scatter_min,
    scatter_mul,
    scatter_sum,
    segment_add_coo,
    segment_add_csr,
    segment_coo,
    segment_csr,
    segment_max_coo,
    segment_max_csr,
    segment_mean_coo,
    segment_mean_csr,
    segment_min_coo,
    segment_min_csr,
    segment_sum_coo,
    segment_sum_csr,
)
from cyscatter.torch.composite import scatter_log_softmax, scatter_logsumexp, scatter_softmax, scatter_std

__all__ = [
    "composite",
    "gather_coo",
    "gather_csr",
    "native",
    "scatter",
    "scatter_add",
    "scatter_log_softmax",
    "scatter_logsumexp",
    "scatter_max",
    "scatter_mean",
    "scatter_min",
    "scatter_mul",
    "scatter_softmax",
    "scatter_std",
    "scatter_sum",
    "segment_add_coo",
    "segment_add_csr",
    "segment_coo",
    "segment_csr",
    "segment_max_coo",
    "segment_max_csr",
    "segment_mean_coo",
    "segment_mean_csr",
    "segment_min_coo",
    "segment_min_csr",
    "segment_sum_coo",
    "segment_sum_csr",
]
