"""A `src` that broadcasts: scalars, a row (F,), (n, 1) against (n, F), size-1 batch or index
dims, 0-d arrays, in every function that scatters a src.

The references: the loop reference (`tests/helpers/reference.py`) on src broadcast by NumPy and copied, NumPy's own
``ufunc.at(a, idx, b)`` with the same b (NumPy broadcasts it), JAX's ``x.at[idx].add(b)`` and numpy_groupies'
``aggregate(idx, 1)``; gradients against central differences of the reference, autograd's ``check_grads`` and the
sums over the broadcast dims of the per-entry cotangents. Refused shapes name src's shape and the expected one,
with `dst` untouched."""
from __future__ import annotations

import itertools
import re
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cyscatter as cs
from compare import assert_same, tolerance
from inputs import BASE, DIMS, GEOMETRIES, Geometry, index, pick, rng_for, values
from reference import numeric_vjp, ref_scatter, result_dtype
from strategies import examples
from testing import Backend, INDEX_DTYPES, INDEX_KINDS, KERNEL_VALUE_DTYPES, OPS, VALUE_DTYPES, op_supports

# ---- shapes -------------------------------------------------------------------------------------------------
# Each pattern maps a geometry (B, I, F) to the shape of a src that broadcasts to B + I + F; "python" is a
# Python scalar (not an array). Patterns equal to the full shape for a geometry are skipped there.
INTO_PATTERNS = {
    "python": lambda g: None,
    "0d": lambda g: (),
    "row": lambda g: g.feat,
    "entries1": lambda g: g.batch + (1,) * len(g.ishape) + g.feat,
    "features1": lambda g: g.batch + g.ishape + (1,) * len(g.feat),
    "batch1": lambda g: (1,) * len(g.batch) + g.ishape + g.feat,
    "no-batch": lambda g: g.ishape + g.feat,
    "all1": lambda g: (1,) * (len(g.batch) + len(g.ishape) + len(g.feat)),
}
# An allocating scatter reads B and F off src: only its index dims can broadcast (and a src without B or F can
# be shorter than the index, down to a scalar).
SCATTER_PATTERNS = {
    "entries1": lambda g: g.batch + (1,) * len(g.ishape) + g.feat,
    "index-row": lambda g: g.batch + (1,) * (len(g.ishape) - 1) + g.ishape[-1:] + g.feat,
}
FLAT = (Geometry("flat", (), (7,), (), 0), Geometry("flat2d", (), (2, 4), (), 0))
FLAT_PATTERNS = {"python": lambda g: None, "0d": lambda g: (), "short": lambda g: g.ishape[1:]}
FORMS = ("scatter", "scatter_into")


def full_shape(g):
    return g.batch + g.ishape + g.feat


def broadcasts(pattern, g) -> bool:
    """The pattern gives a src that really broadcasts in geometry `g` (not the full shape; a 2-d index for the
    patterns that need one)."""
    shape = pattern(g)
    return shape is None or (tuple(shape) != full_shape(g) and len(shape) <= len(full_shape(g)))


def make_src(pattern, g, dtype, rng, op):
    shape = pattern(g)
    if shape is None:
        return values(dtype, (), rng, op).item()
    assert tuple(shape) != full_shape(g), "not a broadcasting src: filter the case with pytest.mark.valid"
    return np.asarray(values(dtype, shape, rng, op))   # a 0-d array, not a NumPy scalar (a host object)


def expand(src, shape):
    return np.broadcast_to(np.asarray(src), shape).copy()


