"""grad: hand-computed gradients (ties, zeros, empty groups, dropped entries, fill rows), NNlib's gradient cases,
dtypes, errors, and the import boundary."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402
from autograd import grad, hessian, make_jvp, make_vjp  # noqa: E402

import grad as csgrad  # noqa: E402
from nnlib_cases import array, assert_matches, by_kind, index_of  # noqa: E402
from testing import OPS  # noqa: E402


def vjp(f, args, g):
    """Cotangents of every argument of f for the output cotangent g."""
    back, _ = make_vjp(lambda xs: f(*xs))(tuple(np.asarray(a, float) for a in args))
    return back(np.asarray(g, float))


# ---- max / min: ties split the gradient evenly, dst's initial value included -----------------------------------

@pytest.mark.parametrize("op, sign", [("max", 1.0), ("min", -1.0)])
def test_ties_split_evenly(op, sign):
    src, index = sign * np.array([1., 5., 5., 2.]), np.array([0, 0, 0, 1])
    (g_src,) = vjp(lambda s: csgrad.scatter(s, index, op), [src], [3., 7.])
    assert_array_equal(g_src, [0., 1.5, 1.5, 7.])


@pytest.mark.parametrize("op, sign", [("max", 1.0), ("min", -1.0)])
def test_ties_with_dst(op, sign):
    # row 0: dst 5 ties with two src 5s (a third each); row 1: src 2 beats dst 0; row 2: dst wins alone
    dst, src, index = sign * np.array([5., 0., 9.]), sign * np.array([1., 5., 5., 2., 3.]), np.array([0, 0, 0, 1, 2])
    g_dst, g_src = vjp(lambda d, s: csgrad.scatter_into(d, s, index, op), [dst, src], [3., 7., 11.])
    assert_allclose(g_dst, [1., 0., 11.], rtol=1e-15)
    assert_allclose(g_src, [0., 1., 1., 7., 0.], rtol=1e-15)


# ---- mul / div: exact with zeros --------------------------------------------------------------------------------

def test_mul_with_one_and_two_zeros():
    src, index = np.array([2., 0., 3., 0., 0., 5.]), np.array([0, 0, 0, 1, 1, 1])
    (g_src,) = vjp(lambda s: csgrad.scatter(s, index, "mul"), [src], [1., 10.])
    assert_array_equal(g_src, [0., 6., 0., 0., 0., 0.])
    g_dst, g_src = vjp(lambda d, s: csgrad.scatter_into(d, s, index, "mul"), [[2., 3.], src], [1., 10.])
    assert_array_equal(g_dst, [0., 0.])
    assert_array_equal(g_src, [0., 12., 0., 0., 0., 0.])


def test_mul_hessian_with_zeros():
    # d2 prod / d s_k d s_m = product of the members other than k and m: not 0 for the two zeros of a group
    f = lambda s: anp.sum(csgrad.scatter(s, np.zeros(3, int), "mul"))
    assert_array_equal(hessian(f)(np.array([0., 0., 5.])), [[0., 5., 0.], [5., 0., 0.], [0., 0., 0.]])
    assert_array_equal(hessian(f)(np.array([2., 0., 3.])), [[0., 3., 0.], [3., 0., 2.], [0., 2., 0.]])


def test_div_with_zero_dst():
    # out = [0 / 2 / 4, 6 / 3]: d out / d src = -out / src, d out / d dst = 1 / prod(src)
    g_dst, g_src = vjp(lambda d, s: csgrad.scatter_into(d, s, np.array([0, 0, 1]), "div"),
                       [[0., 6.], [2., 4., 3.]], [1., 1.])
    assert_array_equal(g_dst, [1 / 8, 1 / 3])
    assert_array_equal(g_src, [0., 0., -2 / 3])


def test_div_with_zero_src():
    # out = 6 / 2 / +0 = +inf: both partials are the one-sided limits, -6 / (2 * 0) and -6 / (4 * 0): -inf
    with np.errstate(divide="ignore"):
        g_dst, g_src = vjp(lambda d, s: csgrad.scatter_into(d, s, np.array([0, 0]), "div"), [[6.], [2., 0.]], [1.])
    assert_array_equal(g_dst, [np.inf])
    assert_array_equal(g_src, [-np.inf, -np.inf])


# ---- mean, dropped entries, fill rows ---------------------------------------------------------------------------

def test_mean_groups_of_different_sizes_and_empty_groups():
    src, index = np.arange(1., 7.), np.array([0, 0, 0, 2, 2, 3])
    g = np.array([1., 2., 3., 4., 5.])   # rows 1 and 4 are empty
    for fill in (None, np.nan):
        (g_src,) = vjp(lambda s: csgrad.scatter(s, index, "mean", dim_size=5, fill_value=fill), [src], g)
        assert_allclose(g_src, [1 / 3, 1 / 3, 1 / 3, 3 / 2, 3 / 2, 4.], rtol=1e-15)
    g_dst, g_src = vjp(lambda d, s: csgrad.scatter_into(d, s, index, "mean"), [np.ones(5), src], g)
    assert_array_equal(g_dst, g)
    assert np.all(np.isfinite(g_src))


@pytest.mark.parametrize("op", OPS)
def test_dropped_entries_get_zero(op):
    src, index = np.array([2., 3., 4., 5.]), np.array([0, 5, 1, -1])
    (g_src,) = vjp(lambda s: csgrad.scatter(s, index, op, dim_size=2, mode="drop", fill_value=1.), [src], [1., 1.])
    assert g_src[1] == 0 and g_src[3] == 0 and np.all(g_src[[0, 2]] != 0)
    g_dst, g_src = vjp(lambda d, s: csgrad.scatter_into(d, s, index, op, mode="drop"), [[1.5, 2.5], src], [1., 1.])
    assert g_src[1] == 0 and g_src[3] == 0


@pytest.mark.parametrize("op", OPS)
def test_fill_rows_pass_no_gradient(op):
    src, index = np.array([2., 3., 4.]), np.array([0, 2, 0])
    (g_src,) = vjp(lambda s: csgrad.scatter(s, index, op, dim_size=4, fill_value=7.), [src], [0., 5., 0., 5.])
    assert_array_equal(g_src, 0.)


def test_gather_drop_and_fill():
    (g_src,) = vjp(lambda s: csgrad.gather(s, np.array([2, 7, 2, -1]), mode="drop", fill_value=9.),
                   [[1., 2., 3.]], [1., 10., 100., 1000.])
    assert_array_equal(g_src, [0., 0., 101.])
    g_dst, g_src = vjp(lambda d, s: csgrad.gather_into(d, s, np.array([2, 7, 2, -1]), mode="drop"),
                       [[0., 0., 0., 0.], [1., 2., 3.]], [1., 10., 100., 1000.])
    assert_array_equal(g_dst, [0., 10., 0., 1000.])
    assert_array_equal(g_src, [0., 0., 101.])


# ---- NNlib's gradient cases -------------------------------------------------------------------------------------

@by_kind("grad scatter! wrt dst and src")
def test_nnlib_grad_case(case):
    f = lambda d, s: csgrad.scatter_into(d, s, index_of(case), case["op"])
    g_dst, g_src = vjp(f, [array(case, "dst_init"), array(case, "src")], array(case, "delta"))
    assert_matches(g_dst, array(case, "expected_grad_dst"))
    assert_matches(g_src, array(case, "expected_grad_src"))


# ---- dtypes, errors, functional in-place forms ------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gradients_keep_the_input_dtype(op, dtype):
    src, dst = np.linspace(1, 2, 6, dtype=dtype), np.full(3, 1.5, dtype)
    index = np.array([0, 2, 0, 1, 2, 2])
    assert grad(lambda s: anp.sum(csgrad.scatter(s, index, op)))(src).dtype == dtype
    g_dst, g_src = grad(lambda d, s: anp.sum(csgrad.scatter_into(d, s, index, op)), (0, 1))(dst, src)
    assert g_dst.dtype == g_src.dtype == dtype
    _, out_dot = make_jvp(lambda s: csgrad.scatter(s, index, op))(src)(np.ones_like(src))
    assert out_dot.dtype == dtype


def test_float32_gather():
    table = np.ones((3, 2), np.float32)
    assert grad(lambda t: anp.sum(csgrad.gather(t, np.array([0, 2]))))(table).dtype == np.float32


@pytest.mark.parametrize("call", [
    lambda x: csgrad.scatter(x, np.array([0, 1, 0]), "max"),
    lambda x: csgrad.scatter_into(np.zeros(2), x, np.array([0, 1, 0]), "add"),
    lambda x: csgrad.scatter_into(x[:2], np.ones(3, int), np.array([0, 1, 0]), "mul"),
    lambda x: csgrad.gather(x, np.array([0, 1, 0])),
])
def test_integer_inputs_are_not_differentiable(call):
    with pytest.raises(TypeError, match="cannot differentiate with respect to .* of dtype int64"):
        make_vjp(call)(np.arange(3))


def test_into_forms_leave_dst_unchanged():
    dst = np.zeros(3)
    assert_array_equal(csgrad.scatter_into(dst, np.ones(2), np.array([1, 1])), [0., 2., 0.])
    assert_array_equal(csgrad.gather_into(dst, np.arange(3.), np.array([2, 2, 0])), [2., 2., 0.])
    assert_array_equal(dst, 0.)


def test_mul_third_derivative_is_refused():
    f = lambda s: anp.sum(csgrad.scatter(s, np.zeros(3, int), "mul"))
    with pytest.raises(NotImplementedError, match="third derivatives"):
        grad(lambda s: anp.sum(hessian(f)(s)))(np.array([1., 2., 3.]))


def test_docstring_examples():
    import doctest
    assert doctest.testmod(csgrad, raise_on_error=True).attempted > 0


def test_import_cyscatter_does_not_import_autograd():
    code = "import sys, cyscatter; sys.exit('autograd' in sys.modules)"
    import cyscatter   # run beside the imported copy (in-place or installed), not beside the tests
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(cyscatter.__file__).parents[1]).returncode == 0
