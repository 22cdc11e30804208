"""cyscatter.dask.gather_scatter and its plan against the in-memory cyscatter.gather_scatter, on random chunkings
(one chunk, uneven with empty and size-1 chunks, all size-1), on the threaded, processes and distributed
schedulers; a plain ``np.add.at`` loop as an independent check of the add case."""
import zlib

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from testing import REDUCTION_OPS

import cyscatter as cs
import cyscatter.dask as csd
from cyscatter import MODES
from cyscatter._registry.ops import get_op

N_SRC, N_DST, N_EDGES, F = 11, 9, 40, 3
# row chunks of the sources, edge chunks, destination chunks: one block, uneven with empty and size-1 blocks, singles
SRC_CHUNKS = {"one": (N_SRC,), "uneven": (4, 0, 1, 6), "singles": (1,) * N_SRC}
EDGE_CHUNKS = {"one": (N_EDGES,), "uneven": (13, 0, 1, 26), "singles": (1,) * N_EDGES}
DIM_CHUNKS = {"one": None, "uneven": (2, 0, 1, 6), "singles": 1}
# (source, edge, destination) chunkings: an orthogonal array of strength 2 (every pair of the three axes' kinds
# once), since the kinds act on separate axes of the block layout and the full product cost minutes in CI. The
# size-1 source partitions make thousands of tasks, over a second a case, so those three are in the full tier.
CHUNKINGS = [
    ("one", "one", "one"), ("one", "uneven", "uneven"), ("one", "singles", "singles"),
    ("uneven", "one", "uneven"), ("uneven", "uneven", "singles"), ("uneven", "singles", "one"),
    ("singles", "one", "singles"), ("singles", "uneven", "one"), ("singles", "singles", "uneven"),
]
CHUNKING_PARAMS = [pytest.param(c, id="-".join(c), marks=[pytest.mark.full] if c[0] == "singles" else [])
                   for c in CHUNKINGS]


def make_edges(rng, mode):
    g = rng.integers(0, N_SRC, N_EDGES)
    t = rng.integers(0, N_DST, N_EDGES)
    if mode != "raise":
        g[[3, 20]] = (-1, N_SRC + 2)
        t[[5, 21]] = (N_DST, -3)
        if mode == "normalize_drop":
            t[7] = -N_DST - 1
    return g, t


def make_src(rng, dtype=np.float64, shape=(N_SRC, F)):
    """Values with ties (small integers) and, for floats, a NaN and a -0.0."""
    dtype = np.dtype(dtype)
    values = rng.integers(-3, 4, shape).astype(dtype)
    if dtype.kind == "f":
        values.reshape(-1)[[1, 7]] = (np.nan, -0.0)
    return values


def weights(rng, kind):
    if kind is None:
        return None
    if kind == "edge":
        return rng.integers(-2, 3, N_EDGES).astype(np.float64)
    return rng.integers(1, 3, (N_EDGES, F)).astype(np.float64)   # one weight per edge and feature (heads)


