"""cyscatter.dask against the plain-loop reference, on Dask's threaded scheduler and on a LocalCluster."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
from dask_cases import CHUNKS, N, chunked, make_index, threads  # noqa: E402
from reference import ref_gather, ref_scatter  # noqa: E402
from reference_extra import ref_scatter_arg  # noqa: E402
from testing import INDEX_KINDS, OPS, VALUE_DTYPES, op_supports  # noqa: E402

import cyscatter as cs  # noqa: E402
import cyscatter.dask as csd  # noqa: E402
from cyscatter import MODES  # noqa: E402

# where `python -c "import cyscatter"` finds the package under test: the folder above the imported one (the
# checkout for an in-place build, site-packages for an installed one, where an unpacked sdist has no compiled one)
ROOT = Path(cs.__file__).resolve().parents[1]


def make_values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(1, 4, shape).astype(dtype)
    values = rng.uniform(0.5, 2.0, shape)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(0.5, 2.0, shape)
    return values.astype(dtype)


DIMS = {"int": (7,), "tuple": (3, 4)}   # the destination sizes of make_index, per index kind


def assert_matches(got, expected, op):
    """Exact for integers and max/min, to rounding for float sums, products and quotients."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind in "iu" or op in ("max", "min"):
        np.testing.assert_array_equal(got, expected)
    else:
        rtol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[np.finfo(expected.dtype).dtype.itemsize]
        np.testing.assert_allclose(got, expected, rtol=rtol)


# ---- scatter ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
def test_scatter_matches_reference(op, kind, mode, chunks):
    rng = np.random.default_rng(1)
    index, dim_size = make_index(rng, kind, mode, DIMS)
    src = make_values(rng, (N, 2), np.float64)
    got = csd.scatter(da.from_array(src, chunks=(CHUNKS[chunks], 1)), chunked(index, CHUNKS[chunks]), op,
                      dim_size=dim_size, mode=mode, split_every=3)
    assert_matches(threads(got), ref_scatter(src, index, op, dim_size=dim_size, mode=mode), op)


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_scatter_dtypes(op, dtype):
    rng = np.random.default_rng(2)
    index, dim_size = make_index(rng, "int", "drop", DIMS)
    src = make_values(rng, (N, 3), dtype)
    got = csd.scatter(da.from_array(src, chunks=(CHUNKS["uneven_empty"], 2)),
                      chunked(index.astype(np.int32), 5), op, dim_size=dim_size, mode="drop")
    assert_matches(threads(got), ref_scatter(src, index, op, dim_size=dim_size, mode="drop"), op)


@pytest.mark.parametrize("kind, dim_chunks", [("int", (3, 0, 4)), ("int", 2), ("tuple", (1, 2))])
@pytest.mark.parametrize("op", OPS)
def test_scatter_output_chunked_along_destination(op, kind, dim_chunks):
    rng = np.random.default_rng(3)
    index, dim_size = make_index(rng, kind, "wrap", DIMS)
    src = make_values(rng, (N, 2), np.int64 if op in ("add", "max") else np.float64)
    got = csd.scatter(da.from_array(src, chunks=(CHUNKS["even"], 2)), chunked(index, CHUNKS["uneven_empty"]), op,
                      dim_size=dim_size, mode="wrap", dim_chunks=dim_chunks)
    chunks_along_d0 = dim_chunks if isinstance(dim_chunks, tuple) else (2, 2, 2, 1)
    assert got.chunks[0] == chunks_along_d0
    assert_matches(threads(got), ref_scatter(src, index, op, dim_size=dim_size, mode="wrap"), op)


@pytest.mark.parametrize("op", OPS)
def test_scatter_fill_value(op):
    rng = np.random.default_rng(4)
    index = rng.integers(0, 4, N) * 2          # odd rows get no entry
    src = make_values(rng, (N,), np.float64)
    got = csd.scatter(da.from_array(src, chunks=5), chunked(index, 5), op, dim_size=9, fill_value=-7,
                      dim_chunks=4)
    assert_matches(threads(got), ref_scatter(src, index, op, dim_size=9, fill_value=-7), op)


