"""Regressions from the second outside test of issue 18 (hostile2): the Dask scan's dropped entries in small integer
dtypes (B1), the gather_scatter weight gradient with no surviving edge (B2), fmax/fmin derivatives through a
losing message of +-inf (B3), and error messages that name the function called (L1, L2) and blame `grad_out`
(L3). Each test failed before its fix; each compares with an independent reference (plain loops) or a peer op
(max for fmax, min for fmin)."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from testing import OPS, VALUE_DTYPES

# ---- B1: cyscatter.dask.scatter_scan, dropped entries after the first chunk --------------------------------------

SCAN_OPS = ("add", "mul", "max", "min")
SCAN_MODES = ("drop", "normalize_drop", "clip", "wrap")
# 9 entries over 2 groups: 5, -1 and 9 are out of range (drop: all three; normalize_drop: 5 and 9)
SCAN_INDEX = np.array([0, 5, 1, -1, 0, 9, 1, 5, 0])
DIM = 2


def _scan_dtypes():
    out = [np.dtype(t) for t in VALUE_DTYPES] + [np.dtype(bool)]
    try:
        import ml_dtypes
        out.append(np.dtype(ml_dtypes.bfloat16))
    except ImportError:
        pass
    return out


def _resolve(i: int, mode: str):
    """The group of entry `i` under `mode` (None: dropped): an independent reading of the modes' rules."""
    if mode == "clip":
        return min(max(i, 0), DIM - 1)
    if mode == "wrap":
        return i % DIM
    if mode == "normalize_drop" and -DIM <= i < 0:
        return i + DIM
    return i if 0 <= i < DIM else None


def _identity(op: str, dtype: np.dtype):
    if op in ("add", "mul"):
        return 0 if op == "add" else 1
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min if op == "max" else info.max)
    return -np.inf if op == "max" else np.inf


def _scan_reference(x, op: str, mode: str, reverse: bool):
    """Plain loop over the entries in scan order; integers in Python ints, wrapped to the dtype at the end
    (NumPy's modular add/mul; max/min exact), floats in float64. Dropped entries hold the dtype's identity."""
    dtype = x.dtype
    integer = dtype.kind in "iu"
    values = [int(v) if integer else float(v) for v in x]
    run: dict = {}
    out = [None] * len(values)
    order = range(len(values))[::-1] if reverse else range(len(values))
    combine = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "max": max, "min": min}[op]
    for k in order:
        g = _resolve(int(SCAN_INDEX[k]), mode)
        if g is None:
            out[k] = _identity(op, dtype)
            continue
        run[g] = values[k] if g not in run else combine(run[g], values[k])
        out[k] = run[g]
    if integer:
        bits = dtype.itemsize * 8
        wrapped = [v % (1 << bits) for v in out]
        return np.array(wrapped, np.uint64).astype(f"u{dtype.itemsize}").view(dtype)
    return np.array(out, np.float64)


def _scan_values(dtype: np.dtype, op: str):
    rng = np.random.default_rng(7)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if op == "mul":   # small factors: products that wrap a few times, not only to 0
            return rng.integers(max(info.min, -3), 4, SCAN_INDEX.size).astype(dtype)
        return rng.integers(info.min, info.max, SCAN_INDEX.size, dtype=dtype, endpoint=True)
    values = rng.uniform(-2, 2, SCAN_INDEX.size)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-2, 2, SCAN_INDEX.size)
    return values.astype(dtype)


@pytest.mark.parametrize("mode", SCAN_MODES)
@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("dtype", _scan_dtypes(), ids=str)
def test_dask_scan_equals_core_and_reference(dtype, op, mode):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    x = _scan_values(dtype, op)
    try:
        cs.scatter_scan(x, SCAN_INDEX, op, dim_size=DIM, mode=mode)
    except TypeError:   # a dtype the core refuses (bool; complex for max/min): the Dask layer refuses it too
        with pytest.raises(TypeError):
            csd.scatter_scan(da.from_array(x, chunks=2), SCAN_INDEX, op, dim_size=DIM, mode=mode)
        return
    exact = dtype.kind in "iub" or op in ("max", "min")
    for reverse in (False, True):
        core = cs.scatter_scan(x, SCAN_INDEX, op, dim_size=DIM, mode=mode, reverse=reverse)
        assert core.dtype == dtype
        if dtype.kind != "c":
            want = _scan_reference(x, op, mode, reverse)
            if exact:
                np.testing.assert_array_equal(core, want.astype(dtype))
            else:
                np.testing.assert_allclose(core.astype(np.float64), want, rtol=2e-2 if dtype.itemsize == 2 else 1e-6)
        for chunks in (1, 2, 4):
            got = csd.scatter_scan(da.from_array(x, chunks=chunks), SCAN_INDEX, op, dim_size=DIM, mode=mode,
                                   reverse=reverse).compute(scheduler="sync")
            assert got.dtype == dtype
            if exact:
                np.testing.assert_array_equal(got, core, err_msg=f"chunks={chunks} reverse={reverse}")
            else:   # the carry adds up whole chunks' totals: equal to rounding
                np.testing.assert_allclose(got.astype(np.complex128), core.astype(np.complex128),
                                           rtol=2e-2 if dtype.itemsize <= 2 else 1e-5)


