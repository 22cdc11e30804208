"""segment_ranges: segments given as (start, stop) row ranges in any order, overlapping, empty; against the
row-by-row loop reference applied to each range's rows, NumPy's reduceat where its semantics agree, its reverse
functions against finite differences, grad's check_grads, and its validation."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from group_cases import values
from reference_extra import ref_segment
from testing import OPS, op_supports

# (starts, stops) over 9 rows
RANGES = {
    "any_order_overlapping": ([3, 0, 2, 5, 1], [9, 2, 2, 7, 8]),
    "following": ([0, 2, 2, 6], [2, 2, 6, 9]),   # a CSR pointer: the slice path
    "following_inside": ([1, 4], [4, 7]),          # consecutive, not from 0 nor to the end
    "repeated_and_empty": ([4, 4, 9, 0], [6, 6, 9, 0]),
    "none": ([], []),
}
LAYOUTS = {"axis0": ((9, 3), 0), "batch": ((2, 9, 3), 1), "last": ((2, 9), -1)}


def ref_ranges(src, starts, stops, op, axis=0, **kw):
    """Each range reduced on its own by the loop reference, stacked along `axis`."""
    moved = np.moveaxis(src, axis, 0)
    parts = [ref_segment(moved[a:b], [0, b - a], op, **kw) for a, b in zip(starts, stops)]
    if not parts:
        return np.moveaxis(ref_segment(moved[:0], [0], op, **kw), 0, axis)
    return np.moveaxis(np.concatenate(parts), 0, axis)


@pytest.mark.parametrize("op", [op for op in OPS if not cs.get_op(op).skips_nan])
@pytest.mark.parametrize("dtype", ("float64", "float32", "int64", "uint8", "float16", "complex128"))
@pytest.mark.parametrize("ranges", RANGES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.valid(lambda op, dtype: op_supports(op, dtype))
def test_matches_reference(backend, op, dtype, ranges, layout):
    rng = np.random.default_rng(1)
    shape, axis = LAYOUTS[layout]
    src = values(rng, shape, dtype)
    if op == "div":
        src = np.where(src == 0, 1, src).astype(dtype)
    starts, stops = (np.array(r, np.int64) for r in RANGES[ranges])
    got = backend.call(cs.segment_ranges, src, starts, stops, op, axis=axis)
    want = ref_ranges(src, starts, stops, op, axis=axis)
    assert_same(got, want, *tolerance(backend.name, op, want.dtype, src))


@pytest.mark.parametrize("op", ["add", "max", "mean", "set"])
def test_fill_value_and_initial(backend, op):
    src = np.arange(18.0).reshape(9, 2)
    starts, stops = np.array([5, 2, 0]), np.array([8, 2, 3])
    got = backend.call(cs.segment_ranges, src, starts, stops, op, fill_value=-1.0)
    assert_same(got, ref_ranges(src, starts, stops, op, fill_value=-1.0))
    got = backend.call(cs.segment_ranges, src, starts, stops, op, initial=4.0)
    assert_same(got, ref_ranges(src, starts, stops, op, initial=4.0))


@pytest.mark.parametrize("op", ["nansum", "nanmean", "fmax", "nanfirst"])
def test_nan_skipping_ops(op):
    src = np.array([[1.0, np.nan], [np.nan, np.nan], [3.0, 2.0], [np.nan, 5.0]])
    starts, stops = np.array([1, 0, 2]), np.array([2, 4, 2])
    want = {"nansum": [[0, 0], [4, 7], [0, 0]], "nanmean": [[0, 0], [2, 3.5], [0, 0]],
            "fmax": [[-np.inf, -np.inf], [3, 5], [-np.inf, -np.inf]], "nanfirst": [[0, 0], [1, 2], [0, 0]]}[op]
    np.testing.assert_array_equal(cs.segment_ranges(src, starts, stops, op), want)


@pytest.mark.parametrize("ufunc, op", [(np.add, "add"), (np.maximum, "max"), (np.multiply, "mul")])
def test_reduceat_where_it_agrees(ufunc, op):
    """reduceat's ranges end where the next starts (the last at n): increasing starts are those ranges; an empty
    or decreasing one differs (reduceat copies src[start]), so the ranges here are not empty."""
    rng = np.random.default_rng(2)
    src = rng.integers(-9, 10, (30, 3))
    starts = np.array([0, 4, 5, 11, 20])
    stops = np.append(starts[1:], 30)
    np.testing.assert_array_equal(cs.segment_ranges(src, starts, stops, op), ufunc.reduceat(src, starts, axis=0))
    assert cs.segment_ranges(src, np.array([4]), np.array([4]), op)[0, 0] == cs.get_op(op).identity(src.dtype)
    assert ufunc.reduceat(src, [4, 4], axis=0)[0, 0] == src[4, 0]   # reduceat's empty range: the row


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "set", "first",
                                "nansum", "fmax", "nanmean", "nanlast"])
@pytest.mark.parametrize("ranges", ["any_order_overlapping", "following_inside"])
def test_reverse_functions(backend, op, ranges):
    """VJP against central differences (rows in several ranges collect every share); the JVP its transpose."""
    rng = np.random.default_rng(3)
    src = rng.standard_normal((2, 9, 3))
    starts, stops = (np.array(r) for r in RANGES[ranges])
    out = cs.segment_ranges(src, starts, stops, op, axis=1, initial=0.25 if op == "max" else None)
    kw = dict(axis=1, initial=0.25 if op == "max" else None)
    g = rng.standard_normal(out.shape)
    vjp = backend.call(cs.segment_ranges_vjp_src, op, g, src, starts, stops, out, **kw)
    numeric = np.zeros_like(src)
    for i in np.ndindex(src.shape):
        step = np.zeros_like(src)
        step[i] = 1e-6
        plus = cs.segment_ranges(src + step, starts, stops, op, **kw)
        minus = cs.segment_ranges(src - step, starts, stops, op, **kw)
        with np.errstate(invalid="ignore"):   # an empty range's -inf / +inf does not change
            numeric[i] = (np.where(plus == minus, 0.0, plus - minus) * g).sum() / 2e-6
    np.testing.assert_allclose(vjp, numeric, atol=1e-7)
    v = rng.standard_normal(src.shape)
    jvp = backend.call(cs.segment_ranges_jvp, op, src, starts, stops, out, v, **kw)
    np.testing.assert_allclose((jvp * g).sum(), (vjp * v).sum(), rtol=1e-12)


@pytest.mark.parametrize("op", ["add", "mul", "max", "mean", "fmin", "set"])
@pytest.mark.parametrize("ranges", ["any_order_overlapping", "following"])
def test_grad(op, ranges):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad
    rng = np.random.default_rng(4)
    src = rng.standard_normal((9, 2))
    starts, stops = (np.array(r) for r in RANGES[ranges])
    np.testing.assert_array_equal(grad.segment_ranges(src, starts, stops, op), ref_ranges(src, starts, stops, op))
    check_grads(lambda s: grad.segment_ranges(s, starts, stops, op, fill_value=0.0), modes=["rev", "fwd"],
                order=2)(src)


def test_errors():
    src = np.arange(5.0)
    with pytest.raises(ValueError, match=r"range 1, starts\[1\] = 3 to stops\[1\] = 2"):
        cs.segment_ranges(src, np.array([0, 3]), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"stops\[0\] = 6.*<= 5"):
        cs.segment_ranges(src, np.array([0]), np.array([6]))
    with pytest.raises(ValueError, match=r"starts\[0\] = -1"):
        cs.segment_ranges(src, np.array([-1]), np.array([2]))
    with pytest.raises(ValueError, match="one shape"):
        cs.segment_ranges(src, np.array([0, 1]), np.array([2]))
    with pytest.raises(TypeError, match="starts must hold integers"):
        cs.segment_ranges(src, np.array([0.0]), np.array([2]))
    with pytest.raises(ValueError, match="stops must be 1-D"):
        cs.segment_ranges(src, np.array([0]), np.array([[2]]))
    with pytest.raises(ValueError, match="unknown op"):
        cs.segment_ranges(src, np.array([0]), np.array([2]), "nope")
    with pytest.raises(ValueError, match="grad_out"):
        cs.segment_ranges_vjp_src("add", np.ones(3), src, np.array([0]), np.array([2]), np.ones(1))
    with pytest.raises(ValueError, match="src_dot"):
        cs.segment_ranges_jvp("add", src, np.array([0]), np.array([2]), np.ones(1), np.ones(4))
