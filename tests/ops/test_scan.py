"""scatter_scan (grouped cumsum/cumprod/cummax/cummin) against a plain loop reference,
numpy_groupies' aggregate(func="cum*") and pandas' groupby().cum*(); its reverse functions against the loop's
finite differences and autograd's check_grads; the validation."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from group_cases import LAYOUTS, make_case, values
from reference_scan import ref_scan
from testing import INDEX_DTYPES, INDEX_KINDS, VALUE_DTYPES, numpy_groupies_scans, op_supports

SCAN_OPS = ("add", "mul", "max", "min")
MODES = ("raise", "drop", "wrap", "clip", "normalize_drop")


def _tol(backend, op, dtype, src):
    ulps, scale = tolerance(backend.name, op, dtype, src)
    if backend.name != "numpy" and op in ("add", "mul") and np.dtype(dtype).kind in "fc":
        return max(ulps, 64), scale   # the GPU path combines in a tree order (documented)
    return ulps, scale


@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_scan_matches_reference(backend, op, dtype, kind, layout):
    src, index, dims, axis = make_case(11, kind, layout, "raise", dtype)
    got = backend.call(cs.scatter_scan, src, index, op, dim_size=dims, axis=axis)
    want = ref_scan(src, index, op, dim_size=dims, axis=axis)
    assert_same(got, want, *_tol(backend, op, want.dtype, src))


@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("exclusive", (False, True))
@pytest.mark.parametrize("reverse", (False, True))
def test_scan_modes_and_flags(backend, op, mode, kind, exclusive, reverse):
    src, index, dims, axis = make_case(12, kind, "batch", mode, "float64")
    got = backend.call(cs.scatter_scan, src, index, op, dim_size=dims, axis=axis, mode=mode, exclusive=exclusive,
                       reverse=reverse)
    want = ref_scan(src, index, op, dim_size=dims, axis=axis, mode=mode, exclusive=exclusive, reverse=reverse)
    assert_same(got, want, *_tol(backend, op, want.dtype, src))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_scan_index_dtypes(backend, index_dtype):
    rng = np.random.default_rng(3)
    index = rng.integers(0, 4, 30).astype(index_dtype)
    src = rng.normal(size=(30, 2))
    for op in SCAN_OPS:
        got = backend.call(cs.scatter_scan, src, index, op)
        assert_same(got, ref_scan(src, index, op), *_tol(backend, op, np.float64, src))


def test_scan_nan_and_signed_zeros():
    src = np.array([-0.0, 0.0, np.nan, 1.0, -0.0, 5.0])
    index = np.array([0, 0, 0, 0, 1, 1])
    assert_same(cs.scatter_scan(src, index, "max"), np.array([-0.0, 0.0, np.nan, np.nan, -0.0, 5.0]))
    assert_same(cs.scatter_scan(src[::-1].copy(), index, "min"), ref_scan(src[::-1], index, "min"))


@pytest.mark.parametrize("func,op", numpy_groupies_scans())
@pytest.mark.parametrize("dtype", ("float64", "int64"))
def test_scan_matches_numpy_groupies(func, op, dtype):
    npg = pytest.importorskip("numpy_groupies")
    rng = np.random.default_rng(4)
    index = rng.integers(0, 7, 200)
    src = values(rng, 200, dtype)
    if op == "mul":
        src = np.where(src == 0, 1, src).astype(dtype)
    want = npg.aggregate(index, src, func=func)
    got = cs.scatter_scan(src, index, op)
    np.testing.assert_allclose(got, want, rtol=1e-13) if dtype == "float64" else \
        np.testing.assert_array_equal(got, want)
    # the last value of each group is the group's scatter result
    for j in range(7):
        members = np.flatnonzero(index == j)
        if members.size:
            assert_same(got[members[-1]], cs.scatter(src, index, op, dim_size=7)[j])


@pytest.mark.parametrize("method,op", [("cumsum", "add"), ("cumprod", "mul"), ("cummax", "max"), ("cummin", "min")])
def test_scan_matches_pandas(method, op):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    index = rng.integers(0, 5, 100)
    src = rng.normal(size=(100, 3))
    want = getattr(pd.DataFrame(src).groupby(index), method)().to_numpy()
    np.testing.assert_allclose(cs.scatter_scan(src, index, op), want, rtol=1e-12)


# ---- reverse functions -------------------------------------------------------------------------------------------

def _numeric_jacobian_checks(op, src, index, exclusive, reverse, mode="raise", dims=None):
    rng = np.random.default_rng(6)
    kw = dict(dim_size=dims, mode=mode, exclusive=exclusive, reverse=reverse)
    g = rng.normal(size=src.shape)
    t = rng.normal(size=src.shape)
    eps = 1e-6

    def f(x):
        return ref_scan(x, index, op, **kw)
    with np.errstate(invalid="ignore"):   # inf - inf at the identities of exclusive max/min
        num_jvp = (f(src + eps * t) - f(src - eps * t)) / (2 * eps)
    num_jvp = np.where(np.isfinite(num_jvp), num_jvp, 0)
    got_jvp = cs.scatter_scan_jvp(op, src, index, t, **kw)
    np.testing.assert_allclose(got_jvp, num_jvp, rtol=1e-6, atol=1e-7)
    got_vjp = cs.scatter_scan_vjp(op, g, src, index, **kw)
    # adjointness: <vjp(g), t> == <g, jvp(t)>
    np.testing.assert_allclose(np.sum(got_vjp * t), np.sum(g * got_jvp), rtol=1e-10)
    return got_vjp, got_jvp


@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("exclusive", (False, True))
@pytest.mark.parametrize("reverse", (False, True))
@pytest.mark.parametrize("mode", ("raise", "drop"))
def test_scan_reverse_functions_against_finite_differences(op, exclusive, reverse, mode):
    src, index, dims, axis = make_case(13, "int", "axis0", mode, "float64")
    src = src + np.random.default_rng(1).normal(size=src.shape) * 0.1   # no ties: max/min differentiable
    _numeric_jacobian_checks(op, src, index, exclusive, reverse, mode, dims)


@pytest.mark.parametrize("exclusive", (False, True))
def test_scan_mul_gradient_exact_with_zeros(exclusive):
    src = np.array([2.0, 0.0, 3.0, 0.0, 5.0, 7.0])
    index = np.array([0, 0, 0, 0, 1, 1])
    g = np.arange(1.0, 7.0)
    # d out[k] / d x[p] = product of the other members up to k: written out for the group [2, 0, 3, 0]
    want = np.zeros(6)
    x = src
    for k in range(6):
        members = [p for p in range(k + (0 if exclusive else 1)) if index[p] == index[k]]
        for p in members:
            want[p] += g[k] * np.prod([x[q] for q in members if q != p])
    assert_same(cs.scatter_scan_vjp("mul", g, src, index, exclusive=exclusive), want)
    t = np.ones(6)
    assert np.allclose(np.sum(want * t), np.sum(g * cs.scatter_scan_jvp("mul", src, index, t, exclusive=exclusive)))


def test_scan_vjp_on_gpu_path_matches_cpu(backend):
    src, index, dims, axis = make_case(14, "tuple", "batch", "drop", "float64")
    src = src + np.random.default_rng(2).normal(size=src.shape) * 0.1
    g = np.random.default_rng(3).normal(size=src.shape)
    for op in SCAN_OPS:
        for exclusive in (False, True):
            kw = dict(dim_size=dims, axis=axis, mode="drop", exclusive=exclusive)
            np.testing.assert_allclose(backend.call(cs.scatter_scan_vjp, op, g, src, index, **kw),
                                       cs.scatter_scan_vjp(op, g, src, index, **kw), rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(backend.call(cs.scatter_scan_jvp, op, src, index, g, **kw),
                                       cs.scatter_scan_jvp(op, src, index, g, **kw), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("exclusive", (False, True))
@pytest.mark.parametrize("reverse", (False, True))
def test_scan_grad_primitive(op, exclusive, reverse):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad as csgrad
    rng = np.random.default_rng(7)
    src = rng.normal(size=(2, 9, 2))
    index = np.array([0, 2, 0, 1, 2, 0, 1, 0, 2])
    kw = dict(axis=1, exclusive=exclusive, reverse=reverse)
    assert_same(csgrad.scatter_scan(src, index, op, **kw), cs.scatter_scan(src, index, op, **kw))

    def f(s):
        out = csgrad.scatter_scan(s, index, op, **kw)
        return anp.where(np.isfinite(getval(out)), out, 0.0)   # a group's first exclusive max is -inf
    import autograd.numpy as anp
    from autograd.tracer import getval
    check_grads(f, modes=["fwd", "rev"], order=2)(src)


def test_scan_grad_mul_second_order():
    """mul was first order only (a second derivative raised NotImplementedError); now to any order
    (tests/grad/test_scan_grad_mul.py)."""
    pytest.importorskip("autograd")
    from autograd import grad as agrad

    import grad as csgrad
    index = np.array([0, 0, 1])
    f = agrad(lambda s: csgrad.scatter_scan(s, index, "mul").sum())
    assert np.allclose(f(np.array([2.0, 3.0, 4.0])), [4.0, 2.0, 1.0])
    # sum(out) = x0 + x0 x1 + x2: grad [1 + x1, x0, 1], whose sum has gradient [1, 1, 0]
    np.testing.assert_array_equal(agrad(lambda s: f(s).sum())(np.array([2.0, 3.0, 4.0])), [1.0, 1.0, 0.0])


# ---- validation --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,match", [
    (lambda: cs.scatter_scan(np.ones(3), np.array([0, 1, 0]), "mean"), ValueError, "add, mul, max, min"),
    (lambda: cs.scatter_scan(np.ones(3), np.array([0, 1, 0]), "sub"), ValueError, "'sub'"),
    (lambda: cs.scatter_scan(np.ones(3), np.array([0, 1, 0]), "nope"), ValueError, "unknown op"),
    (lambda: cs.scatter_scan(np.ones(3), np.array([0, 1, 0]), 3), TypeError, "op must be a string"),
    (lambda: cs.scatter_scan(np.ones(3), np.array([0, 5, 0]), dim_size=2), IndexError, r"index\[1\] = 5"),
    (lambda: cs.scatter_scan(np.ones(3), np.array([0, -1, 0])), IndexError, r"index\[1\] = -1"),
    (lambda: cs.scatter_scan(np.ones(3), np.array([0.0, 1.0, 0.0])), TypeError, "integers"),
    (lambda: cs.scatter_scan(np.ones(4), np.array([0, 1, 0])), ValueError, "index shape"),
    (lambda: cs.scatter_scan(np.ones(3, complex), np.array([0, 1, 0]), "max"), TypeError, "complex"),
    (lambda: cs.scatter_scan(np.ones(3, bool), np.array([0, 1, 0])), TypeError, "bool"),
    (lambda: cs.scatter_scan(np.ones(3), np.array([0, 1, 0]), mode="nope"), ValueError, "mode"),
    (lambda: cs.scatter_scan(np.ones((2, 3)), np.array([0, 1, 0]), axis=2), ValueError, "axis"),
    (lambda: cs.scatter_scan_vjp("add", np.ones(2), np.ones(3), np.array([0, 1, 0])), ValueError, "grad_out shape"),
    (lambda: cs.scatter_scan_jvp("add", np.ones(3), np.array([0, 1, 0]), None), TypeError, "src_dot"),
    (lambda: cs.scatter_scan_jvp("add", np.ones(3), np.array([0, 1, 0]), np.ones(3, bool)), TypeError, "src_dot"),
])
def test_scan_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_scan_empty_and_zero_groups(backend):
    for src, index in ((np.zeros((0, 2)), np.zeros(0, np.int64)), (np.zeros((2, 0, 3)), np.zeros(0, np.int32))):
        axis = src.ndim - 2
        got = backend.call(cs.scatter_scan, src, index, "max", axis=axis)
        assert got.shape == src.shape
    got = backend.call(cs.scatter_scan, np.ones((3, 0)), np.array([0, 1, 0]), "add")
    assert got.shape == (3, 0)


@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("exclusive", (False, True))
@pytest.mark.parametrize("reverse", (False, True))
def test_scan_strided_and_wide_inputs(op, exclusive, reverse):
    """The pointer loops (one-element and wide rows) read strided rows and batches as the reference does."""
    rng = np.random.default_rng(15)
    index = rng.integers(0, 6, 40)
    kw = dict(exclusive=exclusive, reverse=reverse)
    base = rng.normal(size=(3, 80, 10))
    for src, axis in ((base[:, ::2, 0], 1), (base[1, ::2, ::3], 0), (base[:, ::2, :].transpose(0, 1, 2), 1),
                      (np.asfortranarray(base[0, :40, :]), 0), (base[::2, 1::2, 1:8], 1)):
        assert_same(cs.scatter_scan(src, index, op, axis=axis, **kw), ref_scan(src, index, op, axis=axis, **kw))


def test_scan_kernel_entry_points_refuse_what_would_go_out_of_bounds():
    """The loops run unchecked: every `def` entry point of scan_kernels checks the extents it relies on."""
    from cyscatter import scan_kernels
    src = np.ones((1, 4, 2))
    index = np.array([0, 1, 0, 1])
    out = np.empty_like(src)
    table = np.empty((2, 2))
    ident = np.zeros(1)
    assert scan_kernels.scan(0, src, index, out, table, ident) == -1
    assert scan_kernels.scan(0, src, np.array([0, 1, 0, 2]), out, table, ident) == 3   # the first bad position
    with pytest.raises(ValueError, match="index has 3 entries"):
        scan_kernels.scan(0, src, index[:3], out, table, ident)
    with pytest.raises(ValueError, match="out shape"):
        scan_kernels.scan(0, src, index, np.empty((1, 4, 1)), table, ident)
    with pytest.raises(ValueError, match="table shape"):
        scan_kernels.scan(0, src, index, out, np.empty((2, 1)), ident)
    with pytest.raises(ValueError, match="identity"):
        scan_kernels.scan(0, src, index, out, table, np.zeros(2))
    with pytest.raises(ValueError, match="op code"):
        scan_kernels.scan(1, src, index, out, table, ident)
    with pytest.raises(ValueError, match="OP_MAX and OP_MIN only"):
        scan_kernels.scan(0, src, index, out, table, ident, arg=np.empty((1, 4, 2), np.int64),
                          targ=np.empty((2, 2), np.int64))
    with pytest.raises(ValueError, match="arg shape"):
        scan_kernels.scan(4, src, index, out, table, ident, arg=np.empty((1, 3, 2), np.int64),
                          targ=np.empty((2, 2), np.int64))
    with pytest.raises(ValueError, match="targ shape"):
        scan_kernels.scan(4, src, index, out, table, ident, arg=np.empty((1, 4, 2), np.int64),
                          targ=np.empty((1, 2), np.int64))
    with pytest.raises(ValueError, match="a shape"):
        scan_kernels.linear_scan(src, np.ones((1, 4, 1)), index, out, table)
    with pytest.raises(ValueError, match="past 3"):
        scan_kernels.route(src, np.full((1, 4, 2), 4, np.int64), np.zeros_like(src))
    with pytest.raises(ValueError, match="grad's shape"):
        scan_kernels.route(src, np.zeros((1, 4, 1), np.int64), np.zeros_like(src))


# ---- NaN-skipping scans: a NaN entry is the identity, the running value carries through it -----------------------

NAN_SCANS = {"nansum": lambda g: np.nancumsum(g, axis=0), "nanprod": lambda g: np.nancumprod(g, axis=0),
             # np.fmax.accumulate from the identity: a leading NaN gives -inf (+inf), as an all-NaN group's fmax
             "fmax": lambda g: np.fmax.accumulate(np.concatenate([np.full((1,) + g.shape[1:], -np.inf), g]))[1:],
             "fmin": lambda g: np.fmin.accumulate(np.concatenate([np.full((1,) + g.shape[1:], np.inf), g]))[1:]}


def _per_group(src, index, func):
    out = np.empty_like(src)
    for j in np.unique(index):
        members = np.flatnonzero(index == j)
        out[members] = func(src[members])
    return out


@pytest.mark.parametrize("op", NAN_SCANS)
@pytest.mark.parametrize("dtype", ("float64", "float32", "float16", "complex128", "int64"))
@pytest.mark.valid(lambda op, dtype: op_supports(op, dtype))
def test_nan_scan_matches_numpy_per_group(backend, op, dtype):
    rng = np.random.default_rng(21)
    index = rng.integers(0, 5, 60)
    src = values(rng, (60, 3), dtype)
    if np.dtype(dtype).kind in "fc":
        src[rng.random(src.shape) < 0.3] = np.nan
        src[index == 4] = np.nan   # an all-NaN group
        if dtype == "complex128":
            src[5, 0] = complex(1.0, np.nan)   # a NaN part alone
    if op == "nanprod":
        src = (src / 4 + 1).astype(dtype)   # products of moderate size
    got = backend.call(cs.scatter_scan, src, index, op)
    want = _per_group(src.astype(np.result_type(src, np.float32)) if dtype == "float16" else src, index,
                      NAN_SCANS[op]).astype(dtype)
    assert_same(got, want, *_tol(backend, cs.get_op(op).twin, want.dtype, src))


@pytest.mark.parametrize("op", NAN_SCANS)
@pytest.mark.parametrize("exclusive", (False, True))
@pytest.mark.parametrize("reverse", (False, True))
@pytest.mark.parametrize("mode", ("raise", "drop"))
def test_nan_scan_flags_equal_the_twin_on_the_identity(backend, op, exclusive, reverse, mode):
    """With the flags and modes: equal to the twin's loop reference over src with NaN made the identity."""
    rng = np.random.default_rng(22)
    index = rng.integers(0, 6 if mode == "drop" else 5, 40)
    src = rng.standard_normal((40, 2))
    src[rng.random(src.shape) < 0.3] = np.nan
    twin = cs.get_op(op).twin
    clean = np.where(np.isnan(src), {"add": 0.0, "mul": 1.0, "max": -np.inf, "min": np.inf}[twin], src)
    got = backend.call(cs.scatter_scan, src, index, op, dim_size=5, mode=mode, exclusive=exclusive,
                       reverse=reverse)
    want = ref_scan(clean, index, twin, dim_size=5, mode=mode, exclusive=exclusive, reverse=reverse)
    assert_same(got, want, *_tol(backend, twin, want.dtype, src))


