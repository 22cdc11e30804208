"""The split reverse functions on Dask arrays (gather_scatter's VJPs and JVP, scatter_vjp_src/_dst, gather_vjp_src)
against the in-memory ones, on random chunkings; ties across block pairs, dropped edges; a GCN training step."""
import zlib

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
from testing import REDUCTION_OPS

import cyscatter as cs
import cyscatter.dask as csd

REVERSE_OPS = REDUCTION_OPS
N_SRC, N_DST, N_EDGES, F = 10, 7, 36, 2
CHUNKINGS = {   # (src rows, edges, destination rows)
    "one": ((N_SRC,), (N_EDGES,), None),
    "uneven": ((3, 0, 1, 6), (11, 0, 1, 24), (2, 0, 1, 4)),
    "singles": ((1,) * N_SRC, (11, 0, 1, 24), 1),   # size-1 partitions; edges cut in few chunks: a small graph
    "single_edges": ((N_SRC,), (1,) * N_EDGES, (3, 4)),
}


# size-1 chunks make graphs of thousands of tasks: over a second a case, in the full tier
CHUNKING_PARAMS = [c if c in ("one", "uneven") else pytest.param(c, marks=pytest.mark.full) for c in CHUNKINGS]


def case(op, chunking, weight, mode):
    rng = np.random.default_rng(zlib.crc32(repr((op, chunking, weight, mode)).encode()))
    src = rng.integers(-2, 3, (N_SRC, F)).astype(np.float64)   # small integers: ties across pairs
    src[2, 1] = np.nan
    g, t = rng.integers(0, N_SRC, N_EDGES), rng.integers(0, N_DST, N_EDGES)
    if mode == "drop":
        g[4], t[9] = N_SRC, -1
    w = None if not weight else rng.integers(1, 3, N_EDGES).astype(np.float64)
    return rng, src, g, t, w


