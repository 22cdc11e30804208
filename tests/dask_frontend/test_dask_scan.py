"""cyscatter.dask.scatter_scan: against the in-memory cyscatter.scatter_scan on the computed
arrays, the plain-loop reference (tests/helpers/reference_scan.py) and numpy_groupies' cumsum/cumprod/cummax/cummin,
over chunkings (one chunk, even, uneven with empty chunks, one entry per chunk), every scan op, exclusive and
reverse, index kinds and modes, dtypes, batch/feature chunks, NaN and signed zeros; and its errors."""
import zlib

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
from compare import assert_same  # noqa: E402
from dask_cases import CHUNKS, N, chunked, make_index, threads  # noqa: E402
from reference_scan import ref_scan  # noqa: E402
from testing import INDEX_DTYPES, INDEX_KINDS, VALUE_DTYPES, numpy_groupies_scans, op_supports  # noqa: E402

import cyscatter as cs  # noqa: E402
import cyscatter.dask as csd  # noqa: E402
from cyscatter import MODES  # noqa: E402

SCAN_OPS = ("add", "mul", "max", "min")
FLAGS = [(False, False), (True, False), (False, True), (True, True)]   # (exclusive, reverse)


def make_values(rng, shape, dtype):
    """Values with ties and both signs; products of up to N of them stay far from overflow."""
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        return rng.integers(1, 4, shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-3, 4, shape).astype(dtype)
    values = rng.integers(-4, 5, shape) / 4 + 0.5 * (rng.integers(0, 2, shape) * 2 - 1)
    if dtype.kind == "c":
        values = values + 1j * rng.integers(-2, 3, shape) / 4
    return values.astype(dtype)


DIMS = {"int": (5,), "tuple": (2, 3)}   # the destination sizes of make_index, per index kind


def assert_matches(got, expected, op):
    """Exact (every bit) for integers and max/min; to rounding for float sums and products."""
    if expected.dtype.kind in "iu" or op in ("max", "min"):
        assert_same(got, expected)
    else:
        assert got.dtype == expected.dtype and got.shape == expected.shape
        rtol = {2: 4e-3, 4: 1e-5, 8: 1e-12}[np.finfo(expected.dtype).dtype.itemsize]
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", SCAN_OPS)
def test_scan_matches_core_and_reference(op, kind, mode, chunks, exclusive, reverse):
    rng = np.random.default_rng(zlib.crc32(f"{op} {kind} {mode} {chunks}".encode()))
    index, dims = make_index(rng, kind, mode, DIMS)
    src = make_values(rng, (N, 2), "float64")
    kw = dict(dim_size=dims, mode=mode, exclusive=exclusive, reverse=reverse)
    lazy_src = da.from_array(src, chunks=(CHUNKS[chunks], 1))
    got = csd.scatter_scan(lazy_src, chunked(index, CHUNKS[chunks]), op, **kw)
    assert got.chunks == lazy_src.chunks
    computed = threads(got)
    assert_matches(computed, cs.scatter_scan(src, index, op, **kw), op)
    assert_matches(computed, ref_scan(src, index, op, **kw), op)


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("op", SCAN_OPS)
def test_scan_dtypes(op, dtype):
    if not op_supports(op, dtype):
        with pytest.raises(TypeError):
            csd.scatter_scan(da.ones(4, dtype=dtype, chunks=2), np.array([0, 1, 0, 1]), op, dim_size=2)
        return
    rng = np.random.default_rng(2)
    index = rng.integers(0, 4, N)
    src = make_values(rng, (3, N), dtype)
    for chunks in ((5, 1, 0, 18), (1,) * N):
        for exclusive, reverse in FLAGS:
            kw = dict(dim_size=4, axis=1, exclusive=exclusive, reverse=reverse)
            got = threads(csd.scatter_scan(da.from_array(src, chunks=(2, chunks)), index, op, **kw))
            assert_matches(got, cs.scatter_scan(src, index, op, **kw), op)


