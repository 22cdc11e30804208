"""The per-element counts of the NaN-skipping ops on the host (nanmean's divisor, the elements a fill_value
marks): entries per row, minus the NaN entries per element counted in the narrowest type the largest row count
fits (`cyscatter.nan_kernels`), or the row counts alone when src holds no NaN. Compared with the plain-loop
reference (helpers/reference.py) and with an explicit NumPy ``np.add.at`` computation, over row widths around the
kernel's 16-feature lines, NaN densities (none, sparse, dense, all), src layouts (contiguous, broadcast rows,
broadcast features, strided), complex NaN in one part, batch dims, modes, thread counts, scatter_into and Dask
blocks that do and do not hold NaN."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import nan_kernels
from cyscatter._runtime import machine as _machine
from compare import assert_same
from reference import ref_scatter

WIDTHS = (1, 3, 16, 17, 40, 64, 100)
SHARES = (0.0, 0.002, 0.3, 1.0)


def nan_src(rng, shape, share, dtype="float64"):
    src = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        src += 1j * rng.standard_normal(shape)
        where = rng.random(shape) < share
        real_part = rng.random(shape) < 0.5
        src[where & real_part] = src[where & real_part].imag * 1j + np.nan
        src[where & ~real_part] = src[where & ~real_part].real + 1j * np.nan
    else:
        src[rng.random(shape) < share] = np.nan
    return src


def numpy_nanmean(src, idx, size, fill=0.0):
    """Per-element mean of the non-NaN entries by np.add.at (axis 0), `fill` where an element has none."""
    isnan = np.isnan(src)
    sums = np.zeros((size,) + src.shape[1:], src.dtype)
    counts = np.zeros((size,) + src.shape[1:], np.int64)
    np.add.at(sums, idx, np.where(isnan, 0, src))
    np.add.at(counts, idx, ~isnan)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    mean[counts == 0] = fill
    return mean


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nanmean_widths_and_densities(width, share, dtype):
    rng = np.random.default_rng([width, int(share * 1000), len(dtype)])
    src = nan_src(rng, (400, width), share, dtype)
    idx = rng.integers(0, 37, 400)
    actual = cs.scatter(src, idx, "nanmean", dim_size=40)
    expected = numpy_nanmean(src.astype(np.float64), idx, 40).astype(dtype)
    np.testing.assert_allclose(actual, expected, rtol=2e-6 if dtype == "float32" else 1e-13, atol=1e-6)
    assert_same(actual, ref_scatter(src, idx, "nanmean", dim_size=40))


@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("op", ["nansum", "fmax", "fmin", "nanprod", "nanmean"])
def test_fill_value_marks_elements_without_a_number(op, share):
    rng = np.random.default_rng([len(op), int(share * 1000)])
    src = nan_src(rng, (300, 20), share)
    src[:, 5] = np.nan                      # one feature column NaN everywhere
    idx = rng.integers(0, 50, 300)
    idx[idx == 7] = 8                       # one row no entry reaches
    actual = cs.scatter(src, idx, op, dim_size=50, fill_value=-3.5)
    assert_same(actual, ref_scatter(src, idx, op, dim_size=50, fill_value=-3.5))
    assert (actual[:, 5] == -3.5).all() and (actual[7] == -3.5).all()


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("share", [0.0, 0.3])
def test_complex_nan_in_one_part(dtype, share):
    rng = np.random.default_rng([len(dtype), int(share * 10)])
    src = nan_src(rng, (200, 18), share, dtype)
    idx = rng.integers(0, 25, 200)
    expected = ref_scatter(src, idx, "nanmean", dim_size=25, fill_value=5)
    assert_same(cs.scatter(src, idx, "nanmean", dim_size=25, fill_value=5), expected)


@pytest.mark.parametrize("layout", ["broadcast_row", "broadcast_feature", "strided", "batch"])
@pytest.mark.parametrize("share", [0.0, 0.3])
def test_src_layouts(layout, share):
    rng = np.random.default_rng([len(layout), int(share * 10)])
    idx = rng.integers(0, 30, 250)
    if layout == "broadcast_row":        # (F,) against (n, F): stride-0 rows
        src = nan_src(rng, (33,), share)
        full = np.broadcast_to(src, (250, 33))
        dst = np.zeros((30, 33))
        cs.scatter_into(dst, src, idx, "nanmean")
        expected = ref_scatter(np.ascontiguousarray(full), idx, "nanmean", dst=np.zeros((30, 33)))
        assert_same(dst, expected)
        return
    if layout == "broadcast_feature":    # (n, 1) against (n, F): stride-0 features
        src = nan_src(rng, (250, 1), share)
        dst = np.ones((30, 20))
        cs.scatter_into(dst, src, idx, "nanmean")
        expected = ref_scatter(np.ascontiguousarray(np.broadcast_to(src, (250, 20))), idx, "nanmean",
                               dst=np.ones((30, 20)))
        assert_same(dst, expected)
        return
    if layout == "strided":
        src = nan_src(rng, (250, 80), share)[:, ::3]
        assert_same(cs.scatter(src, idx, "nanmean", dim_size=30, fill_value=-1),
                    ref_scatter(np.ascontiguousarray(src), idx, "nanmean", dim_size=30, fill_value=-1))
        return
    src = nan_src(rng, (3, 250, 40), share)   # batch dims: the kernel splits batch slices among threads
    for threads in (1, 2, 3):
        actual = cs.scatter(src, idx, "nanmean", dim_size=30, axis=1, fill_value=9, num_threads=threads)
        assert_same(actual, ref_scatter(src, idx, "nanmean", dim_size=30, axis=1, fill_value=9))


@pytest.mark.parametrize("mode", ["drop", "wrap", "clip", "normalize_drop"])
def test_modes_skip_what_the_sum_pass_skips(mode):
    rng = np.random.default_rng(len(mode))
    src = nan_src(rng, (500, 24), 0.2)
    idx = rng.integers(-40, 60, 500)
    assert_same(cs.scatter(src, idx, "nanmean", dim_size=40, mode=mode, fill_value=2.5),
                ref_scatter(src, idx, "nanmean", dim_size=40, mode=mode, fill_value=2.5))


@pytest.mark.parametrize("width", [16, 64, 200])
def test_thread_counts_give_the_same_bits(width):
    rng = np.random.default_rng(width)
    src = nan_src(rng, (30000, width), 0.05, "float32")
    idx = rng.integers(0, 700, 30000)
    first = cs.scatter(src, idx, "nanmean", dim_size=700, fill_value=-1, num_threads=1)
    for threads in (2, 3, 8):
        assert_same(cs.scatter(src, idx, "nanmean", dim_size=700, fill_value=-1, num_threads=threads), first)
    np.testing.assert_allclose(first, numpy_nanmean(src.astype(np.float64), idx, 700, -1), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("share", [0.0, 0.3])
def test_scatter_into_keeps_elements_without_a_number(share):
    rng = np.random.default_rng(int(share * 10))
    src = nan_src(rng, (200, 17), share)
    src[:, 2] = np.nan
    idx = rng.integers(0, 20, 200)
    dst = rng.standard_normal((20, 17))
    expected = ref_scatter(src, idx, "nanmean", dst=dst.copy())
    cs.scatter_into(dst, src, idx, "nanmean")
    assert_same(dst, expected)


def expected_nan_counts(src, idx, size):
    """NaN entries per (slice, row, feature) by np.add.at over the entries in range."""
    expected = np.zeros((src.shape[0], size, src.shape[2]), np.int64)
    keep = (idx >= 0) & (idx < size)
    for o in range(src.shape[0]):
        np.add.at(expected[o], idx[keep], np.isnan(src[o, keep]).astype(np.int64))
    return expected


COUNT_DTYPES = ["uint8", "uint16", "int32", "int64"]
VALUE_DTYPES = ["float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("count_dtype", COUNT_DTYPES)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("width", [1, 4, 35, 64])
@pytest.mark.parametrize("threads", [1, 2])
def test_count_kernel(count_dtype, dtype, width, threads):
    """The counting pass alone: one per NaN element, counts untouched (and 0 returned) without any NaN."""
    rng = np.random.default_rng([len(count_dtype), len(dtype), width, threads])
    src = nan_src(rng, (2, 300, width), 0.1, dtype)
    idx = rng.integers(-5, 25, 300)
    counts = np.zeros((2, 20, width), count_dtype)
    assert nan_kernels.count(src, idx, counts, threads) > 0
    np.testing.assert_array_equal(counts, expected_nan_counts(src, idx, 20))
    clean = np.where(np.isnan(src), 0, src)
    untouched = np.full((2, 20, width), 7, count_dtype)
    assert nan_kernels.count(clean, idx, untouched, threads) == 0
    assert (untouched == 7).all()


@pytest.mark.parametrize("layout", ["strided", "broadcast_row", "broadcast_feature"])
def test_count_kernel_src_layouts(layout):
    rng = np.random.default_rng(len(layout))
    base = nan_src(rng, (1, 200, 90), 0.2)
    src = {"strided": base[:, :, ::3],
           "broadcast_row": np.broadcast_to(base[:, :1], (1, 200, 90)),
           "broadcast_feature": np.broadcast_to(base[:, :, :1], (1, 200, 90))}[layout]
    idx = rng.integers(0, 12, 200)
    counts = np.zeros((1, 12, src.shape[2]), np.uint8)
    nan_kernels.count(src, idx, counts)
    np.testing.assert_array_equal(counts, expected_nan_counts(np.ascontiguousarray(src), idx, 12))


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("width", [1, 3, 16, 64, 70])
@pytest.mark.parametrize("strided_out", [False, True])
def test_nansum_kernel(dtype, width, strided_out):
    """The sum pass alone: the reference loop's nansum bit for bit (a -0.0 start stays -0.0 under a NaN entry),
    entries out of range skipped, and whether any entry in range held a NaN."""
    rng = np.random.default_rng([len(dtype), width, strided_out])
    src = nan_src(rng, (300, width), 0.1, dtype)
    idx = rng.integers(-3, 23, 300)
    keep = (idx >= 0) & (idx < 20)
    start = np.full((20, width), -0.0, dtype)
    expected = ref_scatter(src[keep], idx[keep], "nansum", dst=start.copy())
    out = np.full((20, 2 * width), -0.0, dtype)[:, ::2] if strided_out else start.copy()
    assert nan_kernels.nansum(src[None], idx, out[None]) > 0
    assert_same(out, expected)
    clean = np.where(np.isnan(src), 1, src)
    out = start.copy()
    assert nan_kernels.nansum(clean[None], idx, out[None]) == 0
    assert_same(out, ref_scatter(clean[keep], idx[keep], "nansum", dst=start.copy()))


@pytest.mark.parametrize("mode", [0, 1])
def test_row_counts(mode):
    idx = np.array([3, 0, 3, 9, 1, -1, 3])
    rows = np.zeros(5, np.int64)
    status = nan_kernels.row_counts(idx, rows, mode)
    raises = mode == int(cs.kernels.IndexMode.MODE_RAISE)
    assert status == (3 if raises else -1)
    keep = (idx >= 0) & (idx < 5)
    expected = np.bincount(idx[:3] if raises else idx[keep], minlength=5)
    np.testing.assert_array_equal(rows, expected)
    assert nan_kernels.row_counts(np.zeros(0, np.int64), rows, mode) == -1


@pytest.mark.parametrize("count_dtype", COUNT_DTYPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_finishing_kernels(count_dtype, dtype):
    """element_counts, divide and mean against NumPy: rows minus NaN counts, sums over max(count, 1)."""
    rng = np.random.default_rng([len(count_dtype), len(dtype)])
    rows = rng.integers(0, 9, 30).astype(np.int64)
    nan = np.minimum(rng.integers(0, 9, (2, 30, 17)), rows[None, :, None]).astype(count_dtype)
    sums = rng.standard_normal((2, 30, 17)).astype(dtype)
    expected_counts = rows[None, :, None] - nan.astype(np.int64)
    for element_dtype in (np.int32, np.int64):
        counts = np.empty((2, 30, 17), element_dtype)
        nan_kernels.element_counts(rows, nan, counts)
        np.testing.assert_array_equal(counts, expected_counts)
        out = sums.copy()
        nan_kernels.divide(out, counts)
        np.testing.assert_array_equal(out, sums / np.maximum(expected_counts, 1).astype(dtype))
        np.testing.assert_array_equal(counts, expected_counts)   # left as it was
    out = sums.copy()
    nan_kernels.mean(out, rows, nan)
    np.testing.assert_array_equal(out, sums / np.maximum(expected_counts, 1).astype(dtype))


def test_kernels_check_extents():
    src = np.zeros((1, 4, 3))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.count(src, np.zeros(3, np.int64), np.zeros((1, 5, 3), np.int32))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.count(src, np.zeros(4, np.int64), np.zeros((1, 5, 2), np.uint8))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.count(src, np.zeros(4, np.int64), np.zeros((2, 5, 3), np.uint16))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.nansum(src, np.zeros(4, np.int64), np.zeros((1, 5, 2)))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.element_counts(np.zeros(4, np.int64), np.zeros((1, 5, 2), np.uint8), np.zeros((1, 5, 2), np.int32))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.divide(np.zeros((1, 5, 2)), np.zeros((1, 5, 3), np.int32))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.mean(np.zeros((1, 5, 2)), np.zeros(5, np.int64), np.zeros((1, 4, 2), np.uint8))


@pytest.fixture(params=["one pass", "two passes"])
def count_pass(request, monkeypatch):
    """Both ways of counting NaN entries (in nansum's pass, or a second pass over src), whatever the tables'
    size, by the machine rule they follow."""
    llc = (1 << 40) if request.param == "one pass" else 2
    monkeypatch.setattr(_machine, "ACTIVE", _machine.Machine("AMD", "cpu", 1 << 20, llc))
    return request.param


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("width", [1, 16, 64, 70])
@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("fill", [None, -1.5])
def test_both_count_passes(count_pass, dtype, width, share, fill):
    rng = np.random.default_rng([len(dtype), width, int(share * 1000), fill is None])
    src = nan_src(rng, (500, width), share, dtype)
    idx = rng.integers(-4, 30, 500)
    for threads in (1, 2):
        actual = cs.scatter(src, idx, "nanmean", dim_size=30, mode="drop", fill_value=fill, num_threads=threads)
        assert_same(actual, ref_scatter(src, idx, "nanmean", dim_size=30, mode="drop", fill_value=fill))
    if share:
        with pytest.raises(IndexError):
            cs.scatter(src, idx, "nanmean", dim_size=30)


@pytest.mark.parametrize("count_dtype", COUNT_DTYPES)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
def test_nansum_count_kernel(count_dtype, dtype):
    rng = np.random.default_rng([len(count_dtype), len(dtype)])
    src = nan_src(rng, (2, 300, 37), 0.1, dtype)
    idx = rng.integers(-5, 25, 300)
    out = np.full((2, 20, 37), -0.0, dtype)
    counts = np.zeros((2, 20, 37), count_dtype)
    assert nan_kernels.nansum_count(src, idx, out, counts, 2) > 0
    np.testing.assert_array_equal(counts, expected_nan_counts(src, idx, 20))
    keep = (idx >= 0) & (idx < 20)
    for o in range(2):
        assert_same(out[o], ref_scatter(src[o, keep], idx[keep], "nansum", dst=np.full((20, 37), -0.0, dtype)))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.nansum_count(src, idx, out, np.zeros((2, 21, 37), count_dtype))


@pytest.mark.parametrize("most", [254, 255, 256, 300, 65535, 65536])
@pytest.mark.parametrize("op", ["nanmean", "nansum", "fmax"])
def test_count_width_boundaries(count_pass, most, op):
    """A row with `most` entries picks the NaN counts' type (uint8 up to 255, uint16 up to 65535, then int32);
    an element whose entries are all NaN but one, or all NaN, is counted right on either side."""
    rng = np.random.default_rng([most, len(op)])
    n = most + 40
    idx = np.concatenate([np.zeros(most, np.int64), rng.integers(1, 6, 40)])
    src = rng.standard_normal((n, 3))
    src[:most, 0] = np.nan              # row 0, feature 0: every entry NaN
    src[1:most, 1] = np.nan             # row 0, feature 1: one number among `most - 1` NaN
    src[most:][rng.random((40, 3)) < 0.3] = np.nan
    actual = cs.scatter(src, idx, op, dim_size=6, fill_value=-7.0)
    assert_same(actual, ref_scatter(src, idx, op, dim_size=6, fill_value=-7.0))
    assert actual[0, 0] == -7.0 and actual[0, 1] == src[0, 1]


def test_dask_blocks_with_and_without_nan():
    da = pytest.importorskip("dask.array")
    from cyscatter import dask as csd
    rng = np.random.default_rng(3)
    src = rng.standard_normal((400, 6))
    src[300:][rng.random((100, 6)) < 0.4] = np.nan   # NaN only in the last block
    idx = rng.integers(0, 15, 400)
    lazy = csd.scatter(da.from_array(src, chunks=(100, 6)), da.from_array(idx, chunks=100), "nanmean",
                       dim_size=15, fill_value=-2.0)
    # the blocks' partial sums add in another order than one pass's: equal to rounding
    np.testing.assert_allclose(lazy.compute(), ref_scatter(src, idx, "nanmean", dim_size=15, fill_value=-2.0),
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("op", ["nanmean", "nansum", "nanprod", "fmax", "fmin"])
@pytest.mark.parametrize("nan", [False, True])
def test_allocation_beyond_the_output(op, nan):
    """As docs/performance.rst states: 8 bytes a destination row for the row counts; a NaN count table of 1 byte an
    output element only when src holds a NaN (nansum and nanmean, which count in their single pass while the tables fit
    the cache, make it first); the 4-byte element counts of a fill_value only when a NaN makes them differ
    from the row counts (they were made for every call)."""
    rng = np.random.default_rng(8)
    n, size, width = 20_000, 500, 16
    src = rng.standard_normal((n, width))
    if nan:
        src[rng.random(src.shape) < 0.01] = np.nan
    index = rng.integers(0, size, n)
    kw = {} if op == "nanmean" else {"fill_value": 0.0}
    cs.scatter(src, index, op, dim_size=size, **kw)   # warm: no first-call allocations in the measure
    tracemalloc.start()
    try:
        cs.scatter(src, index, op, dim_size=size, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    elements = size * width
    per_element = (1 if nan or op in ("nansum", "nanmean") else 0) + (4 if nan else 0)
    assert peak - 8 * elements <= 8 * size + per_element * elements + (16 << 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_any_nan_kernel(dtype):
    """`nan_kernels.any_nan` against NumPy's isnan, on strided rows, a NaN in a complex part alone, empty rows."""
    rng = np.random.default_rng(9)
    src = rng.standard_normal((2, 40, 6)).astype(dtype)
    assert not nan_kernels.any_nan(src) and not nan_kernels.any_nan(src[:, ::3])
    for where in [(0, 0, 0), (1, 39, 5), (1, 20, 3)]:
        a = src.copy()
        a[where] = complex(0, np.nan) if a.dtype.kind == "c" else np.nan
        assert nan_kernels.any_nan(a) == bool(np.isnan(a).any())
        assert nan_kernels.any_nan(a[:, ::2]) == bool(np.isnan(a[:, ::2]).any())
        for apart in (a[:, :, ::2], a[:, :, 1::2], np.swapaxes(a, 1, 2)):   # row elements apart
            assert nan_kernels.any_nan(apart) == bool(np.isnan(apart).any())
    assert not nan_kernels.any_nan(np.zeros((2, 3, 0), dtype)) and not nan_kernels.any_nan(np.zeros((0, 3, 2), dtype))
