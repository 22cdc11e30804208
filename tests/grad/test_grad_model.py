"""grad end to end: a two-layer message-passing network (gather -> transform -> scatter mean / max) whose autograd
gradient matches central finite differences of its loss; and the VJPs keep none of the inputs alive."""
import gc
import weakref

import numpy as np
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402
from autograd import grad, make_vjp  # noqa: E402

import grad as csgrad  # noqa: E402
from reference import numeric_vjp  # noqa: E402
from testing import OPS  # noqa: E402

pytestmark = pytest.mark.full   # full tier: the demo model against finite differences, over a second a case


def _graph(rng, nodes=6, extra=8):
    """A ring (every node receives a message) plus distinct random edges: no duplicate (sender, receiver)."""
    ring = {(i, (i + 1) % nodes) for i in range(nodes)}
    pairs = sorted(ring | {tuple(p) for p in rng.integers(0, nodes, (extra, 2)) if p[0] != p[1]})
    senders, receivers = np.array(pairs).T
    return senders, receivers


def _loss(params, x, senders, receivers):
    w1, w2 = params
    n = x.shape[0]
    h = csgrad.scatter(anp.tanh(csgrad.gather(x, senders) @ w1), receivers, "mean", dim_size=n)
    h = csgrad.scatter(csgrad.gather(h, senders) @ w2, receivers, "max", dim_size=n, fill_value=0.0)
    return anp.sum(anp.sin(h) * h)


def test_message_passing_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    senders, receivers = _graph(rng)
    x = rng.standard_normal((6, 3))
    w1, w2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    g_w1, g_w2, g_x = grad(lambda a, b, c: _loss((a, b), c, senders, receivers), (0, 1, 2))(w1, w2, x)
    assert_allclose(g_w1, numeric_vjp(lambda a: _loss((a, w2), x, senders, receivers), w1, 1.0), rtol=1e-6)
    assert_allclose(g_w2, numeric_vjp(lambda b: _loss((w1, b), x, senders, receivers), w2, 1.0), rtol=1e-6)
    assert_allclose(g_x, numeric_vjp(lambda c: _loss((w1, w2), c, senders, receivers), x, 1.0), rtol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_vjps_keep_no_input_alive(op):
    index = np.array([0, 2, 0, 1])
    refs = []

    def f(xs):
        d, s = xs[0] * 1.0, xs[1] * 1.0      # fresh arrays that only this trace and the closures could hold
        refs.extend(weakref.ref(a._value) for a in (d, s))
        return csgrad.scatter_into(d, s, index, op) + csgrad.gather(csgrad.scatter(s, index, op), index)[:3]

    back, _ = make_vjp(f)((np.linspace(1, 2, 3), np.linspace(2, 3, 4)))
    gc.collect()
    assert all(r() is None for r in refs), "a VJP closure holds an input array"
    back(np.ones(3))
