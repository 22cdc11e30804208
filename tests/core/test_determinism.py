"""Determinism: on the CPU, repeated calls give bitwise-identical results (NaN payloads included) for every op and
value dtype, in the allocating, in-place and reverse forms."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import cyscatter as cs
from testing import OPS, VALUE_DTYPES, op_supports, true_division

REPEATS = 4


def _values(dtype, shape, rng) -> np.ndarray:
    """Values with heavy ties and, for floats, NaN, infinities and both zeros mixed in."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -50), min(info.max, 50), shape, endpoint=True).astype(dtype)
    real = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
    real[rng.random(shape) < 0.02] = np.nan
    real[rng.random(shape) < 0.02] = -0.0
    real[rng.random(shape) < 0.01] = np.inf
    if dtype.kind == "c":
        return (real + 1j * rng.standard_normal(shape)).astype(dtype)
    with np.errstate(over="ignore"):
        return real.astype(dtype)


def _calls(op: str, dtype: str):
    rng = np.random.default_rng(zlib.crc32(f"{op}-{dtype}".encode()))
    src = _values(dtype, (3, 4000, 5), rng)
    index = rng.integers(0, 37, 4000)
    dst = _values(dtype, (3, 37, 5), rng)
    calls = {
        "scatter": lambda: cs.scatter(src, index, op, axis=1, dim_size=40),
        "gather": lambda: cs.gather(dst, index, axis=1),
    }
    if not (true_division(op) and np.dtype(dtype).kind in "iu"):   # those refuse an integer dst
        calls["scatter_into"] = lambda: cs.scatter_into(dst.copy(), src, index, op, axis=1)
    if np.dtype(dtype).kind in "fc":
        out = cs.scatter(src, index, op, axis=1, dim_size=40)
        g = _values(dtype, out.shape, rng)
        calls["scatter_vjp_src"] = lambda: cs.scatter_vjp_src(op, g, src, index, out, axis=1)
        calls["scatter_jvp"] = lambda: cs.scatter_jvp(op, src, index, out, src, axis=1)
    return calls


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_repeated_calls_are_bitwise_identical(op, dtype):
    with np.errstate(all="ignore"):
        for name, call in _calls(op, dtype).items():
            first = call()
            for _ in range(REPEATS):
                again = call()
                assert again.dtype == first.dtype and again.shape == first.shape
                assert again.tobytes() == first.tobytes(), f"{name} gave different bits on a repeated call"
