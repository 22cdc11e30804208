"""segment, gather_segment, the softmax family and the moments on Dask arrays against the in-memory functions,
on random chunkings (one chunk, uneven with empty and size-1 chunks, all size-1) and every mode."""
import itertools

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask_cases import CHUNKS, N, chunked, make_index
from testing import OPS, op_supports

import cyscatter as cs
import cyscatter.dask as csd
from cyscatter import MODES

GROUP_FUNCS = ("scatter_logsumexp", "scatter_softmax", "scatter_log_softmax", "scatter_var", "scatter_std",
               "scatter_nanvar", "scatter_nanstd")
DIMS = {"int": (7,), "tuple": (3, 4)}


def make_values(rng, dtype=np.float64):
    values = rng.standard_normal((N, 2)) * 3
    values[[1, 11], [0, 1]] = (np.nan, -np.inf)
    values[4, 0] = np.inf
    return values.astype(dtype)


def close(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    rtol = 1e-5 if expected.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("chunks", list(CHUNKS))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["int", "tuple"])
@pytest.mark.parametrize("func", GROUP_FUNCS)
def test_group_functions_match_in_memory(func, kind, mode, chunks):
    rng = np.random.default_rng(GROUP_FUNCS.index(func) + 10 * MODES.index(mode))
    index, dim_size = make_index(rng, kind, mode, DIMS)
    src = make_values(rng)
    kwargs = {"ddof": 1} if "var" in func or "std" in func else {}
    expected = getattr(cs, func)(src, index, dim_size=dim_size, mode=mode, **kwargs)
    got = getattr(csd, func)(da.from_array(src, chunks=(CHUNKS[chunks], 1)), chunked(index, CHUNKS[chunks]),
                             dim_size=dim_size, mode=mode, **kwargs)
    close(got.compute(scheduler="threads"), expected)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int8"])
@pytest.mark.parametrize("func", GROUP_FUNCS)
def test_group_function_dtypes(func, dtype):
    rng = np.random.default_rng(1)
    src = rng.integers(-3, 4, (N, 2)).astype(dtype)
    index = rng.integers(0, 5, N)
    expected = getattr(cs, func)(src, index, dim_size=5)
    close(getattr(csd, func)(da.from_array(src, chunks=5), da.from_array(index, chunks=5), dim_size=5).compute(),
          expected)


@pytest.mark.parametrize("call, error, match", [
    (lambda s, i: csd.scatter_softmax(s, i, dim_size=None), TypeError, "dim_size"),
    (lambda s, i: csd.scatter_softmax(s.astype(complex), i, dim_size=7), TypeError, "complex"),
    (lambda s, i: csd.scatter_var(s, i, ddof="x", dim_size=7), TypeError, "ddof"),
    (lambda s, i: csd.scatter_logsumexp(s, i, dim_size=7, mode="bad"), ValueError, "mode"),
    (lambda s, i: csd.scatter_std(s, i.astype(float), dim_size=7), TypeError, "integer"),
    (lambda s, i: csd.segment(s, np.array([0, 5, 3, N]), "add"), ValueError, "indptr"),
    (lambda s, i: csd.segment(s, np.array([0, 5]), "add"), ValueError, "indptr"),
    (lambda s, i: csd.segment(s, np.array([0, 5, N]), "nope"), ValueError, "nope"),
    (lambda s, i: csd.segment(s, np.array([[0, N]]), "add"), ValueError, "indptr"),
    (lambda s, i: csd.gather_segment(s, np.array([0, 2, 3])), ValueError, "indptr"),
    # sizes from user values, refused before any chunk is listed (no hang, no huge graph)
    (lambda s, i: csd.gather_segment(s[:2], np.array([0, 2, 2**62])), ValueError, r"indptr\[-1\]=4611686018427387904"),
    (lambda s, i: csd.gather_segment(s[:2], np.array([0, 2, 10**12]), chunks=1), MemoryError, "chunks=1 cuts"),
    (lambda s, i: csd.gather_segment(s[:2], np.array([0, 2, N]), chunks=0.5), TypeError, "chunks=0.5"),
    (lambda s, i: csd.gather_segment(s[:2], np.array([0, 2, N]), chunks=True), TypeError, "chunks=True"),
    (lambda s, i: csd.segment(s, np.array([0, 5, N]), dim_chunks=1.0), TypeError, "dim_chunks=1.0"),
    (lambda s, i: csd.gather_vjp_src(s, i, (2**62, 2)), ValueError, "src_shape"),
    (lambda s, i: csd.gather_vjp_src(s, i, (7, 2), split_every=2.0), TypeError, "split_every=2.0"),
])
def test_argument_errors_at_graph_time(call, error, match):
    rng = np.random.default_rng(2)

    def no_compute(*args, **kwargs):
        raise AssertionError("computed at graph-construction time")
    with dask.config.set(scheduler=no_compute), pytest.raises(error, match=match):
        call(da.from_array(make_values(rng), chunks=5), da.from_array(rng.integers(0, 7, N), chunks=5))


