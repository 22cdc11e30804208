"""The empty index tuple (``index=()``, NumPy's ``a[()]``: one entry per element, reaching the whole destination)
in the message-passing, reverse and group functions on Dask, against the in-memory functions."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import cyscatter as cs
import cyscatter.dask as csd

SHAPE = (3, 4)
AXES = [0, 1, -1, 2]
OPS = ["add", "mean", "max", "mul", "div", "nanprod", "fmin"]
GROUP_FUNCS = ["scatter_softmax", "scatter_log_softmax", "scatter_logsumexp", "scatter_var", "scatter_std",
               "scatter_nanvar", "scatter_nanstd"]


def arrays(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, SHAPE).astype(np.float64)
    x[0, 1] = np.nan
    return rng, x, da.from_array(x, chunks=(2, (1, 3)))


def same(got, expected):
    got = got.compute()
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("op", OPS)
def test_scatter_reverse_with_empty_index_tuple(op, axis):
    rng, x, xd = arrays(1)
    grad, init = rng.standard_normal(SHAPE), rng.integers(1, 3, SHAPE).astype(np.float64)
    out = cs.scatter(x, (), op, axis=axis)
    same(csd.scatter_vjp_src(op, grad, xd, (), out, axis=axis), cs.scatter_vjp_src(op, grad, x, (), out, axis=axis))
    out = cs.scatter_into(init.copy(), x, (), op, axis=axis)
    same(csd.scatter_vjp_src(op, grad, xd, (), out, dst=init, axis=axis, dim_chunks=()),
         cs.scatter_vjp_src(op, grad, x, (), out, dst=init, axis=axis))
    same(csd.scatter_vjp_dst(op, grad, init, xd, (), out, axis=axis),
         cs.scatter_vjp_dst(op, grad, init, x, (), out, axis=axis))
    same(csd.gather_vjp_src(da.from_array(grad, chunks=2), (), SHAPE, axis=axis),
         cs.gather_vjp_src(grad, (), SHAPE, axis=axis))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("op", OPS)
def test_gather_scatter_with_empty_index_tuples(op, axis):
    rng, x, xd = arrays(2)
    grad, x_dot, w = rng.standard_normal(SHAPE), rng.standard_normal(SHAPE), np.float64(1.5)
    out = cs.gather_scatter(x, (), (), op, weight=w, axis=axis)
    same(csd.gather_scatter(xd, (), (), op, weight=w, axis=axis, dim_size=()), out)
    same(csd.gather_scatter_vjp_src(op, grad, xd, (), (), out, weight=w, axis=axis),
         cs.gather_scatter_vjp_src(op, grad, x, (), (), out, weight=w, axis=axis))
    same(csd.gather_scatter_vjp_weight(op, grad, xd, (), (), out, weight=w, axis=axis),
         cs.gather_scatter_vjp_weight(op, grad, x, (), (), out, weight=w, axis=axis))
    same(csd.gather_scatter_jvp(op, xd, (), (), out, x_dot, weight=w, axis=axis),
         cs.gather_scatter_jvp(op, x, (), (), out, x_dot, weight=w, axis=axis))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("fun", GROUP_FUNCS)
def test_group_functions_with_empty_index_tuple(fun, axis):
    _, x, xd = arrays(3)
    same(getattr(csd, fun)(xd, (), axis=axis), getattr(cs, fun)(x, (), axis=axis))
    same(getattr(csd, fun)(xd, (), axis=axis, dim_size=()), getattr(cs, fun)(x, (), axis=axis))


def test_empty_index_tuple_refuses_sizes_and_a_lone_empty_index():
    _, x, xd = arrays(4)
    with pytest.raises(ValueError, match="dim_size"):
        csd.scatter_softmax(xd, (), dim_size=3)
    with pytest.raises(ValueError, match="dim_chunks"):
        csd.scatter_vjp_src("add", x, xd, (), x, dim_chunks=2)
    with pytest.raises(ValueError, match="dim_size"):
        csd.gather_scatter(xd, np.zeros(2, int), (), "add", dim_size=3)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("which", ["gather", "scatter"])
@pytest.mark.parametrize("op", ["add", "max", "mul"])
def test_one_empty_index_tuple_in_gather_scatter(op, which, axis):
    # gather_index=() gathers the whole src for every edge; scatter_index=() sends every edge to the whole output
    rng, x, xd = arrays(5)
    edges = np.array(rng.integers(0, 3))   # the other index is 0-d: one entry per edge of each
    g, t = ((), edges) if which == "gather" else (edges, ())
    dims = {"dim_size": 3} if which == "gather" else {}
    out = cs.gather_scatter(x, g, t, op, axis=axis, **dims)
    ds = {"dim_size": 3, "dim_chunks": 2} if which == "gather" else {}
    same(csd.gather_scatter(xd, g, t, op, axis=axis, **ds), out)
    grad = rng.standard_normal(out.shape)
    same(csd.gather_scatter_vjp_src(op, grad, xd, g, t, out, axis=axis, **ds),
         cs.gather_scatter_vjp_src(op, grad, x, g, t, out, axis=axis, **dims))
    same(csd.gather_scatter_jvp(op, xd, g, t, out, x + 1, axis=axis, **ds),
         cs.gather_scatter_jvp(op, x, g, t, out, x + 1, axis=axis, **dims))
