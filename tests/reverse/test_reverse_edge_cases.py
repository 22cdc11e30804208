"""Reverse functions at two edges an outside tester found: an in-place scatter with no entries (the initial dst
the only candidate), and max/min winners among integers that float64 cannot tell apart (above 2**53).

References: the derivative written out by hand from the definition (no entry: out = dst, so out's tangent is
dst's; integers: the winners are the entries equal to the integer maximum, found with Python ints).
"""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs

EXTREMES = ["max", "min", "fmax", "fmin"]


@pytest.mark.parametrize("op", EXTREMES + ["nansum", "add", "mean", "mul"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_dst_dot", [True, False])
def test_in_place_jvp_without_entries_is_the_dst_tangent(backend, op, dtype, with_dst_dot):
    """No entry reaches any row: out is dst, and out's tangent is dst_dot (0 without one), not out."""
    dst = np.array([[1.0, 2.0, -2.0], [np.inf, -0.0, 5.0]], dtype)
    dst_dot = np.array([[10.0, 100.0, 1000.0], [3.0, 4.0, 6.0]], dtype)
    src = np.zeros((0, 3), dtype)
    index = np.zeros(0, np.int64)
    out = cs.scatter_into(dst.copy(), src, index, op)
    got = backend.call(cs.scatter_jvp, op, src, index, out, src, dst=dst,
                       dst_dot=dst_dot if with_dst_dot else None)
    np.testing.assert_array_equal(got, dst_dot if with_dst_dot else np.zeros_like(dst))


def _int_winners(values, index, size, pick):
    """Per output row, the positions of the entries equal to its extreme, compared as Python ints."""
    rows = {}
    for k, (v, d) in enumerate(zip(values.tolist(), index.tolist())):
        rows.setdefault(d, []).append((v, k))
    return {d: [k for v, k in entries if v == pick(v for v, _ in entries)] for d, entries in rows.items()}


@pytest.mark.parametrize("op", EXTREMES)
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_integer_winners_are_compared_as_integers(backend, op, dtype):
    """Distinct integers that round to one float64 (above 2**53) do not tie: the cotangent goes to the exact
    winners only, in the core scatter's and gather_scatter's reverse functions alike."""
    base = 2**53 if dtype == "int64" else 2**64 - 8
    values = np.array([base, base + 1, base + 1, base - 1, base + 2, base + 2, base + 1], dtype)
    index = np.array([0, 0, 0, 0, 1, 1, 1])
    pick = max if op in ("max", "fmax") else min
    winners = _int_winners(values, index, 2, pick)
    g = np.array([1.0, 3.0])
    expected = np.zeros(len(values))
    for d, ks in winners.items():
        expected[ks] = g[d] / len(ks)
    tangent = np.array([1.0, 10, 100, 1000, 7, 70, 700])
    expected_jvp = np.array([sum(tangent[k] for k in winners[d]) / len(winners[d]) for d in (0, 1)])
    out = cs.scatter(values, index, op, dim_size=2)
    assert out.tolist() == [pick(v for v, i in zip(values.tolist(), index.tolist()) if i == d) for d in (0, 1)]
    np.testing.assert_allclose(backend.call(cs.scatter_vjp_src, op, g, values, index, out), expected)
    np.testing.assert_allclose(backend.call(cs.scatter_jvp, op, values, index, out, tangent), expected_jvp)
    gather = np.arange(len(values))
    np.testing.assert_allclose(
        backend.call(cs.gather_scatter_vjp_src, op, g, values, gather, index, out=out), expected)
    np.testing.assert_allclose(
        backend.call(cs.gather_scatter_jvp, op, values, gather, index, out=out, src_dot=tangent), expected_jvp)
    # an in-place scatter whose initial dst holds the exact maximum (minimum) of row 0: a candidate with it
    dst = out.copy()
    dst_out = cs.scatter_into(dst.copy(), values, index, op)
    share = g[0] / (len(winners[0]) + 1)
    expected_dst = np.array([share, g[1] / (len(winners[1]) + 1)])
    np.testing.assert_allclose(backend.call(cs.scatter_vjp_dst, op, g, dst, values, index, dst_out), expected_dst)