def test_dask_scan_small_int_dropped_entries_hold_the_dtype_identity():
    """The tester's reproducer: int64's identity cast down gave 0 (max) and -1 (min) after the first chunk."""
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    x, idx = np.array([1, 2, 3, 4], np.int8), np.array([0, 5, 0, 5])
    got = csd.scatter_scan(da.from_array(x, chunks=1), idx, "max", dim_size=2, mode="drop").compute()
    np.testing.assert_array_equal(got, np.array([1, -128, 3, -128], np.int8))
    x16 = x.astype(np.int16)
    got = csd.scatter_scan(da.from_array(x16, chunks=2), idx, "min", dim_size=2, mode="normalize_drop").compute()
    np.testing.assert_array_equal(got, np.array([1, 32767, 1, 32767], np.int16))


# ---- B2: no surviving edge (E = 0, or every edge dropped) --------------------------------------------------------

def _gs_ops():
    return [op for op in OPS if not cs.get_op(op).winner]


NO_EDGES = {"E0": (np.zeros(0, np.int64), np.zeros(0, np.int64), np.ones(0), "raise"),
            "all_dropped": (np.array([9, 0]), np.array([0, 7]), np.ones(2), "drop")}


@pytest.mark.parametrize("case", list(NO_EDGES))
@pytest.mark.parametrize("op", _gs_ops())
def test_gather_scatter_reverse_with_no_surviving_edge(backend, op, case):
    """With no edge the output does not depend on src or weight: every derivative is 0 (shape and dtype kept)."""
    gi, si, w, mode = NO_EDGES[case]
    x = np.arange(6.0).reshape(2, 3) + 1
    out = backend.call(cs.gather_scatter, x, gi, si, op, weight=w, dim_size=2, mode=mode)
    g = np.ones_like(out)
    kw = dict(weight=w, dim_size=2, mode=mode)
    d_src = backend.call(cs.gather_scatter_vjp_src, op, g, x, gi, si, out, **kw)
    d_w = backend.call(cs.gather_scatter_vjp_weight, op, g, x, gi, si, out, **kw)
    t = backend.call(cs.gather_scatter_jvp, op, x, gi, si, out, np.ones_like(x), weight=w, weight_dot=np.ones_like(w),
                     dim_size=2, mode=mode)
    np.testing.assert_array_equal(d_src, np.zeros_like(x))
    np.testing.assert_array_equal(d_w, np.zeros_like(w))
    np.testing.assert_array_equal(t, np.zeros_like(out))
    d_src = backend.call(cs.gather_scatter_vjp_src, op, g, x, gi, si, out, dim_size=2, mode=mode)   # unweighted
    np.testing.assert_array_equal(d_src, np.zeros_like(x))


@pytest.mark.parametrize("op", ["nansum", "nanmean", "nanprod", "fmax", "fmin", "mul", "div", "add", "max"])
def test_gather_scatter_weight_gradient_with_no_surviving_edge_per_head(op):
    """A per-head weight (E, heads) with every edge dropped: zeros of the weight's shape."""
    x = np.ones((2, 2, 3))
    gi, si, w = np.array([9, 8]), np.array([0, 1]), np.ones((2, 2))
    out = cs.gather_scatter(x, gi, si, op, weight=w, dim_size=2, mode="drop")
    got = cs.gather_scatter_vjp_weight(op, np.ones_like(out), x, gi, si, out, weight=w, dim_size=2, mode="drop")
    np.testing.assert_array_equal(got, np.zeros_like(w))


