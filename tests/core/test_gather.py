"""gather and gather_into against the reference and NumPy's own indexing: value dtypes x index dtypes x
int/tuple index x axis x layouts x modes, allocating and in place."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from checks import GATHER_FORMS as FORMS, check_gather
from inputs import EMPTY_GEOMETRIES, GEOMETRIES, pick, rng_for, values
from reference import ref_gather
from testing import INDEX_KINDS, VALUE_DTYPES


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("dtype", VALUE_DTYPES + ("bool", "datetime64[s]", "V24"))
def test_every_dtype_and_index_kind(backend, dtype, kind, form):
    """Gather moves items of any size; bools, datetimes and 24-byte voids travel like numbers."""
    check_gather(backend, dtype, kind, form)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("geom", GEOMETRIES + EMPTY_GEOMETRIES, ids=str)
def test_axis_and_shapes(backend, geom, kind, form):
    check_gather(backend, pick(VALUE_DTYPES, geom, kind, form), kind, form, geom=geom)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", ["C", "fortran", "strided", "reversed", "readonly"])
@pytest.mark.parametrize("geom", GEOMETRIES, ids=str)
@pytest.mark.valid(lambda backend, layout: layout != "readonly" or backend == "numpy")   # CuPy: no read-only
def test_layouts(backend, geom, layout, kind, form):
    check_gather(backend, pick(VALUE_DTYPES, geom, layout, kind, form), kind, form, geom=geom, layout=layout)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
@pytest.mark.parametrize("index_dtype", ["int64", "int8", "uint16", "uint64"])
def test_modes(backend, index_dtype, mode, kind, form):
    """Out-of-range entries: dropped rows hold fill_value (allocating) or keep dst's values (in place)."""
    check_gather(backend, pick(VALUE_DTYPES, index_dtype, mode, kind, form), kind, form,
                 index_dtype=index_dtype, mode=mode, geom=pick(GEOMETRIES, index_dtype, mode, kind, form),
                 fill_value=pick((0, -3, 7), index_dtype, mode, kind))


@pytest.mark.parametrize("mode", ["raise", "drop"])
@pytest.mark.parametrize("dtype", [">f8", ">i2", ">c8", ">U2"])
@pytest.mark.valid(lambda dtype, mode: dtype != ">U2" or mode == "raise")   # strings: '' fills (zero bytes)
def test_big_endian_src_gives_native_results(dtype, mode):
    """A big-endian src gathers into a native result, allocated or a native out= (which it once refused with a
    TypeError after writing the fill into it under mode='drop')."""
    src = np.arange(12).reshape(4, 3).astype(dtype)
    index = np.array([3, 9, 1]) if mode == "drop" else np.array([3, 0, 1])
    want = ref_gather(src, index, mode=mode)
    got = cs.gather(src, index, mode=mode)
    assert got.dtype.isnative and got.dtype == np.dtype(dtype).newbyteorder("=")
    assert_same(got, want.astype(got.dtype))
    out = np.zeros((3, 3), np.dtype(dtype).newbyteorder("="))
    assert cs.gather(src, index, mode=mode, out=out) is out
    assert_same(out, want.astype(out.dtype))
    np.testing.assert_array_equal(cs.gather_jvp(src, index, mode=mode) if dtype != ">U2" else got, got)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_equals_numpy_indexing(backend, axis, kind):
    """For an in-range index gather is np.take (int) or NumPy advanced indexing (tuple), as documented."""
    rng = rng_for("numpy", axis, kind)
    src = values("float64", (4, 5, 6), rng)
    ax = axis % src.ndim
    if kind == "int":
        idx = rng.integers(0, src.shape[ax], (2, 3))
        expected = np.take(src, idx, axis=axis)
    else:
        ax = min(ax, 1)
        idx = tuple(rng.integers(0, s, (2, 3)) for s in src.shape[ax:ax + 2])
        expected = src[(slice(None),) * ax + idx]
        axis = ax
    assert_same(backend.to_numpy(cs.gather(backend.asarray(src), backend.asarray(idx), axis=axis)), expected)


@pytest.mark.parametrize("src_dtype,dst_dtype", [("int32", "int64"), ("float32", "float64"), ("int16", "float32"),
                                                 ("float64", "float32")])
def test_gather_into_casts_same_kind(backend, src_dtype, dst_dtype):
    src = np.arange(1, 7).astype(src_dtype) / np.array(3).astype(src_dtype) if src_dtype[0] == "f" else \
        np.arange(1, 7).astype(src_dtype)
    idx = np.array([5, 0, 0, 3])
    dst = backend.asarray(np.zeros(4, dst_dtype))
    cs.gather_into(dst, backend.asarray(src), backend.asarray(idx))
    assert_same(backend.to_numpy(dst), src[idx].astype(dst_dtype))


def test_gather_into_refuses_unsafe_cast(backend):
    dst = np.zeros(2, np.int64)
    with pytest.raises(TypeError):
        cs.gather_into(backend.asarray(dst), backend.asarray(np.array([0.5, 1.5])), backend.asarray(np.array([0, 1])))
