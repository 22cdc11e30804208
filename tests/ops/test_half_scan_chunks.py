"""scatter_scan on a float16/bfloat16 (and small-integer) src read in place, a block of converted rows at a time
with the running table carried from block to block: against the same scan on the src converted whole first
(NumPy's astype, the result cast back), bit for bit, against the path that converts whole, against plain loops,
and without the n x F copies in the compute dtype."""
import zlib

import numpy as np
import pytest
from memory import traced_peak

import cyscatter as cs
from cyscatter import scan_kernels
from cyscatter._backends import chunks

ml_dtypes = pytest.importorskip("ml_dtypes")

OPS = ["add", "mul", "max", "min", "nansum", "nanprod", "nanmax", "nanmin"]


def _same(got, want):
    """Equal bits, NaN at the same places (any NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(got.astype(np.float64))
    np.testing.assert_array_equal(nan, np.isnan(want.astype(np.float64)))
    bits = np.dtype(f"u{got.dtype.itemsize}")
    np.testing.assert_array_equal(got.view(bits)[~nan], want.view(bits)[~nan])


@pytest.fixture(params=[None, 512], ids=["default-chunks", "512B-chunks"])
def chunk_bytes(request, monkeypatch):
    """Small chunks: many block boundaries inside groups and in every batch slice."""
    if request.param is not None:
        monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", request.param)


def _src(shape, dtype, rng):
    dtype = np.dtype(getattr(ml_dtypes, dtype, dtype))
    a = (rng.standard_normal(shape) * 1.5).astype(np.float32)
    flat = a.reshape(-1)
    flat[rng.choice(a.size, 6, replace=False)] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
    return a.astype(dtype)


LAYOUTS = {"rows": ((3000, 5), 0), "batched": ((2, 1500, 3), 1), "features-first": ((4, 3000), 1)}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("mode", ["raise", "drop"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_chunked_scan_matches_the_whole_conversion(chunk_bytes, dtype, op, layout, mode, reverse, exclusive,
                                                   monkeypatch):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, layout, mode, reverse, exclusive)).encode()))
    shape, axis = LAYOUTS[layout]
    src = _src(shape, dtype, rng)
    # group 7 stays empty; under drop some entries fall outside
    idx = rng.choice([k for k in range(55 if mode == "drop" else 50) if k != 7], shape[axis])
    kw = {"dim_size": 50, "axis": axis, "mode": mode, "reverse": reverse, "exclusive": exclusive}
    with np.errstate(all="ignore"):
        got = cs.scatter_scan(src, idx, op, **kw)
        _same(got, cs.scatter_scan(src.astype(np.float32), idx, op, **kw).astype(src.dtype))
        monkeypatch.setattr(chunks, "chunked_source", lambda *args: None)   # the path that converts whole
        _same(got, cs.scatter_scan(src, idx, op, **kw))


@pytest.mark.parametrize("op", ["add", "max", "min"])
def test_chunked_scan_of_small_integers_matches_the_whole_conversion(chunk_bytes, op, monkeypatch):
    rng = np.random.default_rng(5)
    src = rng.integers(-128, 128, (3000, 4)).astype(np.int8)
    idx = rng.integers(0, 40, 3000)
    got = cs.scatter_scan(src, idx, op, dim_size=40, exclusive=True)
    monkeypatch.setattr(chunks, "chunked_source", lambda *args: None)
    _same(got, cs.scatter_scan(src, idx, op, dim_size=40, exclusive=True))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "max"])
def test_chunked_scan_against_plain_loops(monkeypatch, dtype, op):
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 256)
    rng = np.random.default_rng(2)
    src = _src((2000, 3), dtype, rng)
    src[np.isnan(src.astype(np.float32))] = 0
    idx = rng.integers(-2, 30, 2000)
    got = cs.scatter_scan(src, idx, op, dim_size=30, mode="drop", reverse=True)
    want = np.zeros((2000, 3), np.float32)
    running = {}
    combine = np.add if op == "add" else np.maximum
    for k in range(1999, -1, -1):
        j = int(idx[k])
        if 0 <= j < 30:
            x = src[k].astype(np.float32)
            running[j] = x if j not in running else combine(running[j], x).astype(np.float32)
            want[k] = running[j]
        elif op == "max":
            want[k] = -np.inf
    _same(got, want.astype(src.dtype))


def test_chunked_scan_names_the_first_bad_entry(monkeypatch):
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 256)
    src = np.ones((3000, 2), np.float16)
    idx = np.zeros(3000, np.int64)
    idx[[100, 2900]] = 9
    with pytest.raises(IndexError, match="100"):
        cs.scatter_scan(src, idx, dim_size=5, reverse=True)   # the last block is scanned first


def test_keep_table_takes_one_batch_slice():
    src = np.ones((2, 3, 1))
    with pytest.raises(ValueError, match="keep_table"):
        scan_kernels.scan(0, src, np.zeros(3, np.int64), np.empty_like(src), np.zeros((1, 1)), np.zeros(1),
                          keep_table=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "nanmax"])
def test_chunked_scan_makes_no_converted_copy(dtype, op, monkeypatch):
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 1 << 18)
    rng = np.random.default_rng(4)
    n, f, size = 100_000, 16, 500
    src = _src((n, f), dtype, rng)
    idx = rng.integers(0, size, n)
    cs.scatter_scan(src[:100], idx[:100], op, dim_size=size)   # warm the Python layer's caches
    _, peak = traced_peak(lambda: cs.scatter_scan(src, idx, op, dim_size=size))
    # the float16 result (n * f * 2 bytes, 3.2 MB) and blocks; the whole conversion added a float32 src and a
    # float32 output (n * f * 4 bytes each)
    assert peak < n * f * 2 + n * f * 4 / 2, peak


def test_chunked_scan_overflow_is_numpys(monkeypatch):
    """A float32 running value past float16's range rounds to inf with NumPy's warning, or its error under
    ``np.errstate(over="raise")``, as the whole result's cast gives."""
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 4096)
    src = np.full((40000, 2), 60000, np.float16)
    idx = np.zeros(40000, np.int64)
    with pytest.warns(RuntimeWarning, match="overflow"):
        got = cs.scatter_scan(src, idx, dim_size=1)
    assert got[0, 0] == 60000 and np.isinf(got[1:]).all()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        cs.scatter_scan(src, idx, dim_size=1)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8"])
