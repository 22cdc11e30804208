"""others_product: the exact partials of scatter mul and their derivative, against plain loops."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from cyscatter._reverse.scatter import others_product
from reference import ref_others_product
from testing import INDEX_KINDS


def _index(kind, rng, n, dims):
    if kind == "int":
        return rng.integers(0, dims[0], n), dims[:1]
    return (rng.integers(0, dims[0], n), rng.integers(0, dims[1], n)), dims


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", [0, 1])
def test_small_integers_with_zeros_are_exact(kind, axis):
    # products of small integers are exact in float64, so the kernel and the loops must agree bitwise
    rng = np.random.default_rng(3)
    index, dims = _index(kind, rng, 9, (3, 2))
    src = rng.integers(-3, 4, (2, 9, 2) if axis else (9, 2)).astype(np.float64)
    src_dot = rng.integers(-2, 3, src.shape).astype(np.float64)
    products, products_dot = others_product(src, index, dims, axis=axis, src_dot=src_dot)
    ref, ref_dot = ref_others_product(src, index, dims, axis=axis, src_dot=src_dot)
    assert_array_equal(products, ref)
    assert_array_equal(products_dot, ref_dot)
    assert_array_equal(others_product(src, index, dims, axis=axis), ref)


def test_zeros_in_a_group():
    src = np.array([0., 2., 3., 0., 0., 5.])
    index = np.array([0, 0, 0, 1, 1, 1])
    dot = np.array([1., 10., 100., 1., 10., 100.])
    products, products_dot = others_product(src, index, 2, src_dot=dot)
    assert_array_equal(products, [6., 0., 0., 0., 0., 0.])
    # group 0: d(s2 s3)/d s = (s3 t2 + s2 t3, s3 t1, s2 t1); group 1: (s3 t2, s3 t1, 0)
    assert_array_equal(products_dot, [3 * 10 + 2 * 100, 3 * 1, 2 * 1, 5 * 10, 5 * 1, 0])


@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
def test_modes(mode):
    rng = np.random.default_rng(4)
    src, dot = rng.standard_normal((8, 3)), rng.standard_normal((8, 3))
    index = np.array([0, 4, -1, 1, 0, 1, 7, 2])
    products, products_dot = others_product(src, index, 3, mode=mode, src_dot=dot)
    ref, ref_dot = ref_others_product(src, index, 3, mode=mode, src_dot=dot)
    assert_allclose(products, ref, rtol=1e-13)
    assert_allclose(products_dot, ref_dot, rtol=1e-13, atol=1e-15)


def test_products_dot_is_the_derivative():
    rng = np.random.default_rng(5)
    src, dot = rng.standard_normal((10, 2)), rng.standard_normal((10, 2))
    index = rng.integers(0, 3, 10)
    eps = 1e-6
    numeric = (others_product(src + eps * dot, index, 3) - others_product(src - eps * dot, index, 3)) / (2 * eps)
    assert_allclose(others_product(src, index, 3, src_dot=dot)[1], numeric, rtol=1e-6, atol=1e-9)


def test_float32_stays_float32():
    src = np.arange(1, 5, dtype=np.float32)
    products, products_dot = others_product(src, np.array([0, 0, 1, 1]), 2, src_dot=np.ones(4, np.float32))
    assert products.dtype == products_dot.dtype == np.float32


def test_errors():
    with pytest.raises(IndexError, match="out of bounds"):
        others_product(np.ones(3), np.array([0, 3, 1]), 2)
    with pytest.raises(ValueError, match="src_dot shape"):
        others_product(np.ones(3), np.array([0, 1, 1]), 2, src_dot=np.ones(2))