def check_case(backend, op, dtype, kind, form, geom, pattern, *, index_dtype="int64", mode="raise"):
    rng = rng_for("bcast", op, dtype, kind, form, geom, pattern, index_dtype, mode)
    dims = DIMS[kind]
    src = make_src(pattern, geom, dtype, rng, op)
    idx = index(kind, index_dtype, geom.ishape, dims, rng, out_of_range=mode != "raise")
    dim_size = dims if kind == "tuple" else dims[0]
    src_in = backend.asarray(src) if isinstance(src, np.ndarray) else src
    idx_in = backend.asarray(idx)
    if form == "scatter":
        expected = ref_scatter(expand(src, full_shape(geom)), idx, op, dim_size=dim_size, axis=geom.axis, mode=mode)
        actual = cs.scatter(src_in, idx_in, op, dim_size=dim_size, axis=geom.axis, mode=mode)
        dst = None
    else:
        dst = values(result_dtype(op, np.asarray(src).dtype if dtype is None else dtype), geom.out_shape(dims), rng, op)
        expected = ref_scatter(expand(np.asarray(src, dst.dtype) if isinstance(src, (int, float, complex)) else src,
                                      full_shape(geom)), idx, op, axis=geom.axis, mode=mode, dst=dst)
        actual = backend.asarray(dst.copy())
        assert cs.scatter_into(actual, src_in, idx_in, op, axis=geom.axis, mode=mode) is actual
    assert_same(backend.to_numpy(actual), expected,
                *tolerance(backend.name, op, expected.dtype, expand(src, full_shape(geom)), dst))


def supported(*lists):
    return [p for p in itertools.product(*lists) if op_supports(p[0], p[1])]


# ---- the cross product, as a property: shape x axis x pattern x mode x index dtype x op x form --------------------

@st.composite
def broadcast_cases(draw):
    """A geometry (batch, index and feature dims, the axis given either way), a broadcasting pattern for the form,
    a mode, an index dtype and kind, an op and a kernel dtype it takes."""
    side = st.integers(1, 3)
    batch = tuple(draw(st.lists(side, max_size=2)))
    ishape = (draw(st.integers(2, 5)),) + tuple(draw(st.lists(st.integers(1, 4), max_size=1)))
    feat = tuple(draw(st.lists(side, max_size=2)))
    axis = len(batch) if draw(st.booleans()) else -len(ishape + feat)   # the index dims' place, either way
    geom = Geometry("drawn", batch, ishape, feat, axis)
    form = draw(st.sampled_from(FORMS))
    patterns = SCATTER_PATTERNS if form == "scatter" else INTO_PATTERNS
    pattern = draw(st.sampled_from(sorted(name for name, p in patterns.items() if broadcasts(p, geom)
                                          and (name != "index-row" or len(ishape) >= 2))))
    op = draw(st.sampled_from(OPS))
    dtype = draw(st.sampled_from([d for d in KERNEL_VALUE_DTYPES if op_supports(op, d)]))
    return geom, form, pattern, patterns[pattern], op, dtype, draw(st.sampled_from(INDEX_KINDS)), \
        draw(st.sampled_from(INDEX_DTYPES)), draw(st.sampled_from(("raise", "drop", "wrap", "clip", "normalize_drop")))


@examples(60)
@given(case=broadcast_cases())
def test_broadcasting_property(case):
    geom, form, _, pattern, op, dtype, kind, index_dtype, mode = case
    check_case(Backend("numpy"), op, dtype, kind, form, geom, pattern, index_dtype=index_dtype, mode=mode)


# ---- forward: against the loop reference ---------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ("python", "0d", "row", "entries1", "features1"))   # all: test_..._every_axis
@pytest.mark.parametrize("op,dtype,kind", supported(OPS, VALUE_DTYPES, INDEX_KINDS))
def test_scatter_into_every_op_dtype_and_pattern(backend, op, dtype, kind, pattern):
    check_case(backend, op, dtype, kind, "scatter_into", BASE, INTO_PATTERNS[pattern])


@pytest.mark.parametrize("pattern", SCATTER_PATTERNS)
@pytest.mark.parametrize("op,dtype,kind", supported(OPS, VALUE_DTYPES, INDEX_KINDS))
def test_scatter_every_op_dtype_and_pattern(backend, op, dtype, kind, pattern):
    geom = GEOMETRIES[3] if pattern == "index-row" else BASE   # index-row needs a 2-d index
    check_case(backend, op, dtype, kind, "scatter", geom, SCATTER_PATTERNS[pattern])


