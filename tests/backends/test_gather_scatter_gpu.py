"""gather_scatter and its reverse functions on CuPy, against the CPU results (tested against loops elsewhere).

Every op x value dtype x index kind x weight kind (none, per edge, per head, a per-head shape that broadcasts) x
mode x plan or none, forward, both VJPs and the JVP. Each runs on CuPy (marked gpu: skipped without a GPU, a
failure with CYSCATTER_REQUIRE_GPU=1) and on the host emulation of tests/helpers/emulated_cupy.py, which checks the
backend's Python code and the kernels' semantics in CI. Results the GPU computes exactly (max/min, integers,
tie counts) must equal the CPU's bits; float sums and products are compared to rounding (atomics arrive in any
order).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from inputs import rng_for, values
from testing import FUSED_OPS, op_supports

DTYPES = ("float32", "float64", "int32", "int64", "uint8", "uint64", "float16", "complex64", "complex128")
REVERSE_DTYPES = ("float32", "float64", "int64", "float16", "complex128")
WEIGHTS = ("none", "edge", "head", "head-broadcast")
MODES = ("raise", "drop", "wrap", "clip")
SRC_DIMS = {"int": (7,), "tuple": (3, 4)}
DST_DIMS = {"int": (6,), "tuple": (2, 5)}
FEAT = (2, 3)        # two heads of three features
N_EDGES = 24
RTOL = {"e": 4e-3, "f": 2e-5, "d": 1e-12}   # by the real dtype char of the compared result


def many(cp, n: int) -> int:
    """n edges on a GPU; fewer on the emulation, whose kernels are Python loops."""
    return min(n, 2048) if getattr(cp, "EMULATED", False) else n


# ---- inputs -----------------------------------------------------------------------------------------------------

def edges(kind, rng, mode="raise"):
    """(gather_index, scatter_index) of `kind`; about a quarter of the entries out of range unless mode='raise'."""
    def coords(dims):
        cs_ = [rng.integers(0, d, N_EDGES) for d in dims]
        if mode != "raise":
            for c, d in zip(cs_, dims):
                bad = rng.random(N_EDGES) < 0.25
                c[bad] = rng.choice([-1, d, d + 2, -d - 3], int(bad.sum()))
        return cs_[0] if kind == "int" else tuple(cs_)
    return coords(SRC_DIMS[kind]), coords(DST_DIMS[kind])


def weight_for(kind, dtype, rng):
    """A weight of `kind` (None, (E,), (E, heads), (E, 1)) holding values that make ties in max/min."""
    if kind == "none":
        return None
    shape = {"edge": (N_EDGES,), "head": (N_EDGES, FEAT[0]), "head-broadcast": (N_EDGES, 1)}[kind]
    w = rng.choice([0.5, 1.0, -2.0, 3.0], shape)
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return w.astype(np.float32)
    return w.astype(dtype) if dtype.kind in "fc" else np.rint(w).astype(np.int64)


def tied_values(dtype, shape, rng):
    """Small integers (as `dtype`): many equal messages, so max/min reverse functions meet ties."""
    return rng.integers(-3, 4, size=shape).astype(dtype)


def on(cp, a):
    """`a` (array, tuple of arrays or None) on the device."""
    if a is None:
        return None
    return tuple(cp.asarray(x) for x in a) if isinstance(a, tuple) else cp.asarray(a)


# ---- comparison -------------------------------------------------------------------------------------------------

def _exact(op: str, dtype) -> bool:
    """The GPU computes these bit for bit: max/min, and integer messages except div's float64 products."""
    return op in ("max", "min") or (np.dtype(dtype).kind in "iu" and op != "div")


