"""gather_scatter's reverse functions with a float16/bfloat16 weight of one value per edge and feature (E x F):
the weight is converted once to the dtype the derivatives are computed in and that copy is what the fused passes
read (no second E x F conversion beside it), against the same function on the weight converted whole to float32
first, bit for bit, and against plain loops."""
import zlib

import numpy as np
import pytest
from memory import traced_peak

import cyscatter as cs
from cyscatter._backends import host

ml_dtypes = pytest.importorskip("ml_dtypes")

OPS = ["add", "sub", "mean", "sqrt_n", "max", "min", "fmax", "fmin"]


def _same(got, want):
    """Equal bits, NaN at the same places (any NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(got.astype(np.float64))
    np.testing.assert_array_equal(nan, np.isnan(want.astype(np.float64)))
    bits = np.dtype(f"u{got.dtype.itemsize}")
    np.testing.assert_array_equal(got.view(bits)[~nan], want.view(bits)[~nan])


def _inputs(shape, dtype, rng, *, specials=True):
    dtype = np.dtype(getattr(ml_dtypes, dtype, dtype))
    a = rng.standard_normal(shape).astype(np.float32)
    if specials and a.size >= 8:
        flat = a.reshape(-1)
        flat[rng.choice(a.size, 4, replace=False)] = [np.nan, np.inf, -np.inf, -0.0]
    return a.astype(dtype)


def _case(layout, dtype, mode, rng):
    """(src, gather_index, scatter_index, weight, dim_size, axis) of one layout: rows (S, F) along axis 0, a batch
    (B, S, F) along axis 1, or features first (F, S) along axis 1 (one weight value per edge)."""
    s, e, size, f = 60, 700, 25, 6
    high = (s + 3, size + 3) if mode == "drop" else (s, size)
    gi, si = rng.integers(0, high[0], e), rng.integers(0, high[1], e)
    if layout == "rows":
        return _inputs((s, f), dtype, rng), gi, si, _inputs((e, f), dtype, rng), size, 0
    if layout == "batched":
        return _inputs((3, s, f), dtype, rng), gi, si, _inputs((e, f), dtype, rng), size, 1
    return _inputs((f, s), dtype, rng), gi, si, _inputs((e,), dtype, rng), size, 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode", [None, "drop"])
@pytest.mark.parametrize("layout", ["rows", "batched", "features-first"])
@pytest.mark.parametrize("op", OPS)
def test_half_weight_matches_the_whole_conversion(dtype, mode, layout, op):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, mode, layout, op)).encode()))
    src, gi, si, w, size, axis = _case(layout, dtype, mode, rng)
    w32 = w.astype(np.float32)
    kw = {"dim_size": size, "axis": axis, "mode": mode}
    with np.errstate(all="ignore"):
        out = cs.gather_scatter(src, gi, si, op, weight=w, **kw)
        out32 = cs.gather_scatter(src, gi, si, op, weight=w32, **kw)   # the float32 messages' winners
        g = _inputs(out.shape, "float32", rng, specials=False)
        dot = _inputs(src.shape, "float32", rng, specials=False)
        _same(cs.gather_scatter_vjp_src(op, g, src, gi, si, out, weight=w, **kw),
              cs.gather_scatter_vjp_src(op, g, src, gi, si, out32, weight=w32, **kw))
        _same(cs.gather_scatter_jvp(op, src, gi, si, out, dot, weight=w, **kw),
              cs.gather_scatter_jvp(op, src, gi, si, out32, dot, weight=w32, **kw))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "mean"])
def test_half_weight_against_plain_loops(dtype, op):
    rng = np.random.default_rng(7)
    src, gi, si, w, size, _ = _case("rows", dtype, "drop", rng)
    src, w = _inputs(src.shape, dtype, rng, specials=False), _inputs(w.shape, dtype, rng, specials=False)
    out = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=size, mode="drop")
    g = rng.standard_normal(out.shape).astype(np.float32)
    dot = rng.standard_normal(src.shape).astype(np.float32)
    kept = [e for e in range(len(gi)) if gi[e] < src.shape[0] and si[e] < size]
    count = np.bincount(si[kept], minlength=size)
    w64 = w.astype(np.float64)
    want_src = np.zeros(src.shape)
    want_jvp = np.zeros(out.shape)
    for e in kept:
        scale = 1 / count[si[e]] if op == "mean" else 1.0
        want_src[gi[e]] += w64[e] * g[si[e]] * scale
        want_jvp[si[e]] += w64[e] * dot[gi[e]] * scale
    got_src = cs.gather_scatter_vjp_src(op, g, src, gi, si, out, weight=w, dim_size=size, mode="drop")
    got_jvp = cs.gather_scatter_jvp(op, src, gi, si, out, dot, weight=w, dim_size=size, mode="drop")
    assert got_src.dtype == src.dtype and got_jvp.dtype == np.float32
    np.testing.assert_allclose(got_src.astype(np.float64), want_src, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(got_jvp, want_jvp, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fun", ["vjp_src", "jvp"])
@pytest.mark.parametrize("op", ["add", "max"])
def test_half_weight_is_read_in_place(dtype, fun, op):
    rng = np.random.default_rng(3)
    s, e, size, f = 500, 40_000, 500, 32
    src, w = _inputs((s, f), dtype, rng, specials=False), _inputs((e, f), dtype, rng, specials=False)
    gi, si = rng.integers(0, s, e), rng.integers(0, size, e)

    def peak(src, w):
        out = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=size)
        g = np.ones(out.shape, np.float32)
        if fun == "vjp_src":
            def call():
                return cs.gather_scatter_vjp_src(op, g, src, gi, si, out, weight=w, dim_size=size)
        else:
            def call():
                return cs.gather_scatter_jvp(op, src, gi, si, out, src, weight=w, dim_size=size)
        call()   # warm the Python layer's caches
        return traced_peak(call)[1]

    # the same call on float32 inputs (the plan and node-sized tables, no conversion): the kernels widen each
    # edge's weights as they read them, where a float32 copy of the weight would add e * f * 4 bytes (5.1 MB)
    assert peak(src, w) < peak(src.astype(np.float32), w.astype(np.float32)) + 0.25 * e * f * 4


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fun", ["vjp_src", "jvp", "vjp_weight"])
@pytest.mark.parametrize("op", ["add", "sub", "mean", "sqrt_n"])
def test_linear_ops_read_a_half_weight_in_place(dtype, fun, op, monkeypatch):
    """The linear ops' VJP and JVP are forward passes (`run_forward`), which read a float16/bfloat16 weight as it
    is, and their weight VJP reads no weight: no E x F copy at all, and the bits of the converted weight's pass."""
    rng = np.random.default_rng(5)
    s, e, size, f = 500, 40_000, 500, 32
    src, w = _inputs((s, f), "float32", rng, specials=False), _inputs((e, f), dtype, rng)
    gi, si = rng.integers(0, s, e), rng.integers(0, size, e)
    out = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=size)
    g = rng.standard_normal(out.shape).astype(np.float32)

    def call(w=w):
        if fun == "vjp_src":
            return cs.gather_scatter_vjp_src(op, g, src, gi, si, out, weight=w, dim_size=size)
        if fun == "vjp_weight":
            return cs.gather_scatter_vjp_weight(op, g, src, gi, si, out, weight=w, dim_size=size)
        return cs.gather_scatter_jvp(op, src, gi, si, out, src, weight=w, dim_size=size)

    with np.errstate(all="ignore"):
        call()   # warm the Python layer's caches
        got, peak = traced_peak(call)
        want = call(w.astype(np.float32))
        _same(got, want.astype(got.dtype) if fun == "vjp_weight" else want)   # (the weight's VJP has its dtype)
        # the float32 weight's call, less that weight (made inside it), plus the weight VJP's half result (e * f * 2
        # bytes) rounded from its float32 one; a converted weight would add e * f * 4 bytes
        base = traced_peak(lambda: call(w.astype(np.float32)))[1] - e * f * 4 + (e * f * 2 if fun == "vjp_weight" else 0)
        assert peak < base + 0.25 * e * f * 4, (peak, base)
        if fun != "vjp_weight":   # (the weight VJP converted it only by making `_Call.w2` up front: no switch)
            monkeypatch.setattr(host, "HALF_IN_PLACE", {})   # the kernels' half-weight reads off: a converted copy
            assert traced_peak(call)[1] > base + 0.25 * e * f * 4


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fun", ["vjp_src", "vjp_weight"])
def test_selecting_ops_read_a_half_src_in_place(dtype, fun):
    """max with a float16/bfloat16 src: the forward's float32 winners recomputed, the ties shared and the weight's
    dots all read src as it is, each row widened exactly (the same bits as a float32 src, no S x F copy)."""
    rng = np.random.default_rng(9)
    s, e, size, f = 100_000, 20_000, 500, 16
    src = _inputs((s, f), dtype, rng)
    gi, si = rng.integers(0, s, e), rng.integers(0, size, e)
    out = cs.gather_scatter(src, gi, si, "max", dim_size=size)
    g = rng.standard_normal(out.shape).astype(np.float32)
    call = getattr(cs, f"gather_scatter_{fun}")
    with np.errstate(all="ignore"):
        got, peak = traced_peak(lambda: call("max", g, src, gi, si, out, dim_size=size))
        want = call("max", g, src.astype(np.float32), gi, si, out.astype(np.float32), dim_size=size)
    _same(got, want.astype(got.dtype))
    if fun == "vjp_weight":   # the destination-sized tables only; a float32 src would hold s * f * 4 bytes
        assert peak < 0.25 * s * f * 4, peak
