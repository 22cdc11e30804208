"""scatter_multi, segment_multi, gather_scatter_multi: several aggregations side by side along the feature axis
(PyG's MultiAggregation layout), against per-op loop references (plain NumPy per group: mean, max, min, np.std),
bit equality of the one-pass kernel with the single-op scatter, torch_scatter / PyG where installed, the reverse
functions against finite differences, grad's check_grads, and the validation."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from group_cases import LAYOUTS, make_case

PNA = ("mean", "max", "min", "std")
NUMPY = {"add": np.sum, "sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "std": np.std,
         "var": np.var, "mul": np.prod}
EMPTY = {"add": 0.0, "sum": 0.0, "mean": 0.0, "max": -np.inf, "min": np.inf, "std": np.nan, "var": np.nan,
         "mul": 1.0}


def ref_multi(src, index, ops, size, ddof=0):
    """Per group and op, NumPy's reduction of the group's rows; blocks concatenated along the last axis."""
    blocks = []
    for op in ops:
        empty = EMPTY[op]
        if src.dtype.kind in "iu" and op in ("max", "min"):   # the integer identities
            empty = float(np.iinfo(src.dtype).min if op == "max" else np.iinfo(src.dtype).max)
        out = np.full((size,) + src.shape[1:], empty)
        for j in range(size):
            members = src[index == j].astype(np.float64)
            if len(members) > (ddof if op in ("std", "var") else 0):
                kw = {"ddof": ddof} if op in ("std", "var") else {}
                out[j] = NUMPY[op](members, axis=0, **kw)
        blocks.append(out if src.ndim > 1 else out[:, None])
    return np.concatenate(blocks, axis=-1)


@pytest.mark.parametrize("ops", [PNA, ("add", "max"), ("var", "mean", "std"), ("min",), ("sum", "mul", "max")])
@pytest.mark.parametrize("dtype", ("float32", "float64", "int64"))
@pytest.mark.parametrize("width", (1, 3, 64, 67))
@pytest.mark.parametrize("ddof", (0, 1))
def test_matches_numpy_per_group(backend, ops, dtype, width, ddof):
    rng = np.random.default_rng(width)
    index = rng.integers(0, 9, 200)   # group 9 of 10 stays empty
    src = (rng.standard_normal((200, width)) * 10).astype(dtype) if dtype != "int64" else \
        rng.integers(-3, 4, (200, width))   # products of a group's members stay in range
    got = backend.call(cs.scatter_multi, src, index, ops, dim_size=10, ddof=ddof)
    want = ref_multi(src, index, ops, 10, ddof)
    assert got.shape == want.shape
    rtol = 1e-4 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_one_pass_equals_single_calls_bit_for_bit(dtype, layout, mode):
    """The fused kernel applies each table's updates in index order with the core's rules: add, mean, max and
    min are scatter's bits, var and std scatter_var's / scatter_std's; NaN and signed zeros included."""
    src, index, dims, axis = make_case(31, "int", layout, mode, dtype)
    src = np.asarray(src, dtype)
    if src.size:
        src.flat[::7] = -0.0
        src.flat[::11] = np.nan
    ops = ("add", "mean", "max", "min", "var", "std")
    got = cs.scatter_multi(src, index, ops, dim_size=dims, axis=axis, mode=mode, ddof=1)
    kw = dict(dim_size=dims, axis=axis, mode=mode)
    singles = [cs.scatter(src, index, op, **kw) for op in ops[:4]]
    singles += [cs.scatter_var(src, index, ddof=1, **kw), cs.scatter_std(src, index, ddof=1, **kw)]
    feats = src.ndim > axis % src.ndim + np.ndim(index)
    want = np.concatenate([s if feats else s[..., None] for s in singles], axis=-1)
    assert_same(got, want)