@pytest.mark.parametrize("op", NAN_SCANS)
@pytest.mark.parametrize("exclusive", (False, True))
@pytest.mark.parametrize("reverse", (False, True))
def test_nan_scan_reverse_functions(backend, op, exclusive, reverse):
    """VJP against central differences of the forward over the non-NaN entries (a NaN entry's is 0); the JVP its
    transpose."""
    rng = np.random.default_rng(23)
    index = np.array([0, 1, 2, 0, 1, 1, 2, 0, 2, 1])
    src = rng.standard_normal((10, 2)) + 2.0
    src[[3, 5, 4], 0] = np.nan
    src[[6], 1] = np.nan
    kw = dict(exclusive=exclusive, reverse=reverse)
    g = rng.standard_normal(src.shape)
    vjp = backend.call(cs.scatter_scan_vjp, op, g, src, index, **kw)
    numeric = np.zeros_like(src)
    for i in zip(*np.nonzero(~np.isnan(src))):
        step = np.zeros_like(src)
        step[i] = 1e-6
        plus, minus = cs.scatter_scan(src + step, index, op, **kw), cs.scatter_scan(src - step, index, op, **kw)
        with np.errstate(invalid="ignore"):   # an exclusive scan starts at -inf (+inf): no change there
            numeric[i] = (np.where(plus == minus, 0.0, plus - minus) * g).sum() / 2e-6
    np.testing.assert_allclose(vjp, numeric, atol=1e-7)
    v = rng.standard_normal(src.shape)
    v[np.isnan(src)] = np.inf   # a NaN entry's tangent never reaches the output
    jvp = backend.call(cs.scatter_scan_jvp, op, src, index, v, **kw)
    v[np.isnan(src)] = 0
    np.testing.assert_allclose((jvp * g).sum(), (vjp * v).sum(), rtol=1e-12)


