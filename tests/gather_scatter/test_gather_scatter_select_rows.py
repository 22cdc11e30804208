"""The reverse kernels of the selecting ops (gather_scatter's, and the core scatter's) at every row width.

The CPU kernels (`fused_kernels.pyx` on `_fused.h`) apply the selection (max/min: the tied winners, NaN tying
NaN; fmax/fmin: the tied non-NaN winners; nansum/nanmean: the non-NaN messages) four floats or two doubles at a
time and the rest of a row one by one. Rows of 1 to 13 features per head, so that every width meets both parts,
with the values the masks must tell apart: -0.0 and +0.0, NaN, +-inf, ties, and weights 0, inf and NaN (inf * 0
messages are NaN). Compared with explicit loops (`reference_gather_scatter`) and, for the JVP, the loops below.
"""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import fused_kernels
from inputs import rng_for
from reference_gather_scatter import ref_gather_scatter_vjp

# inf * 0 and inf - inf, in the references as in the library: expected
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SELECTING = ["max", "min", "fmax", "fmin", "nansum", "nanmean"]
# (features, heads): a head's width is features // heads
WIDTHS = [(1, 1), (3, 3), (6, 2), (7, 7), (9, 1), (12, 3), (13, 13), (67, 1), (130, 10)]


def _selected(op, m, o):
    same = (m == o) & (np.signbit(m) == np.signbit(o))
    if op in ("max", "min"):
        return same | (np.isnan(m) & np.isnan(o))
    if op in ("fmax", "fmin"):
        return same & ~np.isnan(m)
    return ~np.isnan(m)


