"""scatter_var and scatter_std against NumPy's np.var / np.std of each group."""
import warnings

import numpy as np
import pytest

import cyscatter as cs
from group_cases import LAYOUTS, make_case
from reference_extra import ref_var
from testing import INDEX_KINDS

DTYPES = ("float64", "float32", "float16", "int64", "int8", "uint32", "complex128", "complex64")
RTOL = {"float32": 3e-6, "complex64": 3e-6, "float16": 2e-3}


@pytest.mark.parametrize("std", (False, True), ids=("var", "std"))
@pytest.mark.parametrize("ddof", (0, 1, 2.5))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_matches_numpy_per_group(backend, std, ddof, dtype, index_kind, layout, mode):
    src, index, dim_size, axis = make_case(21, index_kind, layout, mode, dtype)
    func = cs.scatter_std if std else cs.scatter_var
    got = backend.to_numpy(func(backend.asarray(src), backend.asarray(index), ddof=ddof, dim_size=dim_size,
                                axis=axis, mode=mode))
    want = ref_var(src, index, ddof=ddof, std=std, dim_size=dim_size, axis=axis, mode=mode)
    real = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.finfo(np.dtype(dtype)).dtype \
        if np.dtype(dtype).kind == "c" else np.dtype(np.float64)
    assert got.dtype == real
    tol = RTOL.get(dtype, 1e-13)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_nan_where_count_at_most_ddof(backend):
    src, index = np.array([4.0, 1.0, 3.0]), np.array([0, 2, 2])
    got = backend.to_numpy(cs.scatter_var(backend.asarray(src), backend.asarray(index), ddof=1))
    with warnings.catch_warnings():   # NumPy warns about the degrees of freedom; cyscatter does not
        warnings.simplefilter("ignore", RuntimeWarning)
        want = [np.var([4.0], ddof=1), np.var(np.zeros(0), ddof=1), np.var([1.0, 3.0], ddof=1)]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("func", ["scatter_var", "scatter_std", "scatter_nanvar", "scatter_nanstd"])
def test_nan_where_count_equals_ddof_and_members_differ(func):
    """count == ddof with distinct members: NaN as np.nanvar gives (np.var divides by zero: inf)."""
    src, index = np.array([1.0, 3.0, 5.0, 2.0, 2.0]), np.array([0, 0, 1, 2, 2])
    got = getattr(cs, func)(src, index, ddof=2)
    assert np.isnan(got).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(np.nanvar([1.0, 3.0], ddof=2)) and np.isinf(np.var([1.0, 3.0], ddof=2))


def test_no_cancellation():
    # a one-pass E[x^2] - E[x]^2 gives 0 or garbage here; two passes give the exact 2/3
    src = 1e9 + np.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(cs.scatter_var(src, np.zeros(3, int)), [2 / 3], rtol=1e-12)


@pytest.mark.parametrize("ddof", ("1", None, 1j, True, [1]))
def test_bad_ddof(ddof):
    with pytest.raises(TypeError, match="ddof"):
        cs.scatter_var(np.ones(2), np.array([0, 0]), ddof=ddof)


def test_bad_dtype():
    with pytest.raises(TypeError, match="scatter_std does not support src dtype bool"):
        cs.scatter_std(np.ones(2, bool), np.array([0, 0]))


@pytest.mark.parametrize("func, numpy_func", [(cs.scatter_nanvar, np.nanvar), (cs.scatter_nanstd, np.nanstd),
                                              (cs.scatter_var, np.var), (cs.scatter_std, np.std)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_infinite_members_give_nan(func, numpy_func, dtype):
    """A group holding +-inf has an infinite or NaN mean, so np.nanvar's variance is NaN; a NaN-skipping sum of
    the squared deviations must not drop the infinite members' NaN deviations as it drops the NaN members'."""
    src = np.array([[np.inf, 1.0], [2.0, 3.0], [np.nan, 4.0], [-np.inf, 5.0], [np.inf, np.inf], [6.0, 7.0],
                    [1.0, 2.0]], dtype)
    index = np.array([0, 0, 0, 1, 2, 3, 3])
    with np.errstate(invalid="ignore"):
        expected = np.stack([numpy_func(src[index == j], axis=0) for j in range(4)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # NaN where NumPy warns, without its warning
        got = func(src, index, dim_size=4)
    np.testing.assert_array_equal(got, expected.astype(got.dtype))


@pytest.mark.parametrize("ddof", [1 + 0j, np.complex128(1 + 0j), np.complex64(1), 1j])
def test_complex_ddof_is_refused(ddof):
    with pytest.raises(TypeError, match="ddof must be a real number"):
        cs.scatter_var(np.ones(3), np.zeros(3, np.int64), ddof=ddof)
