"""grad.gather_scatter: autograd derivatives of every op with respect to src and weight, reverse and forward mode,
to second order (central differences through autograd's check_grads), and first-order gradients equal to the
plain-loop reference."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402
from autograd import grad as agrad  # noqa: E402
from autograd.test_util import check_grads  # noqa: E402

import cyscatter as cs  # noqa: E402
import grad as csgrad  # noqa: E402
from reference_gather_scatter import ref_gather_scatter_vjp  # noqa: E402
from testing import FUSED_OPS  # noqa: E402

RNG = np.random.default_rng(11)
GI = RNG.integers(0, 6, 14)
SI = np.concatenate([np.arange(5), RNG.integers(0, 5, 9)])   # every destination reached
WEIGHTS = {"none": None, "edge": (14,), "head": (14, 2)}


@pytest.mark.parametrize("wkind", sorted(WEIGHTS))
@pytest.mark.parametrize("op", FUSED_OPS)
def test_second_order_in_src_and_weight(op, wkind):
    rng = np.random.default_rng(abs(hash((op, wkind))) % 2**32)
    x = rng.uniform(0.5, 2.0, (6, 2, 3))   # distinct values: max/min are differentiable there
    w = None if WEIGHTS[wkind] is None else rng.uniform(0.5, 2.0, WEIGHTS[wkind])

    def f(x, w):
        return anp.sum(anp.sin(csgrad.gather_scatter(x, GI, SI, op, weight=w, dim_size=5)))
    check_grads(lambda x: f(x, w), modes=["rev", "fwd"], order=2)(x)
    if w is not None:
        check_grads(lambda w: f(x, w), modes=["rev", "fwd"], order=2)(w)
        check_grads(f, modes=["rev", "fwd"], order=2)(x, w)


@pytest.mark.parametrize("op", ["add", "sub", "mean", "max", "min"])
def test_gradients_equal_the_reference_with_ties_and_a_plan(op):
    x = RNG.integers(-2, 3, (6, 4)).astype(float)   # ties: split evenly among the winners
    w = RNG.choice([1.0, 2.0], 14)
    plan = cs.gather_scatter_plan(GI, SI, src_size=6, dim_size=5)
    g = RNG.standard_normal((5, 4))

    def loss(x, w):
        return anp.sum(csgrad.gather_scatter(x, op=op, weight=w, plan=plan) * g)
    out = cs.gather_scatter(x, GI, SI, op, weight=w, dim_size=5)
    ref_x, ref_w = ref_gather_scatter_vjp(op, g, x, GI, SI, out, weight=w, dim_size=5)
    np.testing.assert_allclose(agrad(loss, 0)(x, w), ref_x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(agrad(loss, 1)(x, w), ref_w, rtol=1e-12, atol=1e-12)


def test_float32_stays_float32_and_fill_rows_pass_nothing():
    x = RNG.standard_normal((6, 3)).astype(np.float32)
    w = RNG.random(14).astype(np.float32)

    def loss(x, w):
        return anp.sum(csgrad.gather_scatter(x, GI, SI, "mean", weight=w, dim_size=7, fill_value=5.0) ** 2)
    gx, gw = agrad(loss, 0)(x, w), agrad(loss, 1)(x, w)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    assert np.isfinite(gx).all()


def test_integer_src_is_refused_and_signature_is_real():
    with pytest.raises(TypeError, match="cannot differentiate"):
        agrad(lambda x: anp.sum(csgrad.gather_scatter(x, GI, SI, "add", dim_size=5)))(np.ones((6, 2), int))
    params = inspect.signature(csgrad.gather_scatter).parameters
    assert list(params)[:4] == ["src", "gather_index", "scatter_index", "op"] and "weight" in params


def test_grad_scatter_takes_the_speed_settings():
    from grad import scatter
    x, index = RNG.standard_normal(8), np.array([0, 0, 1, 1, 1, 2, 3, 3])

    def loss(x, **kw):
        return anp.sum(scatter(x, index, "max", **kw) ** 2)
    np.testing.assert_array_equal(agrad(lambda x: loss(x, indices_are_sorted=True, num_threads=2))(x),
                                  agrad(loss)(x))


@pytest.mark.parametrize("call", ["gather_scatter weight", "gather_scatter src", "scatter src", "gather src"])
def test_a_traced_value_given_to_cyscatter_names_the_grad_package(call):
    """cyscatter's own functions would turn autograd's boxes into object arrays: a TypeError points to grad."""
    x, gi, si = np.ones((3, 2)), np.array([0, 1, 2]), np.array([0, 0, 1])
    fns = {"gather_scatter weight": (lambda w: anp.sum(cs.gather_scatter(x, gi, si, "mean", weight=w)), np.ones(3)),
           "gather_scatter src": (lambda s: anp.sum(cs.gather_scatter(s, gi, si)), x),
           "scatter src": (lambda s: anp.sum(cs.scatter(s, si, "add")), x),
           "gather src": (lambda s: anp.sum(cs.gather(s, gi)), x)}
    fn, at = fns[call]
    with pytest.raises(TypeError, match=rf"{call.split()[1]} is an autograd ArrayBox .* through the grad package"):
        autograd.grad(fn)(at)
