"""float16 and bfloat16 results rounded from their float32 tables (`kernels.round_half`, `round_bfloat`,
`host.rounded`), a `scatter_into` src of another dtype and a sorted-hinted src read in place: against NumPy's own cast and the plain-loop references, bit for bit, with
NumPy's floating-point errors and warnings kept."""
import warnings

import numpy as np
import pytest
from memory import traced_peak
from reference import ref_scatter
from reference_gather_scatter import ref_gather_scatter

import cyscatter as cs
from cyscatter import kernels
from cyscatter._backends import host

# float16 products and sums overflow to inf in both cyscatter and the references (NumPy's warning): the values
# still compare; the tests of the warning itself record it whatever the filters
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.itemsize}"))


def _special_floats():
    """Every float32 class NumPy's float16 cast treats apart: zeros, the subnormal boundaries and the ties on
    either side of them, the normal range ends, overflow to inf, infinities, quiet and signalling NaNs."""
    edges = np.array([0x00000000, 0x00000001, 0x007fffff, 0x00800000, 0x32800000, 0x32ffffff, 0x33000000,
                      0x33000001, 0x337fffff, 0x33800000, 0x387fc000, 0x387fe000, 0x387fefff, 0x387ff000,
                      0x387fffff, 0x38800000, 0x38801000, 0x38802000, 0x38803000, 0x3f801000, 0x3f803000,
                      0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, 0x7f7fffff, 0x7f800000,
                      0x7f800001, 0x7f801fff, 0x7f802000, 0x7fa00000, 0x7fc00000, 0x7fffffff], np.uint32)
    return np.concatenate([edges, edges | np.uint32(0x80000000)])


@pytest.mark.parametrize("length", [1, 7, 8, 9, 33, 1 << 16])
def test_round_half_gives_numpys_bits(length):
    rng = np.random.default_rng(length)
    bits = np.concatenate([_special_floats(), rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32)])
    for start in range(0, bits.size, length):
        x = bits[start:start + length].view(np.float32)
        out = np.empty(x.size, np.float16)
        kernels.round_half(x, out)
        with np.errstate(all="ignore"):
            want = x.astype(np.float16)
        np.testing.assert_array_equal(_bits(out), _bits(want))
        if length == 1 << 16:
            break
    # the 65536 float16 values round-trip, every NaN payload included
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    out = np.empty(h.size, np.float16)
    kernels.round_half(h.astype(np.float32), out)
    np.testing.assert_array_equal(_bits(out), _bits(h))


def test_round_half_reports_overflow_and_underflow():
    out = np.empty(16, np.float16)
    assert kernels.round_half(np.ones(16, np.float32), out) == 0
    assert kernels.round_half(np.full(16, 70000, np.float32), out) == kernels.RoundFlag.ROUND_OVERFLOW
    assert kernels.round_half(np.full(16, np.inf, np.float32), out) == 0   # inf stays inf: no overflow
    assert kernels.round_half(np.full(16, 1e-6, np.float32), out) == kernels.RoundFlag.ROUND_UNDERFLOW
    with pytest.raises(ValueError, match="round_half"):
        kernels.round_half(np.ones(16), out)
    with pytest.raises(ValueError, match="round_half"):
        kernels.round_half(np.ones(8, np.float32), out)


@pytest.mark.parametrize("length", [1, 7, 8, 9, 33, 1 << 16])
def test_round_bfloat_gives_ml_dtypes_bits(length):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(length)
    bits = np.concatenate([_special_floats(), np.array([0x7f7f8000, 0x7f7f7fff, 0x00008000, 0x00018000, 0x3f808000,
                                                        0x3f818000, 0xff7f8000], np.uint32),
                           rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32)])
    for start in range(0, bits.size, length if length < 1 << 16 else bits.size):
        x = bits[start:start + length if length < 1 << 16 else None].view(np.float32)
        out = np.empty(x.size, np.uint16)
        kernels.round_bfloat(x, out)
        np.testing.assert_array_equal(out, x.astype(ml_dtypes.bfloat16).view(np.uint16))
        if start > 4096:
            break


