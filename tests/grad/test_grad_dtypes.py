"""float32 in gives float32 derivatives out (docs/gradients.rst), in every mode and order: the JVP, the
VJP and the second derivatives (reverse over reverse, forward over reverse, forward over forward) of each `grad`
function, the JVP on values holding NaN where the op skips it.

autograd's own rule for ``np.where`` fills with float64 zeros; `grad._where.where` is the dtype-keeping primitive
the package uses instead (an outside tester found float64 tangents of gather_scatter's nanprod), and the
first-order rules' zero derivative in `out` is made in its dtype (a second tester: float64 forward-over-reverse of
max).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("autograd")

import autograd.numpy as anp  # noqa: E402
from autograd import grad as agrad  # noqa: E402
from autograd import make_jvp  # noqa: E402

import cyscatter as cs  # noqa: E402
import grad as csgrad  # noqa: E402
from compare import assert_same  # noqa: E402
from grad._where import where  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.uniform(0.5, 2.0, (6, 3)).astype(np.float32)
IDX = np.array([0, 1, 0, 2, 1, 2])
GI, SI = np.array([0, 1, 2, 3, 4, 5, 1]), np.array([0, 0, 1, 1, 2, 2, 2])
W = RNG.uniform(0.5, 2.0, 7).astype(np.float32)
OPS = ("add", "sub", "mul", "max", "min", "mean", "sqrt_n", "nansum", "nanprod", "nanmean", "fmax", "fmin")

CALLS = {}
for _op in OPS:
    CALLS[f"scatter-{_op}"] = (lambda s, op=_op: csgrad.scatter(s, IDX, op, dim_size=4, fill_value=0.0), X)
    CALLS[f"scatter_into-{_op}"] = (lambda s, op=_op: csgrad.scatter_into(np.ones((3, 3), np.float32), s, IDX, op),
                                    X)
    CALLS[f"gather_scatter-{_op}"] = (lambda s, op=_op: csgrad.gather_scatter(s, GI, SI, op, weight=W, dim_size=3),
                                      X)
    CALLS[f"gather_scatter_weight-{_op}"] = (
        lambda v, op=_op: csgrad.gather_scatter(X, GI, SI, op, weight=v, dim_size=3), W)
for _name in ("scatter_var", "scatter_std", "scatter_nanvar", "scatter_nanstd", "scatter_logsumexp",
              "scatter_softmax", "scatter_log_softmax"):
    CALLS[_name] = (lambda s, name=_name: getattr(csgrad, name)(s, IDX, dim_size=3), X)
for _op in ("add", "mul", "max", "min"):
    CALLS[f"scatter_scan-{_op}"] = (lambda s, op=_op: csgrad.scatter_scan(s, IDX, op), X)
for _op in ("median", "nanmedian"):
    CALLS[f"scatter-{_op}"] = (lambda s, op=_op: csgrad.scatter(s, IDX, op, dim_size=3), X)
    CALLS[f"segment-{_op}"] = (lambda s, op=_op: csgrad.segment(s, np.array([0, 2, 6]), op), X)
CALLS["scatter_quantile"] = (lambda s: csgrad.scatter_quantile(s, IDX, [0.3, 0.8], dim_size=3), X)
CALLS["scatter_nanquantile"] = (lambda s: csgrad.scatter_nanquantile(s, IDX, 0.3, dim_size=3), X)
CALLS["scatter_scan-mul-exclusive"] = (lambda s: csgrad.scatter_scan(s, IDX, "mul", exclusive=True), X)
CALLS["gather"] = (lambda s: csgrad.gather(s, IDX), X)
CALLS["segment"] = (lambda s: csgrad.segment(s, np.array([0, 2, 6]), "max"), X)


def _with_nan(a):
    b = a.copy()
    b.flat[4] = np.nan
    return b


@pytest.mark.parametrize("name", list(CALLS))
def test_float32_derivatives_stay_float32(name):
    f, arg = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", "Output seems independent of input", UserWarning)   # (linear ops)
        _, tangent = make_jvp(f)(_with_nan(arg))(np.ones_like(arg))
        # the losses use no where of their own (autograd's would promote at second order): NaN-free values
        first = agrad(lambda s: anp.sum(f(s) ** 2))(arg)
        second = agrad(lambda s: anp.sum(agrad(lambda u: anp.sum(f(u) ** 2))(s) ** 2))(arg)
        ones = np.ones_like(arg)
        fwd_rev = make_jvp(agrad(lambda s: anp.sum(f(s) ** 2)))(arg)(ones)[1]
        fwd_fwd = make_jvp(lambda s: make_jvp(f)(s)(ones)[1])(arg)(ones)[1]
    got = {"jvp": tangent.dtype, "vjp": first.dtype, "rev-rev": second.dtype, "fwd-rev": fwd_rev.dtype,
           "fwd-fwd": fwd_fwd.dtype}
    assert got == dict.fromkeys(got, np.dtype(np.float32))


def test_where_derivatives_keep_dtype_shape_and_values():
    """The primitive itself against NumPy: values, the VJP summed back onto a broadcast operand, the JVP of an
    operand that covers part of the result, at first and second order."""
    cond = np.array([[True, False, True]])
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(where(cond, x, y), np.where(cond, x, y))
    gx = agrad(lambda a: anp.sum(where(cond, a, y) * y))(x)
    np.testing.assert_array_equal(gx, np.array([0.0 + 3.0, 0.0, 2.0 + 5.0], np.float32))
    assert gx.dtype == np.float32
    gy = agrad(lambda b: anp.sum(where(cond, x, b) ** 2))(y)
    np.testing.assert_array_equal(gy, np.where(cond, 0, 2 * y))
    _, tx = make_jvp(lambda a: where(cond, a, y))(x)(np.ones_like(x))
    np.testing.assert_array_equal(tx, np.broadcast_to(np.where(cond, 1, 0), (2, 3)))
    assert tx.dtype == np.float32 and tx.shape == (2, 3)
    hess = agrad(lambda a: anp.sum(agrad(lambda u: anp.sum(where(cond, u, 0.0) ** 3))(a)))(x)
    np.testing.assert_allclose(hess, np.where(cond[0], 6 * x, 0))
    assert hess.dtype == np.float32


# the calls whose only float operand is the differentiated one (scatter_into's dst and gather_scatter's weight
# are float32 constants above, which promote), and gather_scatter without a weight
CALLS16 = {name: call for name, call in CALLS.items() if not name.startswith(("scatter_into-", "gather_scatter"))}
for _op in ("add", "mean", "max", "mul", "median"):
    CALLS16[f"gather_scatter-{_op}"] = (lambda s, op=_op: csgrad.gather_scatter(s, GI, SI, op, dim_size=3), X)


@pytest.mark.parametrize("name", list(CALLS16))
def test_float16_derivatives_stay_float16(name):
    """float16 computes in float32 and is rounded back: its derivatives are float16 too, close to float64's."""
    f, arg = CALLS16[name]
    arg16 = arg.astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", "Output seems independent of input", UserWarning)
        _, tangent = make_jvp(f)(arg16)(np.ones_like(arg16))
        first = agrad(lambda s: anp.sum(f(s) * f(s)))(arg16)
        first64 = agrad(lambda s: anp.sum(f(s) * f(s)))(arg.astype(np.float64))
    assert tangent.dtype == np.float16 and first.dtype == np.float16
    np.testing.assert_allclose(first.astype(np.float64), first64, rtol=0.05, atol=0.05)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("call", ["scatter add", "scatter max", "scatter mul", "segment mean", "gather",
                                  "gather_into", "scatter_into dst", "scatter_into src", "gather_scatter div",
                                  "scatter_logsumexp", "scatter_var"])