@pytest.mark.parametrize("fun", ["vjp", "jvp"])
def test_add_scan_derivatives_leave_src_unconverted(dtype, fun, monkeypatch):
    rng = np.random.default_rng(6)
    n, f, size = 100_000, 16, 500
    src = _src((n, f), dtype, rng) if dtype != "int8" else rng.integers(-9, 9, (n, f)).astype(np.int8)
    idx = rng.integers(-3, size, n)
    g = rng.standard_normal((n, f))

    def call(src=src, g=g, idx=idx):
        if fun == "vjp":
            return cs.scatter_scan_vjp("add", g, src, idx, dim_size=size, mode="drop", reverse=True)
        return cs.scatter_scan_jvp("add", src, idx, g, dim_size=size, mode="drop", exclusive=True)

    call(src[:100], g[:100], idx[:100])   # warm the Python layer's caches
    got, peak = traced_peak(call)
    # a plain loop: the cotangent summed over the later members of each group (vjp, reverse scan: the earlier),
    # the tangent over the earlier ones (exclusive jvp)
    want = np.zeros((n, f))
    running = np.zeros((size, f))
    for k in range(n):
        j = idx[k]
        if j >= 0:
            if fun == "vjp":
                running[j] += g[k]
                want[k] = running[j]
            else:
                want[k] = running[j]
                running[j] += g[k]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # the float64 tangent or cotangent rows and result (n * f * 8 bytes each); converting src added a float32
    # (or int64) copy and a float64 one
    assert peak < n * f * 8 * 2.5, peak