def _table(n=20_000, f=4, value=1.0):
    return np.full((n, f), value, np.float32)


@pytest.mark.parametrize("value, kind", [(70000.0, "over"), (1e-6, "under"), (1e-30, "under")])
def test_rounded_keeps_numpys_floating_point_errors(value, kind):
    table = _table()
    table[7, 1] = value
    for action in ("ignore", "warn", "raise"):
        with np.errstate(**{kind: action}):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                try:
                    want, want_err = table.astype(np.float16), None
                except FloatingPointError as err:
                    want, want_err = None, str(err)
            with warnings.catch_warnings(record=True) as got_seen:
                warnings.simplefilter("always")
                try:
                    got, got_err = host.rounded(table, np.dtype(np.float16)), None
                except FloatingPointError as err:
                    got, got_err = None, str(err)
        assert [str(w.message) for w in got_seen] == [str(w.message) for w in seen]
        assert got_err == want_err
        if want is not None:
            np.testing.assert_array_equal(_bits(got), _bits(want))


def test_float16_scatter_overflow_warns_as_numpy():
    x = np.full((20_000, 2), 60000, np.float16)
    idx = np.arange(20_000) % 5000
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        got = cs.scatter(x, idx, "add", dim_size=5000)
    assert np.isinf(got).all()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        cs.scatter(x, idx, "add", dim_size=5000)


def _half(rng, shape, nan=False):
    x = rng.standard_normal(shape) * 3
    x[rng.random(shape) < 0.02] = 0.0
    if nan:
        x[rng.random(shape) < 0.05] = np.nan
    return x.astype(np.float16)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min", "mean", "nansum", "nanmean", "fmax"])
@pytest.mark.parametrize("path", ["fresh", "out", "fill"])
def test_float16_scatter_results_match_the_loops(op, path):
    rng = np.random.default_rng(3)
    x = _half(rng, (6000, 3), nan=op.startswith(("nan", "f")))
    idx = rng.integers(0, 2000, 6000)
    fill = 0.5 if path == "fill" else None
    want = ref_scatter(x, idx, op, dim_size=2000, fill_value=fill)
    if path == "out":
        got = np.full((2000, 3), 9, np.float16)
        cs.scatter(x, idx, op, dim_size=2000, out=got)
    else:
        got = cs.scatter(x, idx, op, dim_size=2000, fill_value=fill)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(_bits(got), _bits(want))
    ml_dtypes = pytest.importorskip("ml_dtypes")
    xb = x.astype(np.float32).astype(ml_dtypes.bfloat16)
    got = cs.scatter(xb, idx, op, dim_size=2000, fill_value=fill)
    want = ref_scatter(xb.astype(np.float32), idx, op, dim_size=2000, fill_value=fill).astype(xb.dtype)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("op", ["add", "max", "mean", "nansum"])
