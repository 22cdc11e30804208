"""Every public function on every backend (NumPy; CuPy marked gpu) against the host reference in reference.py.

The NumPy backend must match the reference exactly (updates in index order). On the GPU, float atomics apply
the updates of a destination in arrival order, so order-dependent float results are compared with a tolerance
of a few ulps of the accumulated sum; everything else (max/min, integers, gather) must match exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from reference import numeric_vjp, ref_gather, ref_scatter
from testing import INDEX_DTYPES, OPS, VALUE_DTYPES, into_supports, op_supports, twin

ORDER_DEPENDENT_OPS = ("add", "sub", "mul", "div", "mean", "sqrt_n")   # float results depend on the update order
RTOL = {"e": 2e-3, "f": 1e-5, "d": 1e-12, "F": 1e-5, "D": 1e-12}   # by dtype char of the result


def values(rng, shape, dtype, op):
    """Inputs that keep every op finite: [0.5, 2) for floats (no cancellation, bounded products), small ints."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" or op == "div" else -5
        return rng.integers(low + (op == "div"), 6, size=shape).astype(dtype)
    real = rng.uniform(0.5, 2.0, size=shape)
    if dtype.kind == "c":
        real = real * np.exp(1j * rng.uniform(-1, 1, size=shape))
    return real.astype(dtype)


def assert_matches(backend, got, expected, op):
    op = twin(op)   # a NaN-skipping op has its twin's tolerance (its inputs here hold no NaN)
    got = backend.to_numpy(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    # NumPy's SIMD complex multiply (the reference's) fuses multiply-adds and the CPU kernel does not: they can
    # differ in the last bit, so complex mul gets the tolerance on the CPU too
    cpu_exact = backend.name == "numpy" and not (op == "mul" and expected.dtype.kind == "c")
    if cpu_exact or op not in ORDER_DEPENDENT_OPS or expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, expected)
        if expected.dtype.kind == "f":   # assert_array_equal takes -0.0 == +0.0
            np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
    else:
        np.testing.assert_allclose(got, expected, rtol=RTOL[expected.dtype.char])


def index_for(rng, kind, n, dims, dtype="int64", mode="raise"):
    """An index of n entries into `dims` (int: dims[0] only); out-of-range entries too unless mode='raise'."""
    coords = []
    for size in dims if kind == "tuple" else dims[:1]:
        low, high = (0, size) if mode == "raise" else (-size - 2, size + 3)
        coords.append(rng.integers(max(low, np.iinfo(dtype).min), high, size=n).astype(dtype))
    return tuple(coords) if kind == "tuple" else coords[0]


# ---- scatter -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["int", "tuple"])
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_scatter(backend, op, dtype, kind):
    rng = np.random.default_rng(0)
    index = index_for(rng, kind, 20, (4, 3))
    src = values(rng, (2, 20, 3), dtype, op)   # batch 2, index 20, features 3
    dims = (4, 3) if kind == "tuple" else (4,)
    got = cs.scatter(backend.asarray(src), backend.asarray(index), op, dim_size=dims, axis=1)
    assert_matches(backend, got, ref_scatter(src, index, op, dim_size=dims, axis=1), op)


@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
@pytest.mark.parametrize("op", OPS)
def test_scatter_modes(backend, op, mode):
    rng = np.random.default_rng(1)
    index = index_for(rng, "tuple", 30, (5, 2), mode=mode)
    src = values(rng, (30, 2), "float64", op)
    expected = ref_scatter(src, index, op, dim_size=(5, 2), mode=mode, fill_value=-7.0)
    got = cs.scatter(backend.asarray(src), backend.asarray(index), op, dim_size=(5, 2), mode=mode, fill_value=-7.0)
    assert_matches(backend, got, expected, op)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_scatter_index_dtypes(backend, index_dtype):
    rng = np.random.default_rng(2)
    index = index_for(rng, "int", 50, (7,), dtype=index_dtype)
    src = values(rng, (50, 4), "float32", "max")
    got = cs.scatter(backend.asarray(src), backend.asarray(index), "max", dim_size=7)
    assert_matches(backend, got, ref_scatter(src, index, "max", dim_size=7), "max")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "uint8", "uint64", "complex64",
                                   "complex128"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.valid(lambda dtype, op: into_supports(op, dtype))
def test_scatter_into(backend, op, dtype, layout):
    rng = np.random.default_rng(3)
    index = index_for(rng, "int", 25, (6,))
    src = values(rng, (3, 25), dtype, op)
    dst = values(rng, (3, 6), dtype, op)
    expected = ref_scatter(src, index, op, axis=1, dst=dst)
    target = backend.asarray(dst) if layout == "contiguous" else backend.asarray(np.repeat(dst, 2, axis=1))[:, ::2]
    result = cs.scatter_into(target, backend.asarray(src), backend.asarray(index), op, axis=1)
    assert result is target
    assert_matches(backend, target, expected, op)


