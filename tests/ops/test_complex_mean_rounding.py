"""Complex group means divide each part of the sum by the real count, deliberately unlike np.mean's division by
count + 0j: each part is correctly rounded (that complex division goes through a reciprocal, 1 ulp off in 40% of
complex64 means) and an infinite part leaves the other finite (np.mean: inf+nanj). Reference: the float32/float64
division of each part of exactly representable sums."""
import numpy as np
import pytest

import cyscatter as cs


def groups_with_exact_sums(rng, dtype, groups=300, members=7):
    """Values that are multiples of 1/8 below 64: every partial sum is exact, so only the division rounds."""
    real = rng.integers(-512, 512, (groups, members)) / 8
    imag = rng.integers(-512, 512, (groups, members)) / 8
    src = (real + 1j * imag).astype(dtype).reshape(-1)
    index = np.repeat(np.arange(groups), members)
    part = np.float32 if dtype == np.complex64 else np.float64
    sums_re, sums_im = real.sum(1).astype(part), imag.sum(1).astype(part)
    return src, index, sums_re, sums_im, part(members)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("op", ["mean", "nanmean"])
def test_scatter_mean_parts_correctly_rounded(dtype, op):
    rng = np.random.default_rng(int(np.dtype(dtype).itemsize))
    src, index, sums_re, sums_im, count = groups_with_exact_sums(rng, dtype)
    out = cs.scatter(src, index, op, dim_size=300)
    np.testing.assert_array_equal(out.real, sums_re / count)
    np.testing.assert_array_equal(out.imag, sums_im / count)
    dst = np.zeros(300, dtype)
    cs.scatter_into(dst, src, index, op)
    np.testing.assert_array_equal(dst.real, sums_re / count)
    np.testing.assert_array_equal(dst.imag, sums_im / count)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_nanmean_with_nan_entries_correctly_rounded(dtype):
    """A NaN entry leaves the count at 6 of 7: element counts path (and the fill_value one)."""
    rng = np.random.default_rng(3)
    src, index, sums_re, sums_im, count = groups_with_exact_sums(rng, dtype)
    src = src.copy()
    src[::7] = np.nan
    kept = src.reshape(300, 7)[:, 1:]
    part = sums_re.dtype.type
    for fill in (None, -2.0):
        out = cs.scatter(src, index, "nanmean", dim_size=300, fill_value=fill)
        np.testing.assert_array_equal(out.real, kept.real.sum(1).astype(part) / part(6))
        np.testing.assert_array_equal(out.imag, kept.imag.sum(1).astype(part) / part(6))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_segment_mean_parts_correctly_rounded(dtype):
    rng = np.random.default_rng(5)
    src, _, sums_re, sums_im, count = groups_with_exact_sums(rng, dtype)
    out = cs.segment(src, np.arange(0, 301 * 7, 7), "mean")
    np.testing.assert_array_equal(out.real, sums_re / count)
    np.testing.assert_array_equal(out.imag, sums_im / count)


@pytest.mark.parametrize("op", ["mean", "nanmean"])
def test_an_infinite_part_leaves_the_other_part_alone(op):
    """inf+3j, 1 and 2 over one group: (inf+6j) / 3 part by part is inf+2j, where np.mean gives inf+nanj."""
    src = np.array([np.inf + 3j, 1 + 1j, 2 + 2j])
    got = cs.scatter(src, np.zeros(3, np.int64), op)
    assert got[0] == complex(np.inf, 2.0)
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.mean(src).imag)   # NumPy's rule, which cyscatter does not follow
