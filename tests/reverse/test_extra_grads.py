"""VJPs and JVPs of the group ops against central finite differences (float64), and VJP/JVP adjointness."""
import numpy as np
import pytest

import cyscatter as cs
from group_cases import LAYOUTS, index_for, random_indptr
from reference import numeric_vjp
from testing import INDEX_KINDS, PLAIN_OPS

EPS = 1e-6
TOL = dict(rtol=1e-6, atol=1e-7)


def _finite(f):
    """f with non-finite outputs (empty groups' -inf, count <= ddof's NaN) zeroed: constants for the FD."""
    return lambda x: np.nan_to_num(f(x), nan=0.0, posinf=0.0, neginf=0.0)


def _case(seed, kind, layout, mode):
    """Distinct normal values (no ties, no kinks) and an index from the shared layouts."""
    rng = np.random.default_rng(seed)
    ishape, batch, feat, axis = LAYOUTS[layout]
    index, dims = index_for(rng, kind, ishape, mode)
    src = rng.standard_normal(batch + ishape + feat) * 3
    return rng, src, index, dims if kind == "tuple" else dims[0], axis


def _ops(idx, dim_size, axis, mode):
    """name -> (forward f(src), vjp(g, src, out), jvp(src, out, dot)) for every differentiable group op."""
    kw = dict(axis=axis, mode=mode)
    skw = dict(kw, dim_size=dim_size)
    return {
        "logsumexp": (lambda x: cs.scatter_logsumexp(x, idx, **skw),
                      lambda g, x, y: cs.scatter_logsumexp_vjp(g, x, idx, y, **kw),
                      lambda x, y, d: cs.scatter_logsumexp_jvp(x, idx, y, d, **kw)),
        "softmax": (lambda x: cs.scatter_softmax(x, idx, **skw),
                    lambda g, x, y: cs.scatter_softmax_vjp(g, y, idx, **skw),
                    lambda x, y, d: cs.scatter_softmax_jvp(y, idx, d, **skw)),
        "log_softmax": (lambda x: cs.scatter_log_softmax(x, idx, **skw),
                        lambda g, x, y: cs.scatter_log_softmax_vjp(g, y, idx, **skw),
                        lambda x, y, d: cs.scatter_log_softmax_jvp(y, idx, d, **skw)),
        "var": (lambda x: cs.scatter_var(x, idx, ddof=1, **skw),
                lambda g, x, y: cs.scatter_var_vjp(g, x, idx, y, ddof=1, **kw),
                lambda x, y, d: cs.scatter_var_jvp(x, idx, y, d, ddof=1, **kw)),
        "std": (lambda x: cs.scatter_std(x, idx, **skw),
                lambda g, x, y: cs.scatter_std_vjp(g, x, idx, y, **kw),
                lambda x, y, d: cs.scatter_std_jvp(x, idx, y, d, **kw)),
    }


GROUP_OPS = ("logsumexp", "softmax", "log_softmax", "var", "std")


@pytest.mark.parametrize("name", GROUP_OPS)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_group_op_derivatives(name, index_kind, layout, mode):
    rng, src, index, dim_size, axis = _case(31, index_kind, layout, mode)
    forward, vjp, jvp = _ops(index, dim_size, axis, mode)[name]
    out = forward(src)
    g = rng.standard_normal(out.shape)
    grad = vjp(g, src, out)
    assert grad.shape == src.shape
    np.testing.assert_allclose(grad, numeric_vjp(_finite(forward), src, g, EPS), **TOL)
    dot = rng.standard_normal(src.shape)
    tangent = jvp(src, out, dot)
    assert tangent.shape == out.shape
    fd = (_finite(forward)(src + EPS * dot) - _finite(forward)(src - EPS * dot)) / (2 * EPS)
    np.testing.assert_allclose(np.nan_to_num(tangent), fd, **TOL)
    np.testing.assert_allclose(np.sum(np.nan_to_num(tangent) * g), np.sum(dot * grad), rtol=1e-12)


