"""The row-converting scatter (float16/bfloat16 into float32, ``dtype=np.float64`` on float32: each src row
converted in registers as it is combined) on several threads: split as the same-dtype scatter splits (batch
slices, feature columns, destination row ranges), so every thread count gives the plain loops' bits on the
converted src, with no block buffer."""
import tracemalloc

import numpy as np
import pytest
from reference import ref_scatter

import cyscatter as cs
from cyscatter import kernels
from cyscatter._backends import host

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

CONVERSIONS = [("float16", None), ("bfloat16", None), ("float32", np.float64)]


@pytest.fixture
def threads_on_small_inputs():
    """Teams start on inputs of a few thousand elements, and any src size takes the staged paths."""
    old_tune, old_min = kernels._tune(), host.STAGE_MIN_ELEMENTS
    kernels._tune(min_work=1)
    host.STAGE_MIN_ELEMENTS = 0
    yield
    kernels._tune(min_work=old_tune["min_work"], scatter_split=old_tune["scatter_split"])
    host.STAGE_MIN_ELEMENTS = old_min


def _src_dtype(name):
    return pytest.importorskip("ml_dtypes").bfloat16 if name == "bfloat16" else np.dtype(name)


def _values(rng, shape, dtype, op):
    """Signed zeros, infinities and NaN among normal values (no -inf in sums: inf - inf's NaN payload is the
    compiler's operand order)."""
    x = rng.standard_normal(shape) * 3
    for value, share in ((0.0, 0.05), (-0.0, 0.05), (np.inf, 0.02), (-np.inf, 0.02 * (op in ("max", "min"))),
                         (np.nan, 0.03)):
        x[rng.random(shape) < share] = value
    return x.astype(np.float32).astype(dtype)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.itemsize}"))


def _want(x, idx, op, size, dtype, axis=0, **kw):
    want = ref_scatter(x.astype(np.float32 if dtype is None else dtype), idx, op, dim_size=size, axis=axis, **kw)
    return want.astype(x.dtype) if dtype is None else want


@pytest.mark.parametrize("src_dtype, dtype", CONVERSIONS)
@pytest.mark.parametrize("op", ["add", "max", "min", "mean"])
@pytest.mark.parametrize("split", [0, 1, 2], ids=["auto", "row-ranges", "columns"])
@pytest.mark.parametrize("shape, axis", [((600, 64), 0), ((600, 16), 0), ((600, 3), 0), ((600, 70), 0),
                                         ((3, 600, 16), 1)],
                         ids=["wide", "line", "narrow", "tail", "batch"])
@pytest.mark.parametrize("threads", [2, 3])
def test_threads_match_the_loops_bit_for_bit(threads_on_small_inputs, src_dtype, dtype, op, split, shape, axis,
                                             threads):
    kernels._tune(scatter_split=split)
    rng = np.random.default_rng(shape[-1] + threads)
    x = _values(rng, shape, _src_dtype(src_dtype), op)
    idx = rng.integers(0, 37, shape[axis]).astype(np.int32 if threads == 3 else np.int64)
    got = cs.scatter(x, idx, op, dim_size=37, axis=axis, dtype=dtype, num_threads=threads)
    want = _want(x, idx, op, 37, dtype, axis)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("src_dtype, dtype", CONVERSIONS)
@pytest.mark.parametrize("split", [1, 2], ids=["row-ranges", "columns"])
def test_threads_drop_raise_and_into(threads_on_small_inputs, src_dtype, dtype, split):
    kernels._tune(scatter_split=split)
    rng = np.random.default_rng(4)
    x = _values(rng, (500, 64), _src_dtype(src_dtype), "add")
    idx = rng.integers(-3, 20, 500)
    got = cs.scatter(x, idx, "add", dim_size=20, mode="drop", dtype=dtype, num_threads=2)
    np.testing.assert_array_equal(_bits(got), _bits(_want(x, idx, "add", 20, dtype, mode="drop")))
    out = np.full((20, 64), 3, np.float32 if dtype is None else dtype)
    before = out.copy()
    bad = np.where(idx < 0, 0, idx)
    bad[300] = 20
    with pytest.raises(IndexError, match="300"):
        cs.scatter_into(out, x, bad, "max", num_threads=2)
    np.testing.assert_array_equal(out, before)
    cs.scatter_into(out, x, np.where(idx < 0, 0, idx), "max", num_threads=2)
    want = np.full((20, 64), 3, out.dtype)
    np.maximum.at(want, np.where(idx < 0, 0, idx), x.astype(out.dtype))
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("src_dtype, dtype", CONVERSIONS)
def test_two_threads_need_no_block_buffer(src_dtype, dtype):
    """Two threads run the row loops too: the result is the only allocation (the block path stages 1 MB)."""
    rng = np.random.default_rng(6)
    n, f, groups = 200_000, 64, 500
    x = rng.standard_normal((n, f)).astype(np.float32).astype(_src_dtype(src_dtype))
    idx = rng.integers(0, groups, n)
    cs.scatter(x[:100], idx[:100], dim_size=groups, dtype=dtype, num_threads=2)   # warm the Python layer
    result_bytes = groups * f * (4 if dtype is None else 8)
    tracemalloc.start()
    try:
        got = cs.scatter(x, idx, dim_size=groups, dtype=dtype, num_threads=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < result_bytes + (256 << 10), peak
    want = np.zeros((groups, f), np.float32 if dtype is None else dtype)
    np.add.at(want, idx, x.astype(want.dtype))
    assert got.dtype == (x.dtype if dtype is None else np.dtype(dtype))
    np.testing.assert_array_equal(_bits(got), _bits(want.astype(got.dtype)))