@pytest.mark.parametrize("op", NAN_SCANS)
def test_grad_nan_scan(op):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad
    rng = np.random.default_rng(24)
    index = np.array([0, 1, 2, 0, 1, 1, 2, 0, 2, 1])
    src = rng.standard_normal((10, 2)) + 2.0
    src[[3, 5, 4], 0] = np.nan
    np.testing.assert_array_equal(grad.scatter_scan(src, index, op), cs.scatter_scan(src, index, op))
    check_grads(lambda s: grad.scatter_scan(s, index, op), modes=["rev", "fwd"], order=2)(src)


def test_nancumsum_matches_numpy_groupies():
    npg = pytest.importorskip("numpy_groupies")
    rng = np.random.default_rng(25)
    index = rng.integers(0, 7, 200)
    src = rng.standard_normal(200)
    src[rng.random(200) < 0.2] = np.nan
    try:
        want = npg.aggregate(index, src, func="nancumsum")
    except (NotImplementedError, ValueError):
        pytest.skip("this numpy_groupies has no nancumsum")
    np.testing.assert_allclose(cs.scatter_scan(src, index, "nansum"), want, rtol=1e-13)


@pytest.mark.parametrize("op", ["add", "mul", "max", "nanmin"])
@pytest.mark.parametrize("mode", ["raise", "drop"])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_with_far_more_groups_than_entries(op, mode, exclusive, reverse):
    """A scan's output has src's shape: a huge dim_size costs no table of its size (the groups met are
    renumbered), and gives the scan of the same entries under a small one; dropped entries stay dropped."""
    rng = np.random.default_rng(7)
    huge = 2**40
    groups = np.array([3, 12345678901, 2**39, huge - 1])   # sorted: searchsorted numbers them
    index = groups[rng.integers(0, 4, 300)]
    if mode == "drop":
        index[::7] = huge + 5
    small = np.searchsorted(groups, index).astype(np.int64)   # the same groups, numbered 0..3 (4: dropped)
    src = rng.standard_normal((300, 3))
    src[::11, 1] = np.nan
    kw = dict(exclusive=exclusive, reverse=reverse, mode=mode)
    got = cs.scatter_scan(src, index, op, dim_size=huge, **kw)
    assert_same(got, ref_scan(src, small, op, dim_size=4, **kw))
    g = rng.standard_normal(src.shape)
    if op != "nanmin":
        assert_same(cs.scatter_scan_vjp(op, g, src, index, dim_size=huge, **kw),
                    cs.scatter_scan_vjp(op, g, src, small, dim_size=4, **kw))
    empty = cs.scatter_scan(np.ones((3, 0)), np.array([0, 5, huge - 1]), op, dim_size=huge)
    assert empty.shape == (3, 0)