def test_layout_is_pygs_multiaggregation():
    """Result i fills features i * F:(i + 1) * F, as torch.cat([aggr_i(x) ...], dim=-1) in PyG."""
    src = np.array([[1.0, 10.0], [3.0, 30.0], [5.0, 50.0]])
    got = cs.scatter_multi(src, np.array([0, 0, 1]), ("mean", "max", "std"))
    np.testing.assert_array_equal(got, [[2, 20, 3, 30, 1, 10], [5, 50, 5, 50, 0, 0]])
    one_dim = cs.scatter_multi(np.array([1.0, 3.0, 5.0]), np.array([0, 0, 1]), ("add", "max"))
    np.testing.assert_array_equal(one_dim, [[4, 3], [5, 5]])


def test_matches_pyg_multiaggregation():
    torch = pytest.importorskip("torch")
    aggr = pytest.importorskip("torch_geometric.nn.aggr")
    rng = np.random.default_rng(5)
    src = rng.standard_normal((50, 4))
    index = np.sort(rng.integers(0, 6, 50))
    multi = aggr.MultiAggregation(["mean", "max", "min", "std"])
    want = multi(torch.from_numpy(src), torch.from_numpy(index), dim_size=6).numpy()
    got = cs.scatter_multi(src, index, PNA, dim_size=6)
    present = np.bincount(index, minlength=6) > 1   # PyG: 0 for empty groups, a clamped std
    np.testing.assert_allclose(got[present], want[present], rtol=1e-6, atol=1e-6)


