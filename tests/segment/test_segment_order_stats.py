"""segment with the order statistics median / nanmedian: np.median / np.nanmedian of each segment."""
import warnings

import numpy as np
import pytest

import cyscatter as cs
from group_cases import random_indptr


@pytest.mark.parametrize("op", ("median", "nanmedian"))
@pytest.mark.parametrize("dtype", ("float64", "float32", "float16", "int32"))
def test_median_of_each_segment(backend, op, dtype):
    rng = np.random.default_rng(21)
    src = rng.integers(-5, 6, (2, 30, 3)).astype(dtype)
    if src.dtype.kind == "f":
        src[rng.random(src.shape) < 0.2] = np.nan
    indptr = random_indptr(rng, 30, 9)
    got = backend.to_numpy(cs.segment(backend.asarray(src), backend.asarray(indptr), op, axis=1))
    want = np.full((2, 9, 3), np.nan, np.float64 if src.dtype.kind == "i" else src.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for s in range(9):
            seg = src[:, indptr[s]:indptr[s + 1]]
            if seg.shape[1]:
                for b in range(2):
                    for f in range(3):
                        want[b, s, f] = getattr(np, op)(seg[b, :, f])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_batched_indptr_and_fill():
    src = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = cs.segment(src, np.array([[0, 1, 3], [0, 3, 3]]), "median", fill_value=-1.0)
    np.testing.assert_array_equal(got, [[1.0, 2.5], [5.0, -1.0]])


def test_bad_indptr_still_checked():
    with pytest.raises(ValueError, match="indptr"):
        cs.segment(np.ones(4), np.array([0, 3, 2, 4]), "median")
