"""cyscatter.dask's dtype= (against the core's dtype=), its refused out=, and dim_size checked at graph time."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
from testing import INDEX_KINDS, OPS, op_supports  # noqa: E402

import cyscatter as cs  # noqa: E402
import cyscatter.dask as csd  # noqa: E402

N = 12


def _index(rng, kind):
    if kind == "int":
        return rng.integers(0, 5, N), 5
    return (rng.integers(0, 2, N), rng.integers(0, 3, N)), (2, 3)


def _lazy(index, chunks=4):
    if isinstance(index, tuple):
        return tuple(da.from_array(c, chunks=chunks) for c in index)
    return da.from_array(index, chunks=chunks)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("src_dtype, dtype", [("int32", "float32"), ("int16", "int64"), ("float16", "float64"),
                                              ("float64", "float32"), ("uint8", "complex128"),
                                              ("float32", "float16")])
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_scatter_dtype_matches_core(op, kind, src_dtype, dtype):
    rng = np.random.default_rng(3)
    src = rng.integers(1, 4, (N, 2)).astype(src_dtype)
    index, dims = _index(rng, kind)
    expected = cs.scatter(src, index, op, dim_size=dims, dtype=dtype)
    lazy = csd.scatter(da.from_array(src, chunks=(4, 1)), _lazy(index), op, dim_size=dims, dtype=dtype)
    assert lazy.dtype == expected.dtype
    got = lazy.compute(scheduler="threads")
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-3 if "16" in dtype else 1e-6)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode, fill_value", [("raise", None), ("drop", 2.5), ("drop", None)])
@pytest.mark.parametrize("src_dtype, dtype", [("int32", "float64"), ("float64", "float32"), ("int64", "int8"),
                                              ("U3", "U5")])
def test_gather_dtype_matches_core(kind, mode, fill_value, src_dtype, dtype):
    rng = np.random.default_rng(4)
    if fill_value is not None and np.dtype(dtype).kind != "f":
        fill_value = 2 if np.dtype(dtype).kind in "iu" else "ab"
    dims = (5,) if kind == "int" else (2, 3)
    src = rng.integers(0, 9, dims + (2,)).astype(src_dtype)
    index, _ = _index(rng, kind)
    if mode == "drop":
        index = (index.copy() if kind == "int" else tuple(c.copy() for c in index))
        (index if kind == "int" else index[0])[[1, 7]] = (-1, 99)
    expected = cs.gather(src, index, mode=mode, fill_value=fill_value, dtype=dtype)
    lazy = csd.gather(da.from_array(src, chunks=1), _lazy(index), mode=mode, fill_value=fill_value, dtype=dtype)
    assert lazy.dtype == expected.dtype
    got = lazy.compute(scheduler="threads")
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_dtype_errors_match_core():
    src, index = np.array([1.5, 2.5]), np.array([0, 1])
    lazy_src = da.from_array(src, chunks=1)
    for func, kwargs in ((cs.scatter, {}), (csd.scatter, {"dim_size": 2})):
        s = lazy_src if func is csd.scatter else src
        with pytest.raises(TypeError, match="same_kind"):
            func(s, index, "add", dtype=np.int32, **kwargs)
        with pytest.raises(TypeError, match="holds no numbers"):
            func(s, index, "add", dtype="U3", **kwargs)
        with pytest.raises(TypeError, match="needs ordered values"):
            func(s, index, "max", dtype=np.complex64, **kwargs)
        with pytest.raises(TypeError, match="is not a NumPy dtype"):
            func(s, index, "add", dtype="nonsense", **kwargs)
    with pytest.raises(TypeError, match="same_kind"):
        csd.gather(lazy_src, index, dtype=np.int64)
    with pytest.raises(TypeError, match="same_kind"):
        cs.gather(src, index, dtype=np.int64)


@pytest.mark.parametrize("out", [np.zeros(2), "x", 0])
def test_out_refused(out):
    lazy_src, index = da.from_array(np.array([1.0, 2.0]), chunks=1), np.array([0, 1])
    with pytest.raises(TypeError, match=r"cyscatter.dask.scatter does not take out=.*dask.array.store"):
        csd.scatter(lazy_src, index, dim_size=2, out=out)
    with pytest.raises(TypeError, match=r"cyscatter.dask.gather does not take out=.*dask.array.store"):
        csd.gather(lazy_src, index, out=out)
    assert csd.scatter(lazy_src, index, dim_size=2, out=None).compute().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dim_size", [2 ** 62, (2 ** 31, 2 ** 31)])
def test_dim_size_too_big_raises_at_graph_time_as_core(dim_size):
    src = np.ones((4, 3))
    index = np.array([0, 1, 0, 1]) if isinstance(dim_size, int) else (np.array([0, 1, 0, 1]),) * 2
    with pytest.raises(ValueError, match="too big for any array") as core:
        cs.scatter(src, index, dim_size=dim_size)
    lazy_index = _lazy(index, chunks=2)
    for func in (csd.scatter, csd.scatter_argmax):
        with pytest.raises(ValueError, match="too big for any array") as lazy:
            func(da.from_array(src, chunks=2), lazy_index, dim_size=dim_size)
        if func is csd.scatter:
            assert str(lazy.value) == str(core.value)