def test_segment_and_gather_scatter_multi(backend):
    rng = np.random.default_rng(6)
    src = rng.standard_normal((30, 5))
    index = np.sort(rng.integers(0, 7, 30))
    indptr = np.searchsorted(index, np.arange(8))
    got = backend.call(cs.segment_multi, src, indptr, PNA)
    np.testing.assert_allclose(got, ref_multi(src, index, PNA, 7), rtol=1e-12, atol=1e-12)
    x = rng.standard_normal((8, 5))
    gi, si, w = rng.integers(0, 8, 40), rng.integers(0, 6, 40), rng.standard_normal(40)
    got = backend.call(cs.gather_scatter_multi, x, gi, si, PNA, weight=w, dim_size=6)
    np.testing.assert_allclose(got, ref_multi(x[gi] * w[:, None], si, PNA, 6), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ops", [PNA, ("add", "var"), ("sqrt_n", "mul")])
@pytest.mark.parametrize("feats", (True, False))
def test_reverse_functions(backend, ops, feats):
    """VJP against central differences of the forward; the JVP its transpose; segment_multi's the same."""
    rng = np.random.default_rng(7)
    src = rng.standard_normal((12, 3) if feats else (12,))
    index = np.array([0, 1, 0, 2, 1, 0, 2, 2, 1, 0, 3, 3])
    out = cs.scatter_multi(src, index, ops)
    g = rng.standard_normal(out.shape)
    vjp = backend.call(cs.scatter_multi_vjp_src, ops, g, src, index, out)
    numeric = np.zeros_like(src)
    for i in np.ndindex(src.shape):
        step = np.zeros_like(src)
        step[i] = 1e-6
        numeric[i] = ((cs.scatter_multi(src + step, index, ops) - cs.scatter_multi(src - step, index, ops))
                      * g).sum() / 2e-6
    np.testing.assert_allclose(vjp, numeric, atol=1e-6)
    v = rng.standard_normal(src.shape)
    jvp = backend.call(cs.scatter_multi_jvp, ops, src, index, out, v)
    np.testing.assert_allclose((jvp * g).sum(), (vjp * v).sum(), rtol=1e-12)
    order = np.argsort(index, kind="stable")
    indptr = np.searchsorted(index[order], np.arange(5))
    seg_out = cs.segment_multi(src[order], indptr, ops)
    np.testing.assert_allclose(backend.call(cs.segment_multi_vjp_src, ops, g, src[order], indptr, seg_out),
                               vjp[order], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(backend.call(cs.segment_multi_jvp, ops, src[order], indptr, seg_out, v[order]),
                               jvp, rtol=1e-12, atol=1e-12)


def test_grad():
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad
    rng = np.random.default_rng(8)
    src = rng.standard_normal((12, 3))
    index = np.array([0, 1, 0, 2, 1, 0, 2, 2, 1, 0, 3, 3])
    np.testing.assert_allclose(grad.scatter_multi(src, index, PNA), cs.scatter_multi(src, index, PNA), rtol=1e-14)
    check_grads(lambda s: grad.scatter_multi(s, index, PNA), modes=["rev", "fwd"], order=2)(src)
    indptr = np.array([0, 3, 6, 12])
    check_grads(lambda s: grad.segment_multi(s, indptr, ("add", "max", "std")), modes=["rev", "fwd"], order=2)(src)
    gi, si, w = np.array([0, 3, 5, 5, 9]), np.array([1, 0, 1, 1, 0]), rng.standard_normal(5)
    check_grads(lambda s, w: grad.gather_scatter_multi(s, gi, si, PNA, weight=w), modes=["rev", "fwd"],
                order=1)(src, w)


def test_errors():
    src, index = np.ones(4), np.array([0, 1, 0, 1])
    with pytest.raises(TypeError, match="ops must be a tuple or list"):
        cs.scatter_multi(src, index, "mean")
    with pytest.raises(ValueError, match="at least one"):
        cs.scatter_multi(src, index, ())
    with pytest.raises(ValueError, match="unknown op 'median2'"):
        cs.scatter_multi(src, index, ("mean", "median2"))
    with pytest.raises(ValueError, match="'set' is an assignment"):
        cs.scatter_multi(src, index, ("mean", "set"))
    with pytest.raises(IndexError):
        cs.scatter_multi(src, np.array([0, 1, 9, 1]), PNA, dim_size=3)
    with pytest.raises(ValueError, match="blocks"):
        cs.scatter_multi_vjp_src(PNA, np.ones((2, 3)), src, index, np.ones((2, 4)))
    with pytest.raises(ValueError, match="weight has shape"):
        cs.gather_scatter_multi(np.ones((3, 2)), np.array([0, 1]), np.array([0, 0]), weight=np.ones(3))


@pytest.mark.parametrize("ops", [PNA, ("add", "var")])
def test_gather_scatter_multi_reverse_functions(backend, ops):
    """VJPs in src and weight against central differences; the JVP their transpose."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 2))
    gi, si, w = rng.integers(0, 6, 15), rng.integers(0, 4, 15), rng.standard_normal(15)
    out = cs.gather_scatter_multi(x, gi, si, ops, weight=w, dim_size=4)
    g = rng.standard_normal(out.shape)
    f = lambda x_, w_: (cs.gather_scatter_multi(x_, gi, si, ops, weight=w_, dim_size=4) * g).sum()   # noqa: E731
    gx = backend.call(cs.gather_scatter_multi_vjp_src, ops, g, x, gi, si, out, weight=w)
    gw = backend.call(cs.gather_scatter_multi_vjp_weight, ops, g, x, gi, si, out, weight=w)
    nx, nw = np.zeros_like(x), np.zeros_like(w)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1e-6
        nx[i] = (f(x + e, w) - f(x - e, w)) / 2e-6
    for i in range(w.size):
        e = np.zeros_like(w)
        e[i] = 1e-6
        nw[i] = (f(x, w + e) - f(x, w - e)) / 2e-6
    np.testing.assert_allclose(gx, nx, atol=1e-6)
    np.testing.assert_allclose(gw, nw, atol=1e-6)
    vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    jvp = backend.call(cs.gather_scatter_multi_jvp, ops, x, gi, si, out, vx, weight=w, weight_dot=vw)
    np.testing.assert_allclose((jvp * g).sum(), (gx * vx).sum() + (gw * vw).sum(), rtol=1e-11)
