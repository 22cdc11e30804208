"""Tuple indices (one integer array per addressed axis, NumPy advanced indexing / NNlib's CartesianIndex) and
``axis`` (batch dims before the index dims) in cyscatter.jax: results against ``ufunc.at`` and NumPy indexing on
the resolved coordinates and the plain-loop references of ``tests/helpers``, eagerly, under jit (FFI bridge and
callback) and vmap; derivatives against the core's split reverse functions and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp
from jax.test_util import check_grads
from reference import ref_gather, ref_scatter
from reference_extra import ref_logsumexp, ref_scatter_arg, ref_softmax, ref_var
from reference_scan import ref_scan
from testing import OPS

import cyscatter as cs
import cyscatter.jax as cj
from cyscatter.jax import _primitives as P

DIMS = (3, 4, 2)       # the destination sizes of up to three coordinates
MODES = ("raise", "drop", "wrap", "clip", "normalize_drop")
RNG = np.random.default_rng(11)
_I, _J = jnp.array([0, 1, 1, 0]), jnp.array([1, 1, 0, 2])


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(params=["ffi", "callback"])
def host_call(request):
    """Runs a jitted case through the FFI bridge and through ``jax.pure_callback``."""
    before = P.host_call()
    if P.set_host_call(request.param) != request.param:
        pytest.skip("the XLA FFI extension cyscatter.jax._ffi is not built")
    yield request.param
    P.set_host_call(before)


def coords(m, mode, shape=(9,), seed=0):
    """m coordinate arrays of `shape`: in range for "raise", else with values past either end of each axis."""
    rng = np.random.default_rng(seed)
    lo, hi = (0, 0) if mode == "raise" else (-3, 3)
    return tuple(rng.integers(lo, DIMS[k] + hi, shape) for k in range(m))


def resolve(index, dims, mode):
    """(kept mask, resolved coordinates): the modes per coordinate, vectorised with NumPy (the reference's own)."""
    kept = np.ones(index[0].shape, bool)
    out = []
    for c, n in zip(index, dims):
        if mode == "wrap":
            c = np.mod(c, n)
        elif mode == "clip":
            c = np.clip(c, 0, n - 1)
        elif mode == "normalize_drop":
            c = np.where(c < 0, c + n, c)
        kept &= (c >= 0) & (c < n)
        out.append(np.where(kept, c, 0))
    return kept, tuple(out)


UFUNCS = {"add": (np.add, 0.0), "mul": (np.multiply, 1.0), "max": (np.maximum, -np.inf), "min": (np.minimum, np.inf)}


def ufunc_at(op, src, index, dims, mode, dst=None):
    """scatter's result by ``ufunc.at`` on the kept entries of the resolved tuple index."""
    ufunc, identity = UFUNCS[op]
    out = np.full(dims + src.shape[len(index[0].shape):], identity) if dst is None else np.array(dst, np.float64)
    kept, resolved = resolve(index, dims, mode)
    ufunc.at(out, tuple(c[kept] for c in resolved), src[kept])
    return out


# ---- forward results ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", sorted(UFUNCS))
@pytest.mark.parametrize("m", [1, 2, 3])
def test_scatter_matches_ufunc_at(m, op, mode, host_call):
    index = coords(m, mode, (3, 4), seed=m)
    src = RNG.standard_normal((3, 4, 2))
    dims = DIMS[:m]
    expect = ufunc_at(op, src, index, dims, mode)
    jindex = tuple(jnp.asarray(c) for c in index)
    np.testing.assert_allclose(cj.scatter(jnp.asarray(src), jindex, op, dim_size=dims, mode=mode), expect)
    jitted = jax.jit(lambda s, ix: cj.scatter(s, ix, op, dim_size=dims, mode=mode))(jnp.asarray(src), jindex)
    np.testing.assert_allclose(jitted, expect)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", OPS)
def test_scatter_every_op_matches_the_reference(op, mode):
    index = coords(2, mode, seed=3)
    src = 0.5 + RNG.random((9, 3))
    expect = ref_scatter(src, index, op, dim_size=DIMS[:2], mode=mode)
    got = jax.jit(lambda s, ix: cj.scatter(s, ix, op, dim_size=DIMS[:2], mode=mode))(
        jnp.asarray(src), tuple(map(jnp.asarray, index)))
    np.testing.assert_allclose(got, expect, rtol=1e-12)


def test_scatter_infers_the_sizes_of_a_concrete_tuple_index():
    index = coords(3, "raise")
    src = RNG.standard_normal(9)
    out = cj.scatter(jnp.asarray(src), tuple(map(jnp.asarray, index)))
    dims = tuple(int(c.max()) + 1 for c in index)
    assert out.shape == dims
    np.testing.assert_allclose(out, ufunc_at("add", src, index, dims, "raise"))


@pytest.mark.parametrize("axis", [1, -2])
@pytest.mark.parametrize("op", ["add", "mean", "max", "set"])
def test_scatter_axis_with_a_tuple_index(op, axis):
    index = coords(2, "wrap", seed=5)
    src = RNG.standard_normal((2, 9, 3))   # batch 2, entries 9, features 3
    expect = ref_scatter(src, index, op, dim_size=DIMS[:2], axis=1, mode="wrap")
    f = jax.jit(lambda s, ix: cj.scatter(s, ix, op, dim_size=DIMS[:2], axis=axis, mode="wrap"))
    np.testing.assert_allclose(f(jnp.asarray(src), tuple(map(jnp.asarray, index))), expect)


def test_scatter_axis_with_an_integer_index():
    index = np.array([0, 2, 0, 1, 2])
    src = RNG.standard_normal((2, 3, 5, 4))
    expect = ref_scatter(src, index, "add", dim_size=3, axis=2)
    np.testing.assert_allclose(cj.scatter(jnp.asarray(src), jnp.asarray(index), axis=2), expect)
    np.testing.assert_allclose(jax.jit(lambda s: cj.scatter(s, jnp.asarray(index), axis=-2, dim_size=3))(src), expect)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_gather_matches_numpy_indexing(m, mode, host_call):
    index = coords(m, mode, (2, 5), seed=m + 7)
    src = RNG.standard_normal((*DIMS[:m], 2))
    kept, resolved = resolve(index, DIMS[:m], mode)
    expect = np.where(kept[..., None], src[resolved], 0.0)
    jindex = tuple(map(jnp.asarray, index))
    np.testing.assert_array_equal(cj.gather(jnp.asarray(src), jindex, mode=mode), expect)
    np.testing.assert_array_equal(jax.jit(lambda s, ix: cj.gather(s, ix, mode=mode))(jnp.asarray(src), jindex), expect)


@pytest.mark.parametrize("axis", [0, 1, -3])
def test_gather_axis(axis):
    index = coords(2, "clip", seed=2)
    src = RNG.standard_normal((2, *DIMS[:2], 3))
    src = src[0] if axis == 0 else src
    expect = ref_gather(src, index, axis=axis % src.ndim if axis < 0 else axis, mode="clip")
    got = jax.jit(lambda s, ix: cj.gather(s, ix, axis=axis, mode="clip"))(jnp.asarray(src), tuple(map(jnp.asarray,
                                                                                                        index)))
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("mode", ["raise", "drop", "clip"])
@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_scatter_into_matches_ufunc_at(m, op, mode):
    index = coords(m, mode, seed=m + 1)
    src, dst = RNG.standard_normal((9, 2)), RNG.standard_normal((*DIMS[:m], 2))
    expect = ufunc_at(op, src, index, DIMS[:m], mode, dst=dst)
    got = jax.jit(lambda d, s, ix: cj.scatter_into(d, s, ix, op, mode=mode))(
        jnp.asarray(dst), jnp.asarray(src), tuple(map(jnp.asarray, index)))
    np.testing.assert_allclose(got, expect)


def test_scatter_into_axis_matches_jax_at():
    i, j = jnp.array([0, 2, 2, 1]), jnp.array([1, 0, 0, 3])
    dst, src = jnp.asarray(RNG.standard_normal((2, 3, 4, 5))), jnp.asarray(RNG.standard_normal((2, 4, 5)))
    theirs = dst.at[:, i, j].add(src)
    np.testing.assert_allclose(cj.scatter_into(dst, src, (i, j), axis=1), theirs)
    np.testing.assert_allclose(jax.jit(lambda d, s: cj.scatter_into(d, s, (i, j), "max", axis=1))(dst, src),
                               dst.at[:, i, j].max(src))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_count_and_argmax(m, mode):
    index = coords(m, mode, (3, 3), seed=m + 4)
    src = RNG.permutation(18).reshape(2, 3, 3).astype(np.float64)   # batch 2 (axis=1), no ties
    jindex = tuple(map(jnp.asarray, index))
    counts = np.zeros(DIMS[:m], np.int64)
    kept, resolved = resolve(index, DIMS[:m], mode)
    np.add.at(counts, tuple(c[kept] for c in resolved), 1)
    np.testing.assert_array_equal(jax.jit(lambda ix: cj.scatter_count(ix, DIMS[:m], mode=mode))(jindex), counts)
    for fun, kind in ((cj.scatter_argmax, "max"), (cj.scatter_argmin, "min")):
        expect = ref_scatter_arg(src, index, kind, dim_size=DIMS[:m], axis=1, mode=mode)
        got = jax.jit(lambda s, ix, fun=fun: fun(s, ix, dim_size=DIMS[:m], axis=1, mode=mode))(src, jindex)
        np.testing.assert_array_equal(got, expect)


def test_any_all_with_a_tuple_index():
    index = coords(2, "raise", seed=9)
    src = RNG.random((9, 2)) > 0.6
    _, resolved = resolve(index, DIMS[:2], "raise")
    anys, alls = np.zeros((*DIMS[:2], 2), bool), np.ones((*DIMS[:2], 2), bool)
    np.logical_or.at(anys, resolved, src)
    np.logical_and.at(alls, resolved, src)
    np.testing.assert_array_equal(cj.scatter_any(jnp.asarray(src), tuple(map(jnp.asarray, index)),
                                                 dim_size=DIMS[:2]), anys)
    np.testing.assert_array_equal(cj.scatter_all(jnp.asarray(src), tuple(map(jnp.asarray, index)),
                                                 dim_size=DIMS[:2]), alls)


@pytest.mark.parametrize("mode", ["raise", "drop", "wrap"])
def test_group_statistics(mode):
    index = coords(2, mode, seed=13)
    src = RNG.standard_normal((2, 9, 2))
    jindex = tuple(map(jnp.asarray, index))
    dims = DIMS[:2]
    kw = {"dim_size": dims, "axis": 1, "mode": mode}
    np.testing.assert_allclose(jax.jit(lambda s: cj.scatter_softmax(s, jindex, **kw))(src),
                               ref_softmax(src, index, **kw), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jax.jit(lambda s: cj.scatter_log_softmax(s, jindex, **kw))(src),
                               ref_softmax(src, index, log=True, **kw), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(lambda s: cj.scatter_logsumexp(s, jindex, **kw))(src),
                               ref_logsumexp(src, index, **kw), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(lambda s: cj.scatter_std(s, jindex, ddof=1, **kw))(src),
                               ref_var(src, index, ddof=1, std=True, **kw), rtol=1e-12)
    for op in ("add", "max"):
        np.testing.assert_allclose(jax.jit(lambda s, op=op: cj.scatter_scan(s, jindex, op, **kw))(src),
                                   ref_scan(src, index, op, **kw), rtol=1e-12)


def test_median_with_a_tuple_index():
    index = coords(2, "raise", seed=17)
    src = RNG.standard_normal((9, 2))
    _, resolved = resolve(index, DIMS[:2], "raise")
    expect = np.full((*DIMS[:2], 2), np.nan)
    for target in set(zip(*resolved)):
        rows = np.flatnonzero((resolved[0] == target[0]) & (resolved[1] == target[1]))
        expect[target] = np.median(src[rows], axis=0)
    got = cj.scatter(jnp.asarray(src), tuple(map(jnp.asarray, index)), "median", dim_size=DIMS[:2])
    np.testing.assert_allclose(np.where(np.isnan(expect), 0, got), np.where(np.isnan(expect), 0, expect))


def test_empty_tuple_index_as_the_core():
    src = RNG.standard_normal((4, 2))
    np.testing.assert_array_equal(cj.scatter(jnp.asarray(src), (), "add"), cs.scatter(src, (), "add"))
    np.testing.assert_array_equal(cj.gather(jnp.asarray(src), ()), cs.gather(src, ()))
    np.testing.assert_array_equal(jax.grad(lambda s: cj.gather(s, ()).sum())(jnp.asarray(src)), np.ones((4, 2)))


def test_mixed_coordinate_dtypes():
    i8, i64 = np.array([0, 2, 1], np.int8), np.array([3, 0, 3], np.int64)
    src = np.arange(3.0)
    expect = ufunc_at("add", src, (i8.astype(np.int64), i64), (3, 4), "raise")
    np.testing.assert_array_equal(cj.scatter(jnp.asarray(src), (jnp.asarray(i8), jnp.asarray(i64))), expect)


@pytest.mark.parametrize("kinds", ["tuple-tuple", "int-tuple", "tuple-int"])
@pytest.mark.parametrize("op", ["add", "max", "mean"])
def test_gather_scatter_matches_gather_then_ufunc_at(op, kinds):
    gkind, skind = kinds.split("-")
    gi = coords(2, "raise", (7,), seed=71) if gkind == "tuple" else (RNG.integers(0, 3, 7),)
    si = coords(3, "raise", (7,), seed=72)[1:] if skind == "tuple" else (RNG.integers(0, 4, 7),)
    dims = tuple(DIMS[1:]) if skind == "tuple" else (4,)
    src = RNG.standard_normal((*(DIMS[:2] if gkind == "tuple" else (3,)), 2))
    w = 0.5 + RNG.random(7)
    messages = src[gi] * w[:, None]
    expect = ref_scatter(messages, si, op, dim_size=dims)
    index_of = (lambda c, kind: tuple(map(jnp.asarray, c)) if kind == "tuple" else jnp.asarray(c[0]))
    f = jax.jit(lambda s, w: cj.gather_scatter(s, index_of(gi, gkind), index_of(si, skind), op, weight=w,
                                               dim_size=dims if skind == "tuple" else dims[0]))
    np.testing.assert_allclose(f(jnp.asarray(src), jnp.asarray(w)), expect, rtol=1e-12)
    # derivatives: the core's split reverse functions on the same tuples
    g = RNG.standard_normal(expect.shape)
    cgi, csi = (gi if gkind == "tuple" else gi[0]), (si if skind == "tuple" else si[0])
    out = cs.gather_scatter(src, cgi, csi, op, weight=w, dim_size=dims)
    d_src, d_w = jax.vjp(f, jnp.asarray(src), jnp.asarray(w))[1](jnp.asarray(g))
    np.testing.assert_allclose(d_src, cs.gather_scatter_vjp_src(op, g, src, cgi, csi, out, weight=w, dim_size=dims))
    np.testing.assert_allclose(d_w, cs.gather_scatter_vjp_weight(op, g, src, cgi, csi, out, weight=w, dim_size=dims))


def test_gather_scatter_with_a_plan_of_tuple_indices():
    gi, si = coords(2, "raise", (8,), seed=73), coords(3, "raise", (8,), seed=74)[1:]
    src = RNG.standard_normal((*DIMS[:2], 3))
    plan = cs.gather_scatter_plan(gi, si, src_size=DIMS[:2], dim_size=DIMS[1:])
    f = jax.jit(lambda s: cj.gather_scatter(s, op="add", plan=plan))
    expect = ref_scatter(src[gi], si, "add", dim_size=DIMS[1:])
    np.testing.assert_allclose(f(jnp.asarray(src)), expect)
    g = RNG.standard_normal(expect.shape)
    grad = jax.grad(lambda s: jnp.sum(f(s) * g))(jnp.asarray(src))
    expect_grad = np.zeros_like(src)
    np.add.at(expect_grad, gi, g[si])   # the transpose: gather the cotangent, scatter it back to the sources
    np.testing.assert_allclose(grad, expect_grad)


def test_gather_scatter_indices_of_different_shapes():
    with pytest.raises(ValueError, match=r"gather_index has shape \(3,\) but scatter_index has shape \(4,\)"):
        cj.gather_scatter(jnp.ones((3, 2)), (jnp.array([0, 1, 2]),) * 2, (_I, _J), dim_size=(2, 3))


# ---- derivatives --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["raise", "drop", "wrap"])
@pytest.mark.parametrize("op", ["add", "mean", "max", "min", "mul", "sqrt_n", "set"])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_scatter_vjp_and_jvp_are_the_split_reverse_functions(m, op, mode):
    index = coords(m, mode, (2, 4), seed=m + 20)
    src = 0.5 + RNG.random((2, 4, 3))
    src[0, 1] = src[1, 2]   # a tie, for max/min when the two meet
    g, t = RNG.standard_normal((*DIMS[:m], 3)), RNG.standard_normal(src.shape)
    out = cs.scatter(src, index, op, dim_size=DIMS[:m], mode=mode)
    f = jax.jit(lambda s: cj.scatter(s, tuple(map(jnp.asarray, index)), op, dim_size=DIMS[:m], mode=mode))
    got, vjp = jax.vjp(f, jnp.asarray(src))
    np.testing.assert_allclose(got, out)
    np.testing.assert_allclose(vjp(jnp.asarray(g))[0], cs.scatter_vjp_src(op, g, src, index, out, mode=mode),
                               rtol=1e-12)
    np.testing.assert_allclose(jax.jvp(f, (jnp.asarray(src),), (jnp.asarray(t),))[1],
                               cs.scatter_jvp(op, src, index, out, t, mode=mode), rtol=1e-12)


def test_scatter_grad_with_axis_matches_finite_differences():
    index = coords(2, "clip", seed=4)
    src = 0.5 + RNG.random((2, 9, 3))
    g = RNG.standard_normal((2, *DIMS[:2], 3))
    f = lambda s: cj.scatter(s, tuple(map(jnp.asarray, index)), "mean", dim_size=DIMS[:2], axis=1, mode="clip")
    grad = jax.grad(lambda s: jnp.sum(f(s) * g))(jnp.asarray(src))
    from reference import numeric_vjp
    expect = numeric_vjp(lambda s: ref_scatter(s, index, "mean", dim_size=DIMS[:2], axis=1, mode="clip"), src, g)
    np.testing.assert_allclose(grad, expect, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_gather_vjp_is_gather_vjp_src(m):
    index = coords(m, "wrap", (6,), seed=m + 30)
    src = RNG.standard_normal((*DIMS[:m], 2))
    g = RNG.standard_normal((6, 2))
    f = jax.jit(lambda s: cj.gather(s, tuple(map(jnp.asarray, index)), mode="wrap"))
    _, vjp = jax.vjp(f, jnp.asarray(src))
    np.testing.assert_allclose(vjp(jnp.asarray(g))[0], cs.gather_vjp_src(g, index, src.shape, mode="wrap"))


@pytest.mark.parametrize("op", ["add", "max", "mul", "set"])
def test_scatter_into_vjp_is_the_split_reverse_functions(op):
    index = coords(2, "drop", seed=41)
    src, dst = 0.5 + RNG.random((9, 2)), 0.5 + RNG.random((*DIMS[:2], 2))
    g = RNG.standard_normal(dst.shape)
    out = cs.scatter_into(dst.copy(), src, index, op, mode="drop")
    f = jax.jit(lambda d, s: cj.scatter_into(d, s, tuple(map(jnp.asarray, index)), op, mode="drop"))
    got, vjp = jax.vjp(f, jnp.asarray(dst), jnp.asarray(src))
    np.testing.assert_allclose(got, out)
    d_dst, d_src = vjp(jnp.asarray(g))
    np.testing.assert_allclose(d_dst, cs.scatter_vjp_dst(op, g, dst, src, index, out, mode="drop"))
    np.testing.assert_allclose(d_src, cs.scatter_vjp_src(op, g, src, index, out, dst=dst, mode="drop"))


def test_group_statistic_vjps_are_the_split_reverse_functions():
    index = coords(2, "raise", seed=43)
    src = RNG.standard_normal((9, 2))
    jindex = tuple(map(jnp.asarray, index))
    g = RNG.standard_normal((9, 2))
    out, vjp = jax.vjp(lambda s: cj.scatter_softmax(s, jindex), jnp.asarray(src))
    np.testing.assert_allclose(vjp(jnp.asarray(g))[0], cs.scatter_softmax_vjp(g, np.asarray(out), index))
    gv = RNG.standard_normal((*DIMS[:2], 2))
    out, vjp = jax.vjp(lambda s: cj.scatter_var(s, jindex, dim_size=DIMS[:2]), jnp.asarray(src))
    np.testing.assert_allclose(vjp(jnp.asarray(gv))[0], cs.scatter_var_vjp(gv, src, index, np.asarray(out)))


@pytest.mark.full   # finite differences through jitted callbacks: seconds a case
@pytest.mark.parametrize("fun", ["scatter_add", "scatter_max", "scatter_mean_axis", "gather", "scatter_into_min",
                                 "scan_add", "gather_scatter_max"])
def test_second_order(fun):
    index = tuple(map(jnp.asarray, coords(2, "raise", (12,), seed=51)))
    src = jnp.asarray(0.5 + RNG.permutation(36).reshape(12, 3) / 36)
    calls = {
        "scatter_add": lambda s: cj.scatter(s, index, "add", dim_size=DIMS[:2]),
        "scatter_max": lambda s: cj.scatter(s, index, "max", dim_size=DIMS[:2], fill_value=0.0),
        "scatter_mean_axis": lambda s: cj.scatter(s.T, index, "mean", dim_size=DIMS[:2], axis=1),
        "gather": lambda s: cj.gather(s.reshape(3, 4, 3), index),
        # dst off every src value (0.5 + k / 36): no tie for the finite differences to straddle
        "scatter_into_min": lambda s: cj.scatter_into(jnp.full((*DIMS[:2], 3), 1.01), s, index, "min"),
        "scan_add": lambda s: cj.scatter_scan(s, index, "add"),
        "gather_scatter_max": lambda s: cj.gather_scatter(s.reshape(3, 4, 3), index, index[::-1], "max",
                                                          dim_size=(4, 3), fill_value=0.0),
    }
    f = calls[fun]
    check_grads(lambda s: jnp.sin(f(s)) * f(s), (src,), order=2, modes=["rev", "fwd"])


# ---- vmap ---------------------------------------------------------------------------------------------------------

def test_vmap_over_values_and_over_coordinates():
    index = coords(2, "drop", seed=61)
    srcs = RNG.standard_normal((3, 9, 2))
    f = lambda s, i, j: cj.scatter(s, (i, j), "max", dim_size=DIMS[:2], mode="drop")
    expect = np.stack([ufunc_at("max", s, index, DIMS[:2], "drop") for s in srcs])
    i, j = map(jnp.asarray, index)
    np.testing.assert_allclose(jax.vmap(f, (0, None, None))(jnp.asarray(srcs), i, j), expect)
    # batched coordinates: one call per batch element
    js = jnp.stack([j, (j + 1) % 4, j])
    expect = np.stack([ufunc_at("max", srcs[b], (index[0], np.asarray(js[b])), DIMS[:2], "drop") for b in range(3)])
    np.testing.assert_allclose(jax.jit(jax.vmap(f, (0, None, 0)))(jnp.asarray(srcs), i, js), expect)
    grads = jax.vmap(jax.grad(lambda s, j: f(s, i, j).sum()))(jnp.asarray(srcs), js)
    for b in range(3):
        out = cs.scatter(srcs[b], (index[0], np.asarray(js[b])), "max", dim_size=DIMS[:2], mode="drop")
        np.testing.assert_allclose(grads[b], cs.scatter_vjp_src("max", np.ones_like(out), srcs[b],
                                                                (index[0], np.asarray(js[b])), out, mode="drop"))


def test_vmap_gather_scatter_over_values_and_over_an_index():
    gi, si = coords(2, "raise", (8,), seed=65), coords(2, "raise", (8,), seed=66)
    srcs = RNG.standard_normal((3, *DIMS[:2], 2))
    f = lambda s, j: cj.gather_scatter(s, tuple(map(jnp.asarray, gi)), (jnp.asarray(si[0]), j), "add",
                                       dim_size=DIMS[:2])
    js = np.stack([si[1], (si[1] + 1) % 4, si[1][::-1]])
    got = jax.jit(jax.vmap(f))(jnp.asarray(srcs), jnp.asarray(js))
    for b in range(3):
        np.testing.assert_allclose(got[b], ref_scatter(srcs[b][gi], (si[0], js[b]), "add", dim_size=DIMS[:2]))


def test_vmap_gather_and_count():
    index = coords(3, "raise", seed=63)
    srcs = RNG.standard_normal((2, *DIMS))
    jindex = tuple(map(jnp.asarray, index))
    np.testing.assert_array_equal(jax.vmap(lambda s: cj.gather(s, jindex))(jnp.asarray(srcs)),
                                  np.stack([s[index] for s in srcs]))
    ks = jnp.stack([jindex[2], 1 - jindex[2]])
    counts = jax.vmap(lambda k: cj.scatter_count((jindex[0], jindex[1], k), DIMS))(ks)
    for b in range(2):
        expect = np.zeros(DIMS, np.int64)
        np.add.at(expect, (index[0], index[1], np.asarray(ks[b])), 1)
        np.testing.assert_array_equal(counts[b], expect)


# ---- errors -------------------------------------------------------------------------------------------------------

def test_coordinates_of_different_shapes_are_refused_as_the_core_refuses_them():
    with pytest.raises(ValueError, match=r"index\[1\] has shape \(2, 1\) but index\[0\] has shape \(4,\)"):
        cj.scatter(jnp.ones(4), (_I, jnp.zeros((2, 1), int)))
    with pytest.raises(ValueError, match=r"index\[1\] has shape \(\)"):
        cj.gather(jnp.ones((2, 3)), (_I, jnp.asarray(0)))
    with pytest.raises(ValueError, match="one shape"):   # the core says the same
        cs.scatter(np.ones(4), (np.asarray(_I), np.zeros((2, 1), int)))


@pytest.mark.parametrize("dim_size, error, says", [
    (3, ValueError, r"dim_size=3 gives 1 sizes but the index addresses 2 axes"),
    ((2, 3, 4), ValueError, "gives 3 sizes"),
    ((2, 2.5), TypeError, r"dim_size=\(2, 2.5\) must be a non-negative integer"),
    ((2, True), TypeError, "dim_size"),
    ((2, -1), ValueError, "must be non-negative"),
])
def test_dim_size_of_a_tuple_index(dim_size, error, says):
    with pytest.raises(error, match=says):
        cj.scatter(jnp.ones(4), (_I, _J), dim_size=dim_size)


def test_traced_tuple_index_needs_its_sizes():
    with pytest.raises(ValueError, match=r"pass dim_size= \(a tuple of 2 ints, one per addressed axis\)"):
        jax.jit(lambda i, j: cj.scatter(jnp.ones(4), (i, j)))(_I, _J)
    with pytest.raises(ValueError, match=r"dim_size="):
        jax.jit(lambda i, j: cj.scatter_count((i, j)))(_I, _J)


def test_a_non_integer_coordinate_is_named():
    with pytest.raises(TypeError, match=r"index\[1\] must hold integers, got dtype float"):
        cj.scatter(jnp.ones(4), (_I, _J.astype(float)))
    with pytest.raises(TypeError, match=r"index\[0\] must be a jax\.Array of integers"):
        cj.scatter(jnp.ones(4), ([0, 1, 1, 0], _J))


def test_coordinates_without_a_common_integer_dtype_are_refused():
    with pytest.raises(TypeError, match=r"index: the arrays of a tuple index have dtypes \['int\d+', 'uint64'\]"):
        cj.scatter(jnp.ones(4), (_I, jnp.asarray(np.array([1, 1, 0, 2], np.uint64))))


@pytest.mark.parametrize("axis, error, says", [
    (3, ValueError, r"axis=3 does not fit"),
    (-4, ValueError, r"axis=-4 does not fit"),
    (True, TypeError, r"axis must be an integer, got True"),
    (1.0, TypeError, r"axis must be an integer"),
])
def test_axis_is_checked_as_the_core_checks_it(axis, error, says):
    with pytest.raises(error, match=says):
        cj.scatter(jnp.ones((2, 4, 3)), _I, axis=axis, dim_size=2)
    with pytest.raises(error, match=says):
        cs.scatter(np.ones((2, 4, 3)), np.asarray(_I), axis=axis, dim_size=2)


def test_src_not_holding_the_index_at_axis():
    with pytest.raises(ValueError, match=r"src shape \(2, 5\) does not hold at axis 1 the index shape \(4,\)"):
        cj.scatter(jnp.ones((2, 5)), _I, axis=1)


def test_scatter_into_dst_not_matching_src_around_the_addressed_dims():
    with pytest.raises(ValueError, match=r"dst shape \(3, 3, 2\) does not hold"):
        cj.scatter_into(jnp.zeros((3, 3, 2)), jnp.ones((4, 3)), (_I, _J))
    with pytest.raises(ValueError, match=r"src's batch shape \(2,\)"):
        cj.scatter_into(jnp.zeros((3, 2, 3)), jnp.ones((2, 4)), (_I, _J), axis=1)


def test_out_of_range_coordinate_names_it():
    with pytest.raises(IndexError, match=r"index\[1\]\[3\] = 2 is out of bounds for an indexed axis of size 2"):
        cj.scatter(jnp.ones(4), (_I, _J), dim_size=(2, 2))
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"IndexError: index\[1\]\[3\] = 2"):
        jax.jit(lambda i, j: cj.scatter(jnp.ones(4), (i, j), dim_size=(2, 2)))(_I, _J).block_until_ready()


def test_functions_without_axis_hint_moveaxis():
    with pytest.raises(TypeError, match="jnp.moveaxis"):
        cj.segment(jnp.ones(4), jnp.array([0, 2, 4]), axis=0)
