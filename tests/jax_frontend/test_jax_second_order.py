"""Second derivatives through cyscatter.jax: ``jax.test_util.check_grads`` to order 2 in reverse and forward mode
(finite differences in float64) where the op's partial derivatives are locally constant, and a clear
NotImplementedError where they are not."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp
from jax.test_util import check_grads

import cyscatter as cs
import cyscatter.jax as cj

pytestmark = pytest.mark.full   # finite differences through jitted callbacks: seconds a case

INDEX = np.array([0, 1, 2, 3, 4, 0, 2, 2, 4, 1, 3, 0])   # every group of 5 reached: max/min finite


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def src(shape=(12, 3)):
    # distinct values: no ties, so finite differences see the same winners
    return jnp.asarray(0.5 + np.random.default_rng(7).permutation(np.prod(shape)).reshape(shape) / np.prod(shape))


def curved(f):
    """A nonlinear function of f's output, so second derivatives are not all zero."""
    return lambda *args: jnp.sin(f(*args)) * f(*args)


@pytest.mark.parametrize("op", ["add", "mean", "max", "min", "sub", "sqrt_n"])
def test_scatter(op):
    check_grads(curved(lambda s: cj.scatter(s, jnp.asarray(INDEX), op, dim_size=5)), (src(),), order=2,
                modes=["rev", "fwd"])


def test_gather():
    check_grads(curved(lambda s: cj.gather(s, jnp.asarray(INDEX))), (src((5, 3)),), order=2, modes=["rev", "fwd"])


@pytest.mark.parametrize("op", ["add", "mean", "max", "min"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gather_scatter(op, weighted):
    rng = np.random.default_rng(1)
    gi, si = rng.integers(0, 6, 16), np.r_[0, 1, 2, 3, 4, 5, rng.integers(0, 6, 10)]
    plan = cs.gather_scatter_plan(gi, si, src_size=6, dim_size=6)
    weight = jnp.asarray(rng.uniform(0.5, 2.0, 16)) if weighted else None
    check_grads(curved(lambda s: cj.gather_scatter(s, op=op, weight=weight, plan=plan)), (src((6, 3)),), order=2,
                modes=["rev", "fwd"])
    # and through the indices, under jit
    check_grads(jax.jit(curved(lambda s: cj.gather_scatter(s, jnp.asarray(gi), jnp.asarray(si), op, weight=weight,
                                                         dim_size=6))), (src((6, 3)),), order=2, modes=["rev"])


@pytest.mark.parametrize("op", ["add", "mean", "max"])
def test_segment(op):
    indptr = jnp.asarray([0, 3, 4, 9, 12])
    check_grads(curved(lambda s: cj.segment(s, indptr, op)), (src(),), order=2, modes=["rev", "fwd"])
    check_grads(curved(lambda s: cj.gather_segment(s, indptr)), (src((4, 3)),), order=2, modes=["rev", "fwd"])


@pytest.mark.parametrize("op", ["mul", "div"])
def test_first_order_ops(op):
    f = curved(lambda s: cj.scatter(s, jnp.asarray(INDEX), op, dim_size=5))
    check_grads(f, (src(),), order=1, modes=["rev", "fwd"])
    with pytest.raises(NotImplementedError, match=f"op='{op}'"):
        jax.hessian(lambda s: jnp.sum(f(s)))(src())


@pytest.mark.parametrize("name", ["scatter_softmax", "scatter_log_softmax", "scatter_logsumexp", "scatter_var",
                                  "scatter_std"])
def test_group_statistics_first_order(name):
    f = curved(lambda s: getattr(cj, name)(s, jnp.asarray(INDEX), dim_size=5))
    check_grads(f, (src(),), order=1, modes=["rev", "fwd"])
    with pytest.raises(NotImplementedError, match="second derivatives"):
        jax.hessian(lambda s: jnp.sum(f(s)))(src())


def test_weight_first_order():
    rng = np.random.default_rng(2)
    gi, si = rng.integers(0, 6, 16), rng.integers(0, 6, 16)
    plan = cs.gather_scatter_plan(gi, si, src_size=6, dim_size=6)
    for op in ("add", "mean", "max"):
        f = curved(lambda w, op=op: cj.gather_scatter(src((6, 3)), op=op, weight=w, plan=plan))
        check_grads(f, (jnp.asarray(rng.uniform(0.5, 2.0, 16)),), order=1, modes=["rev", "fwd"])


@pytest.mark.parametrize("op", ["add", "max", "min"])
def test_scan(op):
    check_grads(curved(lambda s: cj.scatter_scan(s, jnp.asarray(INDEX), op)), (src(),), order=2, modes=["rev", "fwd"])


@pytest.mark.parametrize("op", ["add", "mean", "max", "min"])
def test_scatter_into(op):
    dst = jnp.asarray(0.3 + np.random.default_rng(3).permutation(15).reshape(5, 3) / 15)
    f = curved(lambda d, s: cj.scatter_into(d, s, jnp.asarray(INDEX), op))
    check_grads(lambda d, s: f(d, s), (dst, src()), order=2, modes=["rev", "fwd"])
