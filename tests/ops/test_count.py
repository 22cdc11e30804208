"""scatter_count against np.add.at, a plain loop, numpy_groupies' "count" and JAX's default
scatter rule; the Dask version against the in-memory one."""
import numpy as np
import pytest

import cyscatter as cs
from group_cases import index_for
from reference import _resolve
from testing import INDEX_DTYPES, INDEX_KINDS


def ref_count(index, dims, mode):
    """Plain loop: each entry, resolved by the mode, adds one to its destination (np.add.at of ones)."""
    coords = index if isinstance(index, tuple) else (index,)
    out = np.zeros(dims, np.int64)
    for k in np.ndindex(coords[0].shape):
        target = tuple(_resolve(c[k], s, mode) for c, s in zip(coords, dims))
        if None not in target:
            np.add.at(out, target, 1)
    return out


@pytest.mark.parametrize("layout", ((9,), (3, 4), (0,), ()))
@pytest.mark.parametrize("index_dtype", ("int32", "int64", "uint8", "int16"))
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_matches_loop_and_scatter_of_ones(backend, layout, index_dtype, kind, mode):
    rng = np.random.default_rng(4)
    index, dims = index_for(rng, kind, layout, mode if layout not in ((0,), ()) else "raise")
    parts = index if isinstance(index, tuple) else (index,)
    if np.dtype(index_dtype).kind == "u" and any((p < 0).any() for p in parts):
        parts = tuple(np.where(p < 0, 250, p) for p in parts)   # an unsigned index has no negatives
    parts = tuple(p.astype(index_dtype) for p in parts)
    index = parts if kind == "tuple" else parts[0]
    dim_size = dims if kind == "tuple" else dims[0]
    got = backend.call(cs.scatter_count, index, dim_size, mode=mode)
    want = ref_count(index, dims, mode)
    assert got.dtype == np.int64 and got.shape == dims
    np.testing.assert_array_equal(got, want)
    ones = np.ones(parts[0].shape, np.int64)
    np.testing.assert_array_equal(got, cs.scatter(ones, index, "add", dim_size=dim_size, mode=mode))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_inferred_dim_size_and_index_dtypes(index_dtype):
    index = np.array([3, 0, 3, 1], index_dtype)
    np.testing.assert_array_equal(cs.scatter_count(index), [1, 1, 0, 2])
    np.testing.assert_array_equal(cs.scatter_count(np.zeros(0, index_dtype)), np.zeros(0, np.int64))


def test_matches_numpy_groupies_count():
    npg = pytest.importorskip("numpy_groupies")
    rng = np.random.default_rng(1)
    index = rng.integers(0, 40, 1000)
    for func in ("count", "len"):
        want = npg.aggregate(index, np.ones(1000), func=func, size=50)
        np.testing.assert_array_equal(cs.scatter_count(index, 50), want)
    two = (rng.integers(0, 5, 300), rng.integers(0, 7, 300))
    want = npg.aggregate(np.stack(two), np.ones(300), func="count", size=(5, 7))
    np.testing.assert_array_equal(cs.scatter_count(two, (5, 7)), want)


def test_normalize_drop_matches_jax_default():
    jnp = pytest.importorskip("jax.numpy")
    index = np.array([-1, 5, 1, -4, -3, 2, 2, -2])
    want = np.asarray(jnp.zeros(3, jnp.int32).at[jnp.asarray(index)].add(1))
    np.testing.assert_array_equal(cs.scatter_count(index, 3, mode="normalize_drop"), want)


def test_matches_the_mean_counts_of_torch_scatter_reduce():
    torch = pytest.importorskip("torch")
    index = np.array([0, 3, 3, 1, 3])
    want = torch.zeros(5, dtype=torch.int64).scatter_add_(0, torch.from_numpy(index), torch.ones(5, dtype=torch.int64))
    np.testing.assert_array_equal(cs.scatter_count(index, 5), want.numpy())


@pytest.mark.parametrize("call, error, text", [
    (lambda: cs.scatter_count(np.array([0, 3]), 2), IndexError, "index[1] = 3"),
    (lambda: cs.scatter_count(np.array([0, 3]), 2, mode="nope"), ValueError, "mode="),
    (lambda: cs.scatter_count(np.array([0.0, 1.0]), 2), TypeError, "index must hold integers"),
    (lambda: cs.scatter_count(np.array([0, 1]), -1), ValueError, "dim_size"),
    (lambda: cs.scatter_count(np.array([0, 1]), (2, 2)), ValueError, "dim_size"),
    (lambda: cs.scatter_count((np.array([0]), np.array([0, 1]))), ValueError, "index[1]"),
    (lambda: cs.scatter_count(np.array([0, 1]), 2 ** 40), MemoryError, "dim_size"),
])
def test_errors(call, error, text):
    with pytest.raises(error) as info:
        call()
    assert text in str(info.value)


@pytest.mark.parametrize("mode", cs.MODES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_dask_matches_in_memory(mode, kind):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    rng = np.random.default_rng(9)
    index, dims = index_for(rng, kind, (24,), mode)
    dim_size = dims if kind == "tuple" else dims[0]
    chunked = tuple(da.from_array(c, chunks=5) for c in index) if kind == "tuple" else da.from_array(index, chunks=5)
    got = csd.scatter_count(chunked, dim_size, mode=mode, split_every=2)
    np.testing.assert_array_equal(got.compute(scheduler="sync"), cs.scatter_count(index, dim_size, mode=mode))
    assert got.dtype == np.int64


def test_dask_needs_dim_size_and_raises_when_computed():
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    with pytest.raises(TypeError, match="dim_size"):
        csd.scatter_count(da.from_array(np.array([0, 1]), chunks=1), None)
    lazy = csd.scatter_count(da.from_array(np.array([0, 1, 5]), chunks=2), 3)
    with pytest.raises(IndexError, match="out of bounds"):
        lazy.compute(scheduler="sync")
