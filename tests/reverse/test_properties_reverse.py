"""Property-based tests of the reverse functions and forward derivatives.

- scatter_vjp_src / scatter_vjp_dst / scatter_jvp against central differences of the *reference* forward, on
  smooth float64 inputs (max/min: distinct values, so no tie is within reach of the step);
- the documented tie rule of max/min (split evenly among tied winners, dst included), on values full of ties, against
  a reference composed of `ref_gather`/`ref_scatter`;
- the adjoint identity <J v + K u, w> == <v, J^T w> + <u, K^T w> on any finite values, ties included;
- gather_vjp_src and gather_jvp against the reference scatter-add and gather, bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cyscatter as cs
from compare import assert_same
from reference import numeric_vjp, ref_gather, ref_scatter
from strategies import axis_as_given, examples, inferred_dims, laid_out, problems, value_arrays
from testing import OPS, twin

FD = dict(rtol=1e-5, atol=1e-6)


def smooth_values(data, op: str, n: int) -> np.ndarray:
    """n float64 values on which the op is differentiable with room for a 1e-6 step."""
    op = twin(op)   # the NaN-skipping ops meet no NaN here: their twins' values
    if op in ("max", "min"):   # distinct, at least 1/8 apart
        return (np.array(data.draw(st.permutations(range(n))), np.float64) - n / 2) / 8
    if op == "div":
        mags = data.draw(st.lists(st.floats(0.5, 2.0), min_size=n, max_size=n))
        signs = data.draw(st.lists(st.sampled_from((-1.0, 1.0)), min_size=n, max_size=n))
        return np.array(mags, np.float64).reshape(n) * np.array(signs, np.float64).reshape(n)
    bound = 2.0 if op == "mul" else 4.0
    values = data.draw(st.lists(st.sampled_from((0.0, 1.0)) | st.floats(-bound, bound), min_size=n, max_size=n))
    return np.array(values, np.float64).reshape(n)


def _setup(data, values=smooth_values, in_place=None, ops=OPS):
    """(problem, src, dst or None, axis as passed, forward) with src/dst drawn jointly by `values`."""
    p = data.draw(problems(ops, max_dims=1, max_side=3))
    in_place = data.draw(st.booleans()) if in_place is None else in_place
    src_shape = p.batch + p.ishape + p.feat
    dst_shape = p.out_shape(p.case.dims) if in_place else p.out_shape()
    n_src, n_dst = int(np.prod(src_shape)), int(np.prod(dst_shape)) if in_place else 0
    flat = values(data, p.op, n_src + n_dst)
    src = laid_out(data.draw, flat[:n_src].reshape(src_shape))
    dst = flat[n_src:].reshape(dst_shape) if in_place else None

    def forward(x, d=dst):
        if d is None:
            return ref_scatter(x, p.index, p.op, dim_size=inferred_dims(p.case), axis=p.axis, mode=p.mode)
        return ref_scatter(x, p.index, p.op, axis=p.axis, mode=p.mode, dst=d)

    return p, src, dst, axis_as_given(data.draw, p, src.ndim), forward


def _reference_out(forward):
    """The reference forward result, or None when it raises (then the functions under test must raise too)."""
    with np.errstate(all="ignore"):
        try:
            return forward()
        except IndexError:
            return None


@examples(120)
@given(data=st.data())
def test_scatter_vjp_src_matches_finite_differences(data):
    p, src, dst, axis, forward = _setup(data)
    out = _reference_out(lambda: forward(src))
    if out is None:
        shape = p.out_shape() if dst is None else dst.shape   # the shape the reference failed to fill
        with pytest.raises(IndexError):
            cs.scatter_vjp_src(p.op_name, np.ones(shape), src, p.index, np.zeros(shape), dst=dst, axis=axis,
                               mode=p.mode)
        return
    g = data.draw(value_arrays(np.float64, out.shape, finite=True).map(lambda a: np.clip(a, -3, 3)))
    got = cs.scatter_vjp_src(p.op_name, g, src, p.index, out, dst=dst, axis=axis, mode=p.mode)
    assert got.dtype == np.float64 and got.shape == src.shape
    np.testing.assert_allclose(got, numeric_vjp(forward, src, g), **FD)


@examples(80)
@given(data=st.data())
def test_scatter_vjp_dst_matches_finite_differences(data):
    p, src, dst, axis, forward = _setup(data, in_place=True)
    out = _reference_out(lambda: forward(src, dst))
    if out is None:
        with pytest.raises(IndexError):
            cs.scatter_vjp_dst(p.op_name, np.ones_like(dst), dst, src, p.index, dst, axis=axis, mode=p.mode)
        return
    g = data.draw(value_arrays(np.float64, out.shape, finite=True).map(lambda a: np.clip(a, -3, 3)))
    got = cs.scatter_vjp_dst(p.op_name, g, dst, src, p.index, out, axis=axis, mode=p.mode)
    assert got.dtype == np.float64 and got.shape == dst.shape
    np.testing.assert_allclose(got, numeric_vjp(lambda d: forward(src, d), dst, g), **FD)


@examples(80)
@given(data=st.data())
def test_scatter_jvp_matches_finite_differences(data):
    p, src, dst, axis, forward = _setup(data)
    out = _reference_out(lambda: forward(src))
    if out is None:
        return   # the raising path is the VJPs' (same index plan)
    v = data.draw(value_arrays(np.float64, src.shape, finite=True).map(lambda a: np.clip(a, -1, 1)))
    u = None if dst is None else data.draw(value_arrays(np.float64, dst.shape, finite=True).map(
        lambda a: np.clip(a, -1, 1)))
    eps = 1e-6
    with np.errstate(invalid="ignore"):
        fp = forward(src + eps * v, None if dst is None else dst + eps * u)
        fm = forward(src - eps * v, None if dst is None else dst - eps * u)
        numeric = np.where(fp == fm, 0.0, fp - fm) / (2 * eps)
    got = cs.scatter_jvp(p.op_name, src, p.index, out, v, dst=dst, dst_dot=u, axis=axis, mode=p.mode)
    assert got.dtype == np.float64 and got.shape == out.shape
    np.testing.assert_allclose(got, numeric, **FD)


def tied_values(data, op: str, n: int) -> np.ndarray:
    """Values from a tiny set (signed zeros and, outside mul/div, NaN), so that groups are full of ties."""
    op = twin(op)
    pool = {"max": (-1.0, -0.0, 0.0, 1.0, np.nan), "min": (-1.0, -0.0, 0.0, 1.0, np.nan),
            "div": (-2.0, -1.0, 0.5, 1.0, 2.0)}.get(op, (-2.0, -1.0, -0.0, 0.0, 1.0, 2.0))
    return np.array(data.draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), np.float64).reshape(n)


def reference_extreme_vjps(op, g, src, index, out, dst, axis, mode):
    """The documented max/min rule from reference parts: each tied winner (dst included) gets g / #winners;
    -0.0 and +0.0 do not tie (the forward pass orders them)."""
    def win(a, best):
        return ((a == best) & (np.signbit(a) == np.signbit(best))) | (np.isnan(a) & np.isnan(best))

    valid = ref_gather(np.ones(out.shape), index, axis=axis, mode=mode, fill_value=0) == 1
    src_win = valid & win(src, ref_gather(out, index, axis=axis, mode=mode, fill_value=0))
    dst_win = np.zeros(out.shape, bool) if dst is None else win(dst, out)
    count = ref_scatter(src_win.astype(np.float64), index, "add", axis=axis, mode=mode,
                        dst=dst_win.astype(np.float64))
    share = np.where(count > 0, g / np.maximum(count, 1), 0.0)
    grad_src = np.where(src_win, ref_gather(share, index, axis=axis, mode=mode, fill_value=0), 0.0)
    return grad_src, np.where(dst_win, share, 0.0)


@examples(100)
@given(data=st.data())
def test_max_min_gradients_split_ties_evenly(data):
    p, src, dst, axis, forward = _setup(data, tied_values, ops=("max", "min"))
    out = _reference_out(lambda: forward(src))
    if out is None:
        return
    g = data.draw(value_arrays(np.float64, out.shape, finite=True).map(lambda a: np.clip(a, -3, 3)))
    want_src, want_dst = reference_extreme_vjps(p.op, g, src, p.index, out, dst, p.axis, p.mode)
    np.testing.assert_allclose(cs.scatter_vjp_src(p.op_name, g, src, p.index, out, dst=dst, axis=axis, mode=p.mode),
                               want_src, rtol=1e-15, atol=0)
    if dst is not None:
        np.testing.assert_allclose(cs.scatter_vjp_dst(p.op_name, g, dst, src, p.index, out, axis=axis, mode=p.mode),
                                   want_dst, rtol=1e-15, atol=0)


@examples(120)
@given(data=st.data())
def test_jvp_and_vjps_are_adjoint(data):
    p, src, dst, axis, forward = _setup(data, tied_values)
    out = _reference_out(lambda: forward(src))
    if out is None or (twin(p.op) in ("max", "min") and np.isnan(out).any()):
        return   # NaN winners: their tangents and cotangents are NaN by design
    v = data.draw(value_arrays(np.float64, src.shape, finite=True).map(lambda a: np.clip(a, -1, 1)))
    w = data.draw(value_arrays(np.float64, out.shape, finite=True).map(lambda a: np.clip(a, -1, 1)))
    u = None if dst is None else data.draw(value_arrays(np.float64, dst.shape, finite=True).map(
        lambda a: np.clip(a, -1, 1)))
    jvp = cs.scatter_jvp(p.op_name, src, p.index, out, v, dst=dst, dst_dot=u, axis=axis, mode=p.mode)
    rhs = np.vdot(v, cs.scatter_vjp_src(p.op_name, w, src, p.index, out, dst=dst, axis=axis, mode=p.mode))
    if dst is not None:
        rhs += np.vdot(u, cs.scatter_vjp_dst(p.op_name, w, dst, src, p.index, out, axis=axis, mode=p.mode))
    finite = np.isfinite(out)   # rows left at the identity (+-inf) carry no tangent
    lhs = np.vdot(np.where(finite, jvp, 0), np.where(finite, w, 0))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


@examples(120)
@given(data=st.data())
def test_gather_vjp_src_matches_reference_scatter_add(data):
    p = data.draw(problems())
    dtype = np.dtype(data.draw(st.sampled_from(("float32", "float64", "complex64", "complex128", "int32"))))
    g = laid_out(data.draw, data.draw(value_arrays(dtype, p.batch + p.ishape + p.feat)))
    src_shape = p.out_shape(p.case.dims)
    axis = p.axis - len(src_shape) if p.axis < len(src_shape) and data.draw(st.booleans()) else p.axis
    zeros = np.zeros(src_shape, dtype if dtype.kind in "fc" else np.float64)
    with np.errstate(all="ignore"):
        try:
            expected = ref_scatter(g, p.index, "add", axis=p.axis, mode=p.mode, dst=zeros)
        except IndexError:
            with pytest.raises(IndexError):
                cs.gather_vjp_src(g, p.index, src_shape, axis=axis, mode=p.mode)
            return
        assert_same(cs.gather_vjp_src(g, p.index, src_shape, axis=axis, mode=p.mode), expected)


@examples(80)
@given(data=st.data())
def test_gather_jvp_matches_reference_gather(data):
    p = data.draw(problems())
    dot = laid_out(data.draw, data.draw(value_arrays(np.float64, p.batch + p.case.dims + p.feat)))
    axis = axis_as_given(data.draw, p, dot.ndim)
    try:
        expected = ref_gather(dot, p.index, axis=p.axis, mode=p.mode)
    except IndexError:
        with pytest.raises(IndexError):
            cs.gather_jvp(dot, p.index, axis=axis, mode=p.mode)
        return
    assert_same(cs.gather_jvp(dot, p.index, axis=axis, mode=p.mode), expected)