def ref_jvp(op, src, gi, si, out, s_dot, w, w_dot):
    """Each output element: the tangents w * s_dot + w_dot * src of its selected messages, summed (nansum) or
    averaged over them (the others); 0 where none is selected. An unselected message's tangent is left out, NaN
    or inf as it may be, not multiplied by 0."""
    shape = out.shape
    src, s_dot, out = (np.asarray(a, np.float64).reshape(len(a), -1) for a in (src, s_dot, out))
    feat = src.shape[1]

    def row_of(v, k):   # an edge's weight (or weight tangent) per feature: (heads, 1) or a scalar
        return np.repeat(np.asarray(v[k], np.float64).reshape(-1), feat // np.asarray(v[k]).size)
    total = np.zeros_like(out)
    count = np.zeros_like(out)
    with np.errstate(invalid="ignore", over="ignore"):
        for k, (s, d) in enumerate(zip(gi, si)):
            wk = np.ones(feat) if w is None else row_of(w, k)
            hit = _selected(op, wk * src[s], out[d])
            tangent = wk * s_dot[s] + (0 if w_dot is None else row_of(w_dot, k) * src[s])
            total[d] += np.where(hit, tangent, 0.0)
            count[d] += hit
        if op != "nansum":
            total = np.where(count > 0, total / np.maximum(count, 1), 0.0)
        return total.reshape(shape)


@pytest.mark.parametrize("op", SELECTING)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("wkind", ["none", "edge", "head"])
@pytest.mark.parametrize("feat, heads", WIDTHS)
@pytest.mark.parametrize("fill", [None, np.nan])
@pytest.mark.parametrize("ahead", [-1, 4])
def test_selection_rows_match_loops(op, dtype, wkind, feat, heads, fill, ahead):
    """(A NaN fill_value: the output of a destination without a selectable message is NaN, which no NaN message
    of fmax/fmin may tie. `ahead` 4: the src-row prefetch forced on, as for tables out of cache, where nansum and
    nanmean read src's NaN bits instead of its rows, for edges whose weight is finite and not 0.)"""
    fused_kernels.set_prefetch_edges(ahead)
    try:
        _check_selection_rows(op, dtype, wkind, feat, heads, fill)
    finally:
        fused_kernels.set_prefetch_edges(-1)


def _check_selection_rows(op, dtype, wkind, feat, heads, fill):
    rng = rng_for("gs-select-rows", op, dtype, wkind, feat)
    n_src, n_dst, n_edges = 9, 6, 40
    src = rng.integers(-2, 3, (n_src, heads, feat // heads)).astype(dtype)   # small integers: ties
    special = rng.random(src.shape)
    src[special < 0.08] = np.nan
    src[(special >= 0.08) & (special < 0.12)] = np.inf
    src[(special >= 0.12) & (special < 0.16)] = -np.inf
    src[(special >= 0.16) & (special < 0.26)] = -0.0
    src[n_src - 1] = np.nan   # a source row of NaN only
    gi, si = rng.integers(0, n_src, n_edges), rng.integers(0, n_dst, n_edges)
    gi[:3], si[:3] = n_src - 1, n_dst - 1   # ... whose three edges are a destination's only messages
    si[3:][si[3:] == n_dst - 1] = 0
    w = w_dot = None
    if wkind != "none":
        w = rng.choice([1.0, 2.0, 0.5, -1.0], (n_edges,) if wkind == "edge" else (n_edges, heads, 1))
        w = w.astype(dtype)
        flat = w.reshape(-1)
        flat[rng.choice(flat.size, 3, replace=False)] = [0.0, np.inf, np.nan]
        w_dot = rng.standard_normal(w.shape).astype(dtype)
    with np.errstate(invalid="ignore"):
        out = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=n_dst, fill_value=fill)
    g = rng.standard_normal(out.shape).astype(dtype)
    s_dot = rng.standard_normal(src.shape).astype(dtype)
    ref_src, ref_w = ref_gather_scatter_vjp(op, g, src, gi, si, out, weight=w, dim_size=n_dst)
    expected_jvp = ref_jvp(op, src, gi, si, out, s_dot, w, w_dot)
    expected_jvp_src = ref_jvp(op, src, gi, si, out, s_dot, w, None)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    plan = cs.gather_scatter_plan(gi, si, src_size=n_src, dim_size=n_dst)
    for kw in (dict(gather_index=gi, scatter_index=si, dim_size=n_dst), dict(plan=plan)):
        for threads in (1, 2):
            with np.errstate(invalid="ignore", over="ignore"):
                got_src = cs.gather_scatter_vjp_src(op, g, src, out=out, weight=w, num_threads=threads, **kw)
                got_jvp = cs.gather_scatter_jvp(op, src, out=out, src_dot=s_dot, weight=w, weight_dot=w_dot,
                                                num_threads=threads, **kw)
                got_jvp_src = cs.gather_scatter_jvp(op, src, out=out, src_dot=s_dot, weight=w, num_threads=threads,
                                                    **kw)   # (the weight held: no weight tangent)
            assert got_src.dtype == got_jvp.dtype == np.dtype(dtype)
            np.testing.assert_allclose(got_src, ref_src, rtol=rtol, atol=rtol, err_msg="vjp_src")
            np.testing.assert_allclose(got_jvp, expected_jvp, rtol=rtol, atol=rtol, err_msg="jvp")
            np.testing.assert_allclose(got_jvp_src, expected_jvp_src, rtol=rtol, atol=rtol, err_msg="jvp, src only")
            if w is not None:
                with np.errstate(invalid="ignore"):
                    got_w = cs.gather_scatter_vjp_weight(op, g, src, out=out, weight=w, num_threads=threads, **kw)
                np.testing.assert_allclose(got_w, ref_w, rtol=rtol, atol=rtol, err_msg="vjp_weight")


@pytest.mark.parametrize("op", SELECTING)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("feat", [1, 7, 67])
@pytest.mark.parametrize("ahead", [-1, 4])
def test_core_scatter_selection_matches_loops(op, dtype, feat, ahead):
    """The core scatter's reverse functions of the selecting ops run the same kernels (one entry per src row):
    `scatter(src, index)` is `gather_scatter(src, arange(n), index)`, whose loops are the reference here. Dropped
    entries (mode="drop") get nothing."""
    rng = rng_for("core-select-rows", op, dtype, feat)
    n, size = 50, 7
    src = rng.integers(-2, 3, (n, feat)).astype(dtype)
    special = rng.random(src.shape)
    src[special < 0.1] = np.nan
    src[(special >= 0.1) & (special < 0.14)] = np.inf
    src[(special >= 0.14) & (special < 0.24)] = -0.0
    index = rng.integers(0, size + 2, n)   # some out of range: dropped
    kept = index < size
    out = cs.scatter(src, index, op, dim_size=size, mode="drop")
    g = rng.standard_normal(out.shape).astype(dtype)
    s_dot = rng.standard_normal(src.shape).astype(dtype)
    rows = np.flatnonzero(kept)
    ref_src = np.zeros(src.shape)
    ref_src[rows] = ref_gather_scatter_vjp(op, g, src, rows, index[kept], out, dim_size=size)[0][rows]
    expected_jvp = ref_jvp(op, src, rows, index[kept], out, s_dot, None, None)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    fused_kernels.set_prefetch_edges(ahead)
    try:
        with np.errstate(invalid="ignore"):
            got_src = cs.scatter_vjp_src(op, g, src, index, out, mode="drop")
            got_jvp = cs.scatter_jvp(op, src, index, out, s_dot, mode="drop")
    finally:
        fused_kernels.set_prefetch_edges(-1)
    assert got_src.dtype == got_jvp.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got_src, ref_src, rtol=rtol, atol=rtol, err_msg="vjp_src")
    np.testing.assert_allclose(got_jvp, expected_jvp, rtol=rtol, atol=rtol, err_msg="jvp")
