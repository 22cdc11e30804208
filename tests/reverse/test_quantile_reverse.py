"""scatter_quantile_vjp / _jvp and their NaN-skipping twins: against a plain-loop reference of the documented
rule (interpolation weights, ties split evenly, NaN groups to their NaN members), finite differences, the
adjoint identity, and max/min's tie rule at q = 1 / q = 0."""
import numpy as np
import pytest

import cyscatter as cs
from group_cases import LAYOUTS, make_case
from reference_quantile import ref_selection_vjp

METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _with_nans(src, rng):
    src = src.copy()
    src.reshape(-1)[rng.choice(src.size, src.size // 5, replace=False)] = np.nan
    return src


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nan", (False, True), ids=("quantile", "nanquantile"))
@pytest.mark.parametrize("q", (0.0, 0.3, 0.5, 1.0))
@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_vjp_matches_loop_reference(backend, method, nan, q, dtype, layout):
    src, index, dim_size, axis = make_case(41, "int", layout, "raise", dtype)   # many ties
    src = _with_nans(src, np.random.default_rng(7))
    stat = "nanquantile" if nan else "quantile"
    out = getattr(cs, "scatter_" + stat)(src, index, q, method=method, dim_size=dim_size, axis=axis)
    g = np.random.default_rng(8).standard_normal(out.shape).astype(dtype)
    vjp = getattr(cs, f"scatter_{stat}_vjp")
    got = backend.to_numpy(vjp(backend.asarray(g), backend.asarray(src), backend.asarray(index), q, method=method,
                               axis=axis))
    want = ref_selection_vjp(src, index, g, stat, q, method, dim_size=dim_size, axis=axis)
    assert got.dtype == np.dtype(dtype) and got.shape == src.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("stat", ("median", "nanmedian"))
def test_median_derivative_is_the_middle_pair(stat):
    rng = np.random.default_rng(9)
    src = _with_nans(rng.integers(0, 6, (40, 2)).astype(float), rng)
    index = rng.integers(0, 7, 40)
    g = rng.standard_normal((7, 2))
    vjp = cs.scatter_nanquantile_vjp if stat == "nanmedian" else cs.scatter_quantile_vjp
    np.testing.assert_allclose(vjp(g, src, index, 0.5), ref_selection_vjp(src, index, g, stat), atol=1e-12)


@pytest.mark.parametrize("q, op", ((1.0, "max"), (0.0, "min")))
@pytest.mark.parametrize("nan", (False, True))
def test_extremes_follow_max_min_tie_rule(q, op, nan):
    rng = np.random.default_rng(10)
    src = _with_nans(rng.integers(0, 3, (30, 2)).astype(float), rng)
    index = rng.integers(0, 5, 30)
    op = ("f" + op) if nan else op
    g = rng.standard_normal((5, 2))
    vjp = cs.scatter_nanquantile_vjp if nan else cs.scatter_quantile_vjp
    want = cs.scatter_vjp_src(op, g, src, index, cs.scatter(src, index, op))
    np.testing.assert_allclose(vjp(g, src, index, q, method="linear"), want, atol=1e-12)
    np.testing.assert_allclose(vjp(g, src, index, q, method="higher" if q else "lower"), want, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nan", (False, True))
def test_jvp_is_adjoint_of_vjp(backend, method, nan):
    rng = np.random.default_rng(11)
    src = rng.integers(0, 4, (2, 25, 3)).astype(float)
    if nan:
        src = _with_nans(src, rng)
    index = rng.integers(0, 6, 25)
    qs = [0.1, 0.5, 0.9]
    name = "scatter_nanquantile" if nan else "scatter_quantile"
    dot = rng.standard_normal(src.shape)
    xs, xi = backend.asarray(src), backend.asarray(index)
    jvp = backend.to_numpy(getattr(cs, name + "_jvp")(xs, xi, backend.asarray(dot), qs, method=method, axis=1))
    assert jvp.shape == (3, 2, 6, 3)
    g = rng.standard_normal(jvp.shape)
    vjp = backend.to_numpy(getattr(cs, name + "_vjp")(backend.asarray(g), xs, xi, qs, method=method, axis=1))
    np.testing.assert_allclose(np.sum(vjp * dot), np.sum(g * jvp), rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_finite_differences_without_ties(method):
    rng = np.random.default_rng(12)
    src, index = rng.standard_normal((30, 2)), rng.integers(0, 5, 30)
    dot = rng.standard_normal(src.shape)
    eps = 1e-7
    for q in (0.0, 0.35, 0.5, 1.0):
        fd = (cs.scatter_quantile(src + eps * dot, index, q, method=method)
              - cs.scatter_quantile(src - eps * dot, index, q, method=method)) / (2 * eps)
        np.testing.assert_allclose(cs.scatter_quantile_jvp(src, index, dot, q, method=method), fd, atol=1e-7)
    fd = (cs.scatter(src + eps * dot, index, "median") - cs.scatter(src - eps * dot, index, "median")) / (2 * eps)
    np.testing.assert_allclose(cs.scatter_quantile_jvp(src, index, dot, 0.5), fd, atol=1e-7)


def test_dropped_entries_and_empty_groups_get_nothing():
    src, index = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 5, 0, -1])
    got = cs.scatter_quantile_vjp(np.ones(3), src, index, 0.5, mode="drop")
    np.testing.assert_array_equal(got, [0.5, 0.0, 0.5, 0.0])
    dot = cs.scatter_quantile_jvp(src, index, np.ones(4), 0.5, dim_size=3, mode="drop")
    np.testing.assert_array_equal(dot, [1.0, 0.0, 0.0])


def test_broadcast_src_cotangent_is_summed():
    src, index = np.array([[1.0, 2.0]]), np.array([0, 0, 1])   # (1, 2) broadcast over the 3 entries
    got = cs.scatter_quantile_vjp(np.ones((2, 2)), src, index, 0.5)
    assert got.shape == (1, 2)
    np.testing.assert_allclose(got, [[2.0, 2.0]])


def test_errors():
    with pytest.raises(TypeError, match="grad_out is required"):
        cs.scatter_quantile_vjp(None, np.ones(3), np.zeros(3, int))
    with pytest.raises(ValueError, match="grad_out shape"):
        cs.scatter_quantile_vjp(np.ones(2), np.ones(3), np.zeros(3, int), [0.1, 0.2])
    with pytest.raises(ValueError, match="src_dot shape"):
        cs.scatter_quantile_jvp(np.ones(3), np.zeros(3, int), np.ones(4))
    with pytest.raises(TypeError, match="does not support src dtype complex128"):
        cs.scatter_quantile_vjp(np.ones(1), np.ones(3, complex), np.zeros(3, int))
    with pytest.raises(ValueError, match="method must be one of"):
        cs.scatter_nanquantile_jvp(np.ones(3), np.zeros(3, int), np.ones(3), method="weibull")


def test_one_entry():
    """One entry (a 0-d index): its group's quantile is the entry itself, whatever q."""
    src = np.array([1.0, 4.0, 2.0])
    np.testing.assert_array_equal(cs.scatter_quantile_jvp(src, np.array(1), np.array([1.0, 2.0, 3.0]), 0.3,
                                                          dim_size=2), [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(cs.scatter_quantile_vjp(np.ones((2, 3)), src, np.array(1), 0.3), [1.0, 1.0, 1.0])
