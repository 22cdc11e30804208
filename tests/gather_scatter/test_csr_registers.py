"""The fused sums along a CSR with each destination row held in AVX2 registers (`_csrsum.h`): gather_scatter's
add, mean and sqrt_n forward and its add VJP w.r.t. src (the CSR by source), float32 and float64, against a plain loop
over the edges in order, bit for bit (each element sums its messages in edge order, w * x rounded first), and
against the scalar row loop (the registers switched off). Widths around the vector and block sizes, empty rows,
weights per edge and per head (the scalar loop's case), batch slices, special values, 1 and 2 threads."""
from __future__ import annotations

import numpy as np
import pytest
from compare import assert_same

import cyscatter as cs

WIDTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 71, 72, 73, 100]



def _values(rng, shape, dtype):
    x = rng.standard_normal(shape) * 3
    x[rng.random(shape) < 0.03] = -0.0
    x[rng.random(shape) < 0.01] = np.nan
    x[rng.random(shape) < 0.01] = np.inf
    x[rng.random(shape) < 0.01] = -np.inf
    return x.astype(dtype)


def _loop(src, gi, si, dim_size, weight=None):
    """sum over edges k in order of weight[k] * src[..., gi[k], :] into row si[k], in src's dtype."""
    out = np.zeros(src.shape[:-2] + (dim_size, src.shape[-1]), src.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(len(gi)):
            x = src[..., gi[k], :]
            if weight is not None:
                w = weight[k]
                x = (w * x if np.ndim(w) == 0 else np.repeat(w, src.shape[-1] // w.shape[0]) * x).astype(src.dtype)
            out[..., si[k], :] = out[..., si[k], :] + x
    return out


def _graph(rng, n_src, n_dst, n_edges):
    gi = rng.integers(0, n_src, n_edges)
    si = rng.integers(0, n_dst, n_edges)
    si[si == n_dst - 1] = 0   # the last destination row has no edge
    return gi, si


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("width", WIDTHS)
def test_weighted_and_plain_sums_match_the_edge_loop(sum_loop, dtype, width):
    rng = np.random.default_rng([width, len(dtype)])
    gi, si = _graph(rng, 13, 9, 60)
    src = _values(rng, (13, width), dtype)
    w = rng.choice([0.5, -1.25, 3.0, 0.0, -0.0, np.inf], 60).astype(dtype)
    plan = cs.gather_scatter_plan(gi, si, src_size=13, dim_size=9)
    for weight in (None, w):
        expected = _loop(src, gi, si, 9, weight)
        for threads in (1, 2):
            assert_same(cs.gather_scatter(src, op="add", weight=weight, plan=plan, num_threads=threads), expected)
        counts = np.maximum(np.bincount(si, minlength=9), 1).astype(dtype)[:, None]
        for op, divisor in (("mean", counts), ("sqrt_n", np.sqrt(counts))):
            got = cs.gather_scatter(src, gi, si, op, weight=weight, dim_size=9, num_threads=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                assert_same(got, (expected / divisor).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("width", [1, 4, 10, 32, 33, 72])
def test_vjp_src_of_add_sums_along_the_sources(sum_loop, dtype, width):
    rng = np.random.default_rng([width, len(dtype), 1])
    gi, si = _graph(rng, 11, 7, 50)
    src = _values(rng, (11, width), dtype)
    g = _values(rng, (7, width), dtype)
    w = rng.choice([0.5, -1.25, 3.0, 0.0], 50).astype(dtype)
    for weight in (None, w):
        expected = _loop(g, si, gi, 11, weight)   # the cotangent rows gathered by destination, summed by source
        got = cs.gather_scatter_vjp_src("add", g, src, gi, si, weight=weight, dim_size=7, num_threads=1)
        assert_same(got, expected)


@pytest.mark.parametrize("width", [6, 32, 40])
def test_heads_batches_and_axis(sum_loop, width):
    rng = np.random.default_rng(width)
    gi, si = _graph(rng, 10, 8, 70)
    src = _values(rng, (3, 10, width), "float64")   # 3 batch slices, the index along axis 1
    heads = rng.choice([0.5, 2.0, -1.0], (70, 2))   # two heads, each over half the features
    expected = np.stack([_loop(src[b], gi, si, 8, heads) for b in range(3)]).reshape(3, 8, 2, width // 2)
    assert_same(cs.gather_scatter(src.reshape(3, 10, 2, width // 2), gi, si, "add", weight=heads, dim_size=8,
                                  axis=1), expected)
    per_edge = heads[:, 0]
    expected = np.stack([_loop(src[b], gi, si, 8, per_edge) for b in range(3)])
    for threads in (1, 2):
        assert_same(cs.gather_scatter(src, gi, si, "add", weight=per_edge, dim_size=8, axis=1,
                                      num_threads=threads), expected)


def test_many_edges_per_row_and_a_large_table(sum_loop):
    """Long rows of edges (the accumulators live across them) and a table past the L2 share (the prefetch)."""
    rng = np.random.default_rng(3)
    n, e, f = 40000, 60000, 24
    gi = rng.integers(0, n, e)
    si = np.sort(rng.integers(0, 5, e))
    src = rng.standard_normal((n, f)).astype(np.float32)
    w = rng.standard_normal(e).astype(np.float32)
    got = cs.gather_scatter(src, gi, si, "add", weight=w, dim_size=5, num_threads=1)
    expected = np.zeros((5, f), np.float32)
    for k in range(e):   # (a loop of 60000 row updates: about 0.1 s)
        expected[si[k]] = expected[si[k]] + w[k] * src[gi[k]]
    assert_same(got, expected)


def test_threads_split_the_register_sums_without_changing_bits(sum_loop):
    """Past the work a team of threads is started for (two threads, three, seven), each destination row summed
    by one thread: the bits of one thread."""
    from cyscatter._runtime.threads import REGISTER_SUM_MIN_WORK, team

    rng = np.random.default_rng(9)
    n, e, f = 5000, 70000, 32
    assert team(3, e * f, REGISTER_SUM_MIN_WORK) >= 2   # (the calls below do run on a team)
    src = rng.standard_normal((n, f))
    gi, si = rng.integers(0, n, e), rng.integers(0, n, e)
    w = rng.standard_normal(e)
    plan = cs.gather_scatter_plan(gi, si, src_size=n, dim_size=n)
    g = rng.standard_normal((n, f))
    for op in ("add", "mean"):
        one = cs.gather_scatter(src, op=op, weight=w, plan=plan, num_threads=1)
        back = cs.gather_scatter_vjp_src(op, g, src, weight=w, plan=plan, num_threads=1)
        for threads in (2, 3, 7):
            assert_same(cs.gather_scatter(src, op=op, weight=w, plan=plan, num_threads=threads), one)
            assert_same(cs.gather_scatter_vjp_src(op, g, src, weight=w, plan=plan, num_threads=threads), back)
    assert_same(cs.gather_scatter(src, op="add", weight=w, plan=plan, num_threads=1), _loop(src, gi, si, n, w))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("width", WIDTHS)
def test_half_node_tables_sum_as_their_float32_widening(sum_loop, dtype, width):
    """A float16/bfloat16 node table, widened eight features at a time as the register sums load it (and by the
    row loop otherwise): the sums of its float32 widening in edge order, rounded once to the result dtype."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    half = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    rng = np.random.default_rng([width, len(dtype), 7])
    gi, si = _graph(rng, 13, 9, 60)
    src = _values(rng, (2, 13, width), np.float32).astype(half)
    if dtype == "float16":   # a signalling NaN, which the widening quiets as the add of its exact widening does
        src.view(np.uint16)[0, 3, 0] = 0x7D01
    w = rng.choice([0.5, -1.25, 3.0, 0.0, -0.0, np.inf], 60).astype(np.float32)
    plan = cs.gather_scatter_plan(gi, si, src_size=13, dim_size=9)
    wide = src.astype(np.float32)
    for weight in (None, w):
        expected = _loop(wide, gi, si, 9, weight)
        for threads in (1, 2):
            got = cs.gather_scatter(src, op="add", weight=weight, plan=plan, axis=1, num_threads=threads)
            assert_same(got, expected.astype(half) if weight is None else expected)