SEGMENT_OPS = [op for op in OPS if op_supports(op, np.float64)]


@pytest.mark.parametrize("chunks", list(CHUNKS))
@pytest.mark.parametrize("op", SEGMENT_OPS)
def test_segment_matches_in_memory(op, chunks):
    rng = np.random.default_rng(3)
    src = rng.integers(-3, 4, (2, N, 2)).astype(np.float64)   # batch dim; ties
    indptr = np.array([0, 3, 3, 10, 11, N])
    expected = cs.segment(src, indptr, op, axis=1, fill_value=-9.0)
    got = csd.segment(da.from_array(src, chunks=(1, CHUNKS[chunks], 1)), indptr, op, axis=1, fill_value=-9.0,
                      dim_chunks=2)
    close(got.compute(), expected)


@pytest.mark.parametrize("chunks", [3, 1, "auto"])
def test_gather_segment_matches_in_memory(chunks):
    rng = np.random.default_rng(4)
    src = rng.standard_normal((5, 2))
    indptr = np.array([0, 3, 3, 10, 11, N])
    got = csd.gather_segment(da.from_array(src, chunks=2), da.from_array(indptr, chunks=2), chunks=chunks)
    np.testing.assert_array_equal(got.compute(), cs.gather_segment(src, indptr))


@pytest.mark.parametrize("shape", [(1, 2), (), (1, 1), (N, 1)])
@pytest.mark.parametrize("func", GROUP_FUNCS)
def test_group_functions_with_src_that_broadcasts(func, shape):
    # as in memory: the group statistics take a src that broadcasts to I + F; softmax's result has src's shape,
    # so it needs the index dims (and refuses otherwise, as in memory)
    rng = np.random.default_rng(8)
    src = (rng.standard_normal(shape) * 3)
    index = rng.integers(0, 7, N)
    lazy_index = da.from_array(index, chunks=CHUNKS["uneven_empty"])
    try:
        expected = getattr(cs, func)(src, index, dim_size=7)
    except ValueError as err:
        with pytest.raises(ValueError) as got:
            getattr(csd, func)(da.from_array(src), lazy_index, dim_size=7)
        assert str(got.value) == str(err)
        return
    close(getattr(csd, func)(da.from_array(src), lazy_index, dim_size=7).compute(), expected)


BATCH_CHUNKS = {"one": (2, 3, N, 2), "uneven": (1, (2, 1), (5, 0, 1, N - 6), 1), "singles": (1, 1, 1, 1)}


def batched_indptr(rng, shape, rows, segments):
    inner = np.sort(rng.integers(0, rows + 1, shape + (segments - 1,)), axis=-1)
    return np.concatenate([np.zeros(shape + (1,), np.int64), inner, np.full(shape + (1,), rows)], axis=-1)


