"""scatter_nanvar/nanstd's reverse functions (`scatter_nanvar_vjp/_jvp`, `scatter_nanstd_vjp/_jvp`) and grad
primitives (`grad.scatter_nanvar/nanstd`).

References: scatter_var/std's reverse functions on each column's data with the NaN entries removed (src and index
compressed), central finite differences in float64 (the NaN entries stay NaN: constants), and, for grad, autograd's
check_grads to second order (fwd and rev) with the NaN positions fixed by a mask. Cases hold empty groups, all-NaN
groups, groups whose non-NaN count equals ddof and (for std) a zero-spread group; over index kinds, axis (0, and
1 with a batch dim), modes raise/drop, float32/float64 and the numpy / cupy-emulated backends."""
import re

import numpy as np
import pytest

import cyscatter as cs
from reference import numeric_vjp
from testing import INDEX_KINDS

NAMES = ("var", "std")
EPS = 1e-6
N = 12
# one group per entry, before shuffling: 0 has 4 members, 1 has 3, 2 one (count 1: NaN with ddof=1), 3 two that
# are NaN in every column (all-NaN), 4 two (one NaN in column 0: count 1 there); group 5 is empty
GROUPS = np.array([0, 0, 0, 0, 1, 1, 1, 2, 3, 3, 4, 4])
SIZE = 6
TUPLE_DIMS = (3, 2)


def _funcs(name):
    """(forward, vjp, jvp) of nan`name` and (forward, vjp, jvp) of its NaN-propagating twin."""
    return tuple(getattr(cs, f"scatter_{p}{name}{s}") for p in ("nan", "") for s in ("", "_vjp", "_jvp"))


def _case(seed, kind, axis, mode="raise", dtype=np.float64):
    """(src with NaN entries, index, dim_size): src shape (N, 3) at axis 0, (2, N, 3) at 1."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(N)
    flat = GROUPS[order]
    shape = (N, 3) if axis == 0 else (2, N, 3)
    src = rng.standard_normal(shape) * 2
    moved = np.moveaxis(src, axis, 0)   # a view: (N, ...) rows of src
    moved[flat == 3] = np.nan
    moved[np.flatnonzero(flat == 4)[0], ..., 0] = np.nan
    moved[rng.random(moved.shape) < 0.15] = np.nan
    if mode != "raise":   # two entries out of range: dropped, or wrapped into groups
        flat = flat.copy()
        flat[order[:2]] = (-1, SIZE + 3)
    if kind == "int":
        return src.astype(dtype), flat, SIZE
    coords = (flat // 2, flat % 2)
    if mode != "raise":
        coords = (np.where((flat >= 0) & (flat < SIZE), coords[0], flat), coords[1])
    return src.astype(dtype), coords, TUPLE_DIMS


def _dims_last(a, axis, ndims):
    """B + D + F -> B + F + D (the output's group dims last), as a view."""
    return np.moveaxis(a, tuple(range(axis, axis + ndims)), tuple(range(-ndims, 0)))


def _compressed(name, src, index, dim_size, axis, ddof, mode, g, dot):
    """The reference: per (batch, feature) column, the twin's VJP and JVP on the non-NaN entries only."""
    _, _, _, forward, vjp, jvp = _funcs(name)
    kw = dict(ddof=ddof, mode=mode)
    dims = (dim_size,) if np.ndim(dim_size) == 0 else tuple(dim_size)
    coords = index if isinstance(index, tuple) else (index,)
    grad = np.zeros(src.shape, np.result_type(src.dtype, g.dtype))
    tangent = np.zeros(_out_like(src, axis, dims), grad.dtype)
    cols, gcols, dcols = (np.moveaxis(a, axis, -1) for a in (src, grad, dot))
    g_last, t_last = _dims_last(g, axis, len(dims)), _dims_last(tangent, axis, len(dims))
    for c in np.ndindex(cols.shape[:-1]):
        keep = ~np.isnan(cols[c])
        idx = tuple(x[keep] for x in coords)
        idx = idx if isinstance(index, tuple) else idx[0]
        out = forward(cols[c][keep], idx, dim_size=dim_size, **kw)
        gcols[c][keep] = vjp(g_last[c], cols[c][keep], idx, out, **kw)
        t_last[c] = jvp(cols[c][keep], idx, out, dcols[c][keep], **kw)
    return grad, tangent


def _out_like(src, axis, dims):
    return src.shape[:axis] + tuple(dims) + src.shape[axis + 1:]


# ---- VJP and JVP against the twin on the compressed data --------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ddof", (0, 1))
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", (0, 1))
@pytest.mark.parametrize("mode", ("raise", "drop", "wrap"))
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_against_twin_on_compressed_data(backend, name, ddof, kind, axis, mode, dtype):
    src, index, dim_size = _case(61 + ddof + 2 * axis, kind, axis, mode, dtype)
    forward, vjp, jvp = _funcs(name)[:3]
    kw = dict(ddof=ddof, axis=axis, mode=mode)
    out = backend.call(forward, src, index, dim_size=dim_size, **kw)
    rng = np.random.default_rng(7)
    g = rng.standard_normal(out.shape).astype(dtype)
    dot = rng.standard_normal(src.shape).astype(dtype)
    dot[np.isnan(src)] = np.nan   # an absent entry's tangent must not leak into the output
    expected_grad, expected_tangent = _compressed(name, src, index, dim_size, axis, ddof, mode, g, dot)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=2e-5)
    grad = backend.call(vjp, g, src, index, out, **kw)
    assert grad.shape == src.shape and grad.dtype == np.dtype(dtype)
    assert np.all(grad[np.isnan(src)] == 0)
    np.testing.assert_allclose(grad, expected_grad, **tol)
    tangent = backend.call(jvp, src, index, out, dot, **kw)
    assert tangent.shape == out.shape and tangent.dtype == np.dtype(dtype)
    np.testing.assert_allclose(tangent, expected_tangent, **tol)
    assert np.all(np.isfinite(tangent))   # count <= ddof and all-NaN elements pass 0, NaN tangents are absent
    # the case holds what it claims: empty, all-NaN and count == ddof elements (NaN results) beside finite ones
    assert np.isnan(out).any() and np.isfinite(out).any()