def test_gather_scatter_weight_gradient_autograd_with_no_surviving_edge():
    pytest.importorskip("autograd")
    from autograd import grad

    import grad as csgrad
    x, gi, si = np.ones((2, 3)), np.array([9]), np.array([0])
    for op in ("nansum", "nanmean", "nanprod", "fmax", "fmin", "mul", "div"):
        got = grad(lambda w: csgrad.gather_scatter(x, gi, si, op, weight=w, dim_size=2, mode="drop").sum())(np.ones(1))
        np.testing.assert_array_equal(got, [0.0])


@pytest.mark.parametrize("op", [op for op in OPS if not cs.get_op(op).winner])
def test_scatter_and_segment_reverse_with_no_entry(backend, op):
    """The core reverse functions with no entry (E = 0) or every entry dropped: zero derivatives, no error."""
    cases = ((np.ones((0, 3)), np.zeros(0, np.int64), "raise"), (np.ones((2, 3)), np.array([5, 7]), "drop"))
    for xs, idx, mode in cases:
        out = backend.call(cs.scatter, xs, idx, op, dim_size=2, mode=mode)
        g = np.ones(out.shape)
        np.testing.assert_array_equal(backend.call(cs.scatter_vjp_src, op, g, xs, idx, out, mode=mode),
                                      np.zeros(xs.shape))
        np.testing.assert_array_equal(backend.call(cs.scatter_jvp, op, xs, idx, out, np.ones_like(xs), mode=mode),
                                      np.zeros(out.shape))
    xs, ptr = np.ones((0, 3)), np.array([0, 0, 0])
    out = backend.call(cs.segment, xs, ptr, op)
    np.testing.assert_array_equal(backend.call(cs.segment_vjp_src, op, np.ones(out.shape), xs, ptr, out),
                                  np.zeros((0, 3)))
    np.testing.assert_array_equal(backend.call(cs.segment_jvp, op, xs, ptr, out, xs), np.zeros(out.shape))


# ---- B3: fmax/fmin equal max/min when no message is NaN (a losing message of +-inf) ------------------------------

def _extreme_reference(op, x, gi, si, w, g, x_dot, w_dot, size):
    """Plain loops over the edges: each output element's cotangent split evenly among the edges whose message
    equals it; the JVP the mean of those edges' tangent messages (as autograd's max)."""
    better = (lambda a, b: a > b) if op in ("max", "fmax") else (lambda a, b: a < b)
    n, f = len(gi), x.shape[1]
    wt = np.ones(n) if w is None else w
    msgs = np.array([[wt[e] * x[gi[e], k] for k in range(f)] for e in range(n)])
    out = np.full((size, f), -np.inf if op in ("max", "fmax") else np.inf)
    for e in range(n):
        for k in range(f):
            if better(msgs[e, k], out[si[e], k]):
                out[si[e], k] = msgs[e, k]
    count = np.zeros((size, f))
    for e in range(n):
        count[si[e]] += msgs[e] == out[si[e]]
    d_src, d_w, t = np.zeros_like(x), np.zeros(n), np.zeros((size, f))
    for e in range(n):
        for k in range(f):
            if msgs[e, k] == out[si[e], k]:
                share = g[si[e], k] / count[si[e], k]
                d_src[gi[e], k] += wt[e] * share
                d_w[e] += share * x[gi[e], k]
                t[si[e], k] += wt[e] * x_dot[gi[e], k] + (0.0 if w_dot is None else w_dot[e] * x[gi[e], k])
    t = np.where(count > 0, t / np.maximum(count, 1), 0.0)
    return out, d_src, d_w, t