def test_float16_segment_results_match_the_loops(op):
    rng = np.random.default_rng(4)
    x = _half(rng, (9000, 2), nan=op == "nansum")
    ids = np.sort(rng.integers(0, 3000, 9000))
    ptr = np.searchsorted(ids, np.arange(3001))
    np.testing.assert_array_equal(_bits(cs.segment(x, ptr, op)), _bits(ref_scatter(x, ids, op, dim_size=3000)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "max", "min", "mean", "nansum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_half_gather_scatter_results_match_the_loops(dtype, op, weighted):
    rng = np.random.default_rng(5)
    x = _half(rng, (3000, 4), nan=op == "nansum")
    if dtype == "bfloat16":
        x = x.astype(np.float32).astype(pytest.importorskip("ml_dtypes").bfloat16)
    gi, si = rng.integers(0, 3000, 8000), rng.integers(0, 3000, 8000)
    w = rng.standard_normal(8000).astype(np.float32).astype(x.dtype) if weighted else None
    got = cs.gather_scatter(x, gi, si, op, dim_size=3000, weight=w)
    # messages w * x formed and reduced in float32 (the compute dtype), rounded once
    want = ref_gather_scatter(x.astype(np.float32), gi, si, op, dim_size=3000,
                              weight=None if w is None else w.astype(np.float32)).astype(x.dtype)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


# ---- scatter_into: a src of another dtype read in place ------------------------------------------------------

@pytest.mark.parametrize("src_dtype, dst_dtype", [
    (np.float16, np.float32), (np.float32, np.float64), (np.float16, np.float64), (np.int8, np.float64),
    (np.int8, np.int16), (np.uint8, np.int32), (np.int16, np.int64), (np.int32, np.float64),
    (np.float32, np.float16), (np.float64, np.float32), (np.int64, np.int8)])
@pytest.mark.parametrize("op", ["add", "mul", "max", "min", "mean"])
@pytest.mark.parametrize("layout", ["c", "fortran"])
def test_scatter_into_another_dtype_matches_ufunc_at(src_dtype, dst_dtype, op, layout):
    """NumPy's ufunc.at casts src to dst's dtype, then combines; the reference does just that."""
    if op == "mean" and np.dtype(dst_dtype).kind in "iu":
        pytest.skip("mean into an integer dst is refused")
    rng = np.random.default_rng(6)
    n = 20_000   # past the staged path's threshold
    if np.dtype(src_dtype).kind == "f":
        x = (rng.standard_normal((n, 3)) * (1.01 if op == "mul" else 100)).astype(src_dtype)
    else:
        x = rng.integers(-100 if np.dtype(src_dtype).kind == "i" else 0, 100, (n, 3)).astype(src_dtype)
    if op == "mul":
        x[rng.random(x.shape) < 0.5] = 1
    idx = rng.integers(0, 700, n)
    dst = rng.integers(1, 5, (700, 3)).astype(dst_dtype)
    want = ref_scatter(x, idx, op, dst=dst)
    src = x if layout == "c" else np.asfortranarray(x)
    got = dst.copy()
    with np.errstate(all="ignore"):
        cs.scatter_into(got, src, idx, op)
    assert got.dtype == dst.dtype
    np.testing.assert_array_equal(got.view(np.dtype(f"u{got.itemsize}")), want.view(np.dtype(f"u{got.itemsize}")))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "mul", "max", "mean", "nansum"])
def test_scatter_into_a_half_dst_rounds_as_numpy(dtype, op):
    """The float32 work copy of a float16 / bfloat16 dst rounded back by the backend's loop."""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(10)
    x = _half(rng, (20_000, 4), nan=op == "nansum").astype(np.float32).astype(dtype)
    idx = rng.integers(0, 3000, 20_000)
    dst = rng.standard_normal((3000, 4)).astype(np.float32).astype(dtype)
    src32 = x.astype(np.float32)
    want = ref_scatter(src32, idx, op, dst=dst.astype(np.float32)).astype(dtype)   # the loops in float32, rounded
    got = dst.copy()
    cs.scatter_into(got, x, idx, op)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_scatter_into_a_float16_dst_warns_on_overflow_as_numpy():
    dst = np.full((3000, 4), 60000, np.float16)
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        cs.scatter_into(dst, np.full((3000, 4), 60000, np.float16), np.arange(3000))
    assert np.isinf(dst).all()


@pytest.mark.parametrize("src_dtype, dst_dtype", [(np.float16, np.float32), (np.float32, np.float64),
                                                  (np.int8, np.float64), (np.uint8, np.int16)])
