"""gather_scatter and its reverse functions on a float16/bfloat16 node table: the fused kernels read the table as
it is, widening each edge's row exactly as they gather it, against the same calls on the table converted whole
first (bit for bit), against plain loops, and without the S x F float32 copy of the table."""
import zlib

import numpy as np
import pytest
from compare import assert_same, converted_whole
from memory import traced_peak
from reference_gather_scatter import ref_gather_scatter, ref_gather_scatter_vjp

import cyscatter as cs
from cyscatter import fused_kernels, kernels

ml_dtypes = pytest.importorskip("ml_dtypes")
HALF = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
FORWARD_OPS = ["add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "nansum", "nanmean", "nanprod", "fmax",
               "fmin"]
REVERSE_OPS = ["add", "sub", "mean", "sqrt_n", "max", "min", "fmax", "fmin", "nansum", "nanmean", "mul"]


def _table(shape, dtype, rng, layout):
    x = rng.standard_normal(shape) * 3
    flat = x.reshape(-1)
    flat[::23] = np.nan
    flat[5::29] = np.inf
    flat[7::31] = -0.0
    x = x.astype(HALF[dtype])
    if layout == "rows-apart":   # every other row of a bigger array: the table's rows read with a stride
        big = np.zeros((2 * shape[0],) + shape[1:], x.dtype)
        big[::2] = x
        x = big[::2]
    return x


def _case(dtype, layout, weight, mode, rng):
    """(src, gather_index, scatter_index, weight, dim_size, axis) of one layout and weight kind."""
    nodes, edges, size = 40, 600, 30
    feat = {"wide": (300,), "two-feature-dims": (2, 3)}.get(layout, (5,))
    shape, axis = ((3, nodes) + feat, 1) if layout == "batched" else ((nodes,) + feat, 0)
    x = _table(shape, dtype, rng, layout)
    gi = rng.integers(0, nodes, edges) if mode == "raise" else rng.integers(-3, nodes + 3, edges)
    si = rng.integers(0, size, edges) if mode == "raise" else rng.integers(-3, size + 3, edges)
    w = None
    if weight == "per-edge":
        w = rng.standard_normal(edges).astype(np.float32)
    elif weight == "per-feature-float64":   # messages (and derivatives) in float64
        w = rng.standard_normal((edges,) + feat)
    elif weight == "per-head":
        w = rng.standard_normal((edges, feat[0])).astype(np.float32) if len(feat) > 1 else \
            rng.standard_normal(edges).astype(np.float32)
    elif weight == "half":
        w = (rng.standard_normal((edges,) + feat) * 2).astype(HALF[dtype])
    return x, gi, si, w, size, axis


@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("op", FORWARD_OPS)
@pytest.mark.parametrize("weight", [None, "per-edge", "per-feature-float64", "per-head", "half"])
@pytest.mark.parametrize("layout", ["C", "rows-apart", "batched", "wide", "two-feature-dims"])
@pytest.mark.parametrize("mode", ["raise", "drop"])
@pytest.mark.parametrize("threads", [1, 2])
def test_half_node_table_matches_the_whole_conversion(dtype, op, weight, layout, mode, threads):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, weight, layout, mode)).encode()))
    x, gi, si, w, size, axis = _case(dtype, layout, weight, mode, rng)
    fill = 7.0 if op in ("max", "nanmean") else None   # empty rows filled (max) and all-NaN rows (nanmean)

    def call():
        return cs.gather_scatter(x, gi, si, op, weight=w, dim_size=size, axis=axis, mode=mode, fill_value=fill,
                                 num_threads=threads)
    with np.errstate(all="ignore"):
        assert_same(call(), converted_whole(call))