@pytest.mark.parametrize("op", ["add", "mul", "min", "mean"])
def test_scatter_batch_and_feature_chunks(op):
    rng = np.random.default_rng(5)
    index, dim_size = make_index(rng, "tuple", "clip", DIMS)
    src = make_values(rng, (2, N, 3), np.float32)
    got = csd.scatter(da.from_array(src, chunks=(1, CHUNKS["uneven_empty"], (2, 1))), chunked(index, 10), op,
                      dim_size=dim_size, axis=1, mode="clip", dim_chunks=2)
    assert got.chunks == ((1, 1), (2, 1), (4,), (2, 1))
    assert_matches(threads(got), ref_scatter(src, index, op, dim_size=dim_size, axis=1, mode="clip"), op)


@pytest.mark.parametrize("op", ["max", "min"])
def test_scatter_max_min_nan_and_signed_zeros_exact(op):
    src = np.array([0.0, -0.0, 1.0, np.nan, -0.0, 0.0, 2.0, -1.0, np.nan, 0.0, -0.0, 3.0])
    index = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 4])
    expected = ref_scatter(src, index, op, dim_size=6)
    for chunks in [(1,) * 12, (3, 3, 3, 3), (5, 0, 7)]:
        got = threads(csd.scatter(da.from_array(src, chunks=chunks), chunked(index, chunks), op, dim_size=6))
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_scatter_accepts_numpy_src_or_index():
    rng = np.random.default_rng(6)
    index, dim_size = make_index(rng, "int", "raise", DIMS)
    src = make_values(rng, (N, 2), np.float64)
    expected = ref_scatter(src, index, "add", dim_size=dim_size)
    from_numpy_src = csd.scatter(src, chunked(index, 5), dim_size=dim_size)
    assert from_numpy_src.chunks[0] == (dim_size,) and from_numpy_src.dask   # still lazy, cut like the index
    assert_matches(threads(from_numpy_src), expected, "add")
    assert_matches(threads(csd.scatter(da.from_array(src, chunks=7), index, dim_size=dim_size)), expected, "add")


# ---- argmax / argmin ----------------------------------------------------------------------------------------

ARG_FUNCS = {"max": (csd.scatter_argmax, cs.scatter_argmax), "min": (csd.scatter_argmin, cs.scatter_argmin)}


def assert_arg_matches(kind, got, src, index, **kw):
    """Equal to the loop reference and to the in-memory call, exactly, as int64."""
    got = threads(got)
    expected = ref_scatter_arg(src, index, kind, **kw)
    assert got.dtype == np.int64 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, ARG_FUNCS[kind][1](src, index, **kw))


@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("which", ARG_FUNCS)
def test_scatter_arg_matches_reference(which, kind, mode, chunks):
    rng = np.random.default_rng(11)
    index, dim_size = make_index(rng, kind, mode, DIMS)
    src = rng.integers(0, 3, (N, 2)).astype(np.float64)      # few values: ties within and across blocks
    got = ARG_FUNCS[which][0](da.from_array(src, chunks=(CHUNKS[chunks], 1)), chunked(index, CHUNKS[chunks]),
                              dim_size=dim_size, mode=mode, split_every=3)
    assert_arg_matches(which, got, src, index, dim_size=dim_size, mode=mode)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "uint8", "int64", "uint64"])
@pytest.mark.parametrize("which", ARG_FUNCS)
def test_scatter_arg_dtypes(which, dtype):
    rng = np.random.default_rng(12)
    index, dim_size = make_index(rng, "int", "drop", DIMS)
    src = rng.integers(0, 4, (N, 3)).astype(dtype)
    got = ARG_FUNCS[which][0](da.from_array(src, chunks=(CHUNKS["uneven_empty"], 2)),
                              chunked(index.astype(np.int32), 5), dim_size=dim_size, mode="drop")
    assert_arg_matches(which, got, src, index, dim_size=dim_size, mode="drop")


@pytest.mark.parametrize("which", ARG_FUNCS)
def test_scatter_arg_nd_index_chunked_on_two_axes(which):
    # Blocks of a 2-d index are not in flat-position order (block (0, 1) holds 1..5, block (1, 0) holds 6):
    # ties must go to the smaller global position, not to the block merged first.
    # Batch 0 is all ties: group 1 sits at positions 7 (block (2, 1)) and 12 (block (2, 0), merged first).
    rng = np.random.default_rng(13)
    index = rng.integers(1, 3, (4, 6))
    index[0], index[1, :2], index[2, 0] = 0, (2, 1), 1
    src = rng.integers(0, 2, (2, 4, 6)).astype(np.float32)
    src[0] = 0
    got = ARG_FUNCS[which][0](da.from_array(src, chunks=(1, (1, 0, 3), (1, 5))),
                              da.from_array(index, chunks=((1, 0, 3), (1, 5))), dim_size=4, axis=1, split_every=2)
    assert_arg_matches(which, got, src, index, dim_size=4, axis=1)