def assert_same(got, expected, op):
    """Exact for integers and the selecting ops (max/min: order-independent); to rounding for sums/products."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind in "iu" or get_op(op).selects:
        np.testing.assert_array_equal(got, expected)
    else:
        tol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[np.finfo(expected.dtype).dtype.itemsize]
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("weight", [None, "edge", "head"])
@pytest.mark.parametrize("chunking", CHUNKING_PARAMS)
@pytest.mark.parametrize("op", REDUCTION_OPS)
def test_gather_scatter_matches_in_memory(op, chunking, weight, mode):
    src_chunks, edge_chunks, dim_chunks = chunking
    rng = np.random.default_rng(zlib.crc32(repr((op, src_chunks, edge_chunks, dim_chunks, weight, mode)).encode()))
    src = make_src(rng)
    g, t = make_edges(rng, mode)
    w = weights(rng, weight)
    expected = cs.gather_scatter(src, g, t, op, weight=w, dim_size=N_DST, mode=mode)
    got = csd.gather_scatter(da.from_array(src, chunks=(SRC_CHUNKS[src_chunks], 2)),
                             da.from_array(g, chunks=EDGE_CHUNKS[edge_chunks]), t, op,
                             weight=None if w is None else da.from_array(w, chunks=3), dim_size=N_DST, mode=mode,
                             dim_chunks=DIM_CHUNKS[dim_chunks], split_every=2)
    assert_same(got.compute(scheduler="threads"), expected, op)


def test_gather_scatter_add_matches_a_plain_loop():
    rng = np.random.default_rng(0)
    src = rng.standard_normal((N_SRC, F))
    g, t = make_edges(rng, "raise")
    w = rng.standard_normal(N_EDGES)
    expected = np.zeros((N_DST, F))
    np.add.at(expected, t, src[g] * w[:, None])
    got = csd.gather_scatter(da.from_array(src, chunks=4), da.from_array(g, chunks=7), t, "add", weight=w,
                             dim_size=N_DST, dim_chunks=4).compute()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "int8", "uint8"])
@pytest.mark.parametrize("op", ["add", "mean", "max", "min", "mul", "div", "nansum"])
def test_gather_scatter_dtypes_and_integer_weights(op, dtype):
    """Integer messages that wrap in their own dtype (int8 * int8 weights) are formed as the core forms them."""
    rng = np.random.default_rng(1)
    src = make_src(rng, dtype)
    g, t = make_edges(rng, "raise")
    w = rng.integers(1, 3, N_EDGES).astype(dtype)
    for weight in (None, w):
        expected = cs.gather_scatter(src, g, t, op, weight=weight, dim_size=N_DST)
        got = csd.gather_scatter(da.from_array(src, chunks=(3, 3)), da.from_array(g, chunks=9), t, op,
                                 weight=weight, dim_size=N_DST, dim_chunks=(4, 5))
        assert_same(got.compute(), expected, op)


@pytest.mark.parametrize("op", ["add", "mean", "max", "nanmean", "sqrt_n"])
def test_gather_scatter_batch_tuple_index_and_fill_value(op):
    rng = np.random.default_rng(2)
    x = make_src(rng, shape=(2, 5, 3, 2, 3))
    g = (rng.integers(0, 5, (6, 4)), rng.integers(-1, 4, (6, 4)))
    t = (rng.integers(0, 4, (6, 4)), rng.integers(0, 2, (6, 4)))
    w = rng.integers(1, 3, (6, 4, 2, 1)).astype(np.float64)
    expected = cs.gather_scatter(x, g, t, op, weight=w, dim_size=(4, 2), axis=1, mode="drop", fill_value=-7.0)
    got = csd.gather_scatter(da.from_array(x, chunks=(1, 2, 2, 1, 2)),
                             tuple(da.from_array(c, chunks=(4, 3)) for c in g), t, op, weight=w, dim_size=(4, 2),
                             axis=1, mode="drop", fill_value=-7.0, dim_chunks=(1, 3))
    assert_same(got.compute(), expected, op)


def test_plan_is_lazy_persists_and_is_reused():
    rng = np.random.default_rng(3)
    src = make_src(rng)
    g, t = make_edges(rng, "drop")

    def no_compute(*args, **kwargs):
        raise AssertionError("computed at graph-construction time")
    with dask.config.set(scheduler=no_compute):
        plan = csd.gather_scatter_plan(da.from_array(g, chunks=7), da.from_array(t, chunks=7), src_size=N_SRC,
                                       dim_size=N_DST, mode="drop", src_chunks=4, dim_chunks=(3, 6))
        lazy = [csd.gather_scatter(da.from_array(src, chunks=4), op=op, plan=plan) for op in ("add", "max")]
        csd.gather_scatter_vjp_src("max", da.ones((N_DST, F)), da.from_array(src, chunks=4), out=da.ones((N_DST, F)),
                                   plan=plan)
    assert "GatherScatterPlan" in repr(plan) and plan.dims == (N_DST,) and plan.src_dims == (N_SRC,)
    plan = plan.persist(scheduler="threads")
    for op, first in zip(("add", "max"), lazy):
        expected = cs.gather_scatter(src, g, t, op, dim_size=N_DST, mode="drop")
        assert_same(first.compute(), expected, op)
        assert_same(csd.gather_scatter(src, op=op, plan=plan).compute(), expected, op)


@pytest.mark.parametrize("call, error, match", [
    (lambda s, g, t: csd.gather_scatter(s, g, t, "set", dim_size=N_DST), ValueError, "set"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, "nope", dim_size=N_DST), ValueError, "nope"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, 3, dim_size=N_DST), TypeError, "op"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, "add"), TypeError, "dim_size"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, "add", dim_size=N_DST, mode="bad"), ValueError, "mode"),
    (lambda s, g, t: csd.gather_scatter(s, g, t[:5], "add", dim_size=N_DST), ValueError, "scatter_index"),
    (lambda s, g, t: csd.gather_scatter(s, g.astype(float), t, "add", dim_size=N_DST), TypeError, "integer"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, "add", dim_size=N_DST, weight=np.ones(3)), ValueError, "weight"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, "add", dim_size=N_DST, weight=np.ones((N_EDGES, 5))), ValueError,
     "weight"),
    (lambda s, g, t: csd.gather_scatter(s.astype(complex), g, t, "max", dim_size=N_DST), TypeError, "complex"),
    (lambda s, g, t: csd.gather_scatter(s.astype(bool), g, t, "add", dim_size=N_DST), TypeError, "bool"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, "add", dim_size=N_DST, axis=2), ValueError, "axis"),
    (lambda s, g, t: csd.gather_scatter(s, op="add", plan=object()), TypeError, "plan"),
    (lambda s, g, t: csd.gather_scatter(s, g, None, "add", dim_size=N_DST), TypeError, "gather_index"),
    (lambda s, g, t: csd.gather_scatter(s, g, t, "add", dim_size=N_DST, split_every=1), ValueError, "split_every"),
    (lambda s, g, t: csd.gather_scatter_plan(g, t, dim_size=N_DST), TypeError, "src_size"),
    (lambda s, g, t: csd.gather_scatter_vjp_src("mul", np.ones((N_DST, F)), s, g, t, dim_size=N_DST),
     TypeError, "out"),
])
def test_argument_errors_at_graph_time(call, error, match):
    rng = np.random.default_rng(4)
    g, t = make_edges(rng, "raise")
    with pytest.raises(error, match=match):
        call(da.from_array(make_src(rng), chunks=4), da.from_array(g, chunks=9), t)


@pytest.mark.parametrize("dask_index", [True, False], ids=["Dask index: when computed", "NumPy index: at once"])
def test_out_of_range_raises_naming_the_index(dask_index):
    rng = np.random.default_rng(5)
    g, t = make_edges(rng, "raise")
    t[30] = N_DST
    src = da.from_array(make_src(rng), chunks=4)
    scatter_index = da.from_array(t, chunks=9) if dask_index else t
    if not dask_index:   # the values are at hand: the in-memory check, when the graph is built
        with pytest.raises(IndexError, match=r"scatter_index\[30\] = 9"):
            csd.gather_scatter(src, da.from_array(g, chunks=9), scatter_index, "add", dim_size=N_DST)
        return
    lazy = csd.gather_scatter(src, da.from_array(g, chunks=9), scatter_index, "add", dim_size=N_DST)
    with pytest.raises(IndexError, match="scatter_index"):
        lazy.compute()


@pytest.mark.full
@pytest.mark.parametrize("op", ["add", "mean", "max"])
def test_processes_scheduler(op):
    rng = np.random.default_rng(6)
    src = make_src(rng)
    g, t = make_edges(rng, "drop")
    expected = cs.gather_scatter(src, g, t, op, dim_size=N_DST, mode="drop")
    got = csd.gather_scatter(da.from_array(src, chunks=4), da.from_array(g, chunks=9), t, op, dim_size=N_DST,
                             mode="drop", dim_chunks=4)
    assert_same(got.compute(scheduler="processes", num_workers=2), expected, op)
    go = rng.standard_normal((N_DST, F))
    assert_same(csd.gather_scatter_vjp_src(op, go, da.from_array(src, chunks=4), da.from_array(g, chunks=9), t,
                                           expected, dim_size=N_DST, mode="drop", dim_chunks=4)
                .compute(scheduler="processes", num_workers=2),
                cs.gather_scatter_vjp_src(op, go, src, g, t, expected, dim_size=N_DST, mode="drop"), "add")


# ---- dask.distributed ---------------------------------------------------------------------------------------

@pytest.mark.distributed
@pytest.mark.parametrize("op", ["add", "mean", "max", "nanmean"])
def test_gather_scatter_and_reverse_on_local_cluster(client, op):
    rng = np.random.default_rng(7)
    src = make_src(rng)
    g, t = make_edges(rng, "wrap")
    w = weights(rng, "edge")
    plan = csd.gather_scatter_plan(da.from_array(g, chunks=(13, 0, 1, 26)), t, src_size=N_SRC, dim_size=N_DST,
                                   mode="wrap", src_chunks=(4, 0, 1, 6), dim_chunks=(2, 0, 1, 6))
    plan = plan.persist()   # the pair plans live on the workers
    xs = da.from_array(src, chunks=((4, 0, 1, 6), -1))
    out = cs.gather_scatter(src, g, t, op, weight=w, dim_size=N_DST, mode="wrap")
    go = rng.standard_normal((N_DST, F))
    got = client.compute([csd.gather_scatter(xs, op=op, weight=w, plan=plan),
                          csd.gather_scatter_vjp_src(op, go, xs, out=out, weight=w, plan=plan),
                          csd.gather_scatter_vjp_weight(op, go, xs, out=out, weight=w, plan=plan)])
    forward, vjp_src, vjp_weight = (f.result() for f in got)
    assert_same(forward, out, op)
    np.testing.assert_allclose(vjp_src, cs.gather_scatter_vjp_src(op, go, src, g, t, out, weight=w, dim_size=N_DST,
                                                                   mode="wrap"), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vjp_weight, cs.gather_scatter_vjp_weight(op, go, src, g, t, out, weight=w,
                                                                         dim_size=N_DST, mode="wrap"),
                               rtol=1e-12, atol=1e-12)