def close(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 1e-5 if expected.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["raise", "drop"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("chunking", CHUNKING_PARAMS)
@pytest.mark.parametrize("op", REVERSE_OPS)
def test_gather_scatter_reverse_matches_in_memory(op, chunking, weight, mode):
    rng, src, g, t, w = case(op, chunking, weight, mode)
    s_chunks, e_chunks, d_chunks = CHUNKINGS[chunking]
    out = cs.gather_scatter(src, g, t, op, weight=w, dim_size=N_DST, mode=mode)
    grad = rng.standard_normal((N_DST, F))
    src_dot = rng.standard_normal((N_SRC, F))
    w_dot = None if w is None else rng.standard_normal(N_EDGES)
    xs, gs = da.from_array(src, chunks=(s_chunks, 1)), da.from_array(g, chunks=e_chunks)
    kw = {"weight": w, "dim_size": N_DST, "mode": mode, "dim_chunks": d_chunks, "split_every": 2}
    close(csd.gather_scatter_vjp_src(op, grad, xs, gs, t, out, **kw).compute(),
          cs.gather_scatter_vjp_src(op, grad, src, g, t, out, weight=w, dim_size=N_DST, mode=mode))
    close(csd.gather_scatter_vjp_weight(op, grad, xs, gs, t, out, **kw).compute(),
          cs.gather_scatter_vjp_weight(op, grad, src, g, t, out, weight=w, dim_size=N_DST, mode=mode))
    close(csd.gather_scatter_jvp(op, xs, gs, t, out, src_dot, weight_dot=w_dot, **kw).compute(),
          cs.gather_scatter_jvp(op, src, g, t, out, src_dot, weight=w, weight_dot=w_dot, dim_size=N_DST, mode=mode))


@pytest.mark.parametrize("op", ["max", "fmin"])
def test_ops_that_are_not_linear_need_out_as_in_memory(op):
    rng, src, g, t, w = case(op, "uneven", True, "raise")
    grad = rng.standard_normal((N_DST, F))
    with pytest.raises(TypeError, match="needs out"):
        cs.gather_scatter_vjp_src(op, grad, src, g, t, weight=w, dim_size=N_DST)
    with pytest.raises(TypeError, match="needs out"):
        csd.gather_scatter_vjp_src(op, grad, da.from_array(src, chunks=3), da.from_array(g, chunks=8), t,
                                   weight=w, dim_size=N_DST, dim_chunks=3)


@pytest.mark.parametrize("dst", [False, True])
@pytest.mark.parametrize("chunking", CHUNKING_PARAMS)
@pytest.mark.parametrize("op", REVERSE_OPS)
def test_scatter_reverse_matches_in_memory(op, chunking, dst):
    rng, src, _, t, _ = case(op, chunking, False, "raise")
    src = rng.integers(-2, 3, (N_EDGES, F)).astype(np.float64)
    e_chunks, d_chunks = CHUNKINGS[chunking][1:]
    init = rng.integers(-2, 3, (N_DST, F)).astype(np.float64) if dst else None
    out = cs.scatter(src, t, op, dim_size=N_DST) if init is None else cs.scatter_into(init.copy(), src, t, op)
    grad = rng.standard_normal((N_DST, F))
    srcs, ts = da.from_array(src, chunks=(e_chunks, 1)), da.from_array(t, chunks=e_chunks)
    close(csd.scatter_vjp_src(op, da.from_array(grad, chunks=3), srcs, ts, out, dst=init, dim_chunks=d_chunks)
          .compute(), cs.scatter_vjp_src(op, grad, src, t, out, dst=init))
    if init is not None:
        close(csd.scatter_vjp_dst(op, da.from_array(grad, chunks=(3, 1)), init, srcs, ts, out).compute(),
              cs.scatter_vjp_dst(op, grad, init, src, t, out))


def _winner_loop(op, src, index, size):
    """Per destination element (row r, feature f): the position of the entry an assignment leaves there, or -1, by a
    plain loop in index order (the NaN-skipping twins pass over NaN entries)."""
    winner = np.full((size, src.shape[1]), -1)
    order = range(len(index)) if op in ("set", "nanlast") else range(len(index) - 1, -1, -1)
    for k in order:
        for f in range(src.shape[1]):
            if 0 <= index[k] < size and not (op.startswith("nan") and np.isnan(src[k, f])):
                winner[index[k], f] = k
    return winner


@pytest.mark.parametrize("mode", ["raise", "drop", "wrap", "clip", "normalize_drop"])
@pytest.mark.parametrize("op", ["set", "first", "nanfirst", "nanlast"])
def test_assignment_reverse_matches_loop_and_in_memory(op, mode):
    """An assignment's cotangent goes to the entry that won each element (src) or to the initial value where no
    entry reached it (dst), whichever chunk of the entries holds the winner."""
    rng = np.random.default_rng(zlib.crc32(repr((op, mode)).encode()))
    src = rng.standard_normal((N_EDGES, F))
    src[rng.random(src.shape) < 0.3] = np.nan
    t = rng.integers(0, N_DST - 2, N_EDGES) if mode == "raise" else rng.integers(-N_DST - 2, N_DST + 2, N_EDGES)
    init = rng.standard_normal((N_DST, F))
    out = cs.scatter(src, t, op, dim_size=N_DST, mode=mode)
    into = cs.scatter_into(init.copy(), src, t, op, mode=mode)
    grad = rng.standard_normal((N_DST, F))
    rows = {"raise": t, "drop": t, "wrap": t % N_DST, "clip": np.clip(t, 0, N_DST - 1),
            "normalize_drop": np.where(t < 0, t + N_DST, t)}[mode]
    winner = _winner_loop(op, src, rows, N_DST)
    want_src = np.zeros_like(src)
    for r, f in zip(*np.nonzero(winner >= 0)):
        want_src[winner[r, f], f] = grad[r, f]
    want_dst = np.where(winner >= 0, 0.0, grad)
    for e_chunks in [(N_EDGES,), (11, 0, 1, 24), (1,) * N_EDGES]:
        srcs, ts = da.from_array(src, chunks=(e_chunks, 1)), da.from_array(t, chunks=e_chunks)
        for initial, result in ((None, out), (init, into)):
            got = csd.scatter_vjp_src(op, grad, srcs, ts, result, dst=initial, mode=mode).compute()
            np.testing.assert_array_equal(got, want_src)
            np.testing.assert_array_equal(got, cs.scatter_vjp_src(op, grad, src, t, result, dst=initial, mode=mode))
        got = csd.scatter_vjp_dst(op, grad, init, srcs, ts, into, mode=mode).compute()
        np.testing.assert_array_equal(got, want_dst)
        np.testing.assert_array_equal(got, cs.scatter_vjp_dst(op, grad, init, src, t, into, mode=mode))


def test_assignment_reverse_with_tuple_index_and_batch_dims():
    rng = np.random.default_rng(5)
    src = rng.standard_normal((2, 3, 4, F))   # batch 2, index dims (3, 4), features F
    src[rng.random(src.shape) < 0.3] = np.nan
    index = (rng.integers(0, 3, (3, 4)), rng.integers(0, 2, (3, 4)))
    grad = rng.standard_normal((2, 3, 2, F))
    init = rng.standard_normal((2, 3, 2, F))
    for op in ("set", "first", "nanfirst", "nanlast"):
        into = cs.scatter_into(init.copy(), src, index, op, axis=1)
        srcs = da.from_array(src, chunks=(1, 2, 3, 1))
        dindex = tuple(da.from_array(i, chunks=(2, 3)) for i in index)
        np.testing.assert_array_equal(csd.scatter_vjp_src(op, grad, srcs, dindex, into, dst=init, axis=1).compute(),
                                      cs.scatter_vjp_src(op, grad, src, index, into, dst=init, axis=1))
        np.testing.assert_array_equal(csd.scatter_vjp_dst(op, grad, init, srcs, dindex, into, axis=1).compute(),
                                      cs.scatter_vjp_dst(op, grad, init, src, index, into, axis=1))


@pytest.mark.parametrize("op", ["mul", "nanprod"])
def test_products_with_zeros_across_pairs_are_exact(op):
    # each destination's entries lie in different source partitions: one zero, two zeros, a zero and a NaN,
    # a zero in the initial dst; small integers, so the products are exact and so must be the cotangents
    src = np.array([[0., 2.], [2., 0.], [3., np.nan], [0., 5.], [4., 0.], [np.nan, 1.]])
    g = np.array([0, 1, 2, 3, 4, 5, 0, 2, 4])
    t = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    init = np.array([[1., 2.], [0., 3.], [2., 1.]])
    grad = np.array([[1., 2.], [3., 5.], [7., 11.]])
    xs = da.from_array(src, chunks=((1, 2, 3), 1))
    kw = {"dim_size": 3, "dim_chunks": (1, 2), "split_every": 2}
    out = cs.gather_scatter(src, g, t, op, dim_size=3)
    for got, expected in [
            (csd.gather_scatter_vjp_src(op, grad, xs, g, t, out, **kw), cs.gather_scatter_vjp_src(op, grad, src, g, t, out, dim_size=3)),
            (csd.gather_scatter_jvp(op, xs, g, t, out, src + 1, **kw), cs.gather_scatter_jvp(op, src, g, t, out, src + 1, dim_size=3))]:
        np.testing.assert_array_equal(got.compute(), expected)
    msgs = src[g]
    out = cs.scatter_into(init.copy(), msgs, t, op)
    got = csd.scatter_vjp_src(op, grad, da.from_array(msgs, chunks=(2, 1)), t, out, dst=init, dim_chunks=(2, 1))
    np.testing.assert_array_equal(got.compute(), cs.scatter_vjp_src(op, grad, msgs, t, out, dst=init))
    got = csd.scatter_vjp_dst(op, grad, init, da.from_array(msgs, chunks=(4, 1)), t, out)
    np.testing.assert_array_equal(got.compute(), cs.scatter_vjp_dst(op, grad, init, msgs, t, out))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128])