@pytest.mark.parametrize("pattern", INTO_PATTERNS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("geom", GEOMETRIES, ids=str)
@pytest.mark.valid(lambda geom, pattern: broadcasts(INTO_PATTERNS[pattern], geom))
def test_scatter_into_every_axis(backend, geom, op, kind, pattern):
    dtype = pick(KERNEL_VALUE_DTYPES, geom, op, kind, pattern)
    check_case(backend, op, dtype, kind, "scatter_into", geom, INTO_PATTERNS[pattern])


@pytest.mark.parametrize("pattern", SCATTER_PATTERNS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("geom", GEOMETRIES, ids=str)
@pytest.mark.valid(lambda geom, pattern: (pattern != "index-row" or len(geom.ishape) >= 2)
                   and broadcasts(SCATTER_PATTERNS[pattern], geom))
def test_scatter_every_axis(backend, geom, op, kind, pattern):
    dtype = pick(KERNEL_VALUE_DTYPES, geom, op, kind, pattern)
    check_case(backend, op, dtype, kind, "scatter", geom, SCATTER_PATTERNS[pattern])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("pattern", FLAT_PATTERNS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("geom", FLAT, ids=str)
@pytest.mark.valid(lambda geom, pattern: pattern != "short" or len(geom.ishape) >= 2)
def test_scalar_and_short_src(backend, geom, op, pattern, form):
    check_case(backend, op, "float64", "int", form, geom, FLAT_PATTERNS[pattern])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_index_dtypes(backend, index_dtype, form):
    check_case(backend, "add", "float64", "tuple", form, BASE, SCATTER_PATTERNS["entries1"], index_dtype=index_dtype)
    if form == "scatter_into":
        check_case(backend, "max", "int32", "int", form, BASE, INTO_PATTERNS["row"], index_dtype=index_dtype)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("mode", ("drop", "wrap", "clip", "normalize_drop"))
def test_modes(backend, mode, form):
    pattern = SCATTER_PATTERNS["entries1"] if form == "scatter" else INTO_PATTERNS["python"]
    check_case(backend, "mean", "float64", "tuple", form, BASE, pattern, index_dtype="int32", mode=mode)


def test_fast_path_shapes_fall_through():
    """A (1, F) src with a 1-entry index is the exact shape (the fast path); with more entries it broadcasts."""
    dst = np.zeros((3, 2))
    cs.scatter_into(dst, np.array([[1., 2.]]), np.array([2]))
    cs.scatter_into(dst, np.array([[1., 2.]]), np.array([0, 0, 2]))
    assert dst.tolist() == [[2., 4.], [0., 0.], [2., 4.]]


# ---- forward: against the peers -------------------------------------------------------------------------------

UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "max": np.maximum,
          "min": np.minimum}


def _ufunc_cases():
    dtypes = ("float32", "float64", "int8", "int64", "complex128")
    return [(g, op, dt, kind, p) for g, op, dt, kind, p in itertools.product(GEOMETRIES, UFUNCS, dtypes, INDEX_KINDS,
                                                                              INTO_PATTERNS)
            if op_supports(op, dt) and not (op == "div" and np.dtype(dt).kind in "iu")
            and INTO_PATTERNS[p](g) != full_shape(g)]


@pytest.mark.parametrize("geom,op,dtype,kind,pattern", _ufunc_cases(),
                         ids=lambda v: str(v) if isinstance(v, Geometry) else None)
def test_matches_ufunc_at(backend, geom, op, dtype, kind, pattern):
    """NumPy's ``ufunc.at(a, idx, b)`` broadcasts b to ``a[idx].shape``: the reference of the broadcasting itself."""
    rng = rng_for("ufunc.at", geom, op, dtype, kind, pattern)
    src = make_src(INTO_PATTERNS[pattern], geom, dtype, rng, op)
    idx = index(kind, "int64", geom.ishape, DIMS[kind], rng)
    dst = values(dtype, geom.out_shape(DIMS[kind]), rng, op)
    axis = len(geom.batch)
    expected = dst.copy()
    UFUNCS[op].at(expected, (slice(None),) * axis + (idx if kind == "tuple" else (idx,)), src)
    actual = backend.asarray(dst.copy())
    cs.scatter_into(actual, backend.asarray(src) if isinstance(src, np.ndarray) else src, backend.asarray(idx), op,
                    axis=geom.axis)
    assert_same(backend.to_numpy(actual), expected,
                *tolerance(backend.name, op, dst.dtype, expand(src, full_shape(geom)), dst))


JAX_OPS = {"add": "add", "mul": "multiply", "max": "max", "min": "min"}


@pytest.mark.parametrize("pattern", ("python", "0d", "row", "entries1", "features1", "batch1", "no-batch"))
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", JAX_OPS)
def test_matches_jax_at(backend, op, kind, pattern):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    rng = rng_for("jax", op, kind, pattern)
    src = make_src(INTO_PATTERNS[pattern], BASE, "int32", rng, op)
    idx = index(kind, "int32", BASE.ishape, DIMS[kind], rng)
    dst = values("int32", BASE.out_shape(DIMS[kind]), rng, op)
    where = (slice(None),) + (tuple(jnp.asarray(c) for c in idx) if kind == "tuple" else (jnp.asarray(idx),))
    with jax.enable_x64(False):
        want = np.asarray(getattr(jnp.asarray(dst).at[where], JAX_OPS[op])(jnp.asarray(src, jnp.int32)))
    actual = backend.asarray(dst.copy())
    cs.scatter_into(actual, backend.asarray(src) if isinstance(src, np.ndarray) else src, backend.asarray(idx), op,
                    axis=BASE.axis)
    np.testing.assert_array_equal(backend.to_numpy(actual), want)


@pytest.mark.parametrize("op,func", [("add", "sum"), ("mul", "prod"), ("max", "max"), ("min", "min"),
                                     ("mean", "mean")])
def test_scalar_matches_numpy_groupies(backend, op, func):
    npg = pytest.importorskip("numpy_groupies")
    idx = np.array([3, 0, 3, 3, 1, 0, 3])
    # numpy_groupies takes a scalar for sum and prod only; the others are given the values it stands for
    want = npg.aggregate(idx, 2.0 if func in ("sum", "prod") else np.full(idx.size, 2.0), func=func, size=6,
                         fill_value=0)
    got = cs.scatter(2.0, backend.asarray(idx), op, dim_size=6, fill_value=0)
    np.testing.assert_array_equal(backend.to_numpy(got), want)


# ---- refusals ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("src_shape", [(2,), (7,), (7, 2), (2, 7, 2), (3, 7, 3), (1, 2, 7, 3)])
def test_into_refuses_what_does_not_broadcast(backend, src_shape):
    dst = backend.asarray(np.arange(30.).reshape(2, 5, 3))
    before = backend.to_numpy(dst).copy()
    with pytest.raises(ValueError, match=rf"src shape {re.escape(str(src_shape))} does not broadcast to the shape "
                                         rf"\(2, 7, 3\) that dst shape \(2, 5, 3\)"):
        cs.scatter_into(dst, backend.asarray(np.ones(src_shape)), backend.asarray(np.zeros(7, np.int64)), axis=1)
    np.testing.assert_array_equal(backend.to_numpy(dst), before)


@pytest.mark.parametrize("src_shape", [(2, 3, 3), (2, 6, 3), (2, 2, 3)])
def test_scatter_refuses_what_does_not_broadcast(backend, src_shape):
    with pytest.raises(ValueError, match=rf"src shape {re.escape(str(src_shape))} does not hold the index shape "
                                         rf"\(7,\)"):
        cs.scatter(backend.asarray(np.ones(src_shape)), backend.asarray(np.zeros(7, np.int64)), axis=1)


def test_bad_index_leaves_dst_untouched(backend):
    dst = backend.asarray(np.arange(6.).reshape(3, 2))
    with pytest.raises(IndexError):
        cs.scatter_into(dst, 1.0, backend.asarray(np.array([0, 1, 3])))
    np.testing.assert_array_equal(backend.to_numpy(dst), np.arange(6.).reshape(3, 2))


def test_cast_refusal_leaves_dst_untouched():
    dst = np.zeros((3, 2), np.int32)
    with pytest.raises(TypeError, match="cannot cast src dtype float64 to dst dtype int32"):
        cs.scatter_into(dst, 1.5, np.array([0, 1]))
    assert not dst.any()


@pytest.mark.parametrize("func", ["scatter_softmax", "scatter_log_softmax"])
def test_softmax_family_refuses_broadcasting(func):
    """Their output has src's shape: a broadcast src would give a result of another shape than src, and its
    gradient no meaning per src element; they keep requiring the exact shape."""
    with pytest.raises(ValueError, match=r"src shape \(1, 3\) does not hold the index shape \(4,\)"):
        getattr(cs, func)(np.ones((1, 3)), np.array([0, 1, 0, 1]))


def test_expanded_index_still_refused_with_a_scalar_src():
    index = np.broadcast_to(np.array([0, 2, 1])[:, None], (3, 4))
    with pytest.raises(ValueError, match="expanded along its last axis"):
        cs.scatter_into(np.zeros(3), 1.0, index)
    with pytest.raises(ValueError, match="expanded along its last axis"):
        cs.scatter(np.ones((1, 4)), index)


def test_negative_axis_counts_from_the_expected_src():
    """A negative `axis` counts from the end of B + I + F (the src of the full shape), whatever src's own ndim."""
    dst, idx = np.zeros((2, 5, 3)), np.array([0, 4, 4])
    want = cs.scatter_into(dst.copy(), np.ones((2, 3, 3)), idx, axis=-2)
    np.testing.assert_array_equal(cs.scatter_into(dst.copy(), 1.0, idx, axis=-2), want)
    np.testing.assert_array_equal(cs.scatter_into(dst.copy(), np.ones(3), idx, axis=1), want)


# ---- memory: no (n, F) copy --------------------------------------------------------------------------------------

@pytest.mark.parametrize("src", ["row", "scalar"])
def test_no_entry_sized_copy(src):
    n, f = 200_000, 8
    idx = np.random.default_rng(0).integers(0, 100, n)
    dst = np.zeros((100, f))
    value = np.arange(f, dtype=np.float64) if src == "row" else 1.0
    cs.scatter_into(dst, value, idx)   # warm up (imports, caches)
    tracemalloc.start()
    try:
        cs.scatter_into(dst, value, idx)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * f * 8 // 20, f"peak {peak} bytes: src was materialised"


# ---- other functions that scatter a src -------------------------------------------------------------------------

GROUP_FUNCS = ("scatter_argmax", "scatter_argmin", "scatter_var", "scatter_std", "scatter_logsumexp")


@pytest.mark.parametrize("pattern", ("entries1", "index-row"))
@pytest.mark.parametrize("func", GROUP_FUNCS)
def test_group_functions(backend, func, pattern):
    geom = GEOMETRIES[3]   # index2d: (2, 4) index, F = (2,)
    rng = rng_for("group", func, pattern)
    src = values("float64", SCATTER_PATTERNS[pattern](geom), rng)
    idx = index("int", "int64", geom.ishape, (5,), rng)
    want = getattr(cs, func)(expand(src, full_shape(geom)), idx, dim_size=5)
    got = getattr(cs, func)(backend.asarray(src), backend.asarray(idx), dim_size=5)
    np.testing.assert_allclose(backend.to_numpy(got), want, rtol=1e-12, atol=0)


def test_group_functions_scalar():
    idx = np.array([0, 2, 0, 0])
    np.testing.assert_array_equal(cs.scatter_argmax(2.0, idx, dim_size=4), [0, 4, 1, 4])
    np.testing.assert_array_equal(cs.scatter_var(2.0, idx), [0., np.nan, 0.])
    np.testing.assert_allclose(cs.scatter_logsumexp(0.0, idx), [np.log(3), -np.inf, 0.])


@pytest.mark.parametrize("name", ("var", "std", "logsumexp"))
def test_group_reverse(backend, name):
    """VJP w.r.t. a broadcast src: the per-entry cotangents summed over the broadcast dims; JVP of a tangent of
    src's shape: the JVP of that tangent broadcast; both against central differences of the forward function."""
    rng = rng_for("group-reverse", name)
    src = rng.standard_normal((1, 4))   # broadcast along the first of the index dims (2, 4)
    idx = np.array([[0, 2, 0, 0], [1, 2, 2, 0]])
    forward = getattr(cs, f"scatter_{name}")
    out = forward(src, idx)
    g, t = rng.standard_normal(out.shape), rng.standard_normal(src.shape)
    vjp = getattr(cs, f"scatter_{name}_vjp")(*map(backend.asarray, (g, src, idx, out)))
    assert vjp.shape == src.shape
    np.testing.assert_allclose(backend.to_numpy(vjp), numeric_vjp(lambda s: forward(s, idx), src, g), rtol=1e-6,
                               atol=1e-9)
    jvp = getattr(cs, f"scatter_{name}_jvp")(*map(backend.asarray, (src, idx, out, t)))
    fd = (forward(src + 1e-6 * t, idx) - forward(src - 1e-6 * t, idx)) / 2e-6
    np.testing.assert_allclose(backend.to_numpy(jvp), fd, rtol=1e-6, atol=1e-9)


# ---- reverse functions ---------------------------------------------------------------------------------------------

REVERSE_PATTERNS = ("0d", "row", "entries1", "features1", "batch1", "no-batch")


@pytest.mark.parametrize("pattern", REVERSE_PATTERNS)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.valid(lambda form, pattern: (form != "scatter" or pattern in SCATTER_PATTERNS)   # B, F read off src
                   and broadcasts(INTO_PATTERNS[pattern], BASE))
def test_vjp_src_and_jvp(backend, op, form, pattern):
    geom = BASE
    rng = rng_for("reverse", op, form, pattern)
    src = make_src(INTO_PATTERNS[pattern], geom, "float64", rng, op)
    idx = index("int", "int64", geom.ishape, (5,), rng)
    dst = values("float64", geom.out_shape((5,)), rng, op) if form == "scatter_into" else None

    def forward(s):
        if dst is None:
            return ref_scatter(expand(s, full_shape(geom)), idx, op, dim_size=5, axis=geom.axis)
        return ref_scatter(expand(s, full_shape(geom)), idx, op, axis=geom.axis, dst=dst)

    out = forward(src)
    g, t = rng.standard_normal(out.shape), rng.standard_normal(np.shape(src))
    b = backend.asarray
    grad = cs.scatter_vjp_src(op, b(g), b(src), b(idx), b(out), dst=None if dst is None else b(dst), axis=geom.axis)
    assert grad.shape == np.shape(src)
    np.testing.assert_allclose(backend.to_numpy(grad), numeric_vjp(forward, src, g), rtol=1e-6, atol=1e-9)
    # against the core's own per-entry cotangents of the expanded src, summed over the broadcast dims
    per_entry = cs.scatter_vjp_src(op, g, expand(src, full_shape(geom)), idx, out, dst=dst, axis=geom.axis)
    axes = tuple(d for d in range(per_entry.ndim) if np.ndim(src) - per_entry.ndim + d < 0
                 or np.shape(src)[np.ndim(src) - per_entry.ndim + d] == 1)
    np.testing.assert_allclose(backend.to_numpy(grad), per_entry.sum(axis=axes).reshape(np.shape(src)), rtol=1e-12)
    jvp = cs.scatter_jvp(op, b(src), b(idx), b(out), b(t), dst=None if dst is None else b(dst), axis=geom.axis)
    fp, fm = forward(src + 1e-6 * t), forward(src - 1e-6 * t)
    with np.errstate(invalid="ignore"):   # rows no entry reaches stay at the identity (-inf for max)
        fd = np.where(fp == fm, 0.0, fp - fm) / 2e-6
    np.testing.assert_allclose(backend.to_numpy(jvp), fd, rtol=1e-6, atol=1e-8)
    if dst is not None:
        want = cs.scatter_vjp_dst(op, g, dst, expand(src, full_shape(geom)), idx, out, axis=geom.axis)
        got = cs.scatter_vjp_dst(op, b(g), b(dst), b(src), b(idx), b(out), axis=geom.axis)
        np.testing.assert_allclose(backend.to_numpy(got), want, rtol=1e-12)


def test_reverse_refuses_what_does_not_broadcast():
    out = np.zeros((5, 3))
    with pytest.raises(ValueError, match=r"src shape \(2,\) does not broadcast to the shape \(4, 3\) that out "
                                         r"shape \(5, 3\)"):
        cs.scatter_vjp_src("add", out, np.ones(2), np.array([0, 1, 2, 3]), out)
    with pytest.raises(ValueError, match=r"src_dot shape \(4, 3\) != src shape \(3,\)"):
        cs.scatter_jvp("add", np.ones(3), np.array([0, 1, 2, 3]), out, np.ones((4, 3)))


# ---- grad primitives ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ("0d", "row", "entries1", "features1"))
@pytest.mark.parametrize("op", OPS)
def test_grad_check_grads(op, pattern):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad as csgrad
    geom = Geometry("grad", (), (6,), (2,), 0)
    rng = rng_for("grad", op, pattern)
    shape = INTO_PATTERNS[pattern](geom)
    src = values("float64", shape, rng, op)
    idx = np.array([0, 2, 0, 3, 2, 1])   # every row reached: no identity (-inf for max) in the result
    dst = values("float64", (4, 2), rng, op)
    check_grads(lambda s: csgrad.scatter_into(dst, s, idx, op), modes=["fwd", "rev"], order=2)(src)
    check_grads(lambda d, s: csgrad.scatter_into(d, s, idx, op), modes=["fwd", "rev"], order=2)(dst, src)
    if pattern == "entries1":
        check_grads(lambda s: csgrad.scatter(s, idx, op, dim_size=4), modes=["fwd", "rev"], order=2)(src)
        check_grads(lambda s: csgrad.scatter(s, idx, op, dim_size=4, dtype=np.float64), modes=["fwd", "rev"],
                    order=2)(src.astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("func", ("scatter_var", "scatter_std", "scatter_logsumexp"))
def test_grad_group_functions(func):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad as csgrad
    idx = np.array([[0, 2, 0, 0], [1, 2, 2, 0]])
    src = rng_for("grad-group", func).standard_normal((1, 4, 2))   # broadcast along the first index dim
    check_grads(lambda s: getattr(csgrad, func)(s, idx), modes=["fwd", "rev"], order=2)(src)


def test_grad_scalar_scatter():
    pytest.importorskip("autograd")
    from autograd import grad
    from autograd.test_util import check_grads

    import grad as csgrad
    idx = np.array([0, 2, 0, 3])
    check_grads(lambda s: csgrad.scatter(s, idx, "mul"), modes=["fwd", "rev"], order=2)(np.array(1.3))
    # d/ds sum(s * counts) = n
    assert grad(lambda s: csgrad.scatter(s, idx, "add").sum())(1.5) == 4.0


# ---- Dask -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("as_dask", (False, True))
@pytest.mark.parametrize("op", OPS)
def test_dask(op, as_dask):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    rng = rng_for("dask", op, as_dask)
    src = values("float64", (2, 1, 3), rng, op)
    idx = index("int", "int64", (7,), (5,), rng)
    s = da.from_array(src, chunks=(1, 1, 2)) if as_dask else src
    got = csd.scatter(s, da.from_array(idx, chunks=3), op, dim_size=5, axis=1).compute()
    want = ref_scatter(expand(src, (2, 7, 3)), idx, op, dim_size=5, axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if op == "max":
        got = csd.scatter_argmax(s, da.from_array(idx, chunks=3), dim_size=5, axis=1).compute()
        np.testing.assert_array_equal(got, cs.scatter_argmax(expand(src, (2, 7, 3)), idx, dim_size=5, axis=1))


def test_dask_scalar():
    pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    np.testing.assert_array_equal(csd.scatter(1.0, np.array([0, 2, 0]), dim_size=4).compute(), [2., 0., 1., 0.])



@pytest.mark.parametrize("op", OPS)
def test_scatter_out_and_dtype(backend, op):
    """``out=`` (written in place or through a copy) and ``dtype=`` (the cast happens on src's own size, then it
    is broadcast) with a src that broadcasts along the index."""
    src = np.arange(1, 4, dtype=np.float32)[None]   # (1, 3) against the index (5,): a row for every entry
    idx = np.array([0, 2, 0, 1, 2])
    want = ref_scatter(expand(src.astype(np.float64), (5, 3)), idx, op, dim_size=3)
    got = cs.scatter(backend.asarray(src), backend.asarray(idx), op, dim_size=3, dtype=np.float64)
    np.testing.assert_array_equal(backend.to_numpy(got), want)
    out = backend.asarray(np.full((3, 3), 7.0))
    assert cs.scatter(backend.asarray(src), backend.asarray(idx), op, dtype=np.float64, out=out) is out
    np.testing.assert_array_equal(backend.to_numpy(out), want)


# ---- out= gives B and F (docs/semantics.rst: B, F from dst/out) ----------------------------------------------

@pytest.mark.parametrize("pattern", ["python", "0d", "row", "entries1", "features1", "batch1", "all1"])
@pytest.mark.parametrize("op", ["add", "max", "mul", "mean"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: g.name)
@pytest.mark.valid(lambda pattern, geometry: broadcasts(INTO_PATTERNS[pattern], geometry))
def test_scatter_out_gives_batch_and_feature_dims(backend, pattern, op, geometry):
    """``scatter(src, idx, out=out)`` broadcasts src against the shape out implies, as ``ufunc.at(out, idx,
    src)`` and ``scatter_into`` do: the reference is the loop scatter of src broadcast and copied."""
    g = geometry
    rng = rng_for("out-layout", pattern, op, g.name)
    dims = DIMS["int"]
    idx = index("int", "int64", g.ishape, dims, rng)
    src = make_src(INTO_PATTERNS[pattern], g, "float64", rng, op)
    full = np.array(np.broadcast_to(np.asarray(src), full_shape(g)))
    expected = ref_scatter(full, idx, op, dim_size=dims[0], axis=g.axis)
    out = backend.asarray(np.full(expected.shape, 7.0))
    got = cs.scatter(src if isinstance(src, float) else backend.asarray(src), backend.asarray(idx), op,
                     axis=g.axis, out=out)
    assert got is out
    backend.assert_result(out, expected, op, full)


@pytest.mark.parametrize("scalar", [2.0, np.float64(2.0), np.float32(2.0), np.int64(2)], ids=type)
def test_numpy_scalars_go_where_the_arrays_go(backend, scalar):
    """A NumPy scalar is a scalar, not a host array: on the GPU path it broadcasts as a Python one does."""
    idx = np.array([0, 2, 0])
    expected = np.zeros(3, np.result_type(scalar))
    np.add.at(expected, idx, scalar)
    np.testing.assert_array_equal(backend.call(cs.scatter, scalar, idx), expected)
    dst = backend.asarray(np.zeros(3))
    cs.scatter_into(dst, scalar, backend.asarray(idx))
    np.testing.assert_array_equal(backend.to_numpy(dst), expected.astype(float))


def test_axis_error_with_out_counts_the_dims_out_implies():
    with pytest.raises(ValueError, match=r"axis=-3 does not fit: src \(broadcast\) has 2 dims.*valid: -2 \.\. 1"):
        cs.scatter(1.0, np.array([0, 1]), axis=-3, out=np.zeros((3, 2)))