# ---- finite differences (float64) ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ddof", (0, 1))
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", (0, 1))
def test_against_finite_differences(name, ddof, kind, axis):
    src, index, dim_size = _case(71 + ddof, kind, axis)
    forward, vjp, jvp = _funcs(name)[:3]
    kw = dict(ddof=ddof, axis=axis)

    def f(x):   # NaN results (count <= ddof) are constants of the NaN pattern: zeroed; NaN entries stay NaN
        return np.nan_to_num(forward(x, index, dim_size=dim_size, **kw), nan=0.0)

    out = forward(src, index, dim_size=dim_size, **kw)
    rng = np.random.default_rng(8)
    g = rng.standard_normal(out.shape)
    grad = vjp(g, src, index, out, **kw)
    np.testing.assert_allclose(grad, numeric_vjp(f, src, g, EPS), rtol=1e-6, atol=1e-7)
    dot = rng.standard_normal(src.shape)
    fd = (f(src + EPS * dot) - f(src - EPS * dot)) / (2 * EPS)
    tangent = jvp(src, index, out, dot, **kw)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.sum(tangent * g), np.sum(grad * dot), rtol=1e-12)   # adjoint pair


# ---- the edge elements, by hand ------------------------------------------------------------------------------------

def test_edge_elements_by_hand():
    nan = np.nan
    src = np.array([1.0, nan, 3.0, nan, nan, 5.0, 2.0, nan, 2.0])
    index = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3])   # 0: two members; 1: all NaN; 2: one; 3: equal values; 4: empty
    g = np.ones(5)
    var1 = cs.scatter_nanvar(src, index, ddof=1, dim_size=5)
    np.testing.assert_array_equal(np.isnan(var1), [False, True, True, False, True])
    # d var / d x_k = 2 (x_k - mean) / (count - ddof); the single member of group 2 (count == ddof) gets 0
    np.testing.assert_array_equal(cs.scatter_nanvar_vjp(g, src, index, var1, ddof=1),
                                  [-2.0, 0, 2.0, 0, 0, 0, 0, 0, 0])
    dot = np.where(np.isnan(src), nan, 1.0)
    np.testing.assert_array_equal(cs.scatter_nanvar_jvp(src, index, var1, dot, ddof=1), [0, 0, 0, 0, 0])
    # std at a zero-spread element (group 3: 2, NaN, 2) passes 0, as scatter_std_vjp does at its kink
    std0 = cs.scatter_nanstd(src, index, dim_size=5)
    assert std0[3] == 0
    grad = cs.scatter_nanstd_vjp(g, src, index, std0)
    np.testing.assert_array_equal(grad[6:], [0, 0, 0])
    np.testing.assert_array_equal(cs.scatter_std_vjp(np.ones(1), src[[6, 8]], [0, 0], np.zeros(1)), [0, 0])
    np.testing.assert_allclose(grad[:3], [-0.5, 0, 0.5])
    assert np.all(np.isfinite(cs.scatter_nanstd_jvp(src, index, std0, dot)))
    # a NaN (or inf) cotangent reaches no absent entry
    g_bad = np.array([1.0, nan, 1.0, 1.0, nan])
    assert np.all(cs.scatter_nanvar_vjp(g_bad, src, index, var1, ddof=1)[np.isnan(src)] == 0)


