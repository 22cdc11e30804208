"""max/min special values: NaN wins (NumPy's maximum.at rule) and -0.0 < +0.0, whatever the update order."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from reference import ref_scatter

FLOATS = ("float16", "float32", "float64")


def _scatter_one_group(backend, values, op, dtype, dst=None):
    """Scatter `values` into a single destination row (allocating, or into a 1-element `dst`)."""
    src = np.array(values, dtype)
    idx = np.zeros(len(values), np.int64)
    if dst is None:
        out = cs.scatter(backend.asarray(src), backend.asarray(idx), op)
    else:
        out = cs.scatter_into(backend.asarray(np.array([dst], dtype)), backend.asarray(src), backend.asarray(idx),
                              op)
    return backend.to_numpy(out)[0]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("order", list(itertools.permutations([1.0, np.nan, -np.inf, 3.0])), ids=str)
def test_nan_wins_in_any_order(backend, order, op, dtype):
    expected = np.full(1, -np.inf if op == "max" else np.inf, dtype)
    with np.errstate(invalid="ignore"):
        getattr(np, "maximum" if op == "max" else "minimum").at(expected, np.zeros(4, int), np.array(order, dtype))
    assert np.isnan(expected[0])   # NumPy's rule, which we follow
    assert np.isnan(_scatter_one_group(backend, order, op, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_in_dst_survives(backend, op, dtype):
    assert np.isnan(_scatter_one_group(backend, [1.0, -2.0], op, dtype, dst=np.nan))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("order", [(-0.0, 0.0), (0.0, -0.0), (-0.0, 0.0, -0.0), (0.0, -0.0, 0.0)], ids=str)
def test_signed_zeros_ordered_in_any_order(backend, order, op, dtype):
    """max gives +0.0 and min -0.0 whenever both zeros take part (np.maximum.at keeps the last one)."""
    result = _scatter_one_group(backend, order, op, dtype)
    assert result == 0 and bool(np.signbit(result)) == (op == "min")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dst_zero", [-0.0, 0.0])
def test_signed_zeros_against_dst(backend, dst_zero, op, dtype):
    result = _scatter_one_group(backend, [-dst_zero], op, dtype, dst=dst_zero)
    assert result == 0 and bool(np.signbit(result)) == (op == "min")


SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0]
WEIGHTS = [0.03, 0.03, 0.07, 0.07, 0.3, 0.3, 0.1, 0.1]   # mostly zeros, few NaNs: most lanes end NaN-free


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 64, 67])
def test_special_values_in_every_lane_of_wide_rows(backend, width, op, dtype):
    """The vectorised row loops (2 or 4 lanes, then a scalar tail) against the reference, dst and src drawn
    from NaN, +-inf and signed zeros, about three entries per row, so that every lane meets every pairing."""
    rng = np.random.default_rng(width)
    values = np.array(SPECIALS, dtype)
    src = rng.choice(values, size=(120, width), p=WEIGHTS)
    dst = rng.choice(values, size=(40, width), p=WEIGHTS)
    idx = rng.integers(0, 40, 120)
    into = cs.scatter_into(backend.asarray(dst.copy()), backend.asarray(src), backend.asarray(idx), op)
    assert_same(backend.to_numpy(into), ref_scatter(src, idx, op, dst=dst))
    fresh = cs.scatter(backend.asarray(src), backend.asarray(idx), op, dim_size=40)
    assert_same(backend.to_numpy(fresh), ref_scatter(src, idx, op, dim_size=40))
