"""max/min special values: NaN wins (NumPy's maximum.at rule) and -0.0 < +0.0, whatever the update order."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import cyscatter as cs

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