def test_without_nan_equals_the_twin():
    src, index, dim_size = _case(81, "tuple", 1)
    src = np.nan_to_num(src, nan=0.5)
    for name in NAMES:
        forward, vjp, jvp, tforward, tvjp, tjvp = _funcs(name)
        out = forward(src, index, dim_size=dim_size, axis=1, ddof=1)
        g, dot = np.ones(out.shape), np.ones(src.shape)
        kw = dict(axis=1, ddof=1)
        np.testing.assert_allclose(vjp(g, src, index, out, **kw), tvjp(g, src, index, out, **kw), rtol=1e-12)
        np.testing.assert_allclose(jvp(src, index, out, dot, **kw), tjvp(src, index, out, dot, **kw), rtol=1e-12,
                                   atol=1e-14)


def test_broadcast_src():
    # a src that broadcasts along I (as scatter_var's may): the cotangent is summed back to src's shape
    rng = np.random.default_rng(9)
    row = rng.standard_normal((1, 3))
    row[0, 1] = np.nan
    index = np.array([0, 0, 1, 1, 1])
    full = np.broadcast_to(row, (5, 3)) + rng.standard_normal((5, 3)) * 0   # the same values, materialised
    for name in NAMES:
        forward, vjp, jvp = _funcs(name)[:3]
        out = forward(row, index)
        np.testing.assert_array_equal(out, forward(full, index))
        g = rng.standard_normal(out.shape)
        grad = vjp(g, row, index, out)
        assert grad.shape == row.shape
        np.testing.assert_allclose(grad, vjp(g, full, index, out).sum(axis=0, keepdims=True), atol=1e-12)
        dot = rng.standard_normal((1, 3))
        np.testing.assert_allclose(jvp(row, index, out, dot), jvp(full, index, out, np.broadcast_to(dot, (5, 3))),
                                   atol=1e-12)


@pytest.mark.parametrize("dtype", ("float16", "bfloat16", "int32"))
def test_result_dtypes_follow_the_twin(dtype):
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        dtype = ml_dtypes.bfloat16
    src = np.array([1.0, 2.0, 4.0, 3.0, 5.0])
    if np.dtype(dtype).kind != "i":
        src[1] = np.nan
    src = src.astype(dtype)
    index = np.array([0, 0, 0, 1, 1])
    for name in NAMES:
        forward, vjp, jvp, tforward, tvjp, tjvp = _funcs(name)
        out = forward(src, index, ddof=1)
        grad, tangent = vjp(np.ones(2), src, index, out, ddof=1), jvp(src, index, out, np.ones(5), ddof=1)
        kept = ~np.isnan(src.astype(np.float64))
        tout = tforward(src[kept], index[kept], ddof=1)
        assert grad.dtype == tvjp(np.ones(2), src[kept], index[kept], tout, ddof=1).dtype
        assert tangent.dtype == tjvp(src[kept], index[kept], tout, np.ones(kept.sum()), ddof=1).dtype
        np.testing.assert_allclose(grad[kept], tvjp(np.ones(2), src[kept], index[kept], tout, ddof=1), rtol=1e-6)
        assert np.all(grad[~kept] == 0)


# ---- errors: the twin's -------------------------------------------------------------------------------------------

def _same_error(call, twin_call):
    with pytest.raises(Exception) as expected:
        twin_call()
    with pytest.raises(expected.type) as actual:
        call()
    assert re.sub(r"scatter_nan(var|std)", r"scatter_\1", str(actual.value)) == str(expected.value)


@pytest.mark.parametrize("name", NAMES)
def test_errors_are_the_twins(name):
    forward, vjp, jvp, tforward, tvjp, tjvp = _funcs(name)
    src, index = np.array([1.0, np.nan, 3.0]), np.array([0, 0, 1])
    out = forward(src, index)
    cases = [
        (lambda f: f(np.ones(2), src, index, out, ddof="1"), "vjp"),
        (lambda f: f(np.ones(2), src, index, out, ddof=True), "vjp"),
        (lambda f: f(np.ones(3), src, index, out), "vjp"),
        (lambda f: f(np.ones(2), src, index, np.ones(3)), "vjp"),
        (lambda f: f(np.ones(2), src, np.array([0, 5, 1]), out), "vjp"),
        (lambda f: f(np.ones(2), src[:2], index, out), "vjp"),
        (lambda f: f(np.ones(2), src.astype(complex), index, out), "vjp"),
        (lambda f: f(np.ones(2), src, index, out, axis=2), "vjp"),
        (lambda f: f(src, index, out, np.ones(2)), "jvp"),
        (lambda f: f(src, index, np.ones((2, 1)), np.ones(3)), "jvp"),
        (lambda f: f(src, index, out, np.ones(3), ddof=[1]), "jvp"),
        (lambda f: f(src, index, out, np.array(["a", "b", "c"])), "jvp"),
    ]
    for call, which in cases:
        mine, twin = (vjp, tvjp) if which == "vjp" else (jvp, tjvp)
        _same_error(lambda: call(mine), lambda: call(twin))


