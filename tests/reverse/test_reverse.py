"""The split reverse functions and forward derivatives.

VJPs (scatter_vjp_src, scatter_vjp_dst, gather_vjp_src) against central finite differences of the reference
forward functions; JVPs against finite differences and against the VJPs (<J v, w> == <v, J^T w>); hand cases
for the rules finite differences cannot pin down (ties of three, NaN winners) or that must hold exactly (mul
with zeros, empty mean groups, dropped entries).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest

import cyscatter as cs
from inputs import DIMS, GEOMETRIES, index, pick, rng_for, values
from reference import numeric_vjp, ref_gather, ref_scatter
from testing import INDEX_KINDS, OPS

AXIS_GEOMETRIES = (GEOMETRIES[0], GEOMETRIES[1], GEOMETRIES[4])   # axis 0; axis 1 with batch; axis -2, 2-d index
FORMS = ("scatter", "scatter_into")
EPS = 1e-6
# every op, index kind and form, at axis 0, at axis 1 behind a batch dim, and at a negative axis
every_scatter = pytest.mark.parametrize(
    "geom,op,kind,form", list(itertools.product(AXIS_GEOMETRIES, OPS, INDEX_KINDS, FORMS)),
    ids=str)


def assert_grad(actual, expected, rtol=1e-6):
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-7)


@dataclass
class Problem:
    """A float64 scatter (allocating when dst is None) with duplicate indices, and its reference forward."""

    op: str
    src: np.ndarray
    index: object
    dst: np.ndarray | None
    dims: tuple
    axis: int
    mode: str
    backend: object

    @classmethod
    def make(cls, backend, op, kind, form, geom, mode="raise"):
        rng = rng_for("reverse", op, kind, form, geom, mode)
        dims = DIMS[kind]
        src = values("float64", geom.src_shape(), rng, op)
        idx = index(kind, "int64", geom.ishape, dims, rng, out_of_range=mode == "drop")
        dst = values("float64", geom.out_shape(dims), rng, op) if form == "scatter_into" else None
        return cls(op, src, idx, dst, dims, geom.axis, mode, backend)

    def forward(self, src=None, dst=None):
        """Reference output; positions no entry reaches (op identity, possibly infinite) read as 0."""
        src = self.src if src is None else src
        dst = self.dst if dst is None else dst
        dim_size = self.dims if len(self.dims) > 1 else self.dims[0]
        out = ref_scatter(src, self.index, self.op, dim_size=dim_size, axis=self.axis, mode=self.mode, dst=dst)
        return np.where(np.isfinite(out), out, 0.0)

    def out(self):
        dim_size = self.dims if len(self.dims) > 1 else self.dims[0]
        return ref_scatter(self.src, self.index, self.op, dim_size=dim_size, axis=self.axis, mode=self.mode,
                           dst=self.dst)

    def cotangent(self, seed="w"):
        return rng_for(seed, self.op).standard_normal(self.out().shape)

    def vjp_src(self, g):
        return self.backend.call(cs.scatter_vjp_src, self.op, g, self.src, self.index, self.out(), dst=self.dst,
                                 axis=self.axis, mode=self.mode)

    def vjp_dst(self, g):
        return self.backend.call(cs.scatter_vjp_dst, self.op, g, self.dst, self.src, self.index, self.out(),
                                 axis=self.axis, mode=self.mode)

    def jvp(self, src_dot, dst_dot=None):
        return self.backend.call(cs.scatter_jvp, self.op, self.src, self.index, self.out(), src_dot, dst=self.dst,
                                 dst_dot=dst_dot, axis=self.axis, mode=self.mode)


# ---- VJPs against finite differences ----------------------------------------------------------------------

@every_scatter
def test_scatter_vjp_src_matches_finite_differences(backend, geom, op, kind, form):
    p = Problem.make(backend, op, kind, form, geom, mode=pick(cs.MODES, "vjp", geom, op, kind, form))
    g = p.cotangent()
    assert_grad(p.vjp_src(g), numeric_vjp(lambda s: p.forward(src=s), p.src, g, EPS))


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("geom", AXIS_GEOMETRIES, ids=str)
def test_scatter_vjp_dst_matches_finite_differences(backend, geom, op, kind):
    p = Problem.make(backend, op, kind, "scatter_into", geom, mode=pick(cs.MODES, "vjp_dst", geom, op, kind))
    g = p.cotangent()
    assert_grad(p.vjp_dst(g), numeric_vjp(lambda d: p.forward(dst=d), p.dst, g, EPS))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
def test_dropped_entries_get_zero_gradient(backend, op, kind, form):
    p = Problem.make(backend, op, kind, form, GEOMETRIES[1], mode="drop")
    coords = p.index if isinstance(p.index, tuple) else (p.index,)
    dropped = np.zeros(coords[0].shape, bool)
    for c, size in zip(coords, p.dims):
        dropped |= (c < 0) | (c >= size)
    assert dropped.any() and not dropped.all()
    g = p.cotangent()
    grad = p.vjp_src(g)
    assert_grad(grad, numeric_vjp(lambda s: p.forward(src=s), p.src, g, EPS))
    assert np.all(grad[:, dropped] == 0)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("geom", AXIS_GEOMETRIES, ids=str)
@pytest.mark.parametrize("mode", ["raise", "drop", "wrap"])
def test_gather_vjp_src_matches_finite_differences(backend, mode, geom, kind):
    rng = rng_for("gather_vjp", mode, geom, kind)
    dims = DIMS[kind]
    src = values("float64", geom.out_shape(dims), rng)
    idx = index(kind, "int64", geom.ishape, dims, rng, out_of_range=mode != "raise")
    axis = geom.gather_axis(len(dims))
    g = rng.standard_normal(geom.src_shape())
    expected = numeric_vjp(lambda s: ref_gather(s, idx, axis=axis, mode=mode), src, g, EPS)
    assert_grad(backend.call(cs.gather_vjp_src, g, idx, src.shape, axis=axis, mode=mode), expected)


# ---- JVPs ----------------------------------------------------------------------------------------------------

@every_scatter
def test_scatter_jvp_is_adjoint_of_vjps(backend, geom, op, kind, form):
    """<J v, w> == <v_src, J_src^T w> + <v_dst, J_dst^T w>: forward and reverse derivatives agree."""
    p = Problem.make(backend, op, kind, form, geom, mode=pick(cs.MODES, "jvp", geom, op, kind, form))
    rng = rng_for("tangents", op, kind, form, geom)
    v_src = rng.standard_normal(p.src.shape)
    v_dst = None if p.dst is None else rng.standard_normal(p.dst.shape)
    w = p.cotangent()
    lhs = np.sum(p.jvp(v_src, v_dst) * w)
    rhs = np.sum(v_src * p.vjp_src(w)) + (0 if p.dst is None else np.sum(v_dst * p.vjp_dst(w)))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
def test_scatter_jvp_matches_finite_differences(backend, op, kind, form):
    p = Problem.make(backend, op, kind, form, GEOMETRIES[1])
    rng = rng_for("fd-tangents", op, kind, form)
    v_src = rng.standard_normal(p.src.shape)
    v_dst = None if p.dst is None else rng.standard_normal(p.dst.shape)

    def moved(t):
        return p.forward(src=p.src + t * v_src, dst=None if p.dst is None else p.dst + t * v_dst)

    assert_grad(p.jvp(v_src, v_dst), (moved(EPS) - moved(-EPS)) / (2 * EPS))


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_gather_jvp_is_the_gather_of_the_tangent(backend, kind):
    rng = rng_for("gather_jvp", kind)
    dot = rng.standard_normal((2,) + DIMS[kind] + (3,))
    idx = index(kind, "int64", (6,), DIMS[kind], rng)
    np.testing.assert_array_equal(backend.call(cs.gather_jvp, dot, idx, axis=1), ref_gather(dot, idx, axis=1))


# ---- hand cases --------------------------------------------------------------------------------------------

def _others_product(src, idx, init):
    """Per entry: init of its group times the product of the other members (explicit loops, no division)."""
    out = np.empty_like(src)
    for k in range(len(src)):
        out[k] = init[idx[k]] * np.prod([src[j] for j in range(len(src)) if j != k and idx[j] == idx[k]])
    return out


@pytest.mark.parametrize("form", FORMS)
def test_mul_gradient_with_zeros(backend, form):
    """Groups with one zero, two zeros and none: exact products of the others, where dividing would fail."""
    src = np.array([2.0, 0.0, 3.0, 0.0, 5.0, 0.0, 4.0, -1.5])
    idx = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    dst = None if form == "scatter" else np.array([4.0, -2.0, 0.5])
    init = np.ones(3) if dst is None else dst
    out = ref_scatter(src, idx, "mul", dst=dst)
    g = np.array([1.0, 2.0, 3.0])
    grad = backend.call(cs.scatter_vjp_src, "mul", g, src, idx, out, dst=dst)
    expected = g[idx] * _others_product(src, idx, init)
    np.testing.assert_array_equal(grad, expected)
    assert grad[1] != 0   # the zero's gradient is the product of the others, 2 * 3 * init
    if dst is not None:
        np.testing.assert_array_equal(backend.call(cs.scatter_vjp_dst, "mul", g, dst, src, idx, out),
                                      g * np.array([0.0, 0.0, -6.0]))


@pytest.mark.parametrize("op", ["max", "min"])
def test_ties_split_evenly_including_dst(backend, op):
    """Group 0: three tied winners, dst among them (1/3 each); group 1: two src winners (1/2 each, as central
    differences give); group 2: dst wins alone."""
    sign = 1.0 if op == "max" else -1.0
    dst = sign * np.array([2.0, 0.0, 9.0])
    src = sign * np.array([2.0, 1.0, 2.0, 5.0, 5.0, 3.0, 1.0])
    idx = np.array([0, 0, 0, 1, 1, 1, 2])
    out = ref_scatter(src, idx, op, dst=dst)
    g = np.array([3.0, 4.0, 5.0])
    np.testing.assert_allclose(backend.call(cs.scatter_vjp_src, op, g, src, idx, out, dst=dst),
                               [1.0, 0.0, 1.0, 2.0, 2.0, 0.0, 0.0], rtol=1e-15)
    np.testing.assert_allclose(backend.call(cs.scatter_vjp_dst, op, g, dst, src, idx, out), [1.0, 0.0, 5.0],
                               rtol=1e-15)
    two_way = numeric_vjp(lambda s: ref_scatter(s, idx, op, dst=dst), src, g)
    np.testing.assert_allclose(two_way[3:5], [2.0, 2.0], rtol=1e-6)


@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_winner_takes_the_gradient(backend, op):
    src, idx = np.array([1.0, np.nan, 2.0, 3.0]), np.array([0, 0, 0, 1])
    out = ref_scatter(src, idx, op)
    np.testing.assert_array_equal(backend.call(cs.scatter_vjp_src, op, np.ones(2), src, idx, out), [0, 1, 0, 1])


@pytest.mark.parametrize("op", ["max", "min"])
def test_signed_zeros_do_not_tie(backend, op):
    """The forward pass orders -0.0 < +0.0, so only the zero it keeps (the one scatter_argmax/argmin names)
    takes the gradient; `==` alone would split it as a tie."""
    src, idx, dst = np.array([-0.0, 0.0, 0.0, -0.0]), np.array([0, 0, 1, 1]), np.array([0.0, -0.0])
    out = ref_scatter(src, idx, op)
    winner = [0, 1, 1, 0] if op == "max" else [1, 0, 0, 1]
    arg = (cs.scatter_argmax if op == "max" else cs.scatter_argmin)(src, idx)
    np.testing.assert_array_equal(np.flatnonzero(winner), np.sort(arg))
    np.testing.assert_array_equal(backend.call(cs.scatter_vjp_src, op, np.ones(2), src, idx, out), winner)
    out_into = ref_scatter(src, idx, op, dst=dst)
    np.testing.assert_array_equal(backend.call(cs.scatter_vjp_dst, op, np.ones(2), dst, src, idx, out_into),
                                  [0.5, 0] if op == "max" else [0, 0.5])   # a true tie: dst and one src


def test_mean_of_empty_groups_is_zero_not_nan(backend):
    src, idx = np.array([1.0, 3.0, 5.0]), np.array([0, 0, 2])
    out = backend.call(cs.scatter, src, idx, "mean", dim_size=4)
    np.testing.assert_array_equal(out, ref_scatter(src, idx, "mean", dim_size=4))
    np.testing.assert_array_equal(out, [2.0, 0.0, 5.0, 0.0])
    g = np.array([2.0, 7.0, 3.0, 7.0])
    np.testing.assert_array_equal(backend.call(cs.scatter_vjp_src, "mean", g, src, idx, out), [1.0, 1.0, 3.0])
    np.testing.assert_array_equal(backend.call(cs.scatter_jvp, "mean", src, idx, out, np.ones(3)),
                                  [1.0, 0.0, 1.0, 0.0])


@pytest.mark.parametrize("dtype,grad_dtype", [("float32", "float32"), ("float64", "float64"), ("int64", "float64")])
def test_gradient_dtypes(backend, dtype, grad_dtype):
    src, idx = np.array([1, 2, 3], dtype), np.array([0, 0, 1])
    out = ref_scatter(src, idx, "add")
    assert backend.call(cs.scatter_vjp_src, "add", np.ones(2, dtype), src, idx, out).dtype == grad_dtype
