"""grad: the group ops as autograd primitives, first and second derivatives in forward and reverse mode against
finite differences (autograd's check_grads), and agreement with the framework-free VJPs."""
import numpy as np
import pytest

pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402
from autograd import grad as agrad  # noqa: E402
from autograd.test_util import check_grads  # noqa: E402

import cyscatter as cs  # noqa: E402
import grad as csgrad  # noqa: E402
from group_cases import LAYOUTS, index_for  # noqa: E402
from testing import INDEX_KINDS, PLAIN_OPS  # noqa: E402

MODES = ["fwd", "rev"]
GROUP_OPS = {
    "logsumexp": lambda x, idx, **kw: csgrad.scatter_logsumexp(x, idx, **kw),
    "softmax": lambda x, idx, **kw: csgrad.scatter_softmax(x, idx, **kw),
    "log_softmax": lambda x, idx, **kw: csgrad.scatter_log_softmax(x, idx, **kw),
    "var": lambda x, idx, **kw: csgrad.scatter_var(x, idx, ddof=1, **kw),
    "std": lambda x, idx, **kw: csgrad.scatter_std(x, idx, **kw),
}


def _case(kind, layout, mode, seed=51):
    """Distinct values (no kinks) and an index with repeats; D is exactly the groups reached, so no output is
    infinite or NaN (empty groups give -inf / NaN, constants that finite differences cannot take)."""
    rng = np.random.default_rng(seed)
    ishape, batch, feat, axis = LAYOUTS[layout]
    index, _ = index_for(rng, kind, ishape, mode)
    dims = tuple(int(np.max(c)) + 1 for c in (index if isinstance(index, tuple) else (index,)))
    if mode == "raise":
        coords = index if isinstance(index, tuple) else (index,)
        coords = tuple(np.where(np.arange(c.size).reshape(c.shape) < d, np.arange(c.size).reshape(c.shape) % d, c)
                       for c, d in zip(coords, dims))   # every group gets a member
        index = coords if isinstance(index, tuple) else coords[0]
    else:
        dims = tuple(d + 1 for d in dims)
    src = rng.standard_normal(batch + ishape + feat)
    return src, index, dims if isinstance(index, tuple) else dims[0], axis


@pytest.mark.parametrize("name", GROUP_OPS)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", ("raise", "drop", "wrap"))
def test_group_ops_second_order(name, index_kind, layout, mode):
    src, index, dim_size, axis = _case(index_kind, layout, mode)
    forward = GROUP_OPS[name]

    def f(x):   # keep only finite outputs (a dropped entry's log-softmax is -inf, a constant)
        out = forward(x, index, dim_size=dim_size, axis=axis, mode=mode)
        return anp.where(np.isfinite(forward(src, index, dim_size=dim_size, axis=axis, mode=mode)), out, 0.0)

    check_grads(f, modes=MODES, order=2)(src)


@pytest.mark.parametrize("name", GROUP_OPS)
def test_reverse_mode_equals_framework_free_vjp(name):
    src, index, dim_size, axis = _case("int", "batch", "raise")
    g = np.random.default_rng(3).standard_normal(GROUP_OPS[name](src, index, dim_size=dim_size, axis=axis).shape)
    auto = agrad(lambda x: anp.sum(GROUP_OPS[name](x, index, dim_size=dim_size, axis=axis) * g))(src)
    out = GROUP_OPS[name](src, index, dim_size=dim_size, axis=axis)
    plain = {
        "logsumexp": lambda: cs.scatter_logsumexp_vjp(g, src, index, out, axis=axis),
        "softmax": lambda: cs.scatter_softmax_vjp(g, out, index, dim_size=dim_size, axis=axis),
        "log_softmax": lambda: cs.scatter_log_softmax_vjp(g, out, index, dim_size=dim_size, axis=axis),
        "var": lambda: cs.scatter_var_vjp(g, src, index, out, ddof=1, axis=axis),
        "std": lambda: cs.scatter_std_vjp(g, src, index, out, axis=axis),
    }[name]()
    np.testing.assert_allclose(auto, plain, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("op", PLAIN_OPS)
def test_segment_second_order(op):
    rng = np.random.default_rng(61)
    src = rng.uniform(0.5, 2.0, (2, 12, 3)) * rng.choice((-1, 1), (2, 12, 3))
    indptr = np.array([0, 3, 5, 5, 9, 12])   # an empty segment: fill_value keeps max/min finite there
    f = lambda x: csgrad.segment(x, indptr, op, axis=1, fill_value=0.5)
    np.testing.assert_array_equal(f(src), cs.segment(src, indptr, op, axis=1, fill_value=0.5))
    check_grads(f, modes=MODES, order=2)(src)


def test_gather_segment_second_order():
    rng = np.random.default_rng(62)
    src, indptr = rng.standard_normal((4, 2)), np.array([0, 3, 3, 4, 7])
    f = lambda x: csgrad.gather_segment(x, indptr) ** 2
    np.testing.assert_array_equal(csgrad.gather_segment(src, indptr), cs.gather_segment(src, indptr))
    check_grads(f, modes=MODES, order=2)(src)


def test_argmax_passes_through_a_traced_function():
    src, index = np.array([1.0, 3.0, 2.0]), np.array([0, 0, 1])

    def f(x):
        winners = csgrad.scatter_argmax(x, index)
        return anp.sum(x[winners] ** 2)

    np.testing.assert_array_equal(agrad(f)(src), [0.0, 6.0, 4.0])


def test_grad_errors():
    with pytest.raises(TypeError, match="cannot differentiate"):
        agrad(lambda x: anp.sum(csgrad.scatter_softmax(x, np.array([0, 0]))))(np.array([1, 2]))
    with pytest.raises(ValueError, match="indptr"):
        csgrad.segment(np.ones(3), [0, 2])
    with pytest.raises(ValueError, match="segments"):
        csgrad.gather_segment(np.ones(3), [0, 2])