def _inf_case(seed: int):
    """src with +-inf and finite nonzero values, weights with +-inf and finite nonzero ones: no message is NaN
    (no inf * 0), and some losing messages are -inf (max) or +inf (min)."""
    rng = np.random.default_rng(seed)
    x = rng.choice([-3.0, -1.0, 1.0, 2.0, 2.0, np.inf, -np.inf], size=(4, 3))
    n = 10
    gi, si = rng.integers(0, 4, n), rng.integers(0, 3, n)
    w = rng.choice([np.inf, -np.inf, 0.5, 1.0, 2.0, -1.0], size=n)
    return x, gi, si, w, rng.uniform(0.5, 2.0, (3, 3)), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, n)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")   # inf - inf where +-inf products tie
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pair", [("fmax", "max"), ("fmin", "min")])
def test_fmax_fmin_derivatives_equal_max_min_without_nan(backend, pair, seed, weighted):
    op, twin = pair
    x, gi, si, w, g, x_dot, w_dot = _inf_case(seed)
    if not weighted:
        w = w_dot = None
    kw = dict(weight=w, dim_size=3)
    results = {}
    for name in (op, twin):
        out = backend.call(cs.gather_scatter, x, gi, si, name, **kw)
        results[name] = (out, backend.call(cs.gather_scatter_vjp_src, name, g, x, gi, si, out, **kw),
                         None if w is None else backend.call(cs.gather_scatter_vjp_weight, name, g, x, gi, si, out,
                                                             **kw),
                         backend.call(cs.gather_scatter_jvp, name, x, gi, si, out, x_dot, weight=w, weight_dot=w_dot,
                                      dim_size=3))
    for k, (a, b) in enumerate(zip(results[op], results[twin])):
        if a is None:
            continue
        if k == 0 or (k < 3 and backend.name == "numpy"):   # the result; the CPU VJPs add in the same order
            np.testing.assert_array_equal(a, b)
        else:   # the JVP's tied mean (max divides a sum, fmax averages); the GPU's atomic adds in any order
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)
    want = _extreme_reference(op, x, gi, si, w, g, x_dot, w_dot, 3)
    for k, (got, ref) in enumerate(zip(results[op], want)):
        if got is not None and not (k == 2 and w is None):
            np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=f"result {k}")


def test_fmax_reproducer_vjp_src_weight_jvp():
    """The tester's reproducer: an inf weight on the losing edge gave NaN (fmax) where max gives 0."""
    x, gi, si, w = np.array([[-1.0], [2.0]]), np.array([0, 1]), np.array([0, 0]), np.array([np.inf, 1.0])
    for op in ("fmax", "max"):
        out = cs.gather_scatter(x, gi, si, op, weight=w)
        np.testing.assert_array_equal(cs.gather_scatter_vjp_src(op, np.ones_like(out), x, gi, si, out, weight=w),
                                      [[0.0], [1.0]])
        np.testing.assert_array_equal(cs.gather_scatter_jvp(op, x, gi, si, out, np.ones_like(x), weight=w,
                                                            weight_dot=np.zeros(2)), [[1.0]])
    x, w = np.array([[-np.inf], [2.0]]), np.ones(2)   # a -inf src row on the losing edge: weight gradient 0
    for op in ("fmax", "max"):
        out = cs.gather_scatter(x, gi, si, op, weight=w)
        np.testing.assert_array_equal(cs.gather_scatter_vjp_weight(op, np.ones_like(out), x, gi, si, out, weight=w),
                                      [0.0, 2.0])


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pair", [("fmax", "max"), ("fmin", "min")])
def test_fmax_fmin_autograd_equals_max_min_without_nan(pair, seed):
    pytest.importorskip("autograd")
    from autograd import grad, make_jvp

    import grad as csgrad
    x, gi, si, w, g, x_dot, w_dot = _inf_case(seed)

    def loss(name, wrt):
        def f(a):
            src, weight = (a, w) if wrt == "src" else (x, a)
            return (csgrad.gather_scatter(src, gi, si, name, weight=weight, dim_size=3) * g).sum()
        return f
    for wrt, at, tangent in (("src", x, x_dot), ("weight", w, w_dot)):
        got, want = grad(loss(pair[0], wrt))(at), grad(loss(pair[1], wrt))(at)
        np.testing.assert_array_equal(got, want)   # (NaN only where +inf and -inf weights of one row both win)
        got = make_jvp(loss(pair[0], wrt))(at)(tangent)[1]
        np.testing.assert_allclose(got, make_jvp(loss(pair[1], wrt))(at)(tangent)[1], rtol=1e-14)
    ref = _extreme_reference(pair[0], x, gi, si, w, g, x_dot, w_dot, 3)
    np.testing.assert_allclose(grad(loss(pair[0], "src"))(x), ref[1], rtol=1e-12)
    np.testing.assert_allclose(grad(loss(pair[0], "weight"))(w), ref[2], rtol=1e-12)


def test_fmax_still_skips_nan_messages():
    """The loser mask must not change what a NaN message gets (nothing) nor the winners' shares."""
    x, gi, si = np.array([[np.nan], [2.0], [2.0]]), np.array([0, 1, 2]), np.array([0, 0, 0])
    w = np.array([1.0, 1.0, 1.0])
    out = cs.gather_scatter(x, gi, si, "fmax", weight=w)
    np.testing.assert_array_equal(out, [[2.0]])
    g = np.ones_like(out)
    np.testing.assert_array_equal(cs.gather_scatter_vjp_src("fmax", g, x, gi, si, out, weight=w), [[0.0], [0.5], [0.5]])
    np.testing.assert_array_equal(cs.gather_scatter_vjp_weight("fmax", g, x, gi, si, out, weight=w), [0.0, 1.0, 1.0])