@pytest.mark.parametrize("dtype", [np.float16, np.int8])
def test_scan_of_a_converted_src_with_far_more_groups_than_entries(dtype):
    """The block-converting scan keeps a table of the groups met too."""
    rng = np.random.default_rng(8)
    index = np.array([5, 2**40 - 1, 77])[rng.integers(0, 3, 40000)]
    src = (rng.standard_normal((40000, 2)) * 3).astype(dtype)
    small = np.searchsorted(np.array([5, 77, 2**40 - 1]), index)
    assert_same(cs.scatter_scan(src, index, "max", dim_size=2**40), cs.scatter_scan(src, small, "max", dim_size=3))


def test_scan_takes_any_dim_size_the_index_can_address():
    """No table of dim_size rows is made, so no size check of one refuses a large dim_size."""
    index = np.arange(10) % 4
    for run in (lambda d: cs.scatter_scan(np.ones(10), index, dim_size=d),
                lambda d: cs.scatter_scan_vjp("add", np.ones(10), np.ones(10), index, dim_size=d),
                lambda d: cs.scatter_scan_jvp("mul", np.full(10, 2.0), index, np.ones(10), dim_size=d)):
        assert_same(run(2**62), run(4))
    assert_same(cs.scatter_scan(np.ones(10), (index, index % 2), dim_size=(2**31, 2**31)),
                cs.scatter_scan(np.ones(10), (index, index % 2), dim_size=(4, 2)))
    assert cs.scatter_scan(np.ones((0, 3)), np.zeros(0, np.int64), dim_size=2**62).shape == (0, 3)