@pytest.mark.parametrize("func,op", numpy_groupies_scans())
@pytest.mark.parametrize("dtype", ("float64", "int64"))
@pytest.mark.parametrize("chunks", (1, 7, 50, 200))
def test_scan_matches_numpy_groupies(func, op, dtype, chunks):
    npg = pytest.importorskip("numpy_groupies")
    rng = np.random.default_rng(4)
    index = rng.integers(0, 7, 200)
    src = make_values(rng, 200, dtype)
    if op == "mul":
        src = np.where(np.abs(src) > 1, np.sign(src), src).astype(dtype)   # products of 200 members stay finite
    got = threads(csd.scatter_scan(da.from_array(src, chunks=chunks), da.from_array(index, chunks=chunks * 2), op,
                                   dim_size=7))
    want = npg.aggregate(index, src, func=func)
    if dtype == "float64":
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ("max", "min"))
@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_scan_nan_and_signed_zeros_across_chunks(op, exclusive, reverse):
    """NaN wins and -0.0 < +0.0 as in the core, also when the carry holds them: bit for bit."""
    src = np.array([-0.0, 0.0, np.nan, 1.0, -0.0, 5.0, 0.0, -0.0, 2.0, np.nan, -1.0, 0.0])
    index = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 2])
    kw = dict(dim_size=4, exclusive=exclusive, reverse=reverse)
    for chunks in (1, 2, 3, 5, 12):
        for x in (src, src[::-1].copy(), -src):
            got = threads(csd.scatter_scan(da.from_array(x, chunks=chunks), index, op, **kw))
            assert_same(got, cs.scatter_scan(x, index, op, **kw))


@pytest.mark.parametrize("op", ("nansum", "nanprod", "fmax", "fmin"))
@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_scan_nan_made_by_the_running_value_is_carried(op, exclusive, reverse):
    """inf - inf (nansum) and inf * 0 (nanprod) make a NaN running value, which stays in the running value as in
    np.nancumsum / np.nancumprod, while a NaN entry is skipped: also across chunks."""
    rng = np.random.default_rng(zlib.crc32(repr((op, exclusive, reverse)).encode()))
    kw = {"dim_size": 3, "exclusive": exclusive, "reverse": reverse}
    for _ in range(12):
        x = rng.choice([np.inf, -np.inf, 0.0, 1.0, -2.0, np.nan], size=(10, 2))
        index = rng.integers(0, 3, 10)
        want = np.full_like(x, np.nan)
        order = range(9, -1, -1) if reverse else range(10)
        for j in range(3):   # the loop reference: NumPy's nancum* of each group, shifted by one when exclusive
            rows = [k for k in order if index[k] == j]
            fn = {"nansum": np.nancumsum, "nanprod": np.nancumprod, "fmax": np.fmax.accumulate,
                  "fmin": np.fmin.accumulate}[op]
            identity = {"nansum": 0.0, "nanprod": 1.0, "fmax": -np.inf, "fmin": np.inf}[op]
            with np.errstate(invalid="ignore"):
                run = fn(x[rows], axis=0) if rows else x[rows]
            if op in ("fmax", "fmin") and rows:   # an all-NaN prefix runs at the identity, as the core
                run = np.where(np.isnan(run), identity, run)
            if exclusive and rows:
                run = np.concatenate([np.full((1, 2), identity), run[:-1]])
            want[rows] = run
        for chunks in (1, 2, 3, 10):
            got = threads(csd.scatter_scan(da.from_array(x, chunks=(chunks, 1)), index, op, **kw))
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, cs.scatter_scan(x, index, op, **kw))