def test_a_wider_cotangent_gives_the_inputs_dtype(dtype, call):
    """A float64 cotangent flowing back (the result times a float64 array) gives a gradient of the input's own
    dtype, as PyTorch and JAX do (and as a float16 cotangent gives)."""
    c = np.linspace(0.5, 1.5, 4).reshape(2, 2)   # float64
    x = np.array([[1.0, 2.0], [3.0, 0.5], [2.0, 2.0]], dtype)
    idx = np.array([1, 0, 1])
    fns = {
        "scatter add": lambda s: csgrad.scatter(s, idx, "add"),
        "scatter max": lambda s: csgrad.scatter(s, idx, "max"),
        "scatter mul": lambda s: csgrad.scatter(s, idx, "mul"),
        "segment mean": lambda s: csgrad.segment(s, np.array([0, 1, 3]), "mean"),
        "gather": lambda s: csgrad.gather(s, np.array([2, 0])),
        "gather_into": lambda s: csgrad.gather_into(s[:2], s, np.array([2, 0])),
        "scatter_into dst": lambda s: csgrad.scatter_into(s[:2], np.ones((3, 2), dtype), idx, "max"),
        "scatter_into src": lambda s: csgrad.scatter_into(np.zeros((2, 2), dtype), s, idx, "max"),
        "gather_scatter div": lambda s: csgrad.gather_scatter(s, np.array([0, 1, 2]), idx, "div"),
        "scatter_logsumexp": lambda s: csgrad.scatter_logsumexp(s, idx),
        "scatter_var": lambda s: csgrad.scatter_var(s, idx),
    }
    g = agrad(lambda s: anp.sum(fns[call](s) * c))(x)
    assert g.dtype == dtype
    wide = agrad(lambda s: anp.sum(fns[call](s) * c))(x.astype(np.float64))
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(g.astype(np.float64), wide, rtol=5e-2 if dtype == np.float16 else 1e-5,
                                   atol=1e-2)


