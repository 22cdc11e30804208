"""Superseded by the shipped frontend: use ``cyscatter.torch.native`` (``pip install 'cyscatter[torch]'``).

``docs/torch.rst`` documents it: every cyscatter function as a ``torch.library`` custom op on tensors, no
copies, autograd from the split reverse functions to second order, ``torch.compile(fullgraph=True)``. This file
keeps the recipe's three names (``scatter(src, index, op, dim_size)``, ``scatter_into(dst, src, index, op)``,
``gather(src, index)``) for code that copied it; ``tests/docs/test_docs.py`` still checks them.
"""
from __future__ import annotations

from cyscatter.torch import native


def scatter(src, index, op="add", dim_size=None):
    """``cyscatter.torch.native.scatter(src, index, op, dim_size=dim_size)``."""
    return native.scatter(src, index, op, dim_size=dim_size)


def scatter_into(dst, src, index, op="add"):
    """``cyscatter.torch.native.scatter_into`` (functional: returns an updated copy of `dst`)."""
    return native.scatter_into(dst, src, index, op)


def gather(src, index):
    """``cyscatter.torch.native.gather(src, index)``."""
    return native.gather(src, index)
