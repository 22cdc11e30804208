"""Regressions from the independent hostile test of issue 18's merged features (fmax/fmin gradients through a
NaN dst, the scan reverse functions' dtype for float16/bfloat16, scatter_scan's bool flags, sqrt_n's memory)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import cyscatter as cs

# dst[1] NaN and reached by no entry; dst[2] NaN and reached only by a NaN; dst[3] loses to / beats 5.
DST = np.array([1.0, np.nan, np.nan, 3.0])
SRC = np.array([2.0, np.nan, 5.0])
INDEX = np.array([0, 2, 3])
# d out / d dst per row: a row whose result is dst's own value (untouched, or every entry NaN) passes the
# cotangent to dst, as for max; fmax's row 0 and 3 are the src's, fmin's rows 0 and 3 dst's (1 < 2, 3 < 5)
EXPECTED_DST = {"fmax": [0.0, 1.0, 1.0, 0.0], "fmin": [1.0, 1.0, 1.0, 1.0]}
EXPECTED_SRC = {"fmax": [1.0, 0.0, 1.0], "fmin": [0.0, 0.0, 0.0]}


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_gradient_reaches_a_nan_dst_that_holds_the_result(op):
    out = cs.scatter_into(DST.copy(), SRC, INDEX, op)
    assert np.array_equal(np.isnan(out), [False, True, True, False])
    g = np.ones(4)
    np.testing.assert_array_equal(cs.scatter_vjp_dst(op, g, DST, SRC, INDEX, out), EXPECTED_DST[op])
    np.testing.assert_array_equal(cs.scatter_vjp_src(op, g, SRC, INDEX, out, dst=DST), EXPECTED_SRC[op])
    jvp = cs.scatter_jvp(op, SRC, INDEX, out, np.zeros(3), dst=DST, dst_dot=np.ones(4))
    np.testing.assert_array_equal(jvp, EXPECTED_DST[op])


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_autograd_through_a_nan_dst(op):
    autograd = pytest.importorskip("autograd")
    import grad as csgrad
    got = autograd.grad(lambda d: autograd.numpy.sum(csgrad.scatter_into(d, SRC, INDEX, op)))(DST.copy())
    np.testing.assert_array_equal(got, EXPECTED_DST[op])


def _half_dtypes():
    out = [np.dtype(np.float16)]
    try:
        import ml_dtypes
        out.append(np.dtype(ml_dtypes.bfloat16))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("dtype", _half_dtypes(), ids=str)
@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
def test_scan_reverse_functions_return_float64_for_half_floats(op, dtype):
    src = np.array([1.0, 2.0, 3.0, 4.0]).astype(dtype)
    index = np.array([0, 1, 0, 1])
    g = np.ones(4, dtype)
    vjp = cs.scatter_scan_vjp(op, g, src, index)
    jvp = cs.scatter_scan_jvp(op, src, index, g)
    # the rule of the other reverse functions (scatter_vjp_src, segment_vjp_src): float16/bfloat16 give float64
    assert cs.scatter_vjp_src("add", np.ones(2, dtype), src, index, cs.scatter(src, index)).dtype == np.float64
    assert vjp.dtype == np.float64 and jvp.dtype == np.float64
    # and the values are those of the same call in float64
    src64, g64 = src.astype(np.float64), g.astype(np.float64)
    np.testing.assert_array_equal(vjp, cs.scatter_scan_vjp(op, g64, src64, index))
    np.testing.assert_array_equal(jvp, cs.scatter_scan_jvp(op, src64, index, g64))


@pytest.mark.parametrize("flag", ["exclusive", "reverse"])
@pytest.mark.parametrize("value", ["yes", None, 2, -1, 0.5])
def test_scan_flags_must_be_bools(flag, value):
    with pytest.raises(TypeError, match=flag):
        cs.scatter_scan(np.ones(4), np.array([0, 1, 0, 1]), **{flag: value})


@pytest.mark.parametrize("value", [True, np.True_, 1, False, np.False_, 0])
def test_scan_flags_take_bools_and_0_1(value):
    got = cs.scatter_scan(np.ones(4), np.array([0, 1, 0, 1]), exclusive=value)
    want = np.array([0.0, 0.0, 1.0, 1.0]) if value else np.array([1.0, 1.0, 2.0, 2.0])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op, per_row", [("mean", 8), ("sqrt_n", 16), ("set", 8), ("first", 8)])
def test_allocating_scatter_memory_as_documented(op, per_row):
    """README "Performance": besides its output, an allocating scatter holds 8 bytes a destination row for mean and
    the assignments, 16 for sqrt_n (float64 results)."""
    rows = 400_000
    src, index = np.ones(10), np.arange(10) % 7
    tracemalloc.start()
    try:
        out = cs.scatter(src, index, op, dim_size=rows)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - out.nbytes <= per_row * rows + 64 * 1024, f"{(peak - out.nbytes) / rows:.1f} B a row"
