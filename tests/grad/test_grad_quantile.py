"""grad: scatter_quantile / scatter_nanquantile and scatter's ops median / nanmedian as autograd primitives:
first and second derivatives in forward and reverse mode against finite differences (check_grads), and agreement
with the framework-free VJPs on ties and NaNs."""
import numpy as np
import pytest

pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402
from autograd import grad as agrad  # noqa: E402
from autograd import make_jvp  # noqa: E402
from autograd.test_util import check_grads  # noqa: E402

import cyscatter as cs  # noqa: E402
import grad as csgrad  # noqa: E402

METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _case(seed=61):
    """Distinct values (no ties: the derivative exists) and every group reached, so no output is NaN."""
    rng = np.random.default_rng(seed)
    src = rng.permutation(60).reshape(2, 15, 2) / 7.0
    index = np.concatenate([np.arange(5), rng.integers(0, 5, 10)])
    return src, index


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nan", (False, True))
def test_check_grads_quantile(method, nan):
    src, index = _case()
    f = csgrad.scatter_nanquantile if nan else csgrad.scatter_quantile
    check_grads(lambda s: f(s, index, [0.2, 0.5, 1.0], method=method, axis=1) ** 2, modes=["fwd", "rev"],
                order=2)(src)


@pytest.mark.parametrize("op", ("median", "nanmedian"))
def test_check_grads_median_op(op):
    src, index = _case(62)
    check_grads(lambda s: anp.sin(csgrad.scatter(s, index, op, axis=1)), modes=["fwd", "rev"], order=2)(src)


@pytest.mark.parametrize("nan", (False, True))
def test_grad_with_ties_and_nans_is_the_core_rule(nan):
    rng = np.random.default_rng(63)
    src = rng.integers(0, 4, (30, 2)).astype(float)
    src[rng.random(src.shape) < 0.2] = np.nan
    index = rng.integers(0, 5, 30)
    g = rng.standard_normal((5, 2))
    f = csgrad.scatter_nanquantile if nan else csgrad.scatter_quantile
    got = agrad(lambda s: anp.sum(anp.where(np.isnan(g), 0.0, f(s, index, 0.3) * g)))(src)
    want = (cs.scatter_nanquantile_vjp if nan else cs.scatter_quantile_vjp)(g, src, index, 0.3)
    np.testing.assert_allclose(got, want, atol=1e-12)
    median = agrad(lambda s: anp.sum(csgrad.scatter(s, index, "nanmedian" if nan else "median") * g))(src)
    want = (cs.scatter_nanquantile_vjp if nan else cs.scatter_quantile_vjp)(g, src, index, 0.5)
    np.testing.assert_allclose(median, want, atol=1e-12)


def test_forward_mode_matches_core_jvp():
    src, index = _case(64)
    dot = np.random.default_rng(65).standard_normal(src.shape)
    _, tangent = make_jvp(lambda s: csgrad.scatter_quantile(s, index, [0.1, 0.9], axis=1))(src)(dot)
    np.testing.assert_allclose(tangent, cs.scatter_quantile_jvp(src, index, dot, [0.1, 0.9], axis=1))


def test_integer_src_is_refused():
    with pytest.raises(TypeError):
        agrad(lambda s: anp.sum(csgrad.scatter_quantile(s, np.zeros(3, int))))(np.arange(3))


@pytest.mark.parametrize("op", ("median", "nanmedian"))
def test_segment_and_gather_scatter_median(op):
    rng = np.random.default_rng(66)
    src = rng.permutation(40).reshape(20, 2) / 3.0
    indptr = np.array([0, 4, 11, 20])   # no empty segment: its NaN is a constant finite differences cannot take
    check_grads(lambda s: csgrad.segment(s, indptr, op) ** 2, modes=["fwd", "rev"], order=2)(src)
    gi, si = rng.integers(0, 20, 30), np.concatenate([np.arange(5), rng.integers(0, 5, 25)])
    w = rng.uniform(0.5, 2.0, 30)
    check_grads(lambda s: csgrad.gather_scatter(s, gi, si, op, weight=w), modes=["fwd", "rev"], order=2)(src)
    check_grads(lambda v: csgrad.gather_scatter(src, gi, si, op, weight=v), modes=["fwd", "rev"], order=2)(w)
    np.testing.assert_array_equal(csgrad.gather_scatter(src, gi, si, op, weight=w),
                                  cs.gather_scatter(src, gi, si, op, weight=w))