@pytest.mark.parametrize("ptr_batch", [(2, 3), (1, 3), (2, 1)])
@pytest.mark.parametrize("chunks", list(BATCH_CHUNKS))
@pytest.mark.parametrize("op", ["add", "max", "mean", "set", "first", "nanprod"])
def test_segment_with_batched_indptr_matches_in_memory(op, chunks, ptr_batch):
    # one pointer per batch row (or broadcast along a batch dim of 1), as pytorch_scatter's segment_csr
    rng = np.random.default_rng(6)
    src = rng.integers(-3, 4, (2, 3, N, 2)).astype(np.float64)
    src[0, 1, 3, 0] = np.nan
    indptr = batched_indptr(rng, ptr_batch, N, 5)
    expected = cs.segment(src, indptr, op, fill_value=-9.0)
    got = csd.segment(da.from_array(src, chunks=BATCH_CHUNKS[chunks]), indptr, op, fill_value=-9.0, dim_chunks=1)
    close(got.compute(), expected)
    got = csd.segment(da.from_array(src, chunks=BATCH_CHUNKS[chunks]), da.from_array(indptr, chunks=1), op, axis=2,
                      fill_value=-9.0)
    close(got.compute(), expected)


@pytest.mark.parametrize("ptr_batch", [(2, 3), (1, 3), (2, 1)])
@pytest.mark.parametrize("chunks", [3, 1, "auto"])
def test_gather_segment_with_batched_indptr_matches_in_memory(chunks, ptr_batch):
    rng = np.random.default_rng(7)
    src = rng.standard_normal((2, 3, 5, 2))
    indptr = batched_indptr(rng, ptr_batch, 9, 5)
    got = csd.gather_segment(da.from_array(src, chunks=(1, 2, 2, 1)), indptr, chunks=chunks)
    np.testing.assert_array_equal(got.compute(), cs.gather_segment(src, indptr))


@pytest.mark.parametrize("call", [
    lambda s: csd.segment(s, np.array([[0, 2, N], [1, 2, N]]), "add"),                 # a row not from 0
    lambda s: csd.segment(s, np.array([[0, 2, N], [0, 3, 2]]), "add"),                 # ends short, decreases
    lambda s: csd.segment(s, np.zeros((3, 3), np.int64), "add"),                        # batch dims differ
    lambda s: csd.segment(s, np.array([[0, 2, N], [0, 3, N]]), "add", axis=0),          # axis differs
    lambda s: csd.gather_segment(s, np.array([[0, 2, 4], [0, 1, 5]])),                 # different row counts
])
def test_batched_indptr_errors_at_graph_time(call):
    src = np.ones((2, N, 2))
    with pytest.raises(ValueError, match="indptr") as expected:
        call(src)
    with pytest.raises(ValueError) as got:
        call(da.from_array(src, chunks=1))
    assert str(got.value) == str(expected.value)


@pytest.mark.distributed
def test_group_functions_on_local_cluster(client):
    rng = np.random.default_rng(5)
    index, dim_size = make_index(rng, "int", "drop", DIMS)
    src = make_values(rng)
    lazy = [getattr(csd, f)(da.from_array(src, chunks=(CHUNKS["uneven_empty"], 1)),
                            chunked(index, CHUNKS["uneven_empty"]), dim_size=dim_size, mode="drop")
            for f in ("scatter_softmax", "scatter_nanvar")]
    got = [f.result() for f in client.compute(lazy)]
    close(got[0], cs.scatter_softmax(src, index, dim_size=dim_size, mode="drop"))
    close(got[1], cs.scatter_nanvar(src, index, dim_size=dim_size, mode="drop"))
    indptr = np.array([0, 3, 3, 10, 11, N])
    close(client.compute(csd.segment(da.from_array(src, chunks=5), indptr, "max")).result(),
          cs.segment(src, indptr, "max"))


def test_graphs_are_built_without_computing():
    rng = np.random.default_rng(6)
    src, index = da.from_array(make_values(rng), chunks=5), da.from_array(rng.integers(0, 7, N), chunks=5)

    def no_compute(*args, **kwargs):
        raise AssertionError("computed at graph-construction time")
    with dask.config.set(scheduler=no_compute):
        for func in GROUP_FUNCS:
            getattr(csd, func)(src, index, dim_size=7)
        for func in ("scatter_softmax", "scatter_log_softmax"):   # nothing of D's size listed (2**23 blocks)
            assert getattr(csd, func)(src, index, dim_size=2**50, mode="drop").numblocks == src.numblocks
        csd.segment(src, np.array([0, 5, N]), "mean")
        csd.gather_segment(src[:2], np.array([0, 5, N]))
        csd.scatter_vjp_src("max", da.ones((7, 2)), src, index, da.ones((7, 2)))
        csd.scatter_vjp_dst("max", da.ones((7, 2)), da.ones((7, 2)), src, index, da.ones((7, 2)))
        csd.gather_vjp_src(src, index, (7, 2))


