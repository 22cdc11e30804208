"""cyscatter's scatter as a JAX function with a ``custom_vjp``, built from the split reverse functions.

A complete recipe (tested by ``tests/docs/test_docs.py`` with ``jax.test_util.check_grads`` and against JAX's own
``segment_*``): cyscatter runs on the host through ``jax.pure_callback``, so the function works under
``jax.jit`` and ``jax.grad`` (CPU arrays; reverse mode, first order).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import cyscatter as cs


def _host(fun, shape_dtype, *args):
    """Run ``fun`` on NumPy copies of ``args`` on the host and give its result back to JAX."""
    def call(*arrays):
        return np.asarray(fun(*(np.asarray(a) for a in arrays)), dtype=shape_dtype.dtype)
    return jax.pure_callback(call, shape_dtype, *args)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def scatter(src, index, op, dim_size):
    """``cyscatter.scatter(src, index, op, dim_size=dim_size)`` for float `src`, differentiable in `src`."""
    out_shape = jax.ShapeDtypeStruct((dim_size,) + src.shape[index.ndim:], src.dtype)
    return _host(lambda s, i: cs.scatter(s, i, op, dim_size=dim_size), out_shape, src, index)


def _scatter_fwd(src, index, op, dim_size):
    out = scatter(src, index, op, dim_size)
    return out, (src, index, out)


def _scatter_bwd(op, dim_size, residuals, grad_out):
    src, index, out = residuals
    src_shape = jax.ShapeDtypeStruct(src.shape, src.dtype)
    grad_src = _host(lambda g, s, i, o: cs.scatter_vjp_src(op, g, s, i, o), src_shape, grad_out, src, index, out)
    return grad_src, None   # the index has no cotangent


scatter.defvjp(_scatter_fwd, _scatter_bwd)