@pytest.mark.parametrize("op", ["mul", "div", "nanprod"])
def test_products_in_other_dtypes_match_in_memory(op, dtype):
    rng = np.random.default_rng(zlib.crc32(repr((op, np.dtype(dtype).name)).encode()))
    src = rng.integers(-2, 3, (N_SRC, F)).astype(dtype)
    g, t = rng.integers(0, N_SRC, N_EDGES), rng.integers(0, N_DST, N_EDGES)
    w = rng.integers(1, 3, N_EDGES).astype(dtype)
    out = cs.gather_scatter(src, g, t, op, weight=w, dim_size=N_DST)
    grad = rng.standard_normal((N_DST, F)).astype(np.float32 if dtype == np.float32 else np.float64)
    xs, gs = da.from_array(src, chunks=((3, 0, 1, 6), 1)), da.from_array(g, chunks=(11, 0, 1, 24))
    kw = {"weight": w, "dim_size": N_DST, "dim_chunks": (2, 0, 1, 4)}
    tol = {"rtol": 1e-4, "atol": 1e-4 * np.abs(out).max()} if dtype == np.float32 else {"rtol": 1e-12}
    for fun in ("gather_scatter_vjp_src", "gather_scatter_vjp_weight"):
        got = getattr(csd, fun)(op, grad, xs, gs, t, out, **kw).compute()
        expected = getattr(cs, fun)(op, grad, src, g, t, out, weight=w, dim_size=N_DST)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, **tol)


