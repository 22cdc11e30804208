"""median / nanmedian through cyscatter.jax's scatter and segment: the forward against NumPy's per-group median,
the derivatives against JAX's own ``jnp.median`` / ``jnp.nanmedian`` differentiated group by group, under jit,
vmap and to second order."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp
from jax.test_util import check_grads

import cyscatter.jax as cj

INDEX = np.array([0, 2, 0, 1, 0, 2, 0, 3, 1])   # groups of 4, 2, 2, 1 entries; group 4 empty
INDPTR = np.array([0, 4, 6, 8, 9, 9])            # the same groups, sorted: segment's offsets
N_OUT = 5
FUNS = {"median": (np.median, jnp.median), "nanmedian": (np.nanmedian, jnp.nanmedian)}


def values(nan=False):
    x = 0.5 + np.random.default_rng(1).permutation(18).reshape(9, 2) / 18.0
    if nan:
        x[2, 0] = np.nan   # a NaN in group 0
    return x


def per_group(fun, x, groups):
    """A reference built row by row: each group's entries by a plain loop."""
    return [fun(x[[i for i, g in enumerate(groups) if g == k]], axis=0) for k in range(N_OUT - 1)]


@pytest.mark.parametrize("op", FUNS)
@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan"])
def test_scatter_median_forward(op, nan):
    np_fun = FUNS[op][0]
    x = values(nan)
    with jax.enable_x64(True):
        got = np.asarray(cj.scatter(jnp.asarray(x), jnp.asarray(INDEX), op, dim_size=N_OUT))
        jitted = np.asarray(jax.jit(lambda s: cj.scatter(s, jnp.asarray(INDEX), op, dim_size=N_OUT))(x))
    expected = np.stack(per_group(np_fun, x, INDEX))
    np.testing.assert_allclose(got[:4], expected)
    np.testing.assert_allclose(jitted[:4], expected)
    assert np.isnan(got[4]).all()   # an empty group has no median: NaN, as the core


@pytest.mark.parametrize("op", FUNS)
def test_segment_median_forward(op):
    x = values()
    with jax.enable_x64(True):
        got = np.asarray(cj.segment(jnp.asarray(x), jnp.asarray(INDPTR), op))
    ids = np.repeat(np.arange(N_OUT), np.diff(INDPTR))
    np.testing.assert_allclose(got[:4], np.stack(per_group(FUNS[op][0], x, ids)))


@pytest.mark.parametrize("op", FUNS)
@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan"])
def test_median_gradient_against_jnp_median(op, nan):
    jnp_fun = FUNS[op][1]
    x = values(nan)
    weights = np.arange(1.0, 1.0 + 2 * N_OUT).reshape(N_OUT, 2)
    ids = np.repeat(np.arange(N_OUT), np.diff(INDPTR))

    def reference(s, groups):
        rows = [jnp_fun(s[np.flatnonzero(groups == k)], axis=0) for k in range(N_OUT - 1)]
        return jnp.sum(jnp.stack(rows) * weights[:4])

    with jax.enable_x64(True):
        s = jnp.asarray(x)
        loss = lambda f: (lambda v: jnp.sum(jnp.where(jnp.isnan(f(v)), 0.0, f(v) * weights)))
        by_scatter = jax.grad(loss(lambda v: cj.scatter(v, jnp.asarray(INDEX), op, dim_size=N_OUT)))(s)
        by_segment = jax.jit(jax.grad(loss(lambda v: cj.segment(v, jnp.asarray(INDPTR), op))))(s)
        if nan and op == "median":   # a NaN group's cotangent goes to its NaN member; jnp.median's does not
            return
        np.testing.assert_allclose(by_scatter, jax.grad(reference)(s, INDEX))
        np.testing.assert_allclose(by_segment, jax.grad(reference)(s, ids))


@pytest.mark.parametrize("op", FUNS)
def test_median_derivatives_to_second_order(op):
    with jax.enable_x64(True):
        x = jnp.asarray(values())
        check_grads(lambda s: cj.scatter(s, jnp.asarray(INDEX), op, dim_size=N_OUT)[:4], (x,), order=2,
                    modes=["rev", "fwd"])
        check_grads(lambda s: cj.segment(s, jnp.asarray(INDPTR), op)[:4], (x,), order=2, modes=["rev", "fwd"])


def test_median_vmap_against_a_loop():
    with jax.enable_x64(True):
        batch = jnp.stack([jnp.asarray(values()), -jnp.asarray(values())])
        f = lambda s: cj.scatter(s, jnp.asarray(INDEX), "median", dim_size=N_OUT)
        np.testing.assert_allclose(jax.vmap(f)(batch), jnp.stack([f(b) for b in batch]))
        g = jax.grad(lambda s: jnp.sum(f(s)[:4]))
        np.testing.assert_allclose(jax.vmap(g)(batch), jnp.stack([g(b) for b in batch]))


def test_gather_scatter_median_says_the_frontend_does_not_take_it():
    with pytest.raises(ValueError, match=r"cyscatter.jax.gather_scatter does not take op 'median'"):
        cj.gather_scatter(jnp.ones(3), jnp.array([0, 1]), jnp.array([1, 0]), "median")