@pytest.mark.parametrize("op", SCAN_OPS)
def test_scan_batch_feature_chunks_and_nd_index(op):
    rng = np.random.default_rng(9)
    index = rng.integers(0, 3, (4, 5))
    src = make_values(rng, (3, 4, 5, 2), "float64")
    want = cs.scatter_scan(src, index, op, dim_size=3, axis=1)
    for chunks in ((1, 1, 1, 1), (2, 3, 2, 1), (3, 4, 5, 2), (1, (0, 3, 1), (4, 1), 1)):
        lazy_src = da.from_array(src, chunks=chunks)
        for idx in (index, da.from_array(index, chunks=(1, 2))):
            got = csd.scatter_scan(lazy_src, idx, op, dim_size=3, axis=1, reverse=True)
            assert got.chunks == lazy_src.chunks   # the second index dim was merged for the scan and cut back
            assert_matches(threads(got), cs.scatter_scan(src, index, op, dim_size=3, axis=1, reverse=True), op)
            assert_matches(threads(csd.scatter_scan(lazy_src, idx, op, dim_size=3, axis=1)), want, op)
    # a tuple index over a 2-D destination, the last axis as the index axis
    coords = (rng.integers(0, 2, 6), rng.integers(0, 3, 6))
    src2 = make_values(rng, (2, 6), "float64")
    got = csd.scatter_scan(da.from_array(src2, chunks=(1, 4)), chunked(coords, 3), op, dim_size=(2, 3), axis=-1,
                           exclusive=True)
    assert_matches(threads(got), cs.scatter_scan(src2, coords, op, dim_size=(2, 3), axis=-1, exclusive=True), op)


def test_scan_numpy_src_or_index_and_dtype_arg():
    src = np.arange(1.0, 9.0)
    index = np.array([0, 1, 0, 1, 2, 0, 2, 1])
    want = cs.scatter_scan(src, index, dim_size=3)
    assert_same(threads(csd.scatter_scan(src, da.from_array(index, chunks=3), dim_size=3)), want)
    assert_same(threads(csd.scatter_scan(da.from_array(src, chunks=3), index, dim_size=3)), want)
    got = csd.scatter_scan(da.from_array(src, chunks=3), index, dim_size=3, dtype=np.float32)
    assert got.dtype == np.float32
    assert_same(threads(got), cs.scatter_scan(src.astype(np.float32), index, dim_size=3))
    small = np.full(8, 100, np.int8)   # int8 sums wrap as NumPy's (and the core's) do, whatever the chunking
    assert_same(threads(csd.scatter_scan(da.from_array(small, chunks=1), index, dim_size=3)),
                cs.scatter_scan(small, index, dim_size=3))
    # an empty src and a scalar index
    assert threads(csd.scatter_scan(da.ones(0, chunks=1), np.zeros(0, np.int64), dim_size=2)).shape == (0,)
    assert_same(threads(csd.scatter_scan(da.from_array(np.array([2.0, 3.0]), chunks=1), np.int64(1), "mul",
                                         dim_size=3, axis=0, exclusive=True)),
                cs.scatter_scan(np.array([2.0, 3.0]), np.int64(1), "mul", dim_size=3, exclusive=True))


def test_scan_out_of_range_raises_when_computed():
    index = da.from_array(np.array([0, 1, 2, 9, 1]), chunks=2)
    lazy = csd.scatter_scan(da.ones(5, chunks=2), index, "max", dim_size=4)   # building the graph reads no data
    with pytest.raises(IndexError, match=r"= 9 is out of bounds.*index chunk \[2:4\]"):
        threads(lazy)