def test_std_gradient_at_zero_spread_and_var_at_count_le_ddof():
    src, index = np.array([2.0, 2.0, 5.0]), np.array([0, 0, 1])
    std = cs.scatter_std(src, index)
    np.testing.assert_array_equal(cs.scatter_std_vjp(np.ones(2), src, index, std), [0.0, 0.0, 0.0])
    var = cs.scatter_var(src, index, ddof=1)
    assert np.isnan(var[1])
    np.testing.assert_array_equal(cs.scatter_var_vjp(np.ones(2), src, index, var, ddof=1), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(cs.scatter_var_jvp(src, index, var, np.ones(3), ddof=1), [0.0, 0.0])


def test_log_softmax_gradient_of_dropped_entry_is_zero():
    src, index = np.array([1.0, 5.0, 2.0]), np.array([0, 9, 0])
    out = cs.scatter_log_softmax(src, index, dim_size=1, mode="drop")
    grad = cs.scatter_log_softmax_vjp(np.ones(3), out, index, dim_size=1, mode="drop")
    assert grad[1] == 0
    np.testing.assert_allclose(grad, numeric_vjp(_finite(lambda x: cs.scatter_log_softmax(
        x, index, dim_size=1, mode="drop")), src, np.ones(3)), **TOL)


@pytest.mark.parametrize("op", PLAIN_OPS)
@pytest.mark.parametrize("layout", (((13, 2), 0), ((2, 13), 1), ((13,), -1)))
def test_segment_derivatives(op, layout):
    shape, axis = layout
    rng = np.random.default_rng(41)
    src = rng.uniform(0.5, 2.0, shape) * rng.choice((-1, 1), shape)   # away from 0 for mul/div
    indptr = random_indptr(rng, shape[axis], 5)

    def forward(x):   # empty max/min segments hold -inf/+inf: constants, zeroed for the differences
        return np.nan_to_num(cs.segment(x, indptr, op, axis=axis), posinf=0.0, neginf=0.0)

    out = forward(src)
    g = rng.standard_normal(out.shape)
    grad = cs.segment_vjp_src(op, g, src, indptr, out, axis=axis)
    np.testing.assert_allclose(grad, numeric_vjp(forward, src, g, EPS), **TOL)
    dot = rng.standard_normal(src.shape)
    tangent = cs.segment_jvp(op, src, indptr, out, dot, axis=axis)
    np.testing.assert_allclose(tangent, (forward(src + EPS * dot) - forward(src - EPS * dot)) / (2 * EPS), **TOL)


def test_gather_segment_vjp_is_the_adjoint():
    rng = np.random.default_rng(43)
    indptr = random_indptr(rng, 12, 5)
    src = rng.standard_normal((2, 5, 3))
    g = rng.standard_normal((2, 12, 3))
    grad = cs.gather_segment_vjp_src(g, indptr, axis=1)
    np.testing.assert_allclose(grad, numeric_vjp(lambda x: cs.gather_segment(x, indptr, axis=1), src, g), **TOL)
    assert cs.gather_segment_vjp_src(np.ones(3, int), [0, 3]).dtype == np.float64


def test_reverse_errors():
    src, index = np.ones(3), np.array([0, 0, 1])
    out = cs.scatter_var(src, index)
    with pytest.raises(ValueError, match="grad_out shape"):
        cs.scatter_var_vjp(np.ones(3), src, index, out)
    with pytest.raises(ValueError, match="out shape"):
        cs.scatter_logsumexp_vjp(np.ones(2), src, index, np.ones((2, 1)))
    with pytest.raises(ValueError, match="src_dot shape"):
        cs.scatter_softmax_jvp(src, index, np.ones(2))
    with pytest.raises(TypeError, match="real inputs"):
        cs.scatter_std_vjp(np.ones(2), src.astype(complex), index, out)
    with pytest.raises(ValueError, match="indptr"):
        cs.segment_vjp_src("add", np.ones(1), src, [0, 2], np.ones(1))


@pytest.mark.parametrize("name", GROUP_OPS)
def test_group_op_derivatives_on_backend(backend, name):
    # the same VJP and JVP on the backend's arrays as on the host (the device sums in another order)
    rng, src, index, dim_size, axis = _case(32, "tuple", "batch", "drop")
    host = _ops(index, dim_size, axis, "drop")[name]
    dev = _ops(backend.asarray(index), dim_size, axis, "drop")[name]
    out = host[0](src)
    g, dot = rng.standard_normal(out.shape), rng.standard_normal(src.shape)
    d_src, d_out, d_g, d_dot = (backend.asarray(a) for a in (src, out, g, dot))
    np.testing.assert_allclose(backend.to_numpy(dev[0](d_src)), out, rtol=1e-12)
    np.testing.assert_allclose(backend.to_numpy(dev[1](d_g, d_src, d_out)), host[1](g, src, out), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(backend.to_numpy(dev[2](d_src, d_out, d_dot)), host[2](src, out, dot), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("op", PLAIN_OPS)
def test_segment_derivatives_on_backend(backend, op):
    # the CSR derivatives on the backend's arrays as on the host (the device sums in another order)
    rng = np.random.default_rng(44)
    src = rng.uniform(0.5, 2.0, (2, 13)) * rng.choice((-1, 1), (2, 13))
    indptr = random_indptr(rng, 13, 5)
    out = cs.segment(src, indptr, op, axis=1)
    g, dot, go = rng.standard_normal(out.shape), rng.standard_normal(src.shape), rng.standard_normal((2, 13))
    d_src, d_ptr, d_out = backend.asarray(src), backend.asarray(indptr), backend.asarray(out)
    np.testing.assert_allclose(backend.to_numpy(cs.segment_vjp_src(op, backend.asarray(g), d_src, d_ptr, d_out,
                                                                   axis=1)),
                               cs.segment_vjp_src(op, g, src, indptr, out, axis=1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(backend.to_numpy(cs.segment_jvp(op, d_src, d_ptr, d_out, backend.asarray(dot),
                                                               axis=1)),
                               cs.segment_jvp(op, src, indptr, out, dot, axis=1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(backend.to_numpy(cs.gather_segment_vjp_src(backend.asarray(go), d_ptr, axis=1)),
                               cs.gather_segment_vjp_src(go, indptr, axis=1), rtol=1e-10, atol=1e-12)
