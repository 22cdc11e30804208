"""OpenMP threads inside one call (num_threads, set_num_threads). Threaded kernels and their specialised loops against the plain-loop reference: every op, kernel dtype, index
dtype, row width and work split, on 1-3 threads (the size threshold is lowered so small inputs run threaded)."""
import numpy as np
import pytest
from reference import ref_gather, ref_scatter
from testing import OPS, op_supports, twin

import cyscatter as cs
from cyscatter import kernels

WIDTHS = (1, 2, 3, 4, 8, 16, 32, 64)   # 2-32: loops unrolled for a fixed width (one cache line: in vectors)
# kernel knobs of each way to split a scatter; "blocks" sorts entries by destination block first (64 B blocks
# here, so that small tables have many), which only calls on one batch slice (`flat` below) can use
SPLITS = {"auto": {}, "rows": dict(scatter_split=1), "columns": dict(scatter_split=2),
          "blocks": dict(partition=1, block_bytes=64)}


@pytest.fixture
def tiny_threshold():
    """Let every call use its threads, and restore the kernels' knobs afterwards."""
    saved = kernels._tune()
    kernels._tune(min_work=1)
    yield
    kernels._tune(**saved)


def _values(rng, shape, dtype, op):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        low = 1 if op in ("mul", "div") else -50 * (dtype.kind == "i")
        return rng.integers(low, 50, shape).astype(dtype)
    real = rng.standard_normal(shape)
    if op in ("mul", "div"):
        real = 1 + real / 8
    if op in ("max", "min"):   # ties, signed zeros and NaN exercise the order-independent rules
        real = np.round(real, 1)
        real.flat[::7] = -0.0
        real.flat[::11] = 0.0
        real.flat[::97] = np.nan
    a = real.astype(dtype)
    if dtype.kind == "c":
        a = a + 1j * (1 + rng.standard_normal(shape) / 8 if op in ("mul", "div") else rng.standard_normal(shape))
    return a.astype(dtype)


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint64", "complex128"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.valid(lambda op, dtype: op_supports(op, dtype))
def test_scatter_threads_match_reference(op, dtype, width, split, tiny_threshold):
    rng = np.random.default_rng(hash((op, dtype, width, split)) % 2**32)
    n, size = 301, 37
    src = _values(rng, (2, n, width), dtype, op)
    index = rng.integers(0, size, n).astype("int32" if width % 2 else "int64")
    index[:40] = 5   # one crowded row
    kernels._tune(**SPLITS[split])
    expected = ref_scatter(src, index, op, dim_size=size, axis=1)
    one = cs.scatter(src, index, op, dim_size=size, axis=1, num_threads=1)
    if dtype.startswith("complex") and twin(op) == "mul":
        # NumPy's SIMD complex multiply may fuse multiply-adds (CPU dependent): equal to rounding only
        np.testing.assert_allclose(one, expected, rtol=1e-13)
    else:
        np.testing.assert_array_equal(one, expected, strict=True)
    for threads in (2, 3):   # bitwise whatever the thread count, float sums included
        got = cs.scatter(src, index, op, dim_size=size, axis=1, num_threads=threads)
        np.testing.assert_array_equal(got, one, strict=True)
        flat = cs.scatter(src[0], index, op, dim_size=size, num_threads=threads)
        np.testing.assert_array_equal(flat, one[0], strict=True)


@pytest.mark.parametrize("block_bytes", [64, 256, 1 << 20])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", OPS)
def test_destination_blocks_match_reference(op, index_dtype, block_bytes, tiny_threshold):
    """The destination-partitioned scatter: index order kept inside every row (bitwise equal to the plain
    loop), drop mode, mean's counts, an index sorted only within each thread's chunk, uneven blocks."""
    rng = np.random.default_rng(hash((op, index_dtype, block_bytes)) % 2**32)
    n, size, width = 997, 61, 16
    src = _values(rng, (n, width), "float64", op)
    index = rng.integers(-3, size + 3, n).astype(index_dtype)
    index[100:300] = 7                    # one crowded row
    chunked = np.concatenate([np.sort(index[:500]), np.sort(index[500:])])   # sorted per 2-thread chunk
    dst = _values(rng, (size, width), "float64", op)
    for idx in (index, chunked):
        expected = ref_scatter(src, idx, op, mode="drop", dst=dst)
        fresh = ref_scatter(src, idx, op, mode="drop", dim_size=size)
        for threads in (1, 2, 3):
            kernels._tune(partition=1, block_bytes=block_bytes)
            got = cs.scatter_into(dst.copy(), src, idx, op, mode="drop", num_threads=threads)
            np.testing.assert_array_equal(got, expected, strict=True)
            got = cs.scatter(src, idx, op, mode="drop", dim_size=size, num_threads=threads)
            np.testing.assert_array_equal(got, fresh, strict=True)
    with pytest.raises(IndexError, match=r"index\[0\] = -3"):
        bad = index.copy()
        bad[0] = -3
        cs.scatter(src, bad, op, dim_size=size, num_threads=2)