@pytest.mark.parametrize("which", ARG_FUNCS)
def test_scatter_arg_nan_and_signed_zeros_across_blocks(which):
    # rows: NaN vs numbers; two NaNs; -0.0 / +0.0 both orders; a tie; +-inf only; an empty row (7)
    src = np.array([1.0, np.nan, np.nan, 2.0, np.nan, -0.0, 0.0, 0.0, -0.0, 3.0, 3.0, -np.inf, np.inf, 4.0])
    index = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6])
    for chunks in [(14,), (1,) * 14, (3, 0, 4, 7), (2, 2, 2, 2, 2, 2, 2)]:
        got = ARG_FUNCS[which][0](da.from_array(src, chunks=chunks), chunked(index, chunks), dim_size=8)
        assert_arg_matches(which, got, src, index, dim_size=8)


@pytest.mark.parametrize("which", ARG_FUNCS)
def test_scatter_arg_output_and_feature_chunks(which):
    rng = np.random.default_rng(14)
    index, dim_size = make_index(rng, "tuple", "wrap", DIMS)
    src = rng.integers(-2, 2, (2, N, 3)).astype(np.int32)
    got = ARG_FUNCS[which][0](da.from_array(src, chunks=(1, CHUNKS["even"], (2, 1))), chunked(index, 10),
                              dim_size=dim_size, axis=1, mode="wrap", dim_chunks=(2, 0, 1))
    assert got.chunks == ((1, 1), (2, 0, 1), (4,), (2, 1))
    assert_arg_matches(which, got, src, index, dim_size=dim_size, axis=1, mode="wrap")


@pytest.mark.parametrize("call, error, match", [
    (lambda s, i: csd.scatter_argmax(s, i), TypeError, "dim_size"),
    (lambda s, i: csd.scatter_argmin(s, i, dim_size=None), TypeError, "dim_size is required"),
    (lambda s, i: csd.scatter_argmax(s.astype(complex), i, dim_size=3), TypeError, "complex"),
    (lambda s, i: csd.scatter_argmin(s, i, dim_size=3, mode="nearest"), ValueError, "mode="),
])
def test_scatter_arg_argument_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(da.ones(6, chunks=4), da.from_array(np.array([0, 1, 2, 0, 1, 2]), chunks=4))


def test_scatter_arg_out_of_range_raises_when_computed():
    lazy = csd.scatter_argmax(da.ones(5, chunks=2), da.from_array(np.array([0, 1, 2, 9, 1]), chunks=2), dim_size=4)
    with pytest.raises(IndexError, match=r"= 9 is out of bounds.*index chunk \[2:4\]"):
        threads(lazy)


# ---- gather -------------------------------------------------------------------------------------------------

# Chunkings of the first gathered axis (sizes 7 and 3) of src.
SRC_CHUNKS = {"one": {7: (7,), 3: (3,)}, "uneven_empty": {7: (3, 0, 4), 3: (2, 0, 1)},
              "singles": {7: (1,) * 7, 3: (1,) * 3}}


@pytest.mark.parametrize("op", ["set", "first"])
@pytest.mark.parametrize("chunks", [((2,), (1, 2)), ((1, 1), (2, 1)), ((1, 1), (1, 1, 1)), ((2,), (3,))])
def test_assignments_of_a_2d_index_chunked_along_its_second_axis(op, chunks):
    """The last (first) entry in index order wins, as in memory, whatever the chunks of a 2-d index: the flattened
    order runs across its second axis (was: the winner of another block)."""
    index = np.array([[0, 1, 0], [1, 0, 0]])
    src = np.arange(6.0).reshape(2, 3)
    want = ref_scatter(src, index, op, dim_size=2)
    got = csd.scatter(da.from_array(src, chunks=chunks), da.from_array(index, chunks=chunks), op, dim_size=2)
    np.testing.assert_array_equal(threads(got), want)


