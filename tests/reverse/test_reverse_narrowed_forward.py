"""The reverse functions of a forward that cast src down before combining it (``dtype=`` narrower than src, or a
`scatter_into` dst of a narrower dtype): the rules that read src (max/min/fmax/fmin's winners, mul's and div's
products) see the values the forward combined, src rounded to out's dtype, not src's own (whose values then
matched no output and passed no gradient). Against plain NumPy: the winners' even split, the products of the
other rounded entries."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs

CASES = [(np.float64, np.float32), (np.float32, np.float16), (np.float64, np.float16)]


def _winner_split(rounded, index, out, g, larger):
    """g of each group divided evenly among the entries that equal the group's result (NumPy, per entry)."""
    hit = rounded == out[index]
    ties = np.bincount(index, weights=hit.astype(np.float64), minlength=len(out))
    return np.where(hit, g[index] / np.maximum(ties[index], 1), 0.0)


@pytest.mark.parametrize("src_dtype,out_dtype", CASES)
@pytest.mark.parametrize("op", ["max", "min", "fmax", "fmin"])
def test_winners_of_a_narrowing_dtype(src_dtype, out_dtype, op):
    rng = np.random.default_rng([len(op), np.dtype(out_dtype).itemsize])
    src = (1 + rng.random(40) * 1e-4).astype(src_dtype)   # values that tie only once rounded to float16
    src[::7] = rng.standard_normal(6).astype(src_dtype)
    index = rng.integers(0, 5, 40)
    out = cs.scatter(src, index, op, dim_size=5, dtype=out_dtype)
    g = rng.standard_normal(5).astype(out_dtype)
    rounded = src.astype(out_dtype)
    expected = _winner_split(rounded.astype(np.float64), index, out.astype(np.float64), g.astype(np.float64),
                             op in ("max", "fmax"))
    got = cs.scatter_vjp_src(op, g, src, index, out)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=1e-6)
    assert got.sum() != 0
    tangent = cs.scatter_jvp(op, src, index, out, np.ones_like(src))
    np.testing.assert_allclose(tangent.astype(np.float64), np.ones(5), rtol=1e-6)   # the winners' mean of ones


@pytest.mark.parametrize("op", ["max", "min"])
def test_winners_into_a_narrower_dst(op):
    src = np.array([1.0001, 1.0, 0.5], np.float32)
    index = np.array([0, 0, 1])
    dst = np.array([-5.0, 9.0], np.float16) if op == "max" else np.array([9.0, -5.0], np.float16)
    out = cs.scatter_into(dst.copy(), src, index, op)
    g = np.ones(2, np.float16)
    # 1.0001 and 1.0 are the same float16: they tie and split group 0 (beating dst's -5 / 9); dst wins group 1
    got_src = cs.scatter_vjp_src(op, g, src, index, out, dst=dst)
    got_dst = cs.scatter_vjp_dst(op, g, dst, src, index, out)
    np.testing.assert_array_equal(got_src, [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(got_dst, [0.0, 1.0])


@pytest.mark.parametrize("op", ["mul", "div", "nanprod"])
def test_products_of_a_narrowing_dtype(op):
    src = np.array([1.0001, 3.0, 2.0000001, 0.5])
    index = np.array([0, 0, 1, 1])
    out = cs.scatter(src, index, op, dim_size=2, dtype=np.float16)
    rounded = src.astype(np.float16).astype(np.float64)
    g = np.ones(2)
    got = cs.scatter_vjp_src(op, g.astype(np.float16), src, index, out).astype(np.float64)
    if op in ("mul", "nanprod"):
        expected = np.array([rounded[1], rounded[0], rounded[3], rounded[2]])
    else:   # out = 1 / x0 / x1 from the identity 1: d/dx = -out / x
        expected = -out.astype(np.float64)[index] / rounded
    np.testing.assert_allclose(got, expected, rtol=2e-3)
