"""GPU-only checks of the CuPy backend: the atomics at their edges, against the host reference.

Every op x dtype x index kind x mode on CuPy runs in test_backends.py (its `backend` parameter); here are the
cases where a GPU atomic can go wrong and the CPU cannot: precision below float32, NaN and signed zeros under
concurrent max/min, all threads on one row, integer wrap-around and extremes, and bad indices (which must raise
before any write). Each runs on CuPy (marked gpu: skipped without a GPU, a failure with CYSCATTER_REQUIRE_GPU=1)
and on the host emulation of tests/helpers/emulated_cupy.py, which checks the tests and the backend's Python code in CI.
"""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from reference import ref_gather, ref_scatter


def many(cp, n: int) -> int:
    """n entries on a GPU; fewer on the emulation, whose kernels are Python loops."""
    return min(n, 4096) if getattr(cp, "EMULATED", False) else n


def assert_same_bits(got, expected):
    """Equal values, NaN where NaN, and the same sign on every zero."""
    got = got.get()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if expected.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


# ---- max/min: double precision, NaN, signed zeros --------------------------------------------------------------

@pytest.mark.parametrize("op", ["max", "min"])
def test_float64_max_min_below_float32_precision(cp, op):
    """Values 1 + k * 2**-40 are one float32; a float32 (fmaxf-style) atomic would merge them."""
    rng = np.random.default_rng(0)
    src = 1.0 + rng.integers(0, 1 << 12, size=(4096, 3)) * 2.0 ** -40
    index = rng.integers(0, 7, size=4096)
    assert len(np.unique(src.astype(np.float32))) == 1
    assert_same_bits(cs.scatter(cp.asarray(src), cp.asarray(index), op), ref_scatter(src, index, op))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_wins_and_negative_zero_is_below_positive_zero(cp, op, dtype):
    groups = [[np.nan, 1.0], [1.0, np.nan], [-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0], [0.0, 0.0],
              [-np.inf, -0.0], [np.inf, 0.0, -0.0, np.nan], [-1.0, -0.0, 0.0, 1.0]]
    src = np.array([v for g in groups for v in g], dtype)
    index = np.array([j for j, g in enumerate(groups) for _ in g])
    expected = ref_scatter(src, index, op)
    for _ in range(5):   # any arrival order must give the same bits
        assert_same_bits(cs.scatter(cp.asarray(src), cp.asarray(index), op), expected)
    dst = np.array([0.0, -0.0, np.nan, -np.inf] * 3, dtype)[:len(groups)]
    target = cp.asarray(dst)
    cs.scatter_into(target, cp.asarray(src), cp.asarray(index), op)
    assert_same_bits(target, ref_scatter(src, index, op, dst=dst))


@pytest.mark.parametrize("op", ["max", "min"])
def test_signed_zeros_under_heavy_contention(cp, op):
    """A million alternating -0.0/+0.0 on one row: max is +0.0 and min -0.0 whatever the interleaving."""
    src = np.tile(np.array([-0.0, 0.0]), many(cp, 1_000_000) // 2)
    got = cs.scatter(cp.asarray(src), cp.zeros(src.size, np.int32), op).get()
    assert got[0] == 0 and np.signbit(got[0]) == (op == "min")


# ---- contention: every entry into one row ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint64", "float16", "complex64",
                                   "complex128"])
@pytest.mark.parametrize("op", ["add", "sub", "mean", "max", "min"])
@pytest.mark.valid(lambda dtype, op: not (op in ("max", "min") and np.dtype(dtype).kind == "c"))
def test_all_entries_into_one_row(cp, op, dtype):
    rng = np.random.default_rng(1)
    n = many(cp, 1 << 20)
    src = rng.integers(0, 8, size=(n, 2)).astype(dtype)   # small integers: every float sum is exact
    got = cs.scatter(cp.asarray(src), cp.zeros(n, np.int64), op).get()
    np.testing.assert_array_equal(got, _one_row(src, op))


def _one_row(src, op):
    """The reference for one group, by NumPy's own reductions (the loop reference is too slow for 2**20)."""
    acc = src.astype(np.float32) if src.dtype == np.float16 else src
    result = {"add": lambda: acc.sum(0), "sub": lambda: -acc.sum(0), "max": lambda: acc.max(0),
              "min": lambda: acc.min(0), "mean": lambda: acc.sum(0) / len(acc)}[op]()
    out_dtype = np.float64 if op == "mean" and src.dtype.kind in "iu" else src.dtype
    return np.asarray(result).astype(out_dtype)[None]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint64", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.valid(lambda dtype, op: not (op == "div" and np.dtype(dtype).kind in "iu"))
def test_mul_div_compare_and_swap_under_contention(cp, op, dtype):
    """Powers of two (integers: wrapping products) are exact, so any order must give the reference's bits.

    ~80 entries per row keep every partial product inside float32's exponent range, in any order.
    """
    rng = np.random.default_rng(2)
    n = 240
    if np.dtype(dtype).kind in "fc":
        src = (2.0 ** rng.integers(-1, 2, size=n)).astype(dtype)
    else:
        src = rng.choice(np.array([1, 2, 3] if dtype == "uint64" else [1, 2, 3, -1], dtype), size=n)
    index = rng.integers(0, 3, size=n)
    np.testing.assert_array_equal(cs.scatter(cp.asarray(src), cp.asarray(index), op).get(),
                                  ref_scatter(src, index, op))