@pytest.mark.parametrize("call, error, match", [
    (lambda s, i: csd.scatter_scan(s, i, "add"), TypeError, "dim_size"),
    (lambda s, i: csd.scatter_scan(s, i, "add", dim_size=None), TypeError, "dim_size is required"),
    (lambda s, i: csd.scatter_scan(s, i, "mean", dim_size=3), ValueError, "add, mul, max, min"),
    (lambda s, i: csd.scatter_scan(s, i, "sub", dim_size=3), ValueError, "'sub'"),
    (lambda s, i: csd.scatter_scan(s, i, "medoid", dim_size=3), ValueError, "unknown op"),
    (lambda s, i: csd.scatter_scan(s, i.astype(float), dim_size=3), TypeError, "must hold integers"),
    (lambda s, i: csd.scatter_scan(s[:5], i, dim_size=3), ValueError, "does not hold the index shape"),
    (lambda s, i: csd.scatter_scan(s[:1], i, dim_size=3), ValueError, "does not hold the index shape"),
    (lambda s, i: csd.scatter_scan(s, i, dim_size=3, mode="nearest"), ValueError, "mode="),
    (lambda s, i: csd.scatter_scan(s, i[i > 0], dim_size=3), ValueError, "unknown chunk sizes"),
    (lambda s, i: csd.scatter_scan(s[s > 0], i, dim_size=3), ValueError, "src has unknown chunk sizes"),
    (lambda s, i: csd.scatter_scan(s, i, dim_size=3, exclusive="yes"), TypeError, "exclusive must be a bool"),
    (lambda s, i: csd.scatter_scan(s, i, dim_size=3, reverse=None), TypeError, "reverse must be a bool"),
    (lambda s, i: csd.scatter_scan(s, i, dim_size=3, out=np.zeros(6)), TypeError, "does not take out="),
    (lambda s, i: csd.scatter_scan(s > 0, i, dim_size=3), TypeError, "bool"),
    (lambda s, i: csd.scatter_scan(s + 1j, i, "max", dim_size=3), TypeError, "complex"),
    (lambda s, i: csd.scatter_scan(s, i, dim_size=3, dtype=np.int32), TypeError, "dtype"),
    (lambda s, i: csd.scatter_scan(s, i, dim_size=-1), ValueError, "non-negative"),
    (lambda s, i: csd.scatter_scan(s, i, dim_size=3, axis=2), ValueError, "axis"),
])
def test_scan_argument_errors_at_graph_time(call, error, match):
    with pytest.raises(error, match=match):
        call(da.ones(6, chunks=4), da.from_array(np.array([0, 1, 2, 0, 1, 2]), chunks=4))


def test_scan_graph_is_a_chain_of_small_tasks():
    """One scan task per block, a total per block but the last in scan order, and a carry merge per block after
    the second: the graph grows linearly with the chunks."""
    got = csd.scatter_scan(da.ones(12, chunks=1), np.zeros(12, np.int64), dim_size=1)
    layer = dict(got.dask.layers[got.name])
    kinds = [k[0].rsplit("-", 1)[-1] if k[0] != got.name else "scan" for k in layer]
    assert kinds.count("scan") == 12 and kinds.count("total") == 11 and kinds.count("carry") == 10
    np.testing.assert_array_equal(threads(got), np.arange(1.0, 13.0))


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    import os
    environ = dict(os.environ)   # the nanny sets OMP_NUM_THREADS=1 here (tests/dask_frontend/test_dask.py)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      worker_dashboard_address=None) as cluster, \
                distributed.Client(cluster, set_as_default=False) as client:
            yield client
    finally:
        os.environ.clear()
        os.environ.update(environ)


@pytest.mark.distributed
def test_scan_on_local_cluster_and_its_errors(client):
    """The tasks pickle to worker processes; an out-of-range entry raises the IndexError there."""
    rng = np.random.default_rng(1)
    index = rng.integers(0, 5, N)
    src = make_values(rng, (N, 3), "float64")
    for op, exclusive, reverse in (("add", False, True), ("max", True, False), ("mul", True, True)):
        kw = dict(dim_size=5, exclusive=exclusive, reverse=reverse)
        got = csd.scatter_scan(da.from_array(src, chunks=(5, 2)), chunked(index, 7), op, **kw)
        assert_matches(client.compute(got).result(), cs.scatter_scan(src, index, op, **kw), op)
    bad = index.copy()
    bad[13] = 9
    with pytest.raises(IndexError, match="out of bounds"):
        client.compute(csd.scatter_scan(da.from_array(src, chunks=(5, 3)), chunked(bad, 4), dim_size=5)).result()


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_scan_index_dtypes(index_dtype, kind):
    rng = np.random.default_rng(6)
    index, dims = make_index(rng, kind, "drop", DIMS)
    if np.dtype(index_dtype).kind == "u":   # (negative entries have no unsigned form: the large ones stay)
        index = tuple(np.abs(c) for c in index) if kind == "tuple" else np.abs(index)
    index = tuple(c.astype(index_dtype) for c in index) if kind == "tuple" else index.astype(index_dtype)
    src = make_values(rng, (N, 2), "float64")
    for op in SCAN_OPS:
        kw = dict(dim_size=dims, mode="drop", exclusive=op in ("mul", "max"), reverse=op in ("add", "mul"))
        got = threads(csd.scatter_scan(da.from_array(src, chunks=(5, 2)), chunked(index, 7), op, **kw))
        assert_matches(got, cs.scatter_scan(src, index, op, **kw), op)
        assert_matches(got, ref_scan(src, index, op, **kw), op)


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from strategies import examples  # noqa: E402


