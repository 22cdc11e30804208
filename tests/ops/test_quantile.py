"""scatter_quantile / scatter_nanquantile and the ops median / nanmedian against NumPy per group (plain loops):
np.quantile / np.nanquantile (q a Python float) and np.median / np.nanmedian, bit for bit."""
import warnings

import numpy as np
import pytest

import cyscatter as cs
from group_cases import LAYOUTS, make_case
from reference_quantile import numpy_stat, ref_order_stat
from testing import INDEX_KINDS

METHODS = ("linear", "lower", "higher", "nearest", "midpoint")
DTYPES = ("float64", "float32", "float16", "int64", "int8", "uint32")
STATS = ("quantile", "nanquantile")


def _with_nans(src, rng):
    if src.dtype.kind == "f":
        src = src.copy()
        src.reshape(-1)[rng.choice(src.size, src.size // 4, replace=False)] = np.nan
    return src


def _call(backend, stat, src, index, q=0.5, method="linear", **kw):
    xs, xi = backend.asarray(src), backend.asarray(index) if not isinstance(index, tuple) else \
        tuple(backend.asarray(c) for c in index)
    if stat in ("median", "nanmedian"):
        got = cs.scatter(xs, xi, stat, **kw)
    else:
        got = getattr(cs, "scatter_" + stat)(xs, xi, q, method=method, **kw)
    return backend.to_numpy(got)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("stat", STATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_quantile_matches_numpy_per_group(backend, method, stat, dtype, index_kind, layout, mode):
    src, index, dim_size, axis = make_case(31, index_kind, layout, mode, dtype)
    src = _with_nans(src, np.random.default_rng(1))
    for q in (0.0, 0.3, 0.5, 0.75, 1.0):
        got = _call(backend, stat, src, index, q, method, dim_size=dim_size, axis=axis, mode=mode)
        want = ref_order_stat(src, index, stat, q, method, dim_size=dim_size, axis=axis, mode=mode)
        assert got.dtype == want.dtype == np.asarray(numpy_stat(src.reshape(-1)[:3], stat, q, method)).dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("stat", ("median", "nanmedian"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_median_op_matches_numpy_per_group(backend, stat, dtype, index_kind, layout, mode):
    src, index, dim_size, axis = make_case(32, index_kind, layout, mode, dtype)
    src = _with_nans(src, np.random.default_rng(2))
    got = _call(backend, stat, src, index, dim_size=dim_size, axis=axis, mode=mode)
    want = ref_order_stat(src, index, stat, dim_size=dim_size, axis=axis, mode=mode)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ("float64", "float32", "float16"))
@pytest.mark.parametrize("method", METHODS + ("median",))
def test_random_reals_bitwise(dtype, method):
    """Values without ties, so every interpolation rounds: NumPy's formula in NumPy's dtype, bit for bit."""
    rng = np.random.default_rng(5)
    src = (rng.standard_normal((200, 3)) * 1e3).astype(dtype)
    index = rng.integers(0, 17, 200)
    for q in (0.1, 0.25, 1 / 3, 0.5, 0.9, 0.999):
        if method == "median":
            got, want = cs.scatter(src, index, "median"), ref_order_stat(src, index, "median")
        else:
            got = cs.scatter_quantile(src, index, q, method=method)
            want = ref_order_stat(src, index, "quantile", q, method)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)


def test_q_vector_puts_its_axis_first(backend):
    rng = np.random.default_rng(3)
    src, index = rng.standard_normal((2, 30, 4)), rng.integers(0, 6, 30)
    qs = [0.0, 0.2, 0.5, 1.0]
    got = backend.to_numpy(cs.scatter_quantile(backend.asarray(src), backend.asarray(index), qs, axis=1))
    assert got.shape == (4, 2, 6, 4)
    for i, q in enumerate(qs):
        np.testing.assert_array_equal(got[i], ref_order_stat(src, index, "quantile", q, axis=1))
    torch = pytest.importorskip("torch")
    group = src[:, index == 2, :]
    want = torch.quantile(torch.from_numpy(group), torch.tensor(qs, dtype=torch.float64), dim=1).numpy()
    np.testing.assert_allclose(got[:, :, 2, :], want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("method", METHODS)
def test_against_torch_quantile_per_group(method):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    src, index = rng.standard_normal((60, 3)), rng.integers(0, 5, 60)
    got = cs.scatter_quantile(src, index, 0.37, method=method)
    for j in range(5):
        want = torch.quantile(torch.from_numpy(src[index == j]), 0.37, dim=0, interpolation=method).numpy()
        np.testing.assert_allclose(got[j], want, rtol=1e-15, atol=0)


def test_against_torch_nanmedian_lower_middle():
    """torch.median / nanmedian take the lower of the middle pair: our method="lower" at q=0.5."""
    torch = pytest.importorskip("torch")
    src = np.array([[1.0, np.nan], [4.0, 2.0], [2.0, 3.0], [8.0, 7.0], [np.nan, 5.0]])
    index = np.array([0, 0, 0, 0, 1])
    got = cs.scatter_nanquantile(src, index, 0.5, method="lower")
    want = torch.from_numpy(src[index == 0]).nanmedian(dim=0).values.numpy()
    np.testing.assert_array_equal(got[0], want)


def test_empty_groups_fill():
    src, index = np.array([3.0, 1.0, 2.0]), np.array([0, 0, 2])
    np.testing.assert_array_equal(cs.scatter(src, index, "median", dim_size=4), [2.0, np.nan, 2.0, np.nan])
    np.testing.assert_array_equal(cs.scatter(src, index, "median", dim_size=4, fill_value=-1),
                                  [2.0, -1.0, 2.0, -1.0])
    ints = cs.scatter_quantile(np.array([3, 1, 2]), index, 0.5, method="lower", dim_size=4)
    assert ints.dtype == np.int64
    np.testing.assert_array_equal(ints, [1, 0, 2, 0])
    np.testing.assert_array_equal(cs.scatter_quantile(np.array([3, 1, 2]), index, [0.5], dim_size=4),
                                  [[2.0, np.nan, 2.0, np.nan]])


def test_nan_rules():
    src, index = np.array([1.0, np.nan, 3.0, np.nan, np.nan, 5.0]), np.array([0, 0, 0, 1, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(cs.scatter(src, index, "median"), [np.nan, np.nan, 5.0])
        np.testing.assert_array_equal(cs.scatter(src, index, "nanmedian"), [2.0, np.nan, 5.0])
    # an all-NaN element is an empty group: the fill, as numpy_groupies
    np.testing.assert_array_equal(cs.scatter(src, index, "nanmedian", fill_value=0.0), [2.0, 0.0, 5.0])
    np.testing.assert_array_equal(cs.scatter_nanquantile(src, index, 1.0, fill_value=9.0), [3.0, 9.0, 5.0])


def test_infinities_follow_numpy():
    src = np.array([1.0, np.inf, -np.inf, np.inf, 2.0, np.inf, 3.0])
    index = np.array([0, 0, 1, 1, 2, 2, 2])
    for method in METHODS:
        for q in (0.0, 0.5, 0.8, 1.0):
            got = cs.scatter_quantile(src, index, q, method=method)
            np.testing.assert_array_equal(got, ref_order_stat(src, index, "quantile", q, method))
    np.testing.assert_array_equal(cs.scatter(src, index, "median"), ref_order_stat(src, index, "median"))


def test_integer_difference_does_not_wrap():
    """NumPy subtracts in the integer dtype (int8: 100 - -100 wraps); the documented float64 difference."""
    got = cs.scatter_quantile(np.array([-100, 100], np.int8), np.array([0, 0]), 0.5)
    assert got.dtype == np.float64 and got[0] == 0.0


def test_median_is_np_median_not_quantile_formula():
    """np.median means the middle pair ((a + b) / 2, float16 summed in float32); the quantile lerps."""
    src = np.array([65504.0, 65504.0], np.float16)
    assert np.isfinite(np.median(src)) and cs.scatter(src, np.zeros(2, int), "median")[0] == np.median(src)
    big = np.array([1.7e308, 1.7e308])
    np.testing.assert_array_equal(cs.scatter(big, np.zeros(2, int), "median"), [np.median(big)])
    np.testing.assert_array_equal(cs.scatter_quantile(big, np.zeros(2, int), 0.5), [np.quantile(big, 0.5)])


def test_out_and_dtype(backend):
    src, index = np.array([3.0, 1.0, 2.0, 7.0]), np.array([0, 0, 1, 1])
    out = backend.asarray(np.full(2, -5.0))
    res = cs.scatter(backend.asarray(src), backend.asarray(index), "median", out=out)
    assert res is out
    np.testing.assert_array_equal(backend.to_numpy(out), [2.0, 4.5])
    out2 = backend.asarray(np.zeros((2, 2)))
    assert cs.scatter_quantile(backend.asarray(src), backend.asarray(index), [0, 1], out=out2) is out2
    np.testing.assert_array_equal(backend.to_numpy(out2), [[1.0, 2.0], [3.0, 7.0]])
    got = cs.scatter(np.array([3, 1, 2, 7]), index, "median", dtype=np.float32)
    assert got.dtype == np.float32


def test_out_untouched_on_error():
    out = np.full(3, 7.0)
    with pytest.raises(ValueError, match="out shape"):
        cs.scatter_quantile(np.ones(4), np.array([0, 0, 1, 1]), 0.5, out=out)
    with pytest.raises(TypeError, match="out dtype"):
        cs.scatter_quantile(np.ones(4), np.array([0, 0, 1, 1]), 0.5, out=np.zeros(2, np.float32))
    with pytest.raises(IndexError):
        cs.scatter_quantile(np.ones(4), np.array([0, 0, 1, 5]), 0.5, dim_size=3, out=out)
    np.testing.assert_array_equal(out, 7.0)


@pytest.mark.parametrize("bad, error, match", [
    (dict(q=1.5), ValueError, r"q must lie in \[0, 1\]"),
    (dict(q=np.nan), ValueError, r"q must lie"),
    (dict(q=[[0.5]]), ValueError, "q must be a scalar or 1-d"),
    (dict(q="a"), TypeError, "q must be a real number"),
    (dict(q=True), TypeError, "q must be a real number"),
    (dict(method="hazen"), ValueError, "method must be one of"),
    (dict(method="median"), ValueError, "method must be one of"),
])
def test_bad_arguments(bad, error, match):
    kw = dict(q=0.5, method="linear") | bad
    with pytest.raises(error, match=match):
        cs.scatter_quantile(np.ones(3), np.zeros(3, int), kw["q"], method=kw["method"])


@pytest.mark.parametrize("dtype", (np.complex128, np.bool_))
def test_unordered_dtypes_refused(dtype):
    with pytest.raises(TypeError, match="does not support src dtype"):
        cs.scatter(np.ones(3, dtype), np.zeros(3, int), "median")
    with pytest.raises(TypeError, match="does not support src dtype"):
        cs.scatter_quantile(np.ones(3, dtype), np.zeros(3, int), 0.5)


@pytest.mark.parametrize("func", ("scatter_into", "scatter_vjp_src", "scatter_count_like"))
def test_other_functions_name_the_order_statistic(func):
    with pytest.raises(ValueError, match="order statistic"):
        if func == "scatter_into":
            cs.scatter_into(np.zeros(2), np.ones(3), np.zeros(3, int), "median")
        elif func == "scatter_vjp_src":
            cs.scatter_vjp_src("nanmedian", np.ones(1), np.ones(3), np.zeros(3, int), np.ones(1))
        else:
            cs.get_op("median")


@pytest.mark.parametrize("shape", ((0,), (0, 3), (4, 0)))
def test_no_entries_or_no_features(backend, shape):
    src = np.ones(shape)
    index = np.zeros(shape[0], int)
    got = backend.to_numpy(cs.scatter(backend.asarray(src), backend.asarray(index), "median", dim_size=2))
    assert got.shape == (2,) + shape[1:]
    assert np.isnan(got).all()
    got = backend.to_numpy(cs.scatter_quantile(backend.asarray(src), backend.asarray(index), [0.2, 0.7],
                                               dim_size=2))
    assert got.shape == (2, 2) + shape[1:]
    assert np.isnan(got).all()
    g = backend.asarray(np.ones((2,) + shape[1:]))
    assert backend.to_numpy(cs.scatter_quantile_vjp(g, backend.asarray(src), backend.asarray(index))).shape == shape


def test_more_groups_than_one_radix_digit(backend):
    """Group ids past 2**16 take a second pass of the stable sort by group."""
    rng = np.random.default_rng(8)
    index = rng.choice(np.array([0, 1, 65535, 65536, 65537, 70000, 131071 + 5]), 300)
    src = rng.standard_normal((300, 2))
    got = backend.to_numpy(cs.scatter_quantile(backend.asarray(src), backend.asarray(index), [0.3, 0.5],
                                               dim_size=131100))
    for j in np.unique(index):
        np.testing.assert_array_equal(got[:, j], np.stack([np.quantile(src[index == j], q, axis=0)
                                                           for q in (0.3, 0.5)]))
    assert np.isnan(got[:, 2]).all() and np.isnan(got[:, 65538]).all()
    g = rng.standard_normal(got.shape)
    vjp = backend.to_numpy(cs.scatter_quantile_vjp(backend.asarray(g), backend.asarray(src),
                                                   backend.asarray(index), [0.3, 0.5]))
    for j in (65536, 131076):
        members = index == j
        want = cs.scatter_quantile_vjp(g[:, j:j + 1], src[members], np.zeros(members.sum(), int), [0.3, 0.5])
        np.testing.assert_allclose(vjp[members], want, atol=1e-12)


@pytest.mark.parametrize("method", METHODS + ("median",))
def test_bfloat16_bitwise(method):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(9)
    src, index = rng.standard_normal((60, 2)).astype(ml_dtypes.bfloat16), rng.integers(0, 5, 60)
    if method == "median":
        got, want = cs.scatter(src, index, "median"), ref_order_stat(src, index, "median")
    else:
        got = cs.scatter_quantile(src, index, 0.3, method=method)
        want = ref_order_stat(src, index, "quantile", 0.3, method)
    assert got.dtype == src.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op, reduce", [("median", np.median), ("nanmedian", np.nanmedian)])
def test_median_of_zeros_has_numpys_sign(op, reduce, dtype):
    """np.median's mean starts its sum at +0.0: a group of -0.0s (alone, a pair, with a NaN for nanmedian) has a
    +0.0 median, whatever the other groups; the sign must not depend on the sort's order."""
    groups = [[-0.0], [-0.0, -0.0], [-0.0, 0.0, -0.0], [-0.0, np.nan], [1.0, -0.0, -0.0, -7.0]]
    src = np.concatenate([np.array(g, dtype) for g in groups])
    index = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    got = cs.scatter(src, index, op)
    want = np.array([reduce(np.array(g, dtype)) for g in groups])
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all(), (got, want)
    seg = cs.segment(src, np.concatenate([[0], np.cumsum([len(g) for g in groups])]), op)
    assert (np.signbit(seg) == np.signbit(want)).all()


@pytest.mark.parametrize("q, op", [(1.0, "max"), (0.0, "min")])
def test_quantile_derivatives_compare_integers_as_integers(q, op):
    """q = 1 (q = 0) has max's (min's) derivatives, whose winners among int64 values are found as integers:
    2**53 + 1 beats 2**53, which float64 would tie."""
    x = np.array([[2**53, 3], [2**53 + 1, 3], [5, 2**53 + 1], [2**53 - 1, -2**53 - 1]], np.int64)
    index = np.array([0, 0, 0, 1])
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    want = cs.scatter_vjp_src(op, g, x, index, cs.scatter(x, index, op))
    np.testing.assert_array_equal(cs.scatter_quantile_vjp(g, x, index, q), want)
    t = np.arange(1.0, 9.0).reshape(4, 2)
    np.testing.assert_array_equal(cs.scatter_quantile_jvp(x, index, t, q), cs.scatter_jvp(op, x, index,
                                                                                         cs.scatter(x, index, op), t))


def test_quantile_reverse_functions_of_an_empty_q():
    """An empty q has no quantile: the forward gives (0,) + out's shape, its VJP zeros and its JVP no tangent."""
    src, index = np.arange(12.0).reshape(4, 3), np.array([0, 2, 1, 0])
    assert cs.scatter_quantile(src, index, []).shape == (0, 3, 3)
    for vjp in (cs.scatter_quantile_vjp, cs.scatter_nanquantile_vjp):
        np.testing.assert_array_equal(vjp(np.ones((0, 3, 3)), src, index, []), np.zeros((4, 3)))
        with pytest.raises(ValueError, match="0 quantiles of q"):
            vjp(np.ones((1, 3, 3)), src, index, [])
    assert cs.scatter_quantile_jvp(src, index, np.ones((4, 3)), []).shape == (0, 3, 3)