@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("op", REVERSE_OPS)
@pytest.mark.parametrize("weight", [None, "per-edge", "per-feature-float64", "per-head", "half"])
@pytest.mark.parametrize("layout", ["C", "rows-apart", "batched", "wide"])
@pytest.mark.parametrize("threads", [1, 2])
def test_half_node_table_reverse_matches_the_whole_conversion(dtype, op, weight, layout, threads):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, weight, layout, "reverse")).encode()))
    x, gi, si, w, size, axis = _case(dtype, layout, weight, "raise", rng)
    kw = {"weight": w, "dim_size": size, "axis": axis, "num_threads": threads}
    with np.errstate(all="ignore"):
        out = cs.gather_scatter(x, gi, si, op, **kw)
        g = rng.standard_normal(out.shape).astype(out.dtype)
        x_dot = rng.standard_normal(x.shape).astype(np.float32)
        w_dot = None if w is None else rng.standard_normal(np.shape(w)).astype(np.float32)
        calls = [lambda: cs.gather_scatter_vjp_src(op, g, x, gi, si, out, **kw),
                 lambda: cs.gather_scatter_jvp(op, x, gi, si, out, x_dot, weight_dot=w_dot, **kw)]
        if w is not None:
            calls.append(lambda: cs.gather_scatter_vjp_weight(op, g, x, gi, si, out, **kw))
        for call in calls:
            assert_same(call(), converted_whole(call))


