"""The per-element counts of the NaN-skipping ops on the host (nanmean's divisor, the elements a fill_value
marks): row counts from the sum pass, minus one per NaN entry (`cyscatter.nan_kernels.uncount`), or the row
counts alone when src holds no NaN. Compared with the plain-loop reference (tests/reference.py) and with an
explicit NumPy ``np.add.at`` computation, over row widths around the kernel's 16-feature lines, NaN densities
(none, sparse, dense, all), src layouts (contiguous, broadcast rows, broadcast features, strided), complex NaN in
one part, batch dims, modes, thread counts, scatter_into and Dask blocks that do and do not hold NaN."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import nan_kernels
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


@pytest.mark.parametrize("count_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_uncount_kernel(count_dtype, dtype):
    """The kernel alone: one off per NaN element, counts untouched (and 0 returned) without any NaN."""
    rng = np.random.default_rng([len(count_dtype), len(dtype)])
    src = nan_src(rng, (2, 300, 35), 0.1, dtype)
    idx = rng.integers(-5, 25, 300)
    counts = np.zeros((2, 20, 35), count_dtype)
    assert nan_kernels.uncount(src, idx, counts, 2) > 0
    expected = np.zeros((2, 20, 35), np.int64)
    keep = (idx >= 0) & (idx < 20)
    for o in range(2):
        np.add.at(expected[o], idx[keep], -np.isnan(src[o, keep]).astype(np.int64))
    np.testing.assert_array_equal(counts, expected)
    clean = np.where(np.isnan(src), 0, src)
    untouched = np.full((2, 20, 35), 7, count_dtype)
    assert nan_kernels.uncount(clean, idx, untouched, 2) == 0
    assert (untouched == 7).all()


def test_uncount_checks_extents():
    src = np.zeros((1, 4, 3))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.uncount(src, np.zeros(3, np.int64), np.zeros((1, 5, 3), np.int32))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.uncount(src, np.zeros(4, np.int64), np.zeros((1, 5, 2), np.int32))
    with pytest.raises(ValueError, match="do not match"):
        nan_kernels.uncount(src, np.zeros(4, np.int64), np.zeros((2, 5, 3), np.int32))


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