def _scan_partials(op, x, index, exclusive, reverse):
    """{(k, p): d out[k] / d x[p]} of a 1-d grouped scan by plain loops: mul/nanprod the product of the other
    members so far (NaN members of nanprod take no part), fmax/fmin/max/min 1 for the first member to reach the
    running extremum (fmax/fmin: among the non-NaN members)."""
    order = range(len(x) - 1, -1, -1) if reverse else range(len(x))
    partials = {}
    for k in order:
        members = [p for p in order if index[p] == index[k]]
        so_far = members[:members.index(k) + (0 if exclusive else 1)]
        if op in ("nanprod", "fmax", "fmin"):
            so_far = [p for p in so_far if not np.isnan(x[p])]
        if op in ("mul", "nanprod"):
            for p in so_far:
                partials[k, p] = np.prod([x[q] for q in so_far if q != p])
        elif so_far:
            larger = op in ("max", "fmax")
            best = so_far[0]
            for p in so_far[1:]:
                if (x[p] > x[best]) if larger else (x[p] < x[best]):
                    best = p
            partials[k, best] = 1.0
    return partials


@pytest.mark.parametrize("op, src, index, exclusive", [
    # a member that no output reads (an exclusive scan's last): its inf or NaN must not reach the others
    ("mul", [2.0, 3.0, np.inf], [0, 0, 0], True),
    ("mul", [2.0, 3.0, np.nan], [0, 0, 0], True),
    ("nanprod", [2.0, 3.0, np.inf], [0, 0, 0], True),
    # a one-member group holding inf: its output is itself (d/dx = 1, not inf * 0)
    ("mul", [np.inf, 2.0], [0, 1], False),
    # the first non-NaN member equal to the identity, after a NaN: it holds the output
    ("fmin", [np.nan, np.inf], [0, 0], False),
    ("fmax", [np.nan, -np.inf], [0, 0], False),
    ("fmin", [np.nan, np.inf, 1.0], [0, 0, 0], True),
    ("fmax", [np.nan, np.nan, -np.inf, -np.inf, 4.0], [0, 0, 0, 0, 0], False),
])
@pytest.mark.parametrize("reverse", (False, True))
def test_scan_derivatives_of_non_finite_members(backend, op, src, index, exclusive, reverse):
    x, index = np.array(src), np.array(index)
    if reverse:   # the same scans run backwards
        x, index = x[::-1].copy(), index[::-1].copy()
    partials = _scan_partials(op, x, index, exclusive, reverse)
    g, t = np.arange(1.0, len(x) + 1), np.linspace(0.5, 2.0, len(x))
    want_vjp, want_jvp = np.zeros(len(x)), np.zeros(len(x))
    for (k, p), d in partials.items():
        want_vjp[p] += g[k] * d
        want_jvp[k] += d * t[p]
    kw = dict(exclusive=exclusive, reverse=reverse)
    np.testing.assert_array_equal(backend.call(cs.scatter_scan_vjp, op, g, x, index, **kw), want_vjp)
    np.testing.assert_array_equal(backend.call(cs.scatter_scan_jvp, op, x, index, t, **kw), want_jvp)


@pytest.mark.parametrize("op", ["max", "min", "fmax", "fmin"])
@pytest.mark.parametrize("reverse", (False, True))
def test_scan_derivatives_compare_integers_as_integers(backend, op, reverse):
    """2**53 + 1 beats 2**53 (float64 ties them): the holders of an int64 scan are found among the integers."""
    x = np.array([2**53, 2**53 + 1, 2**53 - 1, 2**53 + 1, 7], np.int64)
    index = np.array([0, 0, 0, 0, 1])
    if reverse:
        x, index = x[::-1].copy(), index[::-1].copy()
    partials = _scan_partials(op, [int(v) for v in x], index, False, reverse)
    g, t = np.arange(1.0, len(x) + 1), np.linspace(0.5, 2.0, len(x))
    want_vjp, want_jvp = np.zeros(len(x)), np.zeros(len(x))
    for (k, p), d in partials.items():
        want_vjp[p] += g[k] * d
        want_jvp[k] += d * t[p]
    np.testing.assert_array_equal(backend.call(cs.scatter_scan_vjp, op, g, x, index, reverse=reverse), want_vjp)
    np.testing.assert_array_equal(backend.call(cs.scatter_scan_jvp, op, x, index, t, reverse=reverse), want_jvp)
