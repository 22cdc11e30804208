"""Superseded: cyscatter ships its JAX frontend, ``cyscatter.jax`` (docs/jax.rst).

This file held a copy-paste ``custom_vjp`` recipe (reverse mode, first order, ``scatter`` only). ``cyscatter.jax``
covers every operation under ``jax.jit``, ``jax.grad``, ``jax.jvp`` and ``jax.vmap``, to second order where the
op allows it; ``cyscatter.jax.scatter(src, index, op, dim_size=n)`` replaces the recipe's
``scatter(src, index, op, n)``, kept here under its old signature for code that copied it.
"""
from __future__ import annotations

import cyscatter.jax as _cj


def scatter(src, index, op, dim_size):
    """``cyscatter.jax.scatter(src, index, op, dim_size=dim_size)``."""
    return _cj.scatter(src, index, op, dim_size=dim_size)