def assert_like_cpu(cp, got, expected, exact: bool, scale=None, rounding=None):
    """`got` (a device array) equals the CPU's `expected`: bitwise when `exact`, else to rounding relative to
    `scale` (the magnitude the result is a sum of; default: the result's own largest magnitude) in the result's
    dtype or the dtype `rounding` (one the results went through)."""
    assert type(got) is cp.ndarray, f"{type(got)} is not a device array"
    got = got.get()
    if exact:
        assert_same(got, expected)
        return
    assert got.dtype == expected.dtype and got.shape == expected.shape
    rtol = RTOL[np.dtype(expected.dtype.char.lower()).char if expected.dtype.kind == "c" else expected.dtype.char]
    if rounding is not None:
        rtol = max(rtol, RTOL[np.dtype(rounding).char])
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    if scale is None:
        scale = np.abs(expected[finite]).max() if finite.any() else 1.0
    np.testing.assert_allclose(got[finite], expected[finite], rtol=rtol, atol=rtol * N_EDGES * max(scale, 1e-30))


def magnitude(src, gi, si, weight, **kwargs) -> float:
    """The largest sum of message magnitudes into one output element: the scale of a sum's rounding errors."""
    w = None if weight is None else np.abs(weight).astype(np.float64)
    return float(cs.gather_scatter(np.abs(src).astype(np.float64), gi, si, "add", weight=w, **kwargs).max(initial=1))


# ---- forward ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["int", "tuple"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", FUSED_OPS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_forward_matches_cpu(cp, op, dtype, kind, mode):
    rng = rng_for("gs-gpu", op, dtype, kind, mode)
    src = values(dtype, (2,) + SRC_DIMS[kind] + FEAT, rng, op)     # batch 2 before the source rows: axis=1
    gi, si = edges(kind, rng, mode)
    dims = DST_DIMS[kind]
    plan = cs.gather_scatter_plan(gi, si, src_size=SRC_DIMS[kind], dim_size=dims, mode=mode)
    for wkind in WEIGHTS:
        w = weight_for(wkind, dtype, rng)
        fill = -5 if wkind == "edge" else None
        expected = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=dims, axis=1, mode=mode, fill_value=fill)
        scale = magnitude(src, gi, si, w, dim_size=dims, axis=1, mode=mode) if op in ("add", "sub", "mean") else None
        got = cs.gather_scatter(on(cp, src), on(cp, gi), on(cp, si), op, weight=on(cp, w), dim_size=dims, axis=1,
                                mode=mode, fill_value=fill)
        assert_like_cpu(cp, got, expected, _exact(op, expected.dtype), scale)
        got = cs.gather_scatter(on(cp, src), op=op, weight=on(cp, w), axis=1, plan=plan, fill_value=fill)
        assert_like_cpu(cp, got, expected, _exact(op, expected.dtype), scale)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_special_values_bitwise(cp, op, dtype):
    """NaN wins, -0.0 < +0.0, and the sign of a weighted zero survives: the CPU's bits on any arrival order."""
    src = np.array([[np.nan], [1.0], [-0.0], [0.0], [-np.inf], [2.0]], dtype)
    gi = np.array([0, 1, 2, 3, 2, 3, 4, 5, 1, 5])
    si = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    w = np.array([1, 1, 1, 1, -1, -1, 1, -1, -2, 0.5], dtype)
    for weight in (None, w):
        expected = cs.gather_scatter(src, gi, si, op, weight=weight, dim_size=6)
        for _ in range(4):
            got = cs.gather_scatter(cp.asarray(src), cp.asarray(gi), cp.asarray(si), op, weight=on(cp, weight),
                                    dim_size=6)
            assert_like_cpu(cp, got, expected, exact=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "complex64"])
@pytest.mark.parametrize("op", ["add", "sub", "mean", "max", "min"])
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_all_edges_into_one_row(cp, op, dtype):
    """Heavy contention on one destination: small integer values keep every float sum exact, in any order."""
    rng = np.random.default_rng(7)
    n = many(cp, 1 << 18)
    src = rng.integers(0, 8, size=(64, 4)).astype(dtype)
    gi, si = rng.integers(0, 64, n), np.zeros(n, np.int64)
    w = rng.integers(-2, 3, n).astype(dtype)
    expected = cs.gather_scatter(src, gi, si, op, weight=w)
    got = cs.gather_scatter(cp.asarray(src), cp.asarray(gi), cp.asarray(si), op, weight=cp.asarray(w))
    assert_like_cpu(cp, got, expected, exact=True)