@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("op", ["add", "max", "mean", "fmin", "nanmean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_half_node_table_against_plain_loops(dtype, op, weighted):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, weighted)).encode()))
    nodes, edges, size, f = 30, 400, 25, 4   # some destinations without edges
    x = (rng.standard_normal((nodes, f)) * 3).astype(HALF[dtype])
    x.reshape(-1)[::17] = np.nan
    w = rng.standard_normal(edges).astype(np.float32) if weighted else None
    gi, si = rng.integers(0, nodes, edges), rng.integers(0, size - 5, edges)
    with np.errstate(all="ignore"):
        got = cs.gather_scatter(x, gi, si, op, weight=w, dim_size=size)
        # the messages are float32 (a half table computes in float32) reduced in edge order, rounded once to the
        # result dtype (float16/bfloat16 unweighted, float32 with a float32 weight)
        want = ref_gather_scatter(x.astype(np.float32), gi, si, op, weight=w, dim_size=size).astype(got.dtype)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=1e-3,
                                   equal_nan=True)
        # (the reference forms its messages in float64: weighted max/fmin ties with float32 messages it cannot see)
        if op in ("add", "nanmean") or not weighted:
            g = rng.standard_normal(got.shape).astype(np.float32)
            want_src, want_w = ref_gather_scatter_vjp(op, g, x.astype(np.float32), gi, si, got.astype(np.float32),
                                                      weight=w, dim_size=size)
            got_src = cs.gather_scatter_vjp_src(op, g, x, gi, si, got, weight=w, dim_size=size)
            np.testing.assert_allclose(got_src.astype(np.float64), want_src, rtol=1e-2, atol=1e-2)
            if weighted:
                got_w = cs.gather_scatter_vjp_weight(op, g, x, gi, si, got, weight=w, dim_size=size)
                np.testing.assert_allclose(got_w, want_w, rtol=1e-4, atol=1e-4)


def test_half_node_table_keeps_nan_payloads():
    """A signalling NaN keeps its bits through a one-edge max (vcvtph2ps alone would quiet it)."""
    bits = np.array([0x7D01, 0x7E01, 0xFD55, 0x3C00, 0x7C00] + [0x7D01] * 11, np.uint16)
    x = bits.view(np.float16).reshape(1, 16)
    got = cs.gather_scatter(x, np.array([0]), np.array([0]), "max", dim_size=1)
    np.testing.assert_array_equal(got.view(np.uint16), bits.reshape(1, 16))


@pytest.mark.full
@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("op", ["add", "max"])
def test_half_node_table_makes_no_converted_copy(dtype, op):
    rng = np.random.default_rng(5)
    nodes, edges, f = 20_000, 60_000, 64
    x = rng.standard_normal((nodes, f)).astype(HALF[dtype])
    w = rng.standard_normal(edges).astype(np.float32)
    plan = cs.gather_scatter_plan(rng.integers(0, nodes, edges), rng.integers(0, 1000, edges), dim_size=1000,
                                  src_size=nodes)
    out = cs.gather_scatter(x, None, None, op, plan=plan, weight=w)
    g = np.ones(out.shape, np.float32)
    table = nodes * f * 4   # a float32 copy of the node table: 5.1 MB
    for call in (lambda: cs.gather_scatter(x, None, None, op, plan=plan, weight=w),
                 lambda: cs.gather_scatter_vjp_weight(op, g, x, None, None, out, plan=plan, weight=w)):
        call()   # warm the Python layer's caches
        _, peak = traced_peak(call)
        # the output (256 KB), its float32 table and the weight's gradient rows: far below one table copy
        assert peak < table / 2, peak


def test_half_node_table_entry_points_validate_their_arguments():
    src = np.ones((1, 4, 2), np.float16).view(np.uint16)
    out, none = np.zeros((1, 3, 2), np.float32), np.zeros(0, np.int64)
    ptr, cols = np.array([0, 1, 2, 3]), np.array([0, 1, 2])
    empty = np.zeros((0, 1), np.float32)
    assert fused_kernels.forward_half_src(0, 1, src, ptr, cols, none, empty, False, out, 1) == -1
    np.testing.assert_array_equal(out, 1)
    counts = np.zeros((1, 3, 2), np.int64)
    out[:] = 0
    fused_kernels.forward_half_src(int(kernels.OpCode.OP_NANADD), 2, src, ptr, cols, none, empty, False, out, 1,
                                   counts=counts)
    np.testing.assert_array_equal(counts, 1)
    with pytest.raises(ValueError, match="code must be 1"):
        fused_kernels.forward_half_src(0, 3, src, ptr, cols, none, empty, False, out, 1)
    with pytest.raises(ValueError, match="unknown op code"):
        fused_kernels.forward_half_src(7, 1, src, ptr, cols, none, empty, False, out, 1)
    with pytest.raises(ValueError, match="only the NaN-skipping"):
        fused_kernels.forward_half_src(0, 1, src, ptr, cols, none, empty, False, out, 1, counts=counts)
    with pytest.raises(ValueError, match="counts must have"):
        fused_kernels.forward_half_src(8, 1, src, ptr, cols, none, empty, False, out, 1, counts=counts[:, :2])
    with pytest.raises(TypeError, match="int32 or int64"):
        fused_kernels.forward_half_src(8, 1, src, ptr, cols, none, empty, False, out, 1,
                                       counts=counts.astype(np.float32))
    with pytest.raises(ValueError, match="CSR does not fit"):
        fused_kernels.forward_half_src(0, 1, src[:, :2], ptr, cols, none, empty, False, out, 1)
    with pytest.raises(ValueError, match="weight rows"):
        fused_kernels.forward_half_src(0, 1, src, ptr, cols, none, np.ones((2, 1), np.float32), True, out, 1)
    result = np.zeros((3, 1), np.float32)
    g = np.ones((1, 3, 2), np.float32)
    fused_kernels.dots_half(1, g, src, np.array([0, 1, 3]), np.array([0, 1, 2]), result, g, 0, empty, False, 1)
    np.testing.assert_array_equal(result, [[2], [2], [2]])
    with pytest.raises(ValueError, match="code must be 1"):
        fused_kernels.dots_half(0, g, src, np.array([0, 1, 3]), np.array([0, 1, 2]), result, g, 0, empty, False, 1)
    with pytest.raises(ValueError, match="do not fit"):
        fused_kernels.dots_half(1, g, src, np.array([0, 1]), np.array([0, 1, 2]), result, g, 0, empty, False, 1)
    with pytest.raises(ValueError, match="weight rows"):
        fused_kernels.extreme_ties_half(1, src, ptr, cols, out, out, out, False, out.copy(), 1,
                                        edge_ids=none, weight=np.ones((1, 1), np.float32))
    with pytest.raises(ValueError, match="tangent_w must have"):
        fused_kernels.extreme_ties_half(1, src, ptr, cols, out, out, out, False, out.copy(), 1,
                                        weight=np.ones((3, 1), np.float32), tangent_w=np.ones((2, 1), np.float32))


def test_half_weight_keywords_of_the_reverse_kernels_validate():
    """The selecting reverse kernels take a float16/bfloat16 weight as bits with its code, checked like a real one."""
    src = np.ones((1, 4, 2), np.float32)
    out, none = np.zeros((1, 3, 2), np.float32), np.zeros(0, np.int64)
    ptr, cols = np.array([0, 1, 2, 3]), np.array([0, 1, 2])
    empty = np.zeros((0, 1), np.float32)
    bits = np.full((3, 1), 2.0, np.float16).view(np.uint16)
    result = np.empty_like(out)
    # every message 2 * 1 ties its output 2: each output element's cotangent passes whole to its one edge
    fused_kernels.extreme_ties(True, src, ptr, cols, none, empty, True, out + 2, out + 1, src, False, empty, False,
                               result, 1, half_weight=bits, weight_code=1)
    np.testing.assert_array_equal(result, 1)
    with pytest.raises(ValueError, match="needs half_weight"):
        fused_kernels.extreme_ties(True, src, ptr, cols, none, empty, True, out, out, src, False, empty, False,
                                   result, 1, weight_code=1)
    with pytest.raises(ValueError, match="code must be 1"):
        fused_kernels.extreme_back(src, ptr, cols, none, empty, True, out, out, np.empty((1, 4, 2), np.float32), 1,
                                   half_weight=bits, weight_code=4)
    by_source = np.array([0, 1, 2, 3, 3])   # (the transposed CSR: a row per src row)
    back = np.empty((1, 4, 2), np.float32)
    fused_kernels.extreme_back(src, by_source, cols, none, empty, True, out + 2, out + 1, back, 1,
                               half_weight=bits, weight_code=1)
    np.testing.assert_array_equal(back, [[[2, 2], [2, 2], [2, 2], [0, 0]]])   # the weight times the share
    with pytest.raises(ValueError, match="weight rows"):
        fused_kernels.extreme_back(src, by_source, cols, none, empty, True, out, out, back, 1,
                                   half_weight=bits[:1], weight_code=1)
    dots = np.zeros((3, 1), np.float32)
    g = np.ones((1, 3, 2), np.float32)
    fused_kernels.dots(g, src, np.array([0, 1, 3]), np.array([0, 1, 2]), dots, g + 1, 1, empty, True, 1,
                       half_weight=bits, weight_code=2)   # bfloat16 2.0: the messages 2 tie out's 2
    np.testing.assert_array_equal(dots, 2)
    with pytest.raises(TypeError, match="float32 or float64 values"):
        fused_kernels.dots(g.astype(np.int64), src.astype(np.int64), np.array([0, 1, 3]), np.array([0, 1, 2]),
                           dots.astype(np.int64), g.astype(np.int64), 0, np.zeros((0, 1), np.int64), True, 1,
                           half_weight=bits, weight_code=1)


@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("op", ["mul", "div"])
def test_half_products_differentiate_the_float32_forward(dtype, op):
    """mul and div on a float16/bfloat16 table multiply float32 messages and round only the result: their reverse
    rules read that float32 product (as max/min find the float32 winners), not the rounded `out`, so they equal the
    float32 table's derivatives (rounded back to the table's dtype for the src gradient)."""
    rng = np.random.default_rng(len(dtype) + len(op))
    nodes, edges, size = 30, 200, 20
    x = (1 + rng.random((nodes, 3))).astype(HALF[dtype])
    w = (1 + rng.random(edges)).astype(HALF[dtype])
    gi, si = rng.integers(0, nodes, edges), rng.integers(0, size, edges)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    out, out32 = cs.gather_scatter(x, gi, si, op, weight=w), cs.gather_scatter(x32, gi, si, op, weight=w32)
    g = rng.standard_normal(out.shape).astype(np.float32)
    assert_same(cs.gather_scatter_vjp_src(op, g, x, gi, si, out, weight=w),
                cs.gather_scatter_vjp_src(op, g, x32, gi, si, out32, weight=w32).astype(x.dtype))
    assert_same(cs.gather_scatter_vjp_weight(op, g, x, gi, si, out, weight=w),
                cs.gather_scatter_vjp_weight(op, g, x32, gi, si, out32, weight=w32).astype(w.dtype))
    dot = rng.standard_normal(x.shape).astype(np.float32)
    assert_same(cs.gather_scatter_jvp(op, x, gi, si, out, dot, weight=w),
                cs.gather_scatter_jvp(op, x32, gi, si, out32, dot, weight=w32))


@pytest.mark.parametrize("dtype", list(HALF))
@pytest.mark.parametrize("op", ["add", "mean", "max", "nanmean", "mul"])
@pytest.mark.parametrize("layout", ["half", "fortran", "rows-apart", "broadcast"])
def test_jvp_reads_its_tangent_in_place(dtype, op, layout):
    """gather_scatter_jvp's `src_dot` of another layout (Fortran-ordered, rows apart, broadcast) or, for the linear
    ops, a float16/bfloat16 one: the bits of its C-ordered twin (float32 for the half one), and no S x F copy of it
    where a fused pass reads it (the linear ops' forward pass, the selecting ops' tie kernels)."""
    rng = np.random.default_rng(len(dtype) + len(op) + len(layout))
    nodes, edges, size, f = 4000, 300, 20, 64
    x = rng.standard_normal((nodes, f)).astype(HALF[dtype])
    gi, si = rng.integers(0, nodes, edges), rng.integers(0, size, edges)
    out = cs.gather_scatter(x, gi, si, op)
    base = rng.standard_normal((2 * nodes, f))
    dot = {"half": base[:nodes].astype(HALF[dtype]), "fortran": np.asfortranarray(base[:nodes]),
           "rows-apart": base[::2], "broadcast": np.broadcast_to(base[0], (nodes, f))}[layout]
    twin = np.ascontiguousarray(dot, dtype=np.float32 if layout == "half" else dot.dtype)

    def call(t):
        return cs.gather_scatter_jvp(op, x, gi, si, out, t)
    with np.errstate(all="ignore"):
        call(dot)   # warm the Python layer's caches
        got, peak = traced_peak(lambda: call(dot))
        assert_same(got, call(twin))
    # (a Fortran-ordered tangent is copied to C order: the kernels read rows of adjacent elements)
    reads_in_place = op != "mul" and layout != "fortran" and (layout != "half" or op in ("add", "mean"))
    if reads_in_place:   # the result (size x f) and edge-sized arrays; a copy would be 1-2 MB
        assert peak < nodes * f * 4 / 4, peak


@pytest.mark.parametrize("op", ["add", "mean", "max"])
def test_reverse_functions_convert_out_only_where_read(op):
    """The linear ops' rules read no `out` (it is checked, not converted), and max on a float16 table finds the
    forward's float32 winners again rather than converting the rounded `out` first."""
    rng = np.random.default_rng(17)
    nodes, edges, size, f = 500, 2000, 20_000, 64
    x = rng.standard_normal((nodes, f)).astype(np.float16)
    plan = cs.gather_scatter_plan(rng.integers(0, nodes, edges), rng.integers(0, size, edges), dim_size=size,
                                  src_size=nodes)
    out = cs.gather_scatter(x, None, None, op, plan=plan)
    g = np.ones(out.shape, np.float32)

    def call():
        return cs.gather_scatter_vjp_weight(op, g, x, None, None, out, plan=plan, weight=np.ones(edges, np.float32))
    call()   # warm the Python layer's caches
    _, peak = traced_peak(call)
    # in float32 D x F tables (5.1 MB each): mean divides the cotangent into one, max recomputes the forward's
    # table and shares the cotangent into another; a conversion of out would add one more
    table = size * f * 4
    assert peak < {"add": 0.3, "mean": 1.3, "max": 2.3}[op] * table, peak
    with pytest.raises(ValueError, match="out shape"):
        cs.gather_scatter_vjp_weight(op, g, x, None, None, out[:-1], plan=plan, weight=np.ones(edges, np.float32))