@pytest.mark.parametrize("dtype", [">f8", ">i4", ">c16"])
def test_gather_of_a_big_endian_src_is_native(dtype):
    """Results are native, as the in-memory gather's (docs/errors.rst)."""
    src = np.arange(12).reshape(4, 3).astype(dtype)
    index = np.array([3, 0, 0, 2])
    got = threads(csd.gather(da.from_array(src, chunks=2), da.from_array(index, chunks=3)))
    assert got.dtype.isnative and got.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(got, ref_gather(src, index))


@pytest.mark.parametrize("src_chunks", SRC_CHUNKS)
@pytest.mark.parametrize("index_chunks", ["one", "uneven_empty"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_gather_matches_reference(kind, mode, index_chunks, src_chunks):
    rng = np.random.default_rng(7)
    index, dims = make_index(rng, kind, mode, DIMS)
    dims = dims if isinstance(dims, tuple) else (dims,)
    src = make_values(rng, dims + (2,), np.int16)
    along_d = (SRC_CHUNKS[src_chunks][dims[0]],) + (2,) * (len(dims) - 1)   # later gathered axes: rechunked
    got = csd.gather(da.from_array(src, chunks=along_d + (1,)), chunked(index, CHUNKS[index_chunks]), mode=mode,
                     fill_value=-5)
    assert got.chunks == (CHUNKS[index_chunks], (1, 1))
    expected = ref_gather(src, index, mode=mode, fill_value=-5)
    np.testing.assert_array_equal(threads(got), expected)
    assert got.dtype == expected.dtype


def test_gather_batch_axis_and_feature_chunks():
    rng = np.random.default_rng(8)
    src = make_values(rng, (2, 9, 3), np.complex128)
    index = rng.integers(0, 9, (4, 5))
    got = csd.gather(da.from_array(src, chunks=(1, (4, 0, 5), (1, 2))), da.from_array(index, chunks=(3, 2)),
                     axis=1)
    assert got.chunks == ((1, 1), (3, 1), (2, 2, 1), (1, 2))
    np.testing.assert_array_equal(threads(got), ref_gather(src, index, axis=1))


# ---- errors and laziness ------------------------------------------------------------------------------------

_OUT_OF_RANGE_CALLS = {   # each names the index `index` (scatter_vjp_src runs on the message-passing graph)
    "scatter": lambda s, i: csd.scatter(s, i, "max", dim_size=4),
    "gather": lambda s, i: csd.gather(da.ones(4, chunks=3), i),
    "scatter_count": lambda s, i: csd.scatter_count(i, 4),
    "scatter_vjp_src": lambda s, i: csd.scatter_vjp_src("max", np.ones(4), s, i, np.ones(4)),
    "scatter_vjp_dst": lambda s, i: csd.scatter_vjp_dst("max", np.ones(4), np.ones(4), s, i, np.ones(4)),
    "gather_vjp_src": lambda s, i: csd.gather_vjp_src(s, i, (4,)),
}


def test_out_of_range_raises_when_computed():
    index = da.from_array(np.array([0, 1, 2, 9, 1]), chunks=2)
    src = da.ones(5, chunks=2)
    for make in _OUT_OF_RANGE_CALLS.values():
        lazy = make(src, index)            # building the graph reads no data of a Dask index
        with pytest.raises(IndexError, match=r"^index\[1\] = 9 is out of bounds.*index chunk \[2:4\]"):
            threads(lazy)
        # a NumPy index's values are at hand: the in-memory check, when the graph is built
        with pytest.raises(IndexError, match=r"^index\[3\] = 9 is out of bounds"):
            make(src, index.compute())


@pytest.mark.parametrize("call, error, match", [
    (lambda s, i: csd.scatter(s, i, "add"), TypeError, "dim_size"),
    (lambda s, i: csd.scatter(s, i, "add", dim_size=None), TypeError, "dim_size is required"),
    (lambda s, i: csd.scatter(s, i, "medoid", dim_size=3), ValueError, "unknown op"),
    (lambda s, i: csd.scatter(s, i.astype(float), dim_size=3), TypeError, "must hold integers"),
    (lambda s, i: csd.scatter(s[:5], i, dim_size=3), ValueError, "does not hold the index shape"),
    (lambda s, i: csd.scatter(s, i, dim_size=3, mode="nearest"), ValueError, "mode="),
    (lambda s, i: csd.scatter(s, i, dim_size=3, split_every=1), ValueError, "split_every"),
    (lambda s, i: csd.scatter(s, i, dim_size=3, dim_chunks=(1, 1)), ValueError, "add up"),
    (lambda s, i: csd.scatter(s, i[i > 0], dim_size=3), ValueError, "unknown chunk sizes"),
    (lambda s, i: csd.gather(s, (i, i)), ValueError, "axis"),
])
def test_argument_errors_at_graph_time(call, error, match):
    with pytest.raises(error, match=match):
        call(da.ones(6, chunks=4), da.from_array(np.array([0, 1, 2, 0, 1, 2]), chunks=4))


def test_import_cyscatter_does_not_import_dask():
    code = "import sys, cyscatter; assert not any(m.split('.')[0] == 'dask' for m in sys.modules), 'dask'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_without_dask_the_import_error_names_the_extra():
    code = ("import sys; sys.modules['dask'] = None\n"
            "try:\n    import cyscatter.dask\nexcept ImportError as e:\n    assert 'cyscatter[dask]' in str(e), e\n"
            "else:\n    raise SystemExit('imported without dask')")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ---- dask.distributed ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    environ = dict(os.environ)   # the nanny sets OMP_NUM_THREADS=1 (and MKL/OpenBLAS) in this process's environment
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      worker_dashboard_address=None) as cluster, \
                distributed.Client(cluster, set_as_default=False) as client:
            yield client
    finally:   # later tests that start processes (tests/backends/test_fork_safety.py) would inherit one thread
        os.environ.clear()
        os.environ.update(environ)


@pytest.mark.distributed
@pytest.mark.parametrize("op", ["mean", "div", "max"])
def test_scatter_on_local_cluster(client, op):
    rng = np.random.default_rng(9)
    index, dim_size = make_index(rng, "tuple", "drop", DIMS)
    src = make_values(rng, (N, 2), np.float64)
    got = csd.scatter(da.from_array(src, chunks=(CHUNKS["uneven_empty"], 1)), chunked(index, 5), op,
                      dim_size=dim_size, mode="drop", dim_chunks=2)
    assert_matches(client.compute(got).result(), ref_scatter(src, index, op, dim_size=dim_size, mode="drop"), op)


@pytest.mark.distributed
def test_gather_on_local_cluster_and_its_errors(client):
    rng = np.random.default_rng(10)
    src = make_values(rng, (7, 3), np.float32)
    index = rng.integers(0, 7, N)
    got = csd.gather(da.from_array(src, chunks=(3, 3)), chunked(index, CHUNKS["uneven_empty"]))
    np.testing.assert_array_equal(client.compute(got).result(), ref_gather(src, index))
    index[5] = 7
    with pytest.raises(IndexError, match="= 7 is out of bounds"):
        client.compute(csd.gather(da.from_array(src, chunks=3), chunked(index, 4))).result()


@pytest.mark.distributed
@pytest.mark.parametrize("which", ARG_FUNCS)
def test_scatter_arg_on_local_cluster(client, which):
    rng = np.random.default_rng(15)
    index, dim_size = make_index(rng, "int", "drop", DIMS)
    src = rng.integers(0, 3, (N, 2)).astype(np.float64)
    got = ARG_FUNCS[which][0](da.from_array(src, chunks=(CHUNKS["uneven_empty"], 1)), chunked(index, 5),
                              dim_size=dim_size, mode="drop", dim_chunks=3)
    np.testing.assert_array_equal(client.compute(got).result(),
                                  ref_scatter_arg(src, index, which, dim_size=dim_size, mode="drop"))


@pytest.mark.parametrize("fill", (-1, 5))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("which", ARG_FUNCS)
def test_scatter_arg_fill_value(which, kind, mode, fill):
    rng = np.random.default_rng(12)
    index, dim_size = make_index(rng, kind, mode, DIMS)
    src = rng.integers(0, 3, (N, 2)).astype(np.float64)
    got = ARG_FUNCS[which][0](da.from_array(src, chunks=(6, 1)), chunked(index, 6), dim_size=dim_size, mode=mode,
                              fill_value=fill)
    want = ARG_FUNCS[which][1](src, index, dim_size=dim_size, mode=mode, fill_value=fill)
    np.testing.assert_array_equal(threads(got), want)
    empty = ARG_FUNCS[which][1](src, index, dim_size=dim_size, mode=mode) == N
    assert (want[empty] == fill).all() and (want[~empty] != fill).any() | (fill == -1)
