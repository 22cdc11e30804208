"""Complex arrays that NumPy calls aligned but whose items are not: NumPy aligns complex64 to 4 bytes and
complex128 to 8 (one component), the kernels load whole items (8 and 16 bytes). Such arrays (a complex field of
a packed record, a view at an odd component offset) must give the results of an item-aligned copy, as src, as
dst/out, along every axis and layout, in every family that takes complex values."""

import numpy as np
import pytest

import cyscatter as cs


def _offset(values: np.ndarray) -> np.ndarray:
    """`values` copied into memory one component past an item boundary: NumPy's `aligned` flag stays True."""
    part = np.dtype(values.dtype.char.lower())   # complex64 -> float32 components
    flat = np.zeros(2 * values.size + 2, part)
    out = flat[1:1 + 2 * values.size].view(values.dtype).reshape(values.shape)
    out[...] = values
    assert out.flags.aligned and out.ctypes.data % values.itemsize
    return out


def _values(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


DTYPES = [np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mean", "mul"])
@pytest.mark.parametrize("layout", ["C", "F", "features-first"])
@pytest.mark.parametrize("n", [40, 20000])
def test_scatter_of_an_offset_src(dtype, op, layout, n):
    rng = np.random.default_rng(n)
    x = _values(rng, (n, 9), dtype)
    idx = rng.integers(0, 5, n)
    src, axis = {"C": (x, 0), "F": (np.asfortranarray(x), 0), "features-first": (np.ascontiguousarray(x.T), 1)}[layout]
    want = cs.scatter(src.copy(order="K"), idx, op, dim_size=5, axis=axis)
    _same(cs.scatter(_offset(src) if layout != "F" else np.asfortranarray(_offset(src)), idx, op, dim_size=5,
                     axis=axis), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_of_a_packed_record_field(dtype):
    rec = np.zeros(20000, dtype=[("i", "i4"), ("z", dtype)])
    rng = np.random.default_rng(1)
    rec["z"] = _values(rng, 20000, dtype)
    idx = np.arange(20000) % 5
    want = np.zeros(5, dtype)
    np.add.at(want, idx, rec["z"].copy())
    _same(cs.scatter(rec["z"], idx), want)
    _same(cs.segment(rec["z"], np.array([0, 5000, 20000])), cs.segment(rec["z"].copy(), np.array([0, 5000, 20000])))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "mean", "mul", "set"])
def test_offset_out_and_dst_are_written(dtype, op):
    rng = np.random.default_rng(2)
    x = _values(rng, (300, 4), dtype)
    idx = rng.integers(0, 6, 300)
    out = _offset(np.zeros((6, 4), dtype))
    got = cs.scatter(x, idx, op, out=out)
    assert got is out
    _same(out, cs.scatter(x, idx, op, dim_size=6))
    start = _values(rng, (6, 4), dtype)
    dst = _offset(start)
    cs.scatter_into(dst, x, idx, op)
    want = start.copy()
    cs.scatter_into(want, x, idx, op)
    _same(dst, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_reductions_and_reverse_functions_of_an_offset_src(dtype):
    rng = np.random.default_rng(3)
    x = _values(rng, (20000, 3), dtype)
    idx = rng.integers(0, 7, 20000)
    ox = _offset(x)
    _same(cs.scatter_var(ox, idx), cs.scatter_var(x, idx))
    _same(cs.scatter_std(ox, idx), cs.scatter_std(x, idx))
    _same(cs.segment_multi(ox, np.array([0, 100, 20000]), ("mean", "std")),
          cs.segment_multi(x, np.array([0, 100, 20000]), ("mean", "std")))
    out = cs.scatter(x, idx, "add", dim_size=7)
    tangent = _values(rng, x.shape, dtype)
    _same(cs.scatter_jvp("add", ox, idx, out, _offset(tangent)), cs.scatter_jvp("add", x, idx, out, tangent))
    g = _values(rng, out.shape, dtype)
    few, fidx = x[:200], idx[:200]   # products of a few: no overflow
    prod = cs.scatter(few, fidx, "mul", dim_size=7)
    _same(cs.scatter_vjp_src("mul", _offset(g), _offset(few), fidx, prod), cs.scatter_vjp_src("mul", g, few, fidx, prod))
    _same(cs.gather(ox, idx[:50]), x[idx[:50]])
    _same(cs.gather_scatter(ox, idx[:500], idx[500:1000] % 3), cs.gather_scatter(x, idx[:500], idx[500:1000] % 3))