# ---- grad: autograd primitives, second order ------------------------------------------------------------------

def _masked(forward, src, index, dim_size, **kw):
    """f(x) for check_grads: x's values at the NaN positions of `src` are replaced by NaN (the pattern is fixed,
    the differentiated values finite), and the outputs that are NaN by count <= ddof (constants of that pattern)
    are zeroed; NaN entries thus stay absent however check_grads perturbs x."""
    import autograd.numpy as anp
    absent = np.isnan(src)
    undefined = np.isnan(forward(src, index, dim_size=dim_size, **kw))
    return lambda x: anp.where(undefined, 0.0, forward(anp.where(absent, np.nan, x), index, dim_size=dim_size, **kw))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ddof", (0, 1))
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", (0, 1))
@pytest.mark.parametrize("mode", ("raise", "drop"))
def test_grad_second_order(name, ddof, kind, axis, mode):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad as csgrad
    src, index, dim_size = _case(91 + ddof, kind, axis, mode)
    forward = getattr(csgrad, f"scatter_nan{name}")
    kw = dict(ddof=ddof, axis=axis, mode=mode)
    np.testing.assert_array_equal(forward(src, index, dim_size=dim_size, **kw),
                                  getattr(cs, f"scatter_nan{name}")(src, index, dim_size=dim_size, **kw))
    f = _masked(forward, src, index, dim_size, **kw)
    check_grads(f, modes=["fwd", "rev"], order=2)(np.nan_to_num(src, nan=0.25))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("axis", (0, 1))
def test_grad_equals_the_reverse_functions(name, axis):
    pytest.importorskip("autograd")
    import autograd.numpy as anp
    from autograd import grad as agrad
    from autograd import make_jvp

    import grad as csgrad
    src, index, dim_size = _case(95, "int", axis)
    forward, vjp, jvp = _funcs(name)[:3]
    out = forward(src, index, dim_size=dim_size, ddof=1, axis=axis)
    rng = np.random.default_rng(10)
    g, dot = rng.standard_normal(out.shape), rng.standard_normal(src.shape)
    dot[np.isnan(src)] = np.nan
    prim = lambda x: getattr(csgrad, f"scatter_nan{name}")(x, index, dim_size=dim_size, ddof=1, axis=axis)
    g0 = np.where(np.isnan(out), 0.0, g)   # autograd's vjp multiplies g by NaN-free factors: no NaN to start from
    auto = agrad(lambda x: anp.sum(prim(x) * g0))(src)
    np.testing.assert_allclose(auto, vjp(g0, src, index, out, ddof=1, axis=axis), rtol=1e-12, atol=1e-14)
    assert np.all(auto[np.isnan(src)] == 0)
    tangent = make_jvp(prim)(src)(dot)[1]
    np.testing.assert_allclose(tangent, jvp(src, index, out, dot, ddof=1, axis=axis), rtol=1e-12, atol=1e-14)
    assert np.all(np.isfinite(tangent))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("nan", ["", "nan"])
def test_grad_refuses_complex(name, nan):
    # the reverse functions take real inputs only (test_errors_are_the_twins); so do the grad primitives when
    # differentiated (they once returned the conjugate of autograd's complex gradient); the forward value stays
    pytest.importorskip("autograd")
    import autograd.numpy as anp
    from autograd import grad as agrad, make_jvp

    import grad as csgrad
    rng = np.random.default_rng(11)
    src = rng.standard_normal(8) + 1j * rng.standard_normal(8)
    index = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    func = getattr(csgrad, f"scatter_{nan}{name}")
    np.testing.assert_allclose(func(src, index, ddof=1), getattr(cs, f"scatter_{nan}{name}")(src, index, ddof=1))
    with pytest.raises(TypeError, match=f"grad.scatter_{nan}{name} differentiates real src only"):
        agrad(lambda x: anp.sum(func(x, index, ddof=1)))(src)
    with pytest.raises(TypeError, match="real src only"):
        make_jvp(lambda x: func(x, index, ddof=1))(src)(np.ones(8, complex))