@pytest.mark.parametrize("shape", [(1, F), (), (N_EDGES, 1), (1, 1), (F,)])
@pytest.mark.parametrize("op", ["add", "mean", "max", "mul", "div", "nanprod", "fmin"])
def test_scatter_reverse_with_src_that_broadcasts(op, shape):
    # src stands for its broadcast to I + F (as NumPy's ufunc.at); its cotangent sums over the broadcast dims
    rng = np.random.default_rng(zlib.crc32(repr((op, shape)).encode()))
    src = rng.integers(-2, 3, shape).astype(np.float64)
    t = rng.integers(0, N_DST, N_EDGES)
    init = rng.integers(-2, 3, (N_DST, F)).astype(np.float64)
    grad = rng.standard_normal((N_DST, F))
    full = np.broadcast_to(src, (N_EDGES, F))
    for dst in (None, init):
        out = cs.scatter(full, t, op, dim_size=N_DST) if dst is None else cs.scatter_into(init.copy(), full, t, op)
        close(csd.scatter_vjp_src(op, grad, da.from_array(src), da.from_array(t, chunks=(11, 0, 1, 24)), out,
                                  dst=dst, dim_chunks=(3, 4)).compute(),
              cs.scatter_vjp_src(op, grad, src, t, out, dst=dst))
    close(csd.scatter_vjp_dst(op, grad, init, da.from_array(src), da.from_array(t, chunks=5), out).compute(),
          cs.scatter_vjp_dst(op, grad, init, src, t, out))


def test_scatter_reverse_refuses_src_that_does_not_broadcast():
    t = np.arange(N_EDGES) % N_DST
    grad = np.ones((N_DST, F))
    with pytest.raises(ValueError, match="does not broadcast") as expected:
        cs.scatter_vjp_src("add", grad, np.ones(3), t, grad)
    with pytest.raises(ValueError) as got:
        csd.scatter_vjp_src("add", grad, da.ones(3), t, grad)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("mode", ["raise", "drop", "wrap"])
def test_gather_vjp_src_matches_in_memory(mode):
    rng = np.random.default_rng(3)
    index = rng.integers(-2 if mode != "raise" else 0, N_DST + (2 if mode != "raise" else 0), N_EDGES)
    grad = rng.standard_normal((2, N_EDGES, F)).astype(np.float32)
    got = csd.gather_vjp_src(da.from_array(grad, chunks=(1, 7, 1)), da.from_array(index, chunks=7), (2, N_DST, F),
                             axis=1, mode=mode, dim_chunks=3)
    close(got.compute(), cs.gather_vjp_src(grad, index, (2, N_DST, F), axis=1, mode=mode))


