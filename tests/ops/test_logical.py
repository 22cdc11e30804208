"""scatter_any / scatter_all (numpy_groupies' func="any"/"all") against a plain loop reference
(Python's any/all of ``x != 0``), against numpy_groupies itself, on NumPy, the CuPy emulation and Dask."""
import numpy as np
import pytest
from testing import INDEX_DTYPES, INDEX_KINDS

import cyscatter as cs

DIMS = {"int": (6,), "tuple": (2, 3)}
FUNCS = {"any": cs.scatter_any, "all": cs.scatter_all}


def ref_logical(kind, src, coords, dims, axis=0, mode="raise", fill_value=None):
    """Per group, Python's any/all of ``src != 0`` over its entries (after the mode); empty: the fill or the
    identity (any: False, all: True)."""
    ishape = coords[0].shape
    batch, feat = src.shape[:axis], src.shape[axis + len(ishape):]
    members = {}
    for k in np.ndindex(*ishape):
        j = []
        for c, d in zip(coords, dims):
            v = int(c[k])
            if mode == "drop" and not 0 <= v < d:
                break
            if mode == "wrap":
                v %= d
            j.append(v)
        else:
            members.setdefault(tuple(j), []).append(k)
    empty = (kind == "all") if fill_value is None else bool(fill_value)
    out = np.full(batch + dims + feat, empty)
    reduce = any if kind == "any" else all
    for j, ks in members.items():
        for b in np.ndindex(*batch):
            for f in np.ndindex(*feat):
                out[b + j + f] = reduce(bool(src[b + k + f] != 0) for k in ks)
    return out


def _case(index_kind, index_dtype, axis, dtype, mode="raise", seed=0):
    rng = np.random.default_rng(seed)
    dims = DIMS[index_kind]
    n = 13
    coords = [rng.integers(0, d, n) for d in dims]
    coords[-1][coords[-1] == 1] = 0   # groups (..., 1) are empty
    if mode != "raise":
        coords[0][[3, 8]] = (dims[0], dims[0] + 2) if np.dtype(index_dtype).kind == "u" else (-1, dims[0])
    coords = tuple(c.astype(index_dtype) for c in coords)
    shape = (2,) * axis + (n, 2)
    src = rng.integers(0, 3, shape) * (rng.random(shape) < 0.8)   # many groups of all-nonzero, some with zeros
    if np.dtype(dtype).kind == "f":
        src = src.astype(dtype)
        src.flat[::7] = -0.0
        src.flat[5] = np.nan   # nonzero, as in np.any
    elif np.dtype(dtype).kind == "c":
        src = src + 1j * (rng.random(shape) < 0.1)
    src = src.astype(dtype)
    return src, (coords[0] if index_kind == "int" else coords), coords, dims


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int8", "uint8", "int64", "bool",
                                   "complex128"])
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("kind", ["any", "all"])
def test_against_reference(backend, kind, axis, index_kind, index_dtype, dtype):
    src, index, coords, dims = _case(index_kind, index_dtype, axis, dtype)
    expected = ref_logical(kind, src, coords, dims, axis)
    got = backend.call(FUNCS[kind], src, index, dim_size=dims, axis=axis)
    assert got.dtype == np.bool_ and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("mode", ["drop", "wrap", "clip", "normalize_drop"])
@pytest.mark.parametrize("fill_value", [None, False, True, 0, 1])
@pytest.mark.parametrize("kind", ["any", "all"])
def test_modes_and_fill(backend, kind, fill_value, mode):
    src, index, coords, dims = _case("int", np.int64, 0, np.float64, mode="drop")
    expected = cs.scatter(np.not_equal(src, 0).astype(np.int64), index, "max" if kind == "any" else "min",
                          dim_size=dims, mode=mode)
    counts = cs.scatter_count(index, dims, mode=mode)
    empty = (kind == "all") if fill_value is None else bool(fill_value)
    expected = np.where(counts[:, None] > 0, expected > 0, empty)
    got = backend.call(FUNCS[kind], src, index, dim_size=dims, mode=mode, fill_value=fill_value)
    np.testing.assert_array_equal(got, expected)
    if mode in ("drop", "wrap"):
        np.testing.assert_array_equal(got, ref_logical(kind, src, coords, dims, mode=mode, fill_value=fill_value))


@pytest.mark.parametrize("kind", ["any", "all"])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_against_numpy_groupies(kind, dtype):
    npg = pytest.importorskip("numpy_groupies")
    rng = np.random.default_rng(1)
    index = rng.integers(0, 40, 300)
    index[index == 7] = 8
    src = (rng.integers(0, 2, 300) * rng.integers(1, 5, 300)).astype(dtype)
    for fill in (0, 1):   # numpy_groupies' default fill_value is 0 for both
        expected = npg.aggregate(index, src, func=kind, size=41, fill_value=fill)
        np.testing.assert_array_equal(cs.scatter_any(src, index, dim_size=41, fill_value=fill) if kind == "any"
                                      else cs.scatter_all(src, index, dim_size=41, fill_value=fill), expected)
    expected = npg.aggregate(index, src, func=kind, size=41, fill_value=kind == "all")
    np.testing.assert_array_equal(FUNCS[kind](src, index, dim_size=41), expected)   # the identity by default


@pytest.mark.parametrize("kind", ["any", "all"])
def test_errors(kind):
    f = FUNCS[kind]
    with pytest.raises(TypeError, match="src dtype <U1"):
        f(np.array(["a", "b"]), np.array([0, 1]))
    with pytest.raises(TypeError, match="src dtype object"):
        f(np.array([1, None], object), np.array([0, 1]))
    with pytest.raises(TypeError, match="fill_value=2"):
        f(np.array([1.0, 0.0]), np.array([0, 1]), dim_size=3, fill_value=2)
    with pytest.raises(TypeError, match="fill_value=0.5"):
        f(np.array([1.0, 0.0]), np.array([0, 1]), dim_size=3, fill_value=0.5)
    for huge in (2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63 - 1):   # was OverflowError from a comparison
        with pytest.raises(TypeError, match=f"fill_value={huge}"):
            f(np.array([1.0, 0.0]), np.array([0, 1]), dim_size=3, fill_value=huge)
    with pytest.raises(IndexError, match="index"):
        f(np.array([1.0, 0.0]), np.array([0, 5]), dim_size=3)
    with pytest.raises(TypeError):
        f(np.array([1.0, 0.0]), np.array([0.0, 1.0]))


@pytest.mark.parametrize("chunks", [(13,), (4, 0, 9), (1,) * 13])
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("kind", ["any", "all"])
def test_dask(kind, index_kind, chunks):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    src, index, coords, dims = _case(index_kind, np.int64, 0, np.float64)
    lazy_index = (tuple(da.from_array(c, chunks=chunks) for c in index) if index_kind == "tuple"
                  else da.from_array(index, chunks=chunks))
    lazy = getattr(csd, f"scatter_{kind}")(da.from_array(src, chunks=(chunks, 1)), lazy_index, dim_size=dims,
                                           split_every=2)
    assert lazy.dtype == np.bool_
    np.testing.assert_array_equal(lazy.compute(scheduler="threads"), FUNCS[kind](src, index, dim_size=dims))
    np.testing.assert_array_equal(getattr(csd, f"scatter_{kind}")(src, lazy_index, dim_size=dims,
                                                                  fill_value=False).compute(),
                                  FUNCS[kind](src, index, dim_size=dims, fill_value=False))
    with pytest.raises(TypeError, match="src dtype"):
        getattr(csd, f"scatter_{kind}")(da.from_array(np.array(["a"] * 13)), lazy_index, dim_size=dims)