# ---- reverse functions ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["raise", "drop"])
@pytest.mark.parametrize("wkind", WEIGHTS)
@pytest.mark.parametrize("dtype", REVERSE_DTYPES)
@pytest.mark.parametrize("op", FUSED_OPS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_reverse_functions_match_cpu(cp, op, dtype, wkind, mode):
    rng = rng_for("gs-gpu-reverse", op, dtype, wkind, mode)
    shape = (2,) + SRC_DIMS["int"] + FEAT
    src = values(dtype, shape, rng, op) if op in ("mul", "div") else tied_values(dtype, shape, rng)
    gi, si = edges("int", rng, mode)
    w = weight_for(wkind, dtype, rng)
    kw = dict(dim_size=6, axis=1, mode=mode)
    out = cs.gather_scatter(src, gi, si, op, weight=w, **kw)
    g = rng.normal(size=out.shape).astype(out.dtype if out.dtype.kind in "fc" else np.float64)
    src_dot = rng.normal(size=src.shape)
    w_dot = None if w is None else rng.normal(size=w.shape)
    plan = cs.gather_scatter_plan(gi, si, src_size=7, **{k: v for k, v in kw.items() if k != "axis"})
    calls = {
        "vjp_src": lambda m, **ix: cs.gather_scatter_vjp_src(op, m(g), m(src), out=m(out), weight=m(w), **ix),
        "vjp_weight": lambda m, **ix: cs.gather_scatter_vjp_weight(op, m(g), m(src), out=m(out), weight=m(w), **ix),
        "jvp_src": lambda m, **ix: cs.gather_scatter_jvp(op, m(src), out=m(out), src_dot=m(src_dot), weight=m(w),
                                                         **ix),
    }
    if w is not None:
        calls["jvp_weight"] = lambda m, **ix: cs.gather_scatter_jvp(op, m(src), out=m(out), weight=m(w),
                                                                    weight_dot=m(w_dot), **ix)
        calls["jvp_both"] = lambda m, **ix: cs.gather_scatter_jvp(op, m(src), out=m(out), src_dot=m(src_dot),
                                                                  weight=m(w), weight_dot=m(w_dot), **ix)
    for name, call in calls.items():
        expected = call(lambda a: a, gather_index=gi, scatter_index=si, **kw)
        for ix in (dict(gather_index=on(cp, gi), scatter_index=on(cp, si), **kw), dict(plan=plan, axis=1)):
            got = call(lambda a: on(cp, a), **ix)
            try:
                # mul, div and nanprod on float16 read each device's own float32 forward product
                assert_like_cpu(cp, got, expected, exact=False,
                                rounding=np.float32 if dtype == "float16" and op in ("mul", "div", "nanprod") else None)
            except AssertionError as exc:
                raise AssertionError(f"{name} with {'a plan' if 'plan' in ix else 'indices'}: {exc}") from None


def test_max_min_gradients_split_among_ties(cp):
    """The docstring's example, on the device: the cotangent is split evenly between the two tied winners."""
    x, gi, si = np.array([1., 5., 5.]), np.array([0, 1, 2]), np.array([0, 0, 0])
    out = cs.gather_scatter(cp.asarray(x), cp.asarray(gi), cp.asarray(si), "max")
    got = cs.gather_scatter_vjp_src("max", cp.asarray([1.]), cp.asarray(x), cp.asarray(gi), cp.asarray(si), out)
    np.testing.assert_array_equal(got.get(), [0.0, 0.5, 0.5])
    w = cs.gather_scatter_vjp_weight("max", cp.asarray([1.]), cp.asarray(x), cp.asarray(gi), cp.asarray(si), out,
                                     weight=cp.ones(3))
    np.testing.assert_array_equal(w.get(), [0.0, 2.5, 2.5])


# ---- the plan on the device, dispatch, errors --------------------------------------------------------------------

def test_plan_uploads_once_per_device(cp):
    rng = np.random.default_rng(3)
    src = rng.normal(size=(7, 4))
    gi, si = edges("int", rng)
    plan = cs.gather_scatter_plan(gi, si, src_size=7, dim_size=6)
    first = cs.gather_scatter(cp.asarray(src), op="mean", plan=plan)
    cached = dict(plan._cache["device_arrays"])
    assert cached and all(type(a) is cp.ndarray for a in cached.values())
    second = cs.gather_scatter(cp.asarray(src), op="mean", plan=plan)
    cs.gather_scatter_vjp_src("mean", second, cp.asarray(src), plan=plan)
    assert all(plan._cache["device_arrays"][k] is a for k, a in cached.items())   # the same device arrays, not re-uploaded
    np.testing.assert_allclose(first.get(), second.get(), rtol=1e-12)
    np.testing.assert_allclose(cs.gather_scatter(src, op="mean", plan=plan), first.get(), rtol=1e-12)   # host too


def test_results_stay_on_the_device_and_mixing_raises(cp):
    src, gi, si = cp.ones((3, 2)), cp.asarray([0, 1, 2]), cp.asarray([1, 0, 1])
    assert type(cs.gather_scatter(src, gi, si)) is cp.ndarray
    with pytest.raises(TypeError, match=r"is a cupy\.ndarray \(GPU\) but .* is a numpy\.ndarray \(host\)"):
        cs.gather_scatter(src, np.array([0, 1, 2]), si)
    with pytest.raises(TypeError, match=r"\(GPU\) but weight is a numpy\.ndarray \(host\)"):
        cs.gather_scatter_vjp_weight("add", cp.ones((2, 2)), src, gi, si, weight=np.ones(3))


def test_bad_input_raises_before_any_launch(cp):
    src, gi = cp.ones((3, 2)), cp.asarray([0, 1, 2])
    with pytest.raises(IndexError, match=r"out of bounds"):
        cs.gather_scatter(src, gi, cp.asarray([0, 5, 1]), dim_size=2)
    with pytest.raises(IndexError, match=r"out of bounds"):
        cs.gather_scatter(src, cp.asarray([0, 3, 1]), gi)
    with pytest.raises(ValueError, match=r"weight shape \(2,\) does not fit the edges"):
        cs.gather_scatter(src, gi, gi, weight=cp.ones(2))
    with pytest.raises(ValueError, match=r"different|shape"):
        cs.gather_scatter(src, gi, cp.asarray([0, 1]))
    with pytest.raises(TypeError, match=r"needs ordered values"):
        cs.gather_scatter(src, gi, gi, "max", weight=cp.ones(3, np.complex64))
    with pytest.raises(TypeError, match=r"needs out"):
        cs.gather_scatter_vjp_src("max", cp.ones((3, 2)), src, gi, gi)
    with pytest.raises(ValueError, match=r"grad_out shape"):
        cs.gather_scatter_vjp_src("add", cp.ones((2, 2)), src, gi, gi, dim_size=3)
    with pytest.raises(ValueError, match=r"weight_dot shape"):
        cs.gather_scatter_jvp("add", src, gi, gi, weight=cp.ones(3), weight_dot=cp.ones(2))


def test_empty_edges_and_features(cp):
    for src, gi, si in ((np.ones((3, 2)), np.zeros(0, np.int64), np.zeros(0, np.int64)),
                        (np.ones((3, 0)), np.array([0, 1]), np.array([1, 1]))):
        for op in ("add", "max", "mean", "mul"):
            expected = cs.gather_scatter(src, gi, si, op, dim_size=2)
            got = cs.gather_scatter(cp.asarray(src), cp.asarray(gi), cp.asarray(si), op, dim_size=2)
            assert_like_cpu(cp, got, expected, exact=True)
            g = np.ones(expected.shape)
            back = cs.gather_scatter_vjp_src(op, cp.asarray(g), cp.asarray(src), cp.asarray(gi), cp.asarray(si),
                                             got, dim_size=2)
            assert_like_cpu(cp, back, cs.gather_scatter_vjp_src(op, g, src, gi, si, expected, dim_size=2),
                            exact=True)


def test_import_does_not_import_cupy():
    code = ("import sys, numpy as np, cyscatter as cs, cyscatter._reverse.gather_scatter_cuda; "
            "cs.gather_scatter(np.ones((2, 2)), np.array([0, 1]), np.array([1, 1]), 'max'); "
            "assert 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(cs.__file__).parents[1])