# ---- gather --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "float32", "int64", "complex128"])
@pytest.mark.parametrize("mode", ["raise", "drop", "wrap", "clip"])
@pytest.mark.parametrize("kind", ["int", "tuple"])
def test_gather(backend, dtype, mode, kind):
    rng = np.random.default_rng(4)
    src = rng.integers(-3, 4, size=(2, 5, 3, 4)).astype(dtype)
    index = index_for(rng, kind, 9, (5, 3), mode=mode)
    expected = ref_gather(src, index, axis=1, mode=mode, fill_value=1)
    got = cs.gather(backend.asarray(src), backend.asarray(index), axis=1, mode=mode, fill_value=1)
    assert_matches(backend, got, expected, "gather")


@pytest.mark.parametrize("mode", ["raise", "drop"])
def test_gather_into(backend, mode):
    rng = np.random.default_rng(5)
    src = values(rng, (6, 3), "float32", "add")
    index = index_for(rng, "int", 8, (6,), mode=mode)
    dst = np.full((8, 3), -1.0)
    expected = ref_gather(src, index, mode=mode, dst=dst)
    target = backend.asarray(dst)
    assert cs.gather_into(target, backend.asarray(src), backend.asarray(index), mode=mode) is target
    assert_matches(backend, target, expected, "gather")


# ---- reverse and forward derivatives, against central differences of the reference ---------------------------

def _problem(seed=6):
    rng = np.random.default_rng(seed)
    index = rng.integers(0, 4, size=9)
    index[:4] = np.arange(4)   # every row has a group (max/min gradients need distinct winners; empty groups pass 0)
    return rng, index, rng.uniform(0.5, 2.0, size=(9, 2)), rng.uniform(0.5, 2.0, size=(4, 2))


@pytest.mark.parametrize("op", OPS)
def test_scatter_vjp_src(backend, op):
    rng, index, src, _ = _problem()
    g = rng.normal(size=(4, 2))
    out = ref_scatter(src, index, op, dim_size=4)
    got = cs.scatter_vjp_src(op, *backend.asarray((g, src, index, out)))
    expected = numeric_vjp(lambda x: ref_scatter(x, index, op, dim_size=4), src, g)
    np.testing.assert_allclose(backend.to_numpy(got), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", OPS)
def test_scatter_vjp_dst(backend, op):
    rng, index, src, dst = _problem()
    g = rng.normal(size=(4, 2))
    out = ref_scatter(src, index, op, dst=dst)
    got = cs.scatter_vjp_dst(op, *backend.asarray((g, dst, src, index, out)))
    expected = numeric_vjp(lambda d: ref_scatter(src, index, op, dst=d), dst, g)
    np.testing.assert_allclose(backend.to_numpy(got), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", OPS)
def test_scatter_jvp(backend, op):
    rng, index, src, dst = _problem()
    src_dot, dst_dot = rng.normal(size=src.shape), rng.normal(size=dst.shape)
    out = ref_scatter(src, index, op, dst=dst)
    got = cs.scatter_jvp(op, *backend.asarray((src, index, out, src_dot)), dst=backend.asarray(dst),
                         dst_dot=backend.asarray(dst_dot))
    eps = 1e-6
    expected = (ref_scatter(src + eps * src_dot, index, op, dst=dst + eps * dst_dot)
                - ref_scatter(src - eps * src_dot, index, op, dst=dst - eps * dst_dot)) / (2 * eps)
    np.testing.assert_allclose(backend.to_numpy(got), expected, rtol=1e-5, atol=1e-7)


def test_gather_derivatives(backend):
    rng, index, _, table = _problem()
    g, table_dot = rng.normal(size=(9, 2)), rng.normal(size=table.shape)
    grad = cs.gather_vjp_src(backend.asarray(g), backend.asarray(index), table.shape)
    np.testing.assert_allclose(backend.to_numpy(grad), ref_scatter(g, index, "add", dim_size=4), rtol=1e-12)
    tangent = cs.gather_jvp(backend.asarray(table_dot), backend.asarray(index))
    np.testing.assert_array_equal(backend.to_numpy(tangent), ref_gather(table_dot, index))


# ---- results stay on the backend ------------------------------------------------------------------------------

def test_results_live_on_the_inputs_backend(backend):
    src, index = backend.asarray(np.arange(6.0)), backend.asarray(np.array([0, 1, 0, 1, 2, 2]))
    for result in (cs.scatter(src, index), cs.gather(src, index), cs.scatter_vjp_src("add", src[:3], src, index,
                                                                                     src[:3])):
        assert type(result) is type(src)
