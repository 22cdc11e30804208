"""The reverse functions of a float16/bfloat16 scatter, whose derivatives are float64: the rules that never read
src (add, sub, mean's VJPs, the linear JVPs) leave it unconverted, against the plain-loop references."""
import numpy as np
import pytest
from memory import traced_peak

import cyscatter as cs


def _peak(f):
    f()   # warm caches of the Python layer
    return traced_peak(f)


def _half(dtype, shape, rng):
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    return x.astype(np.float16) if dtype == "float16" else x.astype(pytest.importorskip("ml_dtypes").bfloat16)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub", "mean"])
def test_vjp_src_of_linear_ops_reads_no_converted_src(dtype, op):
    rng = np.random.default_rng(1)
    n, f, groups = 100_000, 16, 500
    x = _half(dtype, (n, f), rng)
    idx = rng.integers(0, groups, n)
    out = cs.scatter(x, idx, op, dim_size=groups)
    g = rng.standard_normal((groups, f))
    got, peak = _peak(lambda: cs.scatter_vjp_src(op, g, x, idx, out))
    assert got.dtype == np.float64
    # the n x F float64 result and small tables; a float64 copy of src would add n * f * 8 bytes (12.8 MB)
    assert peak < n * f * 8 * 1.5, peak
    counts = np.bincount(idx, minlength=groups)[:, None]
    rows = {"add": g, "sub": -g, "mean": g / np.maximum(counts, 1)}[op]
    want = np.empty((n, f))
    for k in range(n):   # the plain loop: each entry's gradient is its group's row
        want[k] = rows[idx[k]]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_jvp_reads_no_converted_src(dtype):
    rng = np.random.default_rng(2)
    n, f, groups = 100_000, 16, 500
    x = _half(dtype, (n, f), rng)
    dot = rng.standard_normal((n, f))   # a float64 tangent: only src itself would need converting
    idx = rng.integers(0, groups, n)
    out = cs.scatter(x, idx, "add", dim_size=groups)
    got, peak = _peak(lambda: cs.scatter_jvp("add", x, idx, out, dot))
    assert peak < n * f * 8 / 4, peak   # the result and small tables, no n x F float64 copy of src
    want = np.zeros((groups, f))
    np.add.at(want, idx, dot)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["max", "mul"])
def test_rules_reading_src_still_see_its_values(op):
    rng = np.random.default_rng(3)
    x = _half("float16", (300, 3), rng)
    if op == "max":   # whole numbers: ties, so that the gradient is split
        x = np.round(x)
    idx = rng.integers(0, 20, 300)
    out = cs.scatter(x, idx, op, dim_size=20)
    g = rng.standard_normal((20, 3))
    got = cs.scatter_vjp_src(op, g, x, idx, out)
    x64 = x.astype(np.float64)
    want = np.zeros((300, 3))
    for j in range(20):   # the plain loops, group by group and feature by feature
        members = np.flatnonzero(idx == j)
        for c in range(3):
            vals = x64[members, c]
            if op == "max":
                won = vals == vals.max()
                want[members[won], c] = g[j, c] / won.sum()
            else:
                for i, k in enumerate(members):
                    want[k, c] = g[j, c] * np.prod(np.delete(vals, i))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