@pytest.mark.parametrize("op", ["mul", "div", "nanprod"])
def test_float16_products_differentiate_in_float32(op):
    """grad.gather_scatter's mul/div/nanprod on float16 form and reduce their messages in float32 (as the core's
    forward) and round the derivatives once: the core's reverse functions, not float16 arithmetic (whose
    cancellations cost 6-15%)."""
    rng = np.random.default_rng(len(op))
    gi, si = rng.integers(0, 6, 40), rng.integers(0, 5, 40)
    x = (0.5 + rng.random((6, 3))).astype(np.float16)
    w = (0.5 + rng.random(40)).astype(np.float16)
    g = rng.standard_normal((5, 3)).astype(np.float16)
    out = cs.gather_scatter(x, gi, si, op, weight=w)
    assert_same(csgrad.gather_scatter(x, gi, si, op, weight=w), out)
    vjp_x = agrad(lambda s: anp.sum(csgrad.gather_scatter(s, gi, si, op, weight=w) * g))(x)
    vjp_w = agrad(lambda v: anp.sum(csgrad.gather_scatter(x, gi, si, op, weight=v) * g))(w)
    assert vjp_x.dtype == vjp_w.dtype == np.float16
    core_x = cs.gather_scatter_vjp_src(op, g, x, gi, si, out, weight=w)
    core_w = cs.gather_scatter_vjp_weight(op, g, x, gi, si, out, weight=w)
    np.testing.assert_allclose(vjp_x.astype(np.float64), core_x.astype(np.float64), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(vjp_w.astype(np.float64), core_w.astype(np.float64), rtol=2e-3, atol=2e-3)
    tangent = make_jvp(lambda s: csgrad.gather_scatter(s, gi, si, op, weight=w))(x)(np.ones_like(x))[1]
    np.testing.assert_allclose(tangent.astype(np.float64),
                               cs.gather_scatter_jvp(op, x, gi, si, out, np.ones_like(x), weight=w).astype(np.float64),
                               rtol=2e-3, atol=2e-3)


def test_float16_mul_scan_differentiates_in_float32():
    """grad.scatter_scan's mul derivatives of float16 run their recurrences in float32 (the core's are float64),
    rounded once."""
    x = np.array([1.9375, -1.6875, 0.625, 1.375, 0.5, -0.4375], np.float16)
    index = np.array([0, 0, 0, 0, 1, 0])
    t = np.array([-1, -1, -1, -1, 1, -1], np.float16)
    tangent = make_jvp(lambda s: csgrad.scatter_scan(s, index, "mul"))(x)(t)[1]
    np.testing.assert_allclose(tangent.astype(np.float64), cs.scatter_scan_jvp("mul", x, index, t), rtol=1e-3)
    vjp = agrad(lambda s: anp.sum(csgrad.scatter_scan(s, index, "mul") * t))(x)
    assert vjp.dtype == np.float16
    np.testing.assert_allclose(vjp.astype(np.float64), cs.scatter_scan_vjp("mul", t, x, index), rtol=1e-3)
