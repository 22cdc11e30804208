"""Reverse functions whose per-entry derivative reads only that entry's src row and per-group tables (div's
src and dst rules, mul's dst rule, nansum's and nanmean's src rules, nanlast's and nanfirst's src and dst rules,
the moments, logsumexp, softmax and log_softmax) on a float16/bfloat16 src:
read a chunk of converted rows at a time (`Reverse.src_chunks`), against the same function on the src converted
whole to float64 (the derivative dtype) first, bit for bit, and without the n x F float64 copy."""
import numpy as np
import pytest
from memory import traced_peak

import cyscatter as cs
from cyscatter._backends import chunks, host

ml_dtypes = pytest.importorskip("ml_dtypes")


def _same(got, want):
    """Equal bits, NaN at the same places (any NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(got)
    np.testing.assert_array_equal(nan, np.isnan(want))
    np.testing.assert_array_equal(got.view(np.uint64)[~nan], want.view(np.uint64)[~nan])


def _calls(size):
    """name -> f(src, idx, g, dot, given=src): the reverse call under test on the forward result of `src`, with
    `given` as the src it is told of (the same values converted whole to float64, for the reference)."""
    def scatter_rule(kind, op):
        def call(src, idx, g, dot, given=None):
            given = src if given is None else given
            out = cs.scatter(src, idx, op, dim_size=size)
            if kind == "vjp_src":
                return cs.scatter_vjp_src(op, g, given, idx, out)
            if kind == "jvp":
                return cs.scatter_jvp(op, given, idx, out, dot)
            dst = np.full(out.shape, 1.5, out.dtype)
            out = cs.scatter_into(dst.copy(), src, idx, op)
            return cs.scatter_vjp_dst(op, g, dst, given, idx, out)
        return call

    def group_rule(name, kind, **kw):
        forward, vjp, jvp = (getattr(cs, f"scatter_{name}{s}") for s in ("", "_vjp", "_jvp"))

        def call(src, idx, g, dot, given=None):
            given = src if given is None else given
            out = forward(src, idx, dim_size=size, **kw)
            return vjp(g, given, idx, out, **kw) if kind == "vjp" else jvp(given, idx, out, dot, **kw)
        return call

    def softmax_rule(name, kind):
        forward, vjp, jvp = (getattr(cs, f"scatter_{name}{s}") for s in ("", "_vjp", "_jvp"))

        def call(src, idx, g, dot, given=None):   # their own src is the forward's output
            out = forward(src, idx, dim_size=size)
            out = out if given is None else out.astype(np.float64)
            return vjp(dot, out, idx, dim_size=size) if kind == "vjp" else jvp(out, idx, dot, dim_size=size)
        return call

    calls = {f"{op}-{kind}": scatter_rule(kind, op) for op in ("div", "mul") for kind in ("vjp_src", "vjp_dst", "jvp")
             if not (op == "mul" and kind != "vjp_dst")}
    calls.update({f"{op}-vjp_src": scatter_rule("vjp_src", op) for op in ("nansum", "nanmean")})
    calls.update({f"{op}-{kind}": scatter_rule(kind, op) for op in ("nanlast", "nanfirst")
                  for kind in ("vjp_src", "vjp_dst")})
    for name in ("var", "std", "nanvar", "nanstd"):
        for kind in ("vjp", "jvp"):
            calls[f"{name}-{kind}"] = group_rule(name, kind, ddof=1)
    for kind in ("vjp", "jvp"):
        calls[f"logsumexp-{kind}"] = group_rule("logsumexp", kind)
        calls[f"softmax-{kind}"] = softmax_rule("softmax", kind)
        calls[f"log_softmax-{kind}"] = softmax_rule("log_softmax", kind)
    return calls


NAMES = list(_calls(1))


def _inputs(n, f, size, dtype, rng, specials=True):
    idx = rng.integers(0, size, n)
    x = (rng.standard_normal((n, f)) * 2).astype(np.float32)
    if specials:
        x.reshape(-1)[::97] = np.nan
        x.reshape(-1)[5::101] = np.inf
    src = x.astype(np.dtype(dtype))
    g = rng.standard_normal((size, f))
    dot = rng.standard_normal((n, f))
    return src, idx, g, dot


@pytest.fixture(params=[None, 2048], ids=["default-chunks", "2KiB-chunks"])
def small_chunks(request, monkeypatch):
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    if request.param:
        monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", request.param)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n,f,size", [(3001, 5, 40), (1000, 1, 1200), (0, 3, 4)], ids=["rows", "empty-groups", "empty"])
def test_chunked_reverse_matches_the_whole_conversion(small_chunks, dtype, name, n, f, size):
    rng = np.random.default_rng(n + f)
    src, idx, g, dot = _inputs(n, f, size, dtype, rng)
    if name.startswith(("softmax", "log_softmax")):
        g = dot   # their cotangents and tangents are shaped like src
    call = _calls(size)[name]
    with np.errstate(all="ignore"):
        got = call(src, idx, g, dot)
        want = call(src, idx, g, dot, given=src.astype(np.float64))
    _same(got, want)


@pytest.mark.parametrize("name", ["div-vjp_src", "nanmean-vjp_src", "var-vjp", "nanstd-jvp", "logsumexp-vjp",
                                  "softmax-vjp"])
def test_chunked_reverse_against_plain_loops(name):
    """An independent reference for a few rules: per group, the derivative written out in NumPy (float64)."""
    rng = np.random.default_rng(11)
    n, f, size = 2000, 2, 5
    src, idx, g, dot = _inputs(n, f, size, "float16", rng, specials=False)
    x = src.astype(np.float64)
    if name.startswith("softmax"):
        g = dot
    got = _calls(size)[name](src, idx, g, dot)
    with np.errstate(all="ignore"):
        out = cs.scatter(src, idx, "div", dim_size=size).astype(np.float64)
    want = np.zeros(got.shape)
    for j in range(size):
        m = idx == j
        xs = x[m]
        if name == "div-vjp_src":   # d out / d x_k = -out / x_k, out the (float16) forward result
            want[m] = -g[j] * out[j] / xs
        elif name == "nanmean-vjp_src":   # no NaN here: each member gets its group's share
            want[m] = g[j] / m.sum()
        elif name == "var-vjp":
            want[m] = g[j] * 2 * (xs - xs.mean(0)) / (m.sum() - 1)
        elif name == "nanstd-jvp":
            sd = xs.std(0, ddof=1)
            want[j] = ((xs - xs.mean(0)) * dot[m]).sum(0) / ((m.sum() - 1) * sd)
        elif name == "logsumexp-vjp":
            e = np.exp(xs - xs.max(0))
            want[m] = g[j] * e / e.sum(0)
        else:
            y = cs.scatter_softmax(src, idx, dim_size=size).astype(np.float64)[m]
            want[m] = y * (g[m] - (y * g[m]).sum(0))
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["div-vjp_src", "div-vjp_dst", "mul-vjp_dst", "nanmean-vjp_src", "var-vjp",
                                  "std-jvp", "nanvar-vjp",
                                  "logsumexp-vjp", "logsumexp-jvp", "softmax-vjp", "log_softmax-jvp"])
def test_chunked_reverse_makes_no_converted_copy(dtype, name, monkeypatch):
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 1 << 18)
    rng = np.random.default_rng(4)
    n, f, size = 100_000, 16, 500
    src, idx, g, dot = _inputs(n, f, size, dtype, rng, specials=False)
    if name.startswith(("softmax", "log_softmax")):
        g = dot
    call = _calls(size)[name]
    with np.errstate(all="ignore"):
        call(src[:100], idx[:100], g, dot[:100])   # warm the Python layer's caches
        _, peak = traced_peak(lambda: call(src, idx, g, dot))
    # the forward call, a float64 n x F result (or tangent table) and chunks; a float64 copy of src would add
    # n * f * 8 bytes (12.8 MB) to the n x F float64 result
    result = 0 if name.endswith(("vjp_dst", "jvp")) and not name.startswith(("softmax", "log_softmax")) else n * f * 8
    assert peak < result + n * f * 8 / 2, peak


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("last", [True, False])
def test_chunked_nan_assignment_rules_against_plain_loops(monkeypatch, dtype, last):
    """nanlast/nanfirst: each element's cotangent goes to its last (first) non-NaN entry in index order (vjp_src),
    or to dst where no such entry reached it (vjp_dst)."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 256)
    rng = np.random.default_rng(11)
    n, f, size = 900, 3, 12   # group 11 is never hit; some elements see only NaN
    src = rng.choice(np.array([np.nan, 1.0, -0.0, np.inf], np.float32), (n, f)).astype(np.dtype(dtype))
    idx = rng.integers(-2, 11, n)
    op = "nanlast" if last else "nanfirst"
    out = cs.scatter(src, idx, op, dim_size=size, mode="drop")
    g = rng.standard_normal(out.shape)
    got = cs.scatter_vjp_src(op, g, src, idx, out, mode="drop")
    dst = np.zeros(out.shape, out.dtype)
    got_dst = cs.scatter_vjp_dst(op, g, dst, src, idx, cs.scatter_into(dst.copy(), src, idx, op, mode="drop"),
                                 mode="drop")
    want, want_dst = np.zeros((n, f)), g.copy()
    for j in range(size):
        for c in range(f):
            members = [k for k in range(n) if idx[k] == j and not np.isnan(float(src[k, c]))]
            if members:
                want[members[-1 if last else 0], c] = g[j, c]
                want_dst[j, c] = 0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_dst, want_dst)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["vjp_src", "vjp_dst"])
def test_chunked_nan_assignment_rules_make_no_converted_copy(dtype, kind, monkeypatch):
    """(The forward's own element winners, an n x F int64 array, are left out: only the reverse call is traced.)"""
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 1 << 18)
    rng = np.random.default_rng(4)
    n, f, size = 100_000, 16, 500
    src, idx, g, _ = _inputs(n, f, size, dtype, rng)
    out = cs.scatter(src, idx, "nanlast", dim_size=size)
    dst = np.zeros(out.shape, out.dtype)

    def call(src=src, idx=idx):
        if kind == "vjp_src":
            return cs.scatter_vjp_src("nanlast", g, src, idx, out)
        return cs.scatter_vjp_dst("nanlast", g, dst, src, idx, out)

    call(src[:100], idx[:100])   # warm the Python layer's caches
    _, peak = traced_peak(call)
    # vjp_src: the float64 n x F result and chunks; the whole conversion adds a float64 src (n * f * 8 bytes), and
    # its winners an n x F int64 array of positions
    result = n * f * 8 if kind == "vjp_src" else 0
    assert peak < result + n * f * 8 / 2, peak
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 1 << 62)   # the path that converts whole
    _, whole = traced_peak(call)
    assert whole > result + n * f * 8 / 2, whole
