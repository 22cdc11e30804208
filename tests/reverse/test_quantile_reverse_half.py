"""The quantile reverse functions on a float16/bfloat16 src: the sort reads src as it is (its exact widening
orders and ties values as the float64 conversion does), against the same functions on src converted whole to
float64 first, bit for bit, against a float64 src of the same values, and without that n x F float64 copy."""
import zlib

import numpy as np
import pytest
from memory import traced_peak

import cyscatter as cs
from cyscatter._backends import host
from cyscatter._plan import groups

ml_dtypes = pytest.importorskip("ml_dtypes")
DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


@pytest.fixture(autouse=True)
def read_in_place(monkeypatch):
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)   # small srcs are converted whole by default


def _converted_whole(call, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(groups, "chunked_source", lambda *args, **kwargs: None)
        return call()


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("q", [0.5, 0.0, [0.1, 0.75, 1.0]])
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("layout", ["rows", "fortran", "batched"])
@pytest.mark.parametrize("mode", ["raise", "drop"])
def test_half_quantile_derivatives_match_the_whole_conversion(dtype, nan, q, method, layout, mode, monkeypatch):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, nan, q, method, layout, mode)).encode()))
    shape, axis = ((2, 300, 3), 1) if layout == "batched" else ((300, 4), 0)
    x = (rng.integers(-4, 5, shape) / 2).astype(DTYPES[dtype])   # halves: ties in every group
    x.reshape(-1)[::13] = np.nan
    x.reshape(-1)[5::29] = -0.0
    if layout == "fortran":
        x = np.asfortranarray(x)
    idx = rng.integers(0, 20, shape[axis]) if mode == "raise" else rng.integers(-2, 22, shape[axis])
    fwd, vjp, jvp = (cs.scatter_nanquantile, cs.scatter_nanquantile_vjp, cs.scatter_nanquantile_jvp) if nan else \
        (cs.scatter_quantile, cs.scatter_quantile_vjp, cs.scatter_quantile_jvp)
    kw = {"method": method, "axis": axis, "mode": mode}
    out = fwd(x, idx, q, dim_size=20, **kw)
    g = rng.standard_normal(out.shape)
    d = rng.standard_normal(x.shape)
    calls = (lambda: vjp(g, x, idx, q, **kw), lambda: jvp(x, idx, d, q, dim_size=20, **kw))
    for call in calls:
        got = call()
        want = _converted_whole(call, monkeypatch)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(got, want)
    # the values of a float64 src: the same selections and weights
    np.testing.assert_array_equal(vjp(g, x, idx, q, **kw), vjp(g, x.astype(np.float64), idx, q, **kw))


@pytest.mark.full
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_half_quantile_vjp_makes_no_float64_copy(dtype, monkeypatch):
    rng = np.random.default_rng(4)
    n, f, size = 200_000, 16, 500
    x = rng.standard_normal((n, f)).astype(DTYPES[dtype])
    idx = rng.integers(0, size, n)
    g = np.ones((size, f))

    def call():
        return cs.scatter_quantile_vjp(g, x, idx, 0.5)
    call()   # warm the Python layer's caches
    _, peak = traced_peak(call)
    _, whole = traced_peak(lambda: _converted_whole(call, monkeypatch))
    # the whole conversion holds src in float64 (n * f * 8 bytes) and sorts a float64 copy of it; the sort of
    # src as it is holds a float16 copy (n * f * 2)
    assert whole - peak > 1.5 * n * f * 8, (peak, whole)