# ---- integer atomics: wrap-around and extremes ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_integer_atomics_wrap_and_extremes(cp, op, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    src = np.concatenate([np.array([info.max, info.min, info.max - 1, info.min + 1, 0, 1], dtype),
                          rng.integers(info.min, info.max, size=2000, dtype=dtype, endpoint=True)])
    index = rng.integers(0, 5, size=src.size)
    assert_same_bits(cs.scatter(cp.asarray(src), cp.asarray(index), op), ref_scatter(src, index, op))
    dst = rng.integers(info.min, info.max, size=5, dtype=dtype, endpoint=True)
    target = cp.asarray(dst)
    cs.scatter_into(target, cp.asarray(src), cp.asarray(index), op)
    assert_same_bits(target, ref_scatter(src, index, op, dst=dst))


# ---- float16 accumulates in float32 ---------------------------------------------------------------------------

def test_float16_accumulates_in_float32(cp):
    got = cs.scatter(cp.ones(3000, np.float16), cp.zeros(3000, np.int32), "add").get()
    assert got.dtype == np.float16 and got[0] == 3000   # float16 steps: 2048 + 1 == 2048


# ---- out-of-range indices raise before anything is written -----------------------------------------------------

BAD_CALLS = {
    "scatter negative": lambda cp, d: cs.scatter(cp.ones(4), cp.asarray([0, 1, -1, 2])),
    "scatter dim_size": lambda cp, d: cs.scatter(cp.ones(4), cp.asarray([0, 1, 3, 2]), dim_size=3),
    "scatter tuple": lambda cp, d: cs.scatter(cp.ones(4), (cp.asarray([0, 1, 0, 1]), cp.asarray([0, 0, 5, 0])),
                                              dim_size=(2, 2)),
    "scatter_into": lambda cp, d: cs.scatter_into(d, cp.ones(4), cp.asarray([0, 1, 9, 2]), "max"),
    "scatter_into mean": lambda cp, d: cs.scatter_into(d, cp.ones(4), cp.asarray([0, 1, 2, -4]), "mean"),
    "gather": lambda cp, d: cs.gather(cp.ones(3), cp.asarray([0, 1, 7, 2])),
    "gather_into": lambda cp, d: cs.gather_into(d[:4], cp.ones(3), cp.asarray([0, 3, 1, 2])),
    "gather_vjp_src": lambda cp, d: cs.gather_vjp_src(cp.ones(4), cp.asarray([0, 1, 2, 3]), (3,)),
}


@pytest.mark.parametrize("call", list(BAD_CALLS))
def test_out_of_range_raises_index_error_and_writes_nothing(cp, call):
    dst = cp.arange(6.0)
    with pytest.raises(IndexError, match=r"index(\[\d\])?\[\d\] = -?\d+ is out of bounds .* size \d"):
        BAD_CALLS[call](cp, dst)
    np.testing.assert_array_equal(dst.get(), np.arange(6.0))


def test_index_error_names_position_value_and_bound(cp):
    with pytest.raises(IndexError, match=r"^index\[2\] = 7 is out of bounds for an indexed axis of size 3"):
        cs.gather(cp.arange(3.0), cp.asarray([0, 1, 7, 9]))


@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
def test_lenient_modes_accept_the_same_indices(cp, mode):
    index = np.array([0, 1, -1, 7, 2, -9])
    src = np.arange(6.0)
    assert_same_bits(cs.scatter(cp.asarray(src), cp.asarray(index), "add", dim_size=3, mode=mode),
                     ref_scatter(src, index, "add", dim_size=3, mode=mode))
    assert_same_bits(cs.gather(cp.asarray(src), cp.asarray(index), mode=mode), ref_gather(src, index, mode=mode))


# ---- devices and types ----------------------------------------------------------------------------------------

def test_mixing_real_cupy_and_numpy_raises(cp):
    with pytest.raises(TypeError, match=r"^src is a cupy\.ndarray \(GPU\) but index is a numpy\.ndarray \(host\)"):
        cs.scatter(cp.ones(3), np.array([0, 1, 0]))
    with pytest.raises(TypeError, match=r"dst must be a cupy\.ndarray"):
        cs.scatter_into([0.0, 0.0], cp.ones(3), cp.asarray([0, 1, 0]))


def test_results_stay_on_the_current_device(cp):
    if getattr(cp, "EMULATED", False):
        pytest.skip("the emulation has no devices")
    for device in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(device):
            src, index = cp.arange(4.0), cp.asarray([1, 0, 1, 0])
            for result in (cs.scatter(src, index, "mean"), cs.gather(src, index),
                           cs.scatter_vjp_src("max", cp.ones(2), src, index, cs.scatter(src, index, "max"))):
                assert isinstance(result, cp.ndarray) and result.device.id == device


def test_host_lists_join_device_arrays(cp):
    got = cs.scatter(cp.asarray([1.0, 2.0, 3.0]), [0, 1, 0], "add")
    assert isinstance(got, cp.ndarray)
    np.testing.assert_array_equal(got.get(), [4.0, 2.0])
