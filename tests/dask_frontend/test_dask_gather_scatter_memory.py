"""What one task of cyscatter.dask.gather_scatter holds: a block pair's partial keeps only the destination rows its
edges reach (counted here from the edges with NumPy), and Dask sizes the plans and edge pieces by the bytes they
hold (measured with tracemalloc), on the local scheduler and on a dask.distributed worker, so that workers spill
them by their real size."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask.sizeof import sizeof
from memory import traced

import cyscatter as cs
import cyscatter.dask as csd

N, E, F = 2000, 3000, 8
SRC_CHUNK, DST_CHUNK = 250, 500


def graph(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, F)), rng.integers(0, N, E), rng.integers(0, N, E)


def partial_results(arr):
    """{(d, s): value} of every block pair's partial in the graph of `arr` (one batch and feature block)."""
    layer = dict(arr.__dask_graph__())
    keys = [k for k in layer if isinstance(k, tuple) and str(k[0]).endswith("-partial")]
    return {(k[1], k[-1]): v for k, v in zip(keys, dask.get(layer, keys))}


@pytest.mark.parametrize("op", ["add", "mean", "max", "nanmean"])
def test_pair_partials_hold_only_the_rows_their_edges_reach(op):
    x, g, t = graph()
    got = csd.gather_scatter(da.from_array(x, chunks=(SRC_CHUNK, F)), da.from_array(g, chunks=1000),
                             da.from_array(t, chunks=1000), op, dim_size=N, dim_chunks=DST_CHUNK)
    parts = partial_results(got)
    assert len(parts) == (N // SRC_CHUNK) * (N // DST_CHUNK)
    row_bytes = F * 8
    for (d, s), part in parts.items():
        pair = (g // SRC_CHUNK == s) & (t // DST_CHUNK == d)
        reached = np.unique(t[pair]) - d * DST_CHUNK
        held = part.work3.nbytes + (0 if part.counts is None else part.counts.nbytes)
        assert part.rows is not None
        np.testing.assert_array_equal(part.rows, reached)
        # the values of the reached rows, their counts and their row numbers: no row of the block beyond them
        count_bytes = 0 if part.counts is None else part.counts.nbytes // max(len(reached), 1)
        assert held + part.rows.nbytes <= len(reached) * (row_bytes + count_bytes + 8)
    # the merged blocks are the in-memory call's
    np.testing.assert_allclose(got.compute(scheduler="sync"), cs.gather_scatter(x, g, t, op, dim_size=N),
                               rtol=1e-12, atol=1e-12)


def test_a_pair_that_reaches_most_rows_keeps_its_block_whole():
    """The sparse form costs an index per row: where (almost) every row is reached the whole block is smaller."""
    x, g, _ = graph()
    t = np.arange(E) % N   # one source partition: its pairs reach every destination row
    got = csd.gather_scatter(da.from_array(x, chunks=(N, F)), g, t, "add", dim_size=N, dim_chunks=DST_CHUNK)
    for part in partial_results(got).values():
        assert part.rows is None and part.work3.shape[1] == DST_CHUNK
    np.testing.assert_allclose(got.compute(scheduler="sync"), cs.gather_scatter(x, g, t, "add", dim_size=N))


def measured_bytes(fn):
    """(`fn()`'s result, the bytes still traced when it returned: what the result holds)."""
    value, current, _ = traced(fn)
    return value, current


def test_dask_sizes_a_pair_plan_by_the_bytes_it_holds():
    _, g, t = graph()
    plan = csd.gather_scatter_plan(da.from_array(g, chunks=1000), da.from_array(t, chunks=1000), src_size=N,
                                   dim_size=N, src_chunks=1000, dim_chunks=1000)
    pieces = plan.pieces.compute(scheduler="sync")
    layer = dict(plan.pairs.__dask_graph__())
    task = layer[(plan.pairs.name, 0, 0)]

    def build():
        block = task[0]([pieces[e, 0, 0] for e in range(pieces.shape[0])])
        grouping = block.reshape(-1)[0].plan.transpose   # the reverse grouping, made by a reverse pass
        assert len(grouping) == 3
        return block
    block, held = measured_bytes(build)
    assert 0.8 * held <= sizeof(block) <= 1.25 * held
    # a block of edge pieces: its three arrays, not the 8 bytes of an object reference
    piece = dask.get(dict(plan.pieces.__dask_graph__()), (plan.pieces.name, 0, 0, 0))
    assert piece.dtype == object and sizeof(piece) >= sum(a.nbytes for a in pieces[0, 0, 0]) > 1000


@pytest.mark.full
@pytest.mark.distributed
def test_workers_size_the_plan_as_the_local_scheduler_does(client):
    from dask.distributed import futures_of, wait
    x, g, t = graph(1)
    plan = csd.gather_scatter_plan(da.from_array(g, chunks=1000), da.from_array(t, chunks=1000), src_size=N,
                                   dim_size=N, src_chunks=1000, dim_chunks=1000)
    expected = {k: sizeof(v) for k, v in zip(dask.core.flatten(plan.pairs.__dask_keys__()),
                                             plan.pairs.compute(scheduler="sync").reshape(-1))}
    with client.as_current():
        persisted = plan.persist()   # the pair plans live on the workers
        wait(futures_of(persisted.pairs))
    on_workers = client.nbytes(summary=False)
    for key in dask.core.flatten(persisted.pairs.__dask_keys__()):
        assert on_workers[key] == expected[key] > E   # bytes per edge, not a reference's 8
    got = client.compute(csd.gather_scatter(da.from_array(x, chunks=(1000, F)), op="mean", plan=persisted))
    np.testing.assert_allclose(got.result(), cs.gather_scatter(x, g, t, "mean", dim_size=N), rtol=1e-12)