@pytest.mark.parametrize("op, reduce", [("median", np.median), ("nanmedian", np.nanmedian)])
@pytest.mark.parametrize("chunks", [20, 6, 1])
def test_segment_median_by_whole_segments(op, reduce, chunks):
    """segment's order statistics on Dask, against np.median / np.nanmedian per segment (empty: NaN)."""
    rng = np.random.default_rng(8)
    x = rng.integers(-3, 4, (20, 3)).astype(np.float64)
    x[[3, 9], [1, 2]] = np.nan
    ptr = np.array([0, 4, 4, 11, 20])
    got = csd.segment(da.from_array(x, chunks=(chunks, 3)), ptr, op).compute()
    want = np.array([reduce(x[a:b], axis=0) if b > a else np.full(3, np.nan) for a, b in itertools.pairwise(ptr)])
    np.testing.assert_array_equal(got, want)
    batched = np.array([[0, 3, 7], [0, 7, 7]])
    y = rng.standard_normal((2, 7, 2))
    got = csd.segment(da.from_array(y, chunks=(1, 3, 2)), batched, op).compute()
    want = np.array([[reduce(y[b, p[s]:p[s + 1]], axis=0) if p[s + 1] > p[s] else np.full(2, np.nan)
                      for s in range(2)] for b, p in enumerate(batched)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("weight", [None, "edge", "head"])
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_gather_scatter_order_statistics_by_whole_groups(op, weight, mode):
    """gather_scatter's median on Dask (gathered messages, then whole groups) against the in-memory call, which
    the order-statistics tests check against np.median per group; a dropped gather entry drops its edge."""
    rng = np.random.default_rng(12)
    x = rng.integers(-3, 4, (11, 3)).astype(np.float64)
    x[2, 1] = np.nan
    g, t = rng.integers(0, 11, 40), rng.integers(0, 9, 40)
    if mode != "raise":
        g[[3, 20]], t[[5, 21]] = (-1, 13), (9, -3)
    w = {None: None, "edge": rng.integers(-2, 3, 40).astype(np.float64),
         "head": rng.integers(1, 3, (40, 3)).astype(np.float64)}[weight]
    want = cs.gather_scatter(x, g, t, op, weight=w, dim_size=9, mode=mode, fill_value=7.0)
    got = csd.gather_scatter(da.from_array(x, chunks=4), da.from_array(g, chunks=13), t, op,
                             weight=None if w is None else da.from_array(w, chunks=7), dim_size=9, mode=mode,
                             dim_chunks=(2, 0, 1, 6), fill_value=7.0).compute()
    np.testing.assert_array_equal(got, want)


def test_gather_scatter_order_statistics_batch_and_tuple_indices():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 4, 3, 5))
    g, t = (rng.integers(-5, 6, 30), rng.integers(-4, 5, 30)), (rng.integers(-3, 3, 30), rng.integers(0, 4, 30))
    want = cs.gather_scatter(x, g, t, "median", dim_size=(2, 3), axis=1, mode="normalize_drop")
    got = csd.gather_scatter(da.from_array(x, chunks=(1, 2, 3, 5)), tuple(da.from_array(a, chunks=7) for a in g), t,
                             "median", dim_size=(2, 3), axis=1, mode="normalize_drop").compute()
    np.testing.assert_array_equal(got, want)


def test_gather_scatter_order_statistics_need_the_indices_not_a_plan():
    plan = csd.gather_scatter_plan(np.array([0, 1]), np.array([1, 1]), src_size=2, dim_size=2)
    with pytest.raises(ValueError, match="op 'median'.*gather_index and scatter_index, not with a plan"):
        csd.gather_scatter(da.ones((2, 2)), op="median", plan=plan)
