"""The dtype promises of the core issue: float16 accumulation, small index dtypes with huge groups, integer true
division, complex max/min, uint64 indices above 2**63, and the index dtypes refused."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from inputs import index, rng_for, values
from reference import ref_scatter, result_dtype
from testing import INDEX_KINDS, OPS, VALUE_DTYPES, op_supports

INTEGER_DTYPES = tuple(d for d in VALUE_DTYPES if np.dtype(d).kind in "iu")
SMALL_INDEX_DTYPES = ("int8", "uint8", "int16", "uint16")


@pytest.mark.parametrize("form", ["scatter", "scatter_into"])
def test_float16_accumulates_in_float32(backend, form):
    """3000 float16 ones sum to 3000; accumulating in float16 would stop at 2048 (1 is below half an ulp)."""
    ones, zeros = np.ones(3000, np.float16), np.zeros(3000, np.int64)
    if form == "scatter":
        out = cs.scatter(backend.asarray(ones), backend.asarray(zeros), "add")
    else:
        out = cs.scatter_into(backend.asarray(np.zeros(1, np.float16)), backend.asarray(ones),
                              backend.asarray(zeros), "add")
    naive = np.zeros(1, np.float16)
    np.add.at(naive, zeros, ones)
    assert naive[0] == 2048   # the trap the test is about
    assert_same(backend.to_numpy(out), np.array([3000], np.float16))


@pytest.mark.parametrize("op", ["add", "mean"])
@pytest.mark.parametrize("index_dtype", SMALL_INDEX_DTYPES)
def test_small_index_dtype_with_groups_over_2_15(backend, index_dtype, op):
    """More than 2**15 entries per group with an int8/int16 index: counts and offsets do not overflow."""
    n = 2 ** 16
    idx = (np.arange(n) % 4 == 0).astype(index_dtype)   # groups of 49152 and 16384 entries
    src = np.arange(n, dtype=np.float64)
    out = cs.scatter(backend.asarray(src), backend.asarray(idx), op)
    sums = np.array([src[idx == 0].sum(), src[idx == 1].sum()])
    counts = np.array([np.sum(idx == 0), np.sum(idx == 1)])
    expected = sums if op == "add" else sums / counts
    np.testing.assert_allclose(backend.to_numpy(out), expected, rtol=1e-13)
    assert counts[0] > 2 ** 15


@pytest.mark.parametrize("op", ["div", "mean", "sqrt_n"])
@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_integer_true_division_gives_float64(backend, dtype, op):
    rng = rng_for("truediv", dtype, op)
    src, idx = values(dtype, (9, 2), rng, op), index("int", "int64", (9,), (4,), rng)
    out = backend.to_numpy(cs.scatter(backend.asarray(src), backend.asarray(idx), op, dim_size=4))
    assert out.dtype == np.float64
    assert_same(out, ref_scatter(src, idx, op, dim_size=4))


@pytest.mark.parametrize("op", ["div", "mean", "sqrt_n"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_true_division_into_integer_dst_raises(backend, dtype, op):
    dst = np.arange(1, 5).astype(dtype)
    arr = backend.asarray(dst.copy())
    with pytest.raises(TypeError, match=op):
        cs.scatter_into(arr, backend.asarray(np.ones(3, dtype)), backend.asarray(np.array([0, 1, 1])), op)
    assert_same(backend.to_numpy(arr), dst)


@pytest.mark.parametrize("form", ["scatter", "scatter_into"])
@pytest.mark.parametrize("op", [op for op in OPS if not op_supports(op, "complex128")])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_max_min_raise_type_error(backend, dtype, op, form):
    src, idx = np.ones(3, dtype), np.array([0, 1, 1])
    dst = np.zeros(2, dtype)
    arr = backend.asarray(dst.copy())
    with pytest.raises(TypeError, match="complex"):
        if form == "scatter":
            cs.scatter(backend.asarray(src), backend.asarray(idx), op)
        else:
            cs.scatter_into(arr, backend.asarray(src), backend.asarray(idx), op)
    assert_same(backend.to_numpy(arr), dst)


BIG = np.uint64(2 ** 63 + 5)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
@pytest.mark.parametrize("form", ["scatter", "scatter_into"])
def test_uint64_index_above_2_63(backend, form, mode, kind):
    """Entries above 2**63 (negative if read as int64) follow the mode as their true value."""
    coord = np.array([0, BIG, 2, np.uint64(2 ** 64 - 1), 1], np.uint64)
    idx = coord if kind == "int" else (coord[::-1].copy(), coord)
    dims = (3,) if kind == "int" else (3, 3)
    src = np.arange(1.0, 6.0)
    dim_size = dims[0] if kind == "int" else dims
    if form == "scatter":
        out = cs.scatter(backend.asarray(src), backend.asarray(idx), dim_size=dim_size, mode=mode)
        expected = ref_scatter(src, idx, dim_size=dim_size, mode=mode)
    else:
        dst = np.full(dims, 10.0)
        expected = ref_scatter(src, idx, mode=mode, dst=dst)
        out = cs.scatter_into(backend.asarray(dst), backend.asarray(src), backend.asarray(idx), mode=mode)
    assert_same(backend.to_numpy(out), expected)


@pytest.mark.parametrize("form", ["scatter", "scatter_into", "gather"])
def test_uint64_index_above_2_63_raises_with_true_value(backend, form):
    idx = np.array([0, 1, BIG, 1], np.uint64)
    dst = np.zeros(3)
    arr = backend.asarray(dst.copy())
    with pytest.raises(IndexError, match=rf"index\[2\] = {int(BIG)}\b.*size 3"):
        if form == "scatter":
            cs.scatter(backend.asarray(np.ones(4)), backend.asarray(idx), dim_size=3)
        elif form == "scatter_into":
            cs.scatter_into(arr, backend.asarray(np.ones(4)), backend.asarray(idx))
        else:
            cs.gather(arr, backend.asarray(idx))
    assert_same(backend.to_numpy(arr), dst)


@pytest.mark.parametrize("bad", [np.array([0.0, 1.0]), np.array([True, False]), [0.5, 1.0]], ids=["float", "bool",
                                                                                                   "list"])
@pytest.mark.parametrize("func", ["scatter", "gather"])
def test_non_integer_index_raises_type_error(backend, func, bad):
    src = backend.asarray(np.ones(2))
    bad = backend.asarray(bad) if isinstance(bad, np.ndarray) else bad
    with pytest.raises(TypeError, match="index"):
        getattr(cs, func)(src, bad)


@pytest.mark.parametrize("form", ["scatter", "scatter_into"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", [">f8", ">f4", ">u8", ">i4", ">c16", ">f2"])
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_non_native_byte_order(backend, dtype, op, form):
    """Big-endian values (FITS files, network data) give the native-order result for the same numbers;
    an allocating result comes back in native byte order, as NumPy's ufuncs return."""
    rng = rng_for("byteorder", dtype, op, form)
    native = np.dtype(dtype).newbyteorder("=")
    src = values(native, (9, 2), rng, op)
    if dtype == ">u8":   # values above 2**63 tell unsigned from signed arithmetic
        src[::2] += np.uint64(2 ** 63)
    idx = index("int", "int64", (9,), (4,), rng)
    if form == "scatter":
        expected = ref_scatter(src, idx, op, dim_size=4)
        out = backend.call(cs.scatter, src.astype(dtype), idx, op, dim_size=4)
    else:
        dst = values(result_dtype(op, native), (4, 2), rng, op)
        expected = ref_scatter(src, idx, op, dst=dst)
        out = backend.call(cs.scatter_into, dst.astype(dst.dtype.newbyteorder(">")), src.astype(dtype), idx, op)
        assert out.dtype.byteorder == ">"
        out = out.astype(out.dtype.newbyteorder("="))
    assert_same(out, expected, *tolerance(backend.name, op, native, src))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("width", [1, 2, 3, 4, 8])
def test_complex_mul_with_infinities_is_numpys_formula(dtype, width):
    """Products of complex infinities and NaNs follow np.multiply.at (the plain formula), not C99 Annex G."""
    specials = [complex(np.inf, 1), complex(2, np.inf), complex(-np.inf, np.inf), complex(np.nan, 1),
                complex(0, 0), complex(1e30, 1e30), complex(3, -2)]
    rng = np.random.default_rng(width)
    src = rng.choice(np.array(specials, dtype), (30, width))
    index = rng.integers(0, 4, 30)
    expected = np.ones((4, width), dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        np.multiply.at(expected, index, src)
    got = cs.scatter(src, index, "mul", dim_size=4)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.isnan(got.real), np.isnan(expected.real))
    np.testing.assert_array_equal(np.isnan(got.imag), np.isnan(expected.imag))
