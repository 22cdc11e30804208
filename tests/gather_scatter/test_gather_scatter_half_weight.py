"""gather_scatter's forward pass with a float16/bfloat16 weight on float32/float64 values: the fused kernel reads
the weight as it is, widening each edge's weights exactly as it forms the messages, against the weight converted
whole first, against plain loops, and without the E x heads float32 copy of the weight."""
import numpy as np
import pytest
from compare import assert_same, converted_whole
from memory import traced_peak

import cyscatter as cs
from cyscatter import fused_kernels, kernels

ml_dtypes = pytest.importorskip("ml_dtypes")
HALF = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
VALUES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}


def _weight(shape, dtype, rng, layout):
    w = rng.standard_normal(shape) * 2
    flat = w.reshape(-1)
    flat[::11] = 0.0
    flat[1::13] = -0.0
    flat[2::17] = np.inf
    flat[3::19] = np.nan
    w = w.astype(HALF[dtype])
    if layout == "rows-apart":   # every other row of a bigger array: the edges' rows read with a stride
        big = np.zeros((2 * shape[0],) + shape[1:], w.dtype)
        big[::2] = w
        w = big[::2]
    return w


@pytest.mark.parametrize("weight_dtype", list(HALF))
@pytest.mark.parametrize("values", list(VALUES))
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "nansum", "nanmean",
                                "nanprod", "fmax", "fmin"])
@pytest.mark.parametrize("heads", ["per-feature", "per-edge", "two-heads", "wide-rows"])
@pytest.mark.parametrize("layout", ["C", "rows-apart"])
@pytest.mark.parametrize("mode", ["raise", "drop", "clip"])
@pytest.mark.parametrize("threads", [1, 2])
def test_half_weight_matches_the_whole_conversion(weight_dtype, values, op, heads, layout, mode, threads):
    rng = np.random.default_rng(len(op) + len(heads))
    nodes, edges, size = 40, 900, 30
    feat, wshape = {"per-feature": ((5,), (edges, 5)), "per-edge": ((5,), (edges,)),
                    "two-heads": ((2, 3), (edges, 2)), "wide-rows": ((300,), (edges, 300))}[heads]
    x = rng.standard_normal((nodes,) + feat).astype(VALUES[values])
    x.reshape(-1)[::23] = np.nan
    w = _weight(wshape, weight_dtype, rng, layout)
    gi = rng.integers(0, nodes, edges)
    si = rng.integers(0, size, edges) if mode == "raise" else rng.integers(-3, size + 3, edges)

    def call():
        return cs.gather_scatter(x, gi, si, op, weight=w, dim_size=size, mode=mode, num_threads=threads)
    with np.errstate(all="ignore"):
        assert_same(call(), converted_whole(call))


@pytest.mark.parametrize("weight_dtype", list(HALF))
@pytest.mark.parametrize("op", ["add", "max", "mul"])
def test_half_weight_against_plain_loops(weight_dtype, op):
    rng = np.random.default_rng(21)
    nodes, edges, size, f = 30, 500, 25, 4   # some destinations without edges
    x = rng.standard_normal((nodes, f)).astype(np.float32)
    w = (rng.standard_normal((edges, f)) * 2).astype(HALF[weight_dtype])
    gi, si = rng.integers(0, nodes, edges), rng.integers(0, size - 5, edges)
    got = cs.gather_scatter(x, gi, si, op, weight=w, dim_size=size)
    start = {"add": 0.0, "max": -np.inf, "mul": 1.0}[op]
    want = np.full((size, f), start, np.float32)
    for e in range(edges):   # each message w * x rounded to float32, combined in edge order
        m = w[e].astype(np.float32) * x[gi[e]]
        want[si[e]] = want[si[e]] + m if op == "add" else np.maximum(want[si[e]], m) if op == "max" else \
            want[si[e]] * m
    np.testing.assert_array_equal(got, want)   # (max leaves a destination without edges at -inf, as scatter)


@pytest.mark.parametrize("weight_dtype", list(HALF))
@pytest.mark.parametrize("op", ["add", "nanmean"])
def test_half_weight_makes_no_converted_copy(weight_dtype, op):
    rng = np.random.default_rng(5)
    nodes, edges, size, f = 500, 50_000, 500, 64
    x = rng.standard_normal((nodes, f)).astype(np.float32)
    w = rng.standard_normal((edges, f)).astype(HALF[weight_dtype])
    gi, si = rng.integers(0, nodes, edges), rng.integers(0, size, edges)

    def call():
        return cs.gather_scatter(x, gi, si, op, weight=w, dim_size=size)
    call()   # warm the Python layer's caches
    _, peak = traced_peak(call)
    # the output (nanmean: and its counts), the edge plan's int64 arrays; a float32 copy of the weight is
    # edges * f * 4 bytes (12.8 MB)
    assert peak < edges * f * 4 / 2, peak


def test_half_weight_entry_point_validates_its_arguments():
    src, out, none = np.ones((1, 4, 2), np.float32), np.zeros((1, 3, 2), np.float32), np.zeros(0, np.int64)
    ptr, cols = np.array([0, 1, 2, 3]), np.array([0, 1, 2])
    bits, empty = np.ones((3, 2), np.float16).view(np.uint16), np.zeros((0, 1), np.float32)
    assert fused_kernels.forward(0, src, ptr, cols, none, empty, True, out, 1, half_weight=bits, weight_code=1) == -1
    np.testing.assert_array_equal(out, 1)
    with pytest.raises(ValueError, match="code must be 1"):
        fused_kernels.forward(0, src, ptr, cols, none, empty, True, out, 1, half_weight=bits, weight_code=5)
    with pytest.raises(ValueError, match="needs half_weight"):
        fused_kernels.forward(0, src, ptr, cols, none, empty, True, out, 1, weight_code=1)
    with pytest.raises(ValueError, match="weight rows"):
        fused_kernels.forward(0, src, ptr, cols, none, empty, True, out, 1, half_weight=bits[:2], weight_code=2)
    with pytest.raises(TypeError, match="float32 or float64 values"):
        fused_kernels.forward(0, src.astype(np.int64), ptr, cols, none, np.zeros((0, 1), np.int64), True,
                              out.astype(np.int64), 1, half_weight=bits, weight_code=1)
    counts = np.zeros((1, 3, 2), np.int32)
    out = np.zeros((1, 3, 2), np.float32)
    assert fused_kernels.forward_nan(fused_kernels_nanadd(), src, ptr, cols, none, empty, True, out, counts, True, 1,
                                     half_weight=bits, weight_code=1) == -1
    np.testing.assert_array_equal(out, 1)
    np.testing.assert_array_equal(counts, 1)
    with pytest.raises(ValueError, match="code must be 1"):
        fused_kernels.forward_nan(fused_kernels_nanadd(), src, ptr, cols, none, empty, True, out, counts, True, 1,
                                  half_weight=bits, weight_code=-1)
    with pytest.raises(TypeError, match="float32 or float64 values"):
        fused_kernels.forward_nan(fused_kernels_nanadd(), src.astype(np.complex64), ptr, cols, none,
                                  np.zeros((0, 1), np.complex64), True, out.astype(np.complex64), counts, True, 1,
                                  half_weight=bits, weight_code=1)


def fused_kernels_nanadd():
    return int(kernels.OpCode.OP_NANADD)