@pytest.mark.parametrize("op", OPS)
def test_scatter_into_threads_and_drop(op, tiny_threshold):
    rng = np.random.default_rng(3)
    src = rng.standard_normal((500, 64))
    index = rng.integers(-5, 45, 500)
    dst = rng.standard_normal((40, 64))
    expected = ref_scatter(src, index, op, mode="drop", dst=dst)
    for threads in (1, 2, 3):
        got = cs.scatter_into(dst.copy(), src, index, op, mode="drop", num_threads=threads)
        np.testing.assert_array_equal(got, expected, strict=True)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_scatter_reports_first_bad_position_on_any_thread_count(threads, tiny_threshold):
    index = np.array([0, 3, 9, 1, -1, 2, 99])
    with pytest.raises(IndexError, match=r"index\[2\] = 9"):
        cs.scatter(np.ones((7, 64)), index, dim_size=5, num_threads=threads)
    with pytest.raises(IndexError, match=r"index\[2\] = 9"):   # the one-element-row loop
        cs.scatter(np.ones(7), index, dim_size=5, num_threads=threads)
    dst = np.zeros((5, 64))
    with pytest.raises(IndexError, match=r"index\[2\] = 9"):
        cs.scatter_into(dst, np.ones((7, 64)), index, num_threads=threads)
    assert not dst.any()


@pytest.mark.parametrize("width", WIDTHS + (5, 16, 32, 33))
@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "float64", "complex128", "V12"])
def test_gather_threads_match_reference(dtype, width, tiny_threshold):
    rng = np.random.default_rng(width)
    src = rng.integers(0, 255, (3, 50, width * np.dtype(dtype).itemsize), dtype=np.uint8).view(dtype)
    index = rng.integers(0, 50, 200)
    expected = ref_gather(src, index, axis=1)
    for threads, stream in [(1, 0), (2, 0), (3, 0), (1, 1), (2, 1)]:   # stream: non-temporal stores
        kernels._tune(stream=stream)
        got = cs.gather(src, index, axis=1, num_threads=threads)
        assert got.tobytes() == expected.tobytes()
        got = cs.gather(src[1], index.astype(np.int32), num_threads=threads)
        assert got.tobytes() == expected[1].tobytes()


def test_gather_drop_keeps_fill_on_threads(tiny_threshold):
    src = np.arange(40.0).reshape(10, 4)
    index = np.array([1, 10, -1, 3] * 50)
    expected = ref_gather(src, index, mode="drop", fill_value=-7)
    for threads in (1, 2, 3):
        np.testing.assert_array_equal(cs.gather(src, index, mode="drop", fill_value=-7, num_threads=threads),
                                      expected)


def test_num_threads_argument_is_checked():
    with pytest.raises(ValueError, match="num_threads"):
        cs.scatter(np.ones(3), np.zeros(3, int), num_threads=0)
    with pytest.raises(TypeError, match="num_threads"):
        cs.gather(np.ones(3), np.zeros(3, int), num_threads=1.5)
    with pytest.raises(ValueError):
        cs.set_num_threads(-1)


def test_set_num_threads_sets_the_default():
    before = cs.get_num_threads()
    try:
        cs.set_num_threads(1)
        assert cs.get_num_threads() == 1
    finally:
        cs.set_num_threads(None)
    assert cs.get_num_threads() == before


@pytest.mark.parametrize("prefetch_rows", [0, 4])   # 0: the lean loops, counted in a pass of their own
@pytest.mark.parametrize("width", [1, 3, 16])
@pytest.mark.parametrize("mode", ["raise", "drop"])
def test_mean_counts_in_either_loop(mode, width, prefetch_rows, tiny_threshold):
    """mean's group counts come from the row loop itself (rows that are prefetched) or from a pass of their
    own after the lean loop: both count each valid entry once, whatever the batch slices and threads."""
    rng = np.random.default_rng(width + 10 * prefetch_rows)
    n, size = 403, 29
    src = rng.standard_normal((2, n, width))
    index = rng.integers(-4 if mode == "drop" else 0, size + (4 if mode == "drop" else 0), n)
    index[50:90] = 3   # one crowded row
    dst = rng.standard_normal((2, size, width))
    kernels._tune(prefetch_rows=prefetch_rows)
    fresh = ref_scatter(src, index, "mean", mode=mode, dim_size=size, axis=1)
    into = ref_scatter(src, index, "mean", mode=mode, dst=dst, axis=1)
    for threads in (1, 2, 3):
        got = cs.scatter(src, index, "mean", mode=mode, dim_size=size, axis=1, num_threads=threads)
        np.testing.assert_array_equal(got, fresh, strict=True)
        got = cs.scatter(src[1], index, "mean", mode=mode, dim_size=size, num_threads=threads)
        np.testing.assert_array_equal(got, fresh[1], strict=True)
        got = cs.scatter_into(dst.copy(), src, index, "mean", mode=mode, axis=1, num_threads=threads)
        np.testing.assert_array_equal(got, into, strict=True)
