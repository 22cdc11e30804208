"""cyscatter.jax.segment_sum/max/min/prod against jax.ops.segment_* with the same arguments: JAX's signature and
conventions (out-of-range ids dropped or clipped, empty segments holding the op's identity, integer dtypes kept),
eagerly, under jit, grad and vmap."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp

import cyscatter.jax as cj

NAMES = ("sum", "max", "min", "prod")
# duplicates, an empty segment (3), an id past the end (7) and a negative one: JAX drops both by default
IDS = np.array([0, 2, 0, 1, 7, 2, -1, 0, 4])


def data(dtype, shape=(9, 2)):
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-3, 4, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.valid(lambda name, dtype: dtype != "bool" or name in ("max", "min"))   # JAX's bool max/min: any/all
def test_same_result_as_jax(name, dtype):
    with jax.enable_x64(dtype == "float64"):
        x, ids = jnp.asarray(data(dtype)), jnp.asarray(IDS)
        ours, theirs = getattr(cj, f"segment_{name}"), getattr(jax.ops, f"segment_{name}")
        expect = theirs(x, ids, num_segments=6)
        got = ours(x, ids, num_segments=6)
        assert got.dtype == expect.dtype
        np.testing.assert_allclose(got, expect, rtol=1e-6)
        np.testing.assert_allclose(jax.jit(lambda a, b: ours(a, b, 6))(x, ids), expect, rtol=1e-6)
        # num_segments read from the ids when they are concrete, as JAX does
        np.testing.assert_allclose(ours(x, ids), theirs(x, ids), rtol=1e-6)
        np.testing.assert_allclose(ours(x, ids, 6, mode="clip"), theirs(x, ids, 6, mode="clip"), rtol=1e-6)
        np.testing.assert_allclose(ours(x, ids, 6, mode=jax.lax.GatherScatterMode.FILL_OR_DROP), expect, rtol=1e-6)


def test_sorted_and_hint_arguments_are_accepted():
    x, ids = jnp.asarray(data("float32")), jnp.asarray(np.sort(np.clip(IDS, 0, 5)))
    for name in NAMES:
        ours = getattr(cj, f"segment_{name}")(x, ids, 6, indices_are_sorted=True, unique_indices=False,
                                              bucket_size=4)
        np.testing.assert_allclose(ours, getattr(jax.ops, f"segment_{name}")(x, ids, 6, True), rtol=1e-6)


@pytest.mark.full
@pytest.mark.parametrize("name", ["sum", "max", "min"])
def test_gradients_and_vmap_as_jax(name):
    x, ids = jnp.asarray(data("float32")), jnp.asarray(IDS)
    ours, theirs = getattr(cj, f"segment_{name}"), getattr(jax.ops, f"segment_{name}")

    def loss(f):
        return lambda a: jnp.sum(jnp.where(jnp.isfinite(o := f(a, ids, 6)), jnp.sin(o), 0))
    np.testing.assert_allclose(jax.jit(jax.grad(loss(ours)))(x), jax.grad(loss(theirs))(x), rtol=1e-6)
    xs = jnp.stack([x, 2 * x, -x])
    np.testing.assert_allclose(jax.vmap(lambda a: ours(a, ids, 6))(xs), jax.vmap(lambda a: theirs(a, ids, 6))(xs),
                               rtol=1e-6)


def test_bad_arguments():
    x = jnp.ones((3, 2))
    with pytest.raises(ValueError, match="num_segments"):
        jax.jit(lambda a, b: cj.segment_sum(a, b))(x, jnp.asarray([0, 1, 1]))
    with pytest.raises(ValueError, match="segment_ids"):
        cj.segment_sum(x, jnp.asarray([0, 1]), 2)
    with pytest.raises(ValueError, match="mode"):
        cj.segment_max(x, jnp.asarray([0, 1, 1]), 2, mode="wrap")