def test_scatter_into_another_dtype_allocates_no_converted_copy(src_dtype, dst_dtype):
    rng = np.random.default_rng(7)
    n, f = 200_000, 16
    x = (rng.standard_normal((n, f)) * 50).astype(src_dtype)
    idx = rng.integers(0, 1000, n)
    dst = np.zeros((1000, f), dst_dtype)
    cs.scatter_into(dst.copy(), x[:100], idx[:100])   # warm caches of the Python layer
    _, peak = traced_peak(lambda: cs.scatter_into(dst, x, idx))
    # a block buffer and at most a compute-dtype table, not an n x F copy in dst's dtype (>= 6.4 MB)
    assert peak < n * f * np.dtype(dst_dtype).itemsize / 4, peak
    want = np.zeros((1000, f), dst_dtype)
    np.add.at(want, idx, x.astype(dst_dtype))
    np.testing.assert_array_equal(dst, want)


# ---- indices_are_sorted: the hint no longer makes a converted copy ---------------------------------------------

@pytest.mark.parametrize("src_dtype", ["float16", "bfloat16", "int8"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min", "mean", "nansum", "sqrt_n"])
@pytest.mark.parametrize("width", [1, 5])
def test_sorted_hint_on_a_converted_src_matches_the_loops(src_dtype, op, width):
    if src_dtype == "bfloat16":
        src_dtype = pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(8)
    n = 30_000
    if src_dtype == "int8":
        x = rng.integers(-5, 6, (n, width)).astype(np.int8)
        if op in ("mean", "sqrt_n"):
            pytest.skip("integer means are computed in float64 from the whole src")
    else:
        x = (rng.standard_normal((n, width)) * (1.01 if op == "mul" else 3)).astype(np.float32).astype(src_dtype)
    idx = np.sort(rng.integers(0, 900, n))
    got = cs.scatter(x, idx, op, dim_size=900, indices_are_sorted=True)
    if src_dtype == "int8" or x.dtype == np.float16:
        want = ref_scatter(x, idx, op, dim_size=900)
    else:   # bfloat16: the plain loops in float32, rounded once
        want = ref_scatter(x.astype(np.float32), idx, op, dim_size=900).astype(x.dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.dtype(f"u{got.itemsize}")), want.view(np.dtype(f"u{got.itemsize}")))
    dst = rng.standard_normal((900, width)).astype(np.float32)
    want_into = ref_scatter(x, idx, op, dst=dst)
    cs.scatter_into(dst, x, idx, op, indices_are_sorted=True)
    np.testing.assert_array_equal(dst.view(np.uint32), want_into.view(np.uint32))


def test_sorted_hint_allocates_no_converted_copy():
    rng = np.random.default_rng(9)
    n, f = 200_000, 16
    x = rng.standard_normal((n, f)).astype(np.float16)
    idx = np.sort(rng.integers(0, 1000, n))
    cs.scatter(x[:100], idx[:100], dim_size=1000, indices_are_sorted=True)   # warm caches of the Python layer
    got, peak = traced_peak(lambda: cs.scatter(x, idx, dim_size=1000, indices_are_sorted=True))
    assert peak < n * f * 4 / 4, peak   # the table and a block buffer, not n x F float32 (12.8 MB)
    want = np.zeros((1000, f), np.float32)
    np.add.at(want, idx, x.astype(np.float32))
    np.testing.assert_array_equal(got, want.astype(np.float16))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_gather_scatter_vjp_src_rounds_its_float32_gradient(dtype):
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(11)
    x = _half(rng, (3000, 4)).astype(np.float32).astype(dtype)
    gi, si = rng.integers(0, 3000, 8000), rng.integers(0, 3000, 8000)
    out = cs.gather_scatter(x, gi, si, "add", dim_size=3000)
    g = _half(rng, (3000, 4)).astype(np.float32).astype(dtype)
    got = cs.gather_scatter_vjp_src("add", g, x, gi, si, out)
    assert got.dtype == x.dtype
    want = np.zeros((3000, 4))   # the plain loop in float64; float32 sums then one rounding stay within its ulp
    np.add.at(want, gi, g.astype(np.float64)[si])
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 ** -7 if x.dtype != np.float16 else 2 ** -10,
                               atol=1e-6)
