"""cyscatter.dask.scatter_quantile / scatter_nanquantile and scatter's median ops: equal to the in-memory
results (which the ops tests hold against NumPy per group) bit for bit, for every chunking."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
from dask_cases import CHUNKS, N, chunked, make_index, threads  # noqa: E402
from reference_quantile import ref_order_stat  # noqa: E402
from testing import INDEX_KINDS  # noqa: E402

import cyscatter as cs  # noqa: E402
import cyscatter.dask as csd  # noqa: E402

DIMS = {"int": (7,), "tuple": (3, 4)}


def _src(rng, dtype):
    src = rng.integers(-3, 4, (2, N, 3)).astype(dtype)
    if src.dtype.kind == "f":
        src[rng.random(src.shape) < 0.2] = np.nan
    return src


@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", ("raise", "drop", "wrap"))
@pytest.mark.parametrize("stat", ("quantile", "nanquantile", "median", "nanmedian"))
@pytest.mark.parametrize("dim_chunks", (None, 2))
@pytest.mark.parametrize("dtype", ("float64", "float32", "int32"))
def test_equals_in_memory(chunks, kind, mode, stat, dim_chunks, dtype):
    rng = np.random.default_rng(71)
    index, dim_size = make_index(rng, kind, mode, DIMS)
    src = _src(rng, dtype)
    chunks = CHUNKS[chunks]
    dsrc = da.from_array(src, chunks=(1, chunks, 2))
    kw = dict(dim_size=dim_size, axis=1, mode=mode)
    if stat.endswith("median"):
        got = csd.scatter(dsrc, chunked(index, chunks), stat, dim_chunks=dim_chunks, **kw)
        want = cs.scatter(src, index, stat, **kw)
    else:
        got = getattr(csd, "scatter_" + stat)(dsrc, chunked(index, chunks), [0.0, 0.4, 1.0], method="linear",
                                              dim_chunks=dim_chunks, **kw)
        want = getattr(cs, "scatter_" + stat)(src, index, [0.0, 0.4, 1.0], **kw)
    got = threads(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("method", ("lower", "higher", "nearest", "midpoint"))
def test_methods_against_numpy(method):
    rng = np.random.default_rng(72)
    src, index = rng.standard_normal((N, 2)), rng.integers(0, 5, N)
    got = threads(csd.scatter_quantile(da.from_array(src, chunks=5), da.from_array(index, chunks=5), 0.3,
                                       method=method, dim_size=6, dim_chunks=(2, 4)))
    np.testing.assert_array_equal(got, ref_order_stat(src, index, "quantile", 0.3, method, dim_size=6))


def test_index_error_when_computed():
    lazy = csd.scatter(da.ones(4, chunks=2), da.from_array(np.array([0, 1, 9, 0]), chunks=2), "median",
                       dim_size=3)
    with pytest.raises(IndexError):
        lazy.compute()


def test_graph_time_errors():
    with pytest.raises(TypeError, match="dim_size is required"):
        csd.scatter_quantile(da.ones(3), np.zeros(3, int), 0.5, dim_size=None)
    with pytest.raises(TypeError, match="does not support src dtype complex"):
        csd.scatter_quantile(da.ones(3, dtype=complex), np.zeros(3, int), 0.5, dim_size=1)
    with pytest.raises(ValueError, match="q must lie"):
        csd.scatter_nanquantile(da.ones(3), np.zeros(3, int), 2.0, dim_size=1)
    with pytest.raises(TypeError, match="out="):
        csd.scatter(da.ones(3), np.zeros(3, int), "median", dim_size=1, out=np.zeros(1))


def test_empty_index_tuple():
    src = np.arange(6.0).reshape(2, 3)
    got = threads(csd.scatter_quantile(da.from_array(src, chunks=1), (), [0.5, 1.0], dim_size=()))
    np.testing.assert_array_equal(got, cs.scatter_quantile(src, (), [0.5, 1.0]))
