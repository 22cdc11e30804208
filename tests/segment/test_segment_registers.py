"""Segment sums of float32/float64 rows with the segment's row held in AVX2 registers (`_csrsum.h`, through the core
`combine_rows`): `segment` add, mean and sqrt_n, and `segment_ranges` add, against a plain loop over the rows in
order, bit for bit (each element adds its rows in order), with the registers on and off. Widths around the vector
and block sizes, empty and one-row segments, batch dims, special values, `initial`."""
from __future__ import annotations

import numpy as np
import pytest
from compare import assert_same

import cyscatter as cs

WIDTHS = [2, 3, 4, 5, 8, 9, 16, 17, 31, 32, 33, 64, 65, 72, 73, 100]



def _values(rng, shape, dtype):
    x = rng.standard_normal(shape) * 3
    x[rng.random(shape) < 0.03] = -0.0
    x[rng.random(shape) < 0.01] = np.nan
    x[rng.random(shape) < 0.01] = np.inf
    return x.astype(dtype)


def _loop(src, ptr, start=0.0):
    """sum of rows ptr[s]:ptr[s + 1] of src (..., n, F) in order, from `start`, in src's dtype."""
    out = np.full(src.shape[:-2] + (len(ptr) - 1, src.shape[-1]), start, src.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for s in range(len(ptr) - 1):
            for p in range(ptr[s], ptr[s + 1]):
                out[..., s, :] = out[..., s, :] + src[..., p, :]
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("width", WIDTHS)
def test_segment_sums_match_the_row_loop(sum_loop, dtype, width):
    rng = np.random.default_rng([width, len(dtype)])
    src = _values(rng, (50, width), dtype)
    ptr = np.array([0, 0, 1, 9, 9, 30, 31, 50])   # empty, one-row and long segments
    expected = _loop(src, ptr)
    assert_same(cs.segment(src, ptr, "add"), expected)
    lengths = np.maximum(np.diff(ptr), 1).astype(dtype)[:, None]
    with np.errstate(invalid="ignore"):
        assert_same(cs.segment(src, ptr, "mean"), (expected / lengths).astype(dtype))
        assert_same(cs.segment(src, ptr, "sqrt_n"), (expected / np.sqrt(lengths)).astype(dtype))
    assert_same(cs.segment(src, ptr, "add", initial=1.5), _loop(src, ptr, 1.5))
    assert_same(cs.segment_ranges(src, ptr[:-1], ptr[1:], "add"), expected)


@pytest.mark.parametrize("width", [4, 33])
def test_batched_segments(sum_loop, width):
    rng = np.random.default_rng(width)
    src = _values(rng, (3, 40, width), "float64")
    ptr = np.array([0, 5, 5, 22, 40])
    expected = np.stack([_loop(src[b], ptr) for b in range(3)])
    assert_same(cs.segment(src, ptr, "add", axis=1), expected)