@st.composite
def _chunkings(draw):
    n = draw(st.integers(0, 30))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    chunks = tuple(np.diff([0] + cuts + [n]).tolist())
    return n, chunks


@examples(60)
@given(case=_chunkings(), groups=st.integers(1, 4), op=st.sampled_from(SCAN_OPS), exclusive=st.booleans(),
       reverse=st.booleans(), seed=st.integers(0, 2**16), specials=st.booleans())
def test_scan_any_chunking_property(case, groups, op, exclusive, reverse, seed, specials):
    """Any chunking (empty chunks included) gives the in-memory scan; max/min bit for bit with NaN, +-inf, +-0."""
    n, chunks = case
    rng = np.random.default_rng(seed)
    index = rng.integers(0, groups, n)
    src = make_values(rng, (n,), "float64")
    if specials and op in ("max", "min") and n:
        src[rng.integers(0, n, 3)] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], 3)
    kw = dict(dim_size=groups, exclusive=exclusive, reverse=reverse)
    got = threads(csd.scatter_scan(da.from_array(src, chunks=(chunks,)), index, op, **kw))
    assert_matches(got, cs.scatter_scan(src, index, op, **kw), op)


@pytest.mark.parametrize("chunks", [(0, 0), (0, 0, 0)])
def test_empty_src_in_several_empty_chunks(chunks):
    """Dask's rechunk leaves an empty index in one chunk: src's empty chunks found no index block (a tuple key
    passed as data, AttributeError in the task), in scatter_scan and in cyscatter.dask.scatter alike."""
    src = da.from_array(np.zeros((2, 0)), chunks=((1, 1), chunks))
    index = np.zeros(0, np.int64)
    got = threads(csd.scatter_scan(src, index, "max", dim_size=2, axis=1))
    assert_same(got, cs.scatter_scan(np.zeros((2, 0)), index, "max", dim_size=2, axis=1))
    assert_same(threads(csd.scatter(src, da.from_array(index, chunks=-1), "add", dim_size=2, axis=1)),
                cs.scatter(np.zeros((2, 0)), index, "add", dim_size=2, axis=1))


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("op", ("nansum", "nanprod", "fmax", "fmin"))
def test_nan_scans_skip_nan_across_chunks(op, chunks, exclusive, reverse):
    """The NaN-skipping scans: a NaN entry is the identity in every chunk and in the carries, so the result is the
    twin's on src with NaN made the identity (loop reference) and the in-memory call's."""
    rng = np.random.default_rng(zlib.crc32(f"{op} {chunks}".encode()))
    index, dims = make_index(rng, "int", "raise", DIMS)
    src = make_values(rng, (N, 2), "float64")
    src[rng.random(src.shape) < 0.3] = np.nan
    twin = cs.get_op(op).twin
    clean = np.where(np.isnan(src), {"add": 0.0, "mul": 1.0, "max": -np.inf, "min": np.inf}[twin], src)
    kw = dict(dim_size=dims, exclusive=exclusive, reverse=reverse)
    got = threads(csd.scatter_scan(da.from_array(src, chunks=(CHUNKS[chunks], 1)), chunked(index, CHUNKS[chunks]),
                                   op, **kw))
    assert_matches(got, ref_scan(clean, index, twin, **kw), twin)
    assert_matches(got, cs.scatter_scan(src, index, op, **kw), twin)