# ---- L1, L2: the bfloat16 refusal names the function called --------------------------------------------------------

def _bf16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("op", ["add", "nansum", "max"])
def test_grad_bfloat16_error_names_the_function_called(op):
    pytest.importorskip("autograd")
    import autograd.numpy as anp
    from autograd import grad, make_jvp

    import grad as csgrad
    bf16 = _bf16()
    x = np.ones(3, bf16)
    calls = {
        "segment": lambda z: csgrad.segment(z, np.array([0, 3]), op),
        "gather_segment": lambda z: csgrad.gather_segment(z, np.array([0, 1, 2, 4])),
        "gather_scatter": lambda z: csgrad.gather_scatter(z[:, None], np.zeros(3, int), np.zeros(3, int), op),
    }
    for fun, f in calls.items():
        with pytest.raises(TypeError, match=rf"^grad\.{fun} cannot differentiate with respect to src of dtype "
                                            "bfloat16"):
            grad(lambda z: anp.sum(f(z).astype(np.float64)))(x)
        with pytest.raises(TypeError, match=rf"^grad\.{fun} cannot differentiate"):
            make_jvp(f)(x)(x)
    w = np.ones(3, bf16)
    with pytest.raises(TypeError, match=r"^grad\.gather_scatter cannot differentiate with respect to weight"):
        grad(lambda v: anp.sum(csgrad.gather_scatter(np.ones((3, 1)), np.arange(3), np.zeros(3, int), op,
                                                     weight=v).astype(np.float64)))(w)


def test_grad_bfloat16_forward_still_works():
    pytest.importorskip("autograd")
    import grad as csgrad
    x = np.arange(4).astype(_bf16())
    np.testing.assert_array_equal(csgrad.segment(x, np.array([0, 1, 4])), cs.segment(x, np.array([0, 1, 4])))
    gi, si = np.arange(4), np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(csgrad.gather_scatter(x, gi, si, "nansum"), cs.gather_scatter(x, gi, si, "nansum"))


# ---- L3: a wrong-shaped grad_out is blamed, not the right-shaped out -------------------------------------------------

@pytest.mark.parametrize("op", ["add", "mean", "max", "mul", "nansum", "fmax"])
def test_reverse_functions_blame_grad_out(op):
    x, gi, si, idx, ptr = np.ones((3, 2)), np.array([0, 1, 2]), np.array([1, 0, 1]), np.array([1, 0, 1]), \
        np.array([0, 2, 3])
    bad = np.ones((3, 2))
    out = cs.gather_scatter(x, gi, si, op)
    pattern = r"grad_out shape \(3, 2\)"
    with pytest.raises(ValueError, match=pattern):
        cs.gather_scatter_vjp_src(op, bad, x, gi, si, out)
    with pytest.raises(ValueError, match=pattern):
        cs.gather_scatter_vjp_weight(op, bad, x, gi, si, out, weight=np.ones(3))
    with pytest.raises(ValueError, match=pattern):
        cs.scatter_vjp_src(op, bad, x, idx, cs.scatter(x, idx, op))
    with pytest.raises(ValueError, match=pattern):
        cs.scatter_vjp_dst(op, bad, np.ones((2, 2)), x, idx, cs.scatter_into(np.ones((2, 2)), x, idx, op))
    with pytest.raises(ValueError, match=pattern):
        cs.segment_vjp_src(op, bad, x, ptr, cs.segment(x, ptr, op))
    # a wrong out with the right grad_out: both shapes named, grad_out not taken for the wrong one
    with pytest.raises(ValueError, match=r"grad_out shape \(2, 2\) != out shape \(3, 2\)"):
        cs.gather_scatter_vjp_src(op, np.ones((2, 2)), x, gi, si, np.ones((3, 2)))


@pytest.mark.parametrize("name", ["scatter_logsumexp", "scatter_var", "scatter_std", "scatter_nanvar",
                                  "scatter_nanstd"])
def test_group_reverse_functions_blame_grad_out(name):
    x, idx = np.ones((3, 2)), np.array([1, 0, 1])
    out = getattr(cs, name)(x, idx)
    with pytest.raises(ValueError, match=r"grad_out shape \(3, 2\)"):
        getattr(cs, name + "_vjp")(np.ones((3, 2)), x, idx, out)