def test_reverse_argument_errors_at_graph_time():
    _, src, g, t, _ = case("add", "one", True, "raise")
    xs = da.from_array(src, chunks=3)
    with pytest.raises(ValueError, match="grad_out"):
        csd.gather_scatter_vjp_src("add", np.ones((N_DST + 1, F)), xs, g, t, dim_size=N_DST)
    with pytest.raises(ValueError, match="src_dot"):
        csd.gather_scatter_jvp("add", xs, g, t, None, np.ones((3, F)), dim_size=N_DST)
    with pytest.raises(ValueError, match="grad_out"):
        csd.gather_vjp_src(np.ones((3, F)), t, (N_DST, F))


# ---- a GCN training step, forward and backward, on Dask ------------------------------------------------------

def gcn_step(xp, propagate, propagate_vjp, x, w1, w2):
    """Loss (sum of the logits' squares, halved) and the weights' gradients of two GCN layers."""
    a1 = propagate(x @ w1)
    r = xp.maximum(a1, 0)
    logits = propagate(r @ w2)
    loss = 0.5 * (logits * logits).sum()
    dh2 = propagate_vjp(logits)
    dw2 = r.T @ dh2
    dh1 = propagate_vjp((dh2 @ w2.T) * (a1 > 0))
    return loss, x.T @ dh1, dw2


def test_gcn_step_on_dask_matches_in_memory():
    rng = np.random.default_rng(4)
    n, e = 50, 300
    senders, receivers = rng.integers(0, n, e), rng.integers(0, n, e)
    weight = rng.uniform(0.1, 1.0, (e, 1))
    x, w1, w2 = rng.standard_normal((n, 4)), rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    plan = cs.gather_scatter_plan(senders, receivers, src_size=n, dim_size=n)
    expected = gcn_step(np, lambda h: cs.gather_scatter(h, op="mean", weight=weight, plan=plan),
                        lambda gr: cs.gather_scatter_vjp_src("mean", gr, gr, weight=weight, plan=plan), x, w1, w2)
    plan_d = csd.gather_scatter_plan(da.from_array(senders, chunks=70), da.from_array(receivers, chunks=70),
                                     src_size=n, dim_size=n, src_chunks=(20, 17, 13), dim_chunks=16).persist()
    got = gcn_step(da, lambda h: csd.gather_scatter(h, op="mean", weight=weight, plan=plan_d),
                   lambda gr: csd.gather_scatter_vjp_src("mean", gr, gr, weight=weight, plan=plan_d),
                   da.from_array(x, chunks=((20, 17, 13), -1)), w1, w2)
    for a, b in zip(da.compute(*got, scheduler="threads"), expected):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.distributed
def test_reverse_on_local_cluster(client):
    rng, src, g, t, w = case("max", "uneven", True, "drop")
    grad = rng.standard_normal((N_DST, F))
    out = cs.gather_scatter(src, g, t, "max", weight=w, dim_size=N_DST, mode="drop")
    lazy = csd.gather_scatter_jvp("max", da.from_array(src, chunks=3), da.from_array(g, chunks=8), t, out,
                                  np.ones_like(src), weight=w, dim_size=N_DST, mode="drop", dim_chunks=3)
    close(client.compute(lazy).result(), cs.gather_scatter_jvp("max", src, g, t, out, np.ones_like(src), weight=w,
                                                              dim_size=N_DST, mode="drop"))
    src2 = rng.integers(-2, 3, (N_EDGES, F)).astype(np.float64)
    t = rng.integers(0, N_DST, N_EDGES)
    out2 = cs.scatter(src2, t, "mean", dim_size=N_DST)
    close(client.compute(csd.scatter_vjp_src("mean", grad, da.from_array(src2, chunks=5), da.from_array(t, chunks=5),
                                             out2, dim_chunks=4)).result(),
          cs.scatter_vjp_src("mean", grad, src2, t, out2))
