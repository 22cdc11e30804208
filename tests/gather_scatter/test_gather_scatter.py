"""gather_scatter (fused message passing), its plan and its split reverse functions, against the plain-loop
references of tests/helpers/reference_gather_scatter.py: ops x value dtypes x index kinds x weight kinds x plan x
threads, modes, batch axes, fill, determinism, memory, and bad input."""
from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from inputs import DST_DIMS, SRC_DIMS, WEIGHTS, edges, rng_for, values
from reference_gather_scatter import ref_gather_scatter, ref_gather_scatter_vjp
from testing import FUSED_OPS, op_supports

DTYPES = ("float32", "float64", "int32", "int64", "uint8", "float16", "complex128")
def weight_for(kind, n_edges, feat, dtype, rng):
    if kind == "none":
        return None
    shape = {"edge": (n_edges,), "head": (n_edges, feat[0]), "head-broadcast": (n_edges, 1)}[kind]
    w = rng.choice([0.5, 1.0, -2.0, 3.0], shape)
    return w.astype(dtype) if np.dtype(dtype).kind in "fc" else np.rint(w).astype(np.int64)


def check(actual, expected, op, dtype, src):
    ulps, scale = tolerance("numpy", op, np.dtype(dtype), src)
    assert_same(actual, expected, ulps, scale)


@pytest.mark.parametrize("kind", ["int", "tuple"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", FUSED_OPS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_forward_matches_reference(op, dtype, kind):
    rng = rng_for("gs", op, dtype, kind)
    feat = (2, 3)
    src = values(dtype, SRC_DIMS[kind] + feat, rng, op)
    gi, si = edges(kind, 23, rng)
    plan = cs.gather_scatter_plan(gi, si, src_size=SRC_DIMS[kind], dim_size=DST_DIMS[kind])
    for wkind in WEIGHTS:
        w = weight_for(wkind, 23, feat, "float32" if dtype == "float16" else dtype, rng)
        expected = ref_gather_scatter(src, gi, si, op, weight=w, dim_size=DST_DIMS[kind])
        for threads in (1, 2):
            got = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=DST_DIMS[kind], num_threads=threads)
            check(got, expected, op, dtype, src)
            got = cs.gather_scatter(src, op=op, weight=w, plan=plan, num_threads=threads)
            check(got, expected, op, dtype, src)


@pytest.mark.parametrize("op", ["add", "mean", "max", "min", "mul"])
@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
def test_modes_batch_axis_and_fill(op, mode):
    rng = rng_for("gs-modes", op, mode)
    src = values("float64", (2, 7, 3), rng, op)      # batch 2, 7 source rows, 3 features
    gi, si = edges("int", 30, rng, out_of_range=True)
    for fill in (None, -7.5):
        expected = ref_gather_scatter(src, gi, si, op, dim_size=6, axis=1, mode=mode, fill_value=fill)
        got = cs.gather_scatter(src, gi, si, op, dim_size=6, axis=1, mode=mode, fill_value=fill)
        check(got, expected, op, "float64", src)
        plan = cs.gather_scatter_plan(gi, si, src_size=7, dim_size=6, mode=mode)
        got = cs.gather_scatter(src, op=op, axis=-2, plan=plan, fill_value=fill)
        check(got, expected, op, "float64", src)


def test_special_values_follow_scatter_rules():
    src = np.array([[np.nan, -0.0], [0.0, np.inf], [-np.inf, 1.0]])
    gi, si = np.array([0, 1, 2, 1, 2]), np.array([0, 0, 1, 1, 1])
    for op in ("max", "min", "add"):
        check(cs.gather_scatter(src, gi, si, op), ref_gather_scatter(src, gi, si, op), op, "float64", src)


@pytest.mark.parametrize("op", ["add", "sub", "mean", "max", "min"])
@pytest.mark.parametrize("wkind", WEIGHTS)
def test_reverse_functions_match_loops(op, wkind):
    rng = rng_for("gs-rev", op, wkind)
    feat = (2, 3)
    src = rng.integers(-2, 3, (2, 7) + feat).astype(np.float64)   # small integers: ties in max/min
    gi, si = edges("int", 25, rng)
    w = weight_for(wkind, 25, feat, "float64", rng)
    out = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=6, axis=1)
    g = rng.standard_normal(out.shape)
    ref_src, ref_w = ref_gather_scatter_vjp(op, g, src, gi, si, out, weight=w, dim_size=6, axis=1)
    plan = cs.gather_scatter_plan(gi, si, src_size=7, dim_size=6)
    for kw in (dict(gather_index=gi, scatter_index=si, dim_size=6), dict(plan=plan)):
        for threads in (1, 2):
            got_src = cs.gather_scatter_vjp_src(op, g, src, out=out, weight=w, axis=1, num_threads=threads, **kw)
            got_w = cs.gather_scatter_vjp_weight(op, g, src, out=out, weight=w, axis=1, num_threads=threads, **kw)
            np.testing.assert_allclose(got_src, ref_src, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(got_w, ref_w, rtol=1e-12, atol=1e-12)
            # the JVP is the VJPs' transpose: <g, J v> = <vjp_src(g), v_src> + <vjp_w(g), v_w>
            v_src = rng.standard_normal(src.shape)
            v_w = None if w is None else rng.standard_normal(w.shape)
            jvp = cs.gather_scatter_jvp(op, src, out=out, src_dot=v_src, weight=w, weight_dot=v_w, axis=1,
                                        num_threads=threads, **kw)
            expected = np.sum(ref_src * v_src) + (0 if w is None else np.sum(ref_w * v_w))
            np.testing.assert_allclose(np.sum(g * jvp), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("op", ["mul", "div"])
def test_reverse_of_mul_div_by_central_differences(op):
    from reference import numeric_vjp
    rng = rng_for("gs-rev-md", op)
    src = rng.uniform(0.5, 2.0, (7, 2))
    gi, si = edges("int", 15, rng)
    w = rng.uniform(0.5, 2.0, 15)
    out = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=6)
    g = rng.standard_normal(out.shape)
    f_src = lambda x: ref_gather_scatter(x, gi, si, op, weight=w, dim_size=6)
    f_w = lambda v: ref_gather_scatter(src, gi, si, op, weight=v, dim_size=6)
    np.testing.assert_allclose(cs.gather_scatter_vjp_src(op, g, src, gi, si, out, weight=w, dim_size=6),
                               numeric_vjp(f_src, src, g), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cs.gather_scatter_vjp_weight(op, g, src, gi, si, out, weight=w, dim_size=6),
                               numeric_vjp(f_w, w, g), rtol=1e-6, atol=1e-6)


def test_thread_counts_give_the_same_bits():
    rng = np.random.default_rng(5)
    n, e, f = 3000, 40000, 16
    src = rng.standard_normal((n, f)).astype(np.float32)
    gi, si = rng.integers(0, n, e), rng.integers(0, n, e)
    w = rng.standard_normal(e).astype(np.float32)
    plan = cs.gather_scatter_plan(gi, si, src_size=n, dim_size=n)
    for op in ("add", "mean", "max"):
        one = cs.gather_scatter(src, op=op, weight=w, plan=plan, num_threads=1)
        g = np.ones_like(one)
        back = cs.gather_scatter_vjp_src(op, g, src, out=one, weight=w, plan=plan, num_threads=1)
        for threads in (2, 3, 7):
            assert_same(cs.gather_scatter(src, op=op, weight=w, plan=plan, num_threads=threads), one)
            assert_same(cs.gather_scatter_vjp_src(op, g, src, out=one, weight=w, plan=plan, num_threads=threads),
                        back)
        # and the unfused composition, bitwise
        messages = cs.gather(src, gi) * w[:, None]
        assert_same(one, cs.scatter(messages, si, op, dim_size=n))


def test_no_edge_by_feature_allocation():
    rng = np.random.default_rng(6)
    n, e, f = 2000, 50000, 32
    src = rng.standard_normal((n, f))
    gi, si, w = rng.integers(0, n, e), rng.integers(0, n, e), rng.random(e)
    plan = cs.gather_scatter_plan(gi, si, src_size=n, dim_size=n)
    out = cs.gather_scatter(src, op="mean", weight=w, plan=plan)
    cs.gather_scatter_vjp_src("mean", out, src, out=out, weight=w, plan=plan)   # builds the transpose once
    tracemalloc.start()
    try:
        for op in ("add", "mean", "max"):
            out = cs.gather_scatter(src, op=op, weight=w, plan=plan)
            cs.gather_scatter_vjp_src(op, out, src, out=out, weight=w, plan=plan)
            cs.gather_scatter_vjp_weight(op, out, src, out=out, weight=w, plan=plan)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < e * f * 8 / 4, f"peak {peak} B against an E x F message matrix of {e * f * 8} B"


def test_plan_attributes_and_reuse():
    gi, si = np.array([2, 0, 1, 2]), np.array([1, 1, 0, 3])
    plan = cs.gather_scatter_plan(gi, si, src_size=3, dim_size=5)
    assert plan.index_shape == (4,) and plan.src_dims == (3,) and plan.dims == (5,) and plan.n_edges == 4
    assert plan.counts.tolist() == [1, 2, 0, 1, 0]
    assert "GatherScatterPlan" in repr(plan)
    with pytest.raises(ValueError):
        plan.counts[0] = 3   # read-only: a plan is shared between calls
    src = np.arange(6.0).reshape(3, 2)
    for _ in range(2):
        np.testing.assert_array_equal(cs.gather_scatter(src, op="add", plan=plan),
                                      ref_gather_scatter(src, gi, si, "add", dim_size=5))


def test_empty_inputs():
    src = np.zeros((4, 0))
    assert cs.gather_scatter(src, np.array([0, 1]), np.array([1, 1]), "max").shape == (2, 0)
    out = cs.gather_scatter(np.ones((4, 3)), np.array([], int), np.array([], int), "max", dim_size=2)
    np.testing.assert_array_equal(out, np.full((2, 3), -np.inf))
    out = cs.gather_scatter(np.ones((0, 3)), np.array([], int), np.array([], int), "mean", dim_size=2,
                            fill_value=np.nan)
    assert np.isnan(out).all()


BAD = [
    ("different index shapes", dict(gather_index=np.array([0, 1]), scatter_index=np.array([0, 1, 1])),
     ValueError, "gather_index has shape"),
    ("float gather index", dict(gather_index=np.array([0.0, 1.0]), scatter_index=np.array([0, 1])),
     TypeError, "gather_index must hold integers"),
    ("scatter index out of range", dict(gather_index=np.array([0, 1]), scatter_index=np.array([0, 9]), dim_size=3),
     IndexError, r"scatter_index\[1\] = 9"),
    ("gather index out of range", dict(gather_index=np.array([0, 4]), scatter_index=np.array([0, 1])),
     IndexError, r"gather_index\[1\] = 4"),
    ("negative gather index", dict(gather_index=np.array([-1, 0]), scatter_index=np.array([0, 1])),
     IndexError, r"gather_index\[0\] = -1"),
    ("weight of the wrong length", dict(weight=np.ones(3)), ValueError, "weight shape"),
    ("weight of the wrong head shape", dict(weight=np.ones((2, 3))), ValueError, "weight shape"),
    ("bool weight", dict(weight=np.array([True, False])), TypeError, "weight must hold numbers"),
    ("complex weight for max", dict(weight=np.ones(2, complex), op="max"), TypeError, "weight dtype"),
    ("bool src", dict(src=np.ones((4, 2), bool)), TypeError, "bool"),
    ("unknown op", dict(op="avg"), ValueError, "unknown op"),
    ("missing scatter_index", dict(scatter_index=None), TypeError, "needs gather_index and scatter_index"),
    ("plan of another type", dict(gather_index=None, scatter_index=None, plan=object()), TypeError,
     "plan must be a GatherScatterPlan"),
    ("plan with indices", dict(plan="plan"), ValueError, "either plan or"),
    ("unknown mode", dict(mode="ignore"), ValueError, "mode"),
    ("axis that does not fit", dict(axis=2), ValueError, "axis=2"),
]


@pytest.mark.parametrize("what, kwargs, error, match", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_and_leaves_inputs(what, kwargs, error, match):
    args = dict(src=np.arange(8.0).reshape(4, 2), gather_index=np.array([0, 3]), scatter_index=np.array([1, 0]),
                op="add")
    if kwargs.get("plan") == "plan":
        kwargs = dict(kwargs, plan=cs.gather_scatter_plan(args["gather_index"], args["scatter_index"]))
    args.update(kwargs)
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    with pytest.raises(error, match=match):
        cs.gather_scatter(**args)
    for k, v in before.items():
        np.testing.assert_array_equal(args[k], v)


def test_plan_misuse():
    plan = cs.gather_scatter_plan(np.array([0, 1]), np.array([1, 0]), src_size=2, dim_size=2)
    with pytest.raises(ValueError, match="plan was made for src_size=.2,."):
        cs.gather_scatter(np.ones((3, 2)), plan=plan)
    with pytest.raises(ValueError, match="differs from the plan's mode"):
        cs.gather_scatter(np.ones((2, 2)), plan=plan, mode="drop")
    with pytest.raises(ValueError, match="differs from the plan's destination shape"):
        cs.gather_scatter(np.ones((2, 2)), plan=plan, dim_size=5)
    with pytest.raises(TypeError, match="needs out"):
        cs.gather_scatter_vjp_src("max", np.ones((2, 2)), np.ones((2, 2)), plan=plan)
    with pytest.raises(TypeError, match="needs grad_out"):
        cs.gather_scatter_vjp_weight("add", None, np.ones((2, 2)), plan=plan)
    with pytest.raises(ValueError, match="grad_out shape"):
        cs.gather_scatter_vjp_src("add", np.ones((3, 2)), np.ones((2, 2)), plan=plan)
    with pytest.raises(TypeError, match="grad_out must hold numbers"):
        cs.gather_scatter_vjp_src("add", np.ones((2, 2), "U1"), np.ones((2, 2)), plan=plan)
    with pytest.raises(ValueError, match="weight_dot was given without weight"):
        cs.gather_scatter_jvp("add", np.ones((2, 2)), plan=plan, src_dot=np.ones((2, 2)), weight_dot=np.ones(2))
    with pytest.raises(TypeError, match="src_dot or weight_dot"):
        cs.gather_scatter_jvp("add", np.ones((2, 2)), plan=plan)


def test_importable_kernel_entry_points_validate_their_arguments():
    from cyscatter import fused_kernels as fk
    src, out, none = np.ones((1, 4, 2)), np.zeros((1, 3, 2)), np.zeros(0, np.int64)
    ptr, cols = np.array([0, 1, 2, 3]), np.array([0, 1, 2])
    bad_calls = [
        lambda: fk.forward(0, src, np.array([0, 1, 2, 9]), cols, none, np.zeros((0, 1)), False, out, 1),
        lambda: fk.forward(0, src, ptr, np.array([0, 1, 7]), none, np.zeros((0, 1)), False, out, 1),
        lambda: fk.forward(0, src, ptr, cols, np.array([0, 1, 99]), np.ones((3, 1)), True, out, 1),
        lambda: fk.forward(0, src, ptr, cols, none, np.ones((2, 1)), True, out, 1),
        lambda: fk.extreme_back(src, np.arange(5), np.array([0, 1, 2, 0]), none, np.zeros((0, 1)), False, out,
                                out, np.zeros((1, 4, 2), order="F"), 1),
        lambda: fk.dots(out, src, cols, cols, np.zeros((3, 1)), out[:, ::-1], 1, np.zeros((0, 1)), False, 1),
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            call()
    # the selection codes, and a result overlapping what the back pass reads (its rows are written as read)
    rptr, rcols, res = np.array([0, 1, 2, 3, 3]), np.array([0, 1, 2]), np.zeros((1, 4, 2))
    for select in (-1, 3):
        with pytest.raises(ValueError, match="select must be 0"):
            fk.extreme_back(src, rptr, rcols, none, np.zeros((0, 1)), False, out, out.copy(), res, 1, select=select)
        with pytest.raises(ValueError, match="select must be 0"):
            fk.extreme_ties(True, src, ptr, cols, none, np.zeros((0, 1)), False, out, out, src, False,
                            np.zeros((0, 1)), False, out.copy(), 1, select=select)
    with pytest.raises(ValueError, match="ties must be 0 to 3"):
        fk.dots(out, src, cols, cols, np.zeros((3, 1)), out, 4, np.zeros((0, 1)), False, 1)
    with pytest.raises(TypeError, match="compare with out, got None"):
        fk.dots(out, src, cols, cols, np.zeros((3, 1)), None, 1, np.zeros((0, 1)), False, 1)
    with pytest.raises(TypeError, match="take float32 or float64"):   # (there is no selection of complex values)
        fk.dots(out + 0j, src + 0j, cols, cols, np.zeros((3, 1), complex), out + 0j, 1, np.zeros((0, 1), complex),
                False, 1)
    with pytest.raises(ValueError, match="must not overlap"):   # result is src
        fk.extreme_back(src, rptr, rcols, none, np.zeros((0, 1)), False, out, out.copy(), src, 1, select=2)
    table, other = np.ones((1, 4, 2)), np.zeros((1, 4, 2))
    with pytest.raises(ValueError, match="must not overlap"):   # share is a view of result
        fk.extreme_back(src, rptr, rcols, none, np.zeros((0, 1)), False, other[:, :3], table[:, :3], table, 1,
                        select=2)
    assert (src == 1).all() and (table == 1).all() and not res.any()


# ---- found by an independent hostile campaign ---------------------------------------------------------------------

@pytest.mark.parametrize("op", ["mul", "div", "nanprod", "nansum", "nanmean", "add", "max"])
def test_reverse_functions_with_zero_features_per_head(backend, op):
    """A weight of shape (E, 0) (zero features, zero heads): empty results of the right shapes, not a division
    by the zero head count (a hostile tester's find, on the paths that materialise the messages)."""
    dtype = complex if op not in ("max",) else float
    x, w = np.zeros((3, 0), dtype), np.ones((4, 0))
    gi, si = np.array([0, 1, 2, 0]), np.array([0, 0, 1, 1])
    out = backend.call(cs.gather_scatter, x, gi, si, op, weight=w)
    assert out.shape == (2, 0)
    assert backend.call(cs.gather_scatter_vjp_src, op, out, x, gi, si, out, weight=w).shape == (3, 0)
    assert backend.call(cs.gather_scatter_vjp_weight, op, out, x, gi, si, out, weight=w).shape == (4, 0)
    assert backend.call(cs.gather_scatter_jvp, op, x, gi, si, out, x, weight=w).shape == (2, 0)


@pytest.mark.parametrize("op", ["add", "mean", "nansum", "nanmean", "mul"])
def test_weight_gradient_of_complex_messages_is_real_without_warning(backend, op):
    """A real weight scaling complex src: its gradient is the real part of the complex one, with no
    ComplexWarning (a hostile tester's find); add's against the per-edge dots written out."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    gi, si = np.array([0, 1, 2, 3, 1]), np.array([0, 0, 1, 1, 2])
    w = rng.uniform(0.5, 2.0, 5)
    out = cs.gather_scatter(x, gi, si, op, weight=w)
    g = np.ones_like(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = backend.call(cs.gather_scatter_vjp_weight, op, g, x, gi, si, out, weight=w)
    assert got.dtype == np.float64
    if op in ("add", "nansum"):
        np.testing.assert_allclose(got, [np.sum(g[si[e]] * x[gi[e]]).real for e in range(5)], rtol=1e-12)


def test_float16_max_min_gradients_find_the_forward_winners():
    # the forward compares float32 messages and rounds only the winner to float16: the reverse pass must compare
    # the same float32 values (against the rounded out, no edge would tie and every gradient would be 0)
    src, w = np.array([1.1, 0.3], np.float16), np.array([1.3, 0.2], np.float16)
    gi, si = np.array([0, 1]), np.array([0, 0])
    for op, winner in (("max", 0), ("min", 1)):
        out = cs.gather_scatter(src, gi, si, op, weight=w)
        g = np.ones(1, np.float16)
        expected_src, expected_w = np.zeros(2), np.zeros(2)
        expected_src[winner], expected_w[winner] = w[winner], src[winner]
        np.testing.assert_allclose(cs.gather_scatter_vjp_src(op, g, src, gi, si, out, weight=w), expected_src)
        np.testing.assert_allclose(cs.gather_scatter_vjp_weight(op, g, src, gi, si, out, weight=w), expected_w)
        np.testing.assert_allclose(cs.gather_scatter_jvp(op, src, gi, si, out, src_dot=np.ones(2, np.float16),
                                                         weight=w), [w[winner]], rtol=1e-3)


@pytest.mark.parametrize("op", ["max", "min", "div", "mean", "add"])
@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8"])
def test_integer_messages_wrap_and_divide_as_numpy_forms_them(op, dtype):
    src = np.array([100, -100, 0, 7], dtype=np.int64).astype(dtype)
    w = np.array([2, 3, -3, 0], dtype=np.int64).astype(dtype)   # uint8: -100 and -3 wrap as NumPy wraps them
    gi, si = np.array([0, 1, 2, 3]), np.array([0, 0, 1, 1])
    with np.errstate(all="ignore"):
        expected = ref_gather_scatter(src, gi, si, op, weight=w)
        got = cs.gather_scatter(src, gi, si, op, weight=w)
    assert_same(got, expected)
    big = np.array([2**62, 2**62])
    np.testing.assert_array_equal(cs.gather_scatter(big, np.array([0, 1]), np.array([0, 0]), "mean",
                                                    weight=np.array([3, 1])), [0.0])   # 3 * 2**62 wraps to -2**62


def test_zero_length_head_dims():
    gi, si = np.array([0, 1, 2]), np.array([0, 0, 1])
    for src in (np.zeros((3, 0)), np.zeros((3, 0, 2))):
        w = np.ones((3, 0))
        out = cs.gather_scatter(src, gi, si, weight=w)
        assert out.shape == (2,) + src.shape[1:]
        assert cs.gather_scatter_vjp_src("add", out, src, gi, si, weight=w).shape == src.shape
        assert cs.gather_scatter_vjp_weight("max", out, src, gi, si, out, weight=w).shape == w.shape
        assert cs.gather_scatter_jvp("max", src, gi, si, out, src_dot=src, weight=w).shape == out.shape


def test_a_plan_cannot_be_changed():
    plan = cs.gather_scatter_plan(np.array([0, 1]), np.array([1, 1]))
    with pytest.raises(AttributeError, match="immutable"):
        plan.index_shape = (1,)
    with pytest.raises(AttributeError, match="immutable"):
        del plan.dims
    for name in ("gather", "scatter", "indptr", "edge_ids", "cols", "counts"):
        with pytest.raises(ValueError):
            getattr(plan, name).flags.writeable = True
    for a in plan.transpose:
        with pytest.raises(ValueError):
            a.flags.writeable = True


@pytest.mark.parametrize("copier", ["pickle", "pickle0", "deepcopy", "copy"])
@pytest.mark.parametrize("mode", ["raise", "drop", "wrap"])
def test_a_plan_survives_pickling_and_copying(copier, mode):
    """Plans go to worker processes (multiprocessing, joblib, dask.distributed): a copy computes what the plan
    computes, and its arrays are frozen again."""
    import copy
    import pickle
    rng = np.random.default_rng(3)
    gi = (rng.integers(0, 4, 30), rng.integers(0, 3, 30))   # a tuple index over a (4, 3) source
    si = rng.integers(-2, 7, 30) if mode != "raise" else rng.integers(0, 5, 30)
    plan = cs.gather_scatter_plan(gi, si, src_size=(4, 3), dim_size=5, mode=mode)
    twin = {"pickle": lambda p: pickle.loads(pickle.dumps(p)), "pickle0": lambda p: pickle.loads(pickle.dumps(p, 0)),
            "deepcopy": copy.deepcopy, "copy": copy.copy}[copier](plan)
    src, w = rng.standard_normal((4, 3, 2)), rng.standard_normal(30)
    for op in ("add", "max", "mean"):
        expected = ref_gather_scatter(src, gi, si, op, weight=w, dim_size=5, mode=mode)
        out = cs.gather_scatter(src, op=op, weight=w, plan=twin)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        g = rng.standard_normal(out.shape)
        np.testing.assert_allclose(cs.gather_scatter_vjp_src(op, g, src, out=out, weight=w, plan=twin),
                                   ref_gather_scatter_vjp(op, g, src, gi, si, out, weight=w, dim_size=5,
                                                          mode=mode)[0], rtol=1e-12, atol=1e-12)
    assert (twin.mode, twin.dims, twin.src_dims, twin.n_edges) == (plan.mode, plan.dims, plan.src_dims, plan.n_edges)
    for name in ("gather", "scatter", "indptr", "edge_ids", "cols", "counts"):
        with pytest.raises(ValueError):
            getattr(twin, name).flags.writeable = True


def test_messages_name_the_argument_at_fault():
    src, gi, si = np.array([1.0, 2.0]), np.array([0, 1]), np.array([0, 0])
    out = np.array([2.0])
    cases = [
        (lambda: cs.gather_scatter(None, gi, si), TypeError, "src"),
        (lambda: cs.gather_scatter_vjp_src("max", np.ones(1, complex), src, gi, si, out), TypeError, "grad_out"),
        (lambda: cs.gather_scatter_vjp_src("add", np.ones(1, complex), src, gi, si), TypeError, "grad_out"),
        (lambda: cs.gather_scatter_jvp("min", src, gi, si, out, src_dot=np.ones(2, complex)), TypeError, "src_dot"),
        (lambda: cs.gather_scatter_vjp_weight("max", np.ones(1), src, gi, si, out, weight=np.ones(2, complex)),
         TypeError, "weight"),
        (lambda: cs.gather_scatter_vjp_src("add", np.ones(1), src > 1, gi, si), TypeError, "src"),
        (lambda: cs.gather_scatter(src, plan=cs.gather_scatter_plan(gi, si), dim_size="x"), TypeError,
         "dim_size"),
        (lambda: cs.gather_scatter(np.zeros((0, 2)), gi, si, mode="wrap"), IndexError, "gather_index"),
        (lambda: cs.gather_scatter_plan(gi, si, dim_size=2**62), ValueError, "dim_size"),
    ]
    for call, error, name in cases:
        with pytest.raises(error, match=rf"(?<![\w.]){name}(?!\w)"):
            call()


def test_reverse_bound_errors_name_the_array_the_size_was_read_from():
    """Without dim_size the reverse functions read D off grad_out (or out): a bound error says so, not that a
    dim_size was given."""
    x = np.ones((4, 3))
    gi, si = np.arange(4), np.array([0, 0, 1, 1])
    calls = {"grad_out": lambda: cs.gather_scatter_vjp_src("add", np.ones((1, 3)), x, gi, si),
             "grad_out ": lambda: cs.gather_scatter_vjp_weight("add", np.ones((1, 3)), x, gi, si, weight=np.ones(4)),
             "out": lambda: cs.gather_scatter_jvp("max", x, gi, si, out=np.ones((1, 3)), src_dot=x)}
    for name, call in calls.items():
        with pytest.raises(IndexError, match=rf"read from {name.strip()}'s shape") as err:
            call()
        assert "was given" not in str(err.value)
    with pytest.raises(IndexError, match=r"dim_size=1 was given"):
        cs.gather_scatter_vjp_src("add", np.ones((1, 3)), x, gi, si, dim_size=1)


def test_linear_reverse_functions_read_strided_and_broadcast_src_in_place():
    """The weight VJP and the weight tangent of the linear ops read src as the forward does: rows apart or
    broadcast, not copied (a broadcast src may be far larger than memory)."""
    from memory import traced_peak

    rng = np.random.default_rng(12)
    base = rng.standard_normal((200_000, 16))
    gi, si, w = np.array([0, 5, 999, 7]), np.array([0, 0, 1, 1]), rng.standard_normal(4)
    g = rng.standard_normal((2, 16))
    for src in (base[::2], np.broadcast_to(base[3], (100_000, 16))):
        dense = np.ascontiguousarray(src)
        for op in ("add", "mean", "sub"):
            calls = (lambda s, o=op: cs.gather_scatter_vjp_weight(o, g, s, gi, si, weight=w),
                     lambda s, o=op: cs.gather_scatter_jvp(o, s, gi, si, out=g, weight=w, weight_dot=w[::-1].copy()))
            for call in calls:
                got, peak = traced_peak(lambda c=call: c(src))
                assert_same(got, call(dense))
                assert peak < dense.nbytes / 8, (op, peak)


@pytest.mark.parametrize("op", ["max", "min", "fmax", "nanmean", "nansum"])
def test_selecting_reverse_functions_read_strided_and_broadcast_src_in_place(op):
    """The tie shares, the back pass and the tangents of the selecting ops read src with its own row strides:
    rows apart or broadcast, not copied, with the bits of the C-ordered src's."""
    from memory import traced_peak

    rng = np.random.default_rng(13)
    base = np.round(rng.standard_normal((200_000, 16)), 1)   # ties
    base[::97] = np.nan
    gi, si, w = np.array([0, 5, 999, 7, 5]), np.array([0, 0, 1, 1, 1]), rng.standard_normal(5)
    for src in (base[::2], np.broadcast_to(base[3], (100_000, 16))):
        dense = np.ascontiguousarray(src)
        out = cs.gather_scatter(dense, gi, si, op, weight=w)
        g = rng.standard_normal(out.shape)
        dot = rng.standard_normal(src.shape)
        calls = (lambda s: cs.gather_scatter_vjp_src(op, g, s, gi, si, out, weight=w),
                 lambda s: cs.gather_scatter_vjp_weight(op, g, s, gi, si, out, weight=w),
                 lambda s: cs.gather_scatter_jvp(op, s, gi, si, out, dot, weight=w, weight_dot=w[::-1].copy()))
        for k, call in enumerate(calls):
            with np.errstate(invalid="ignore"):
                got, peak = traced_peak(lambda c=call: c(src))
                assert_same(got, call(dense))
            # (the src gradient and the tangent are src-sized results of their own; the rest is edge-sized)
            assert peak < dense.nbytes / 8 + (dense.nbytes if k != 1 else 0) * 1.2, (op, k, peak)


@pytest.mark.parametrize("op", ["max", "min", "fmax", "fmin", "mul", "div"])
@pytest.mark.parametrize("src_dtype, w_dtype", [("float32", "float32"), ("float16", "float32"),
                                                ("float32", "float16"), ("float32", "int16")])
def test_float64_cotangents_of_float32_messages(op, src_dtype, w_dtype):
    """Weighted float32 messages under a float64 cotangent or tangent: the derivatives are float64, the winners
    those of the forward (its float32 out held rounded products that no float64 message equalled, so every
    gradient was 0). Against the same call with float32 derivatives."""
    rng = np.random.default_rng(len(op) + len(src_dtype) + len(w_dtype))
    src = (0.5 + rng.random((6, 3))).astype(src_dtype)
    w = (1 + rng.integers(1, 5, 12)).astype(w_dtype) if w_dtype == "int16" else \
        (0.5 + rng.random(12)).astype(w_dtype)
    gi, si = rng.integers(0, 6, 12), rng.integers(0, 4, 12)
    out = cs.gather_scatter(src, gi, si, op, weight=w)
    g = rng.standard_normal(out.shape)
    dot = rng.standard_normal(src.shape)
    for fun, args in ((cs.gather_scatter_vjp_src, (g, src, gi, si, out)),
                      (cs.gather_scatter_vjp_weight, (g, src, gi, si, out))):
        if fun is cs.gather_scatter_vjp_weight and w_dtype == "int16":
            continue   # (an integer weight has no gradient)
        wide = fun(op, *args, weight=w)
        narrow = fun(op, args[0].astype(np.float32), *args[1:], weight=w)
        assert wide.dtype != np.float32 or narrow.dtype == np.float32
        np.testing.assert_array_equal(wide != 0, narrow != 0)   # the same winners
        np.testing.assert_allclose(wide.astype(np.float64), narrow.astype(np.float64), rtol=2e-3, atol=1e-6)
    wide = cs.gather_scatter_jvp(op, src, gi, si, out, dot, weight=w)
    narrow = cs.gather_scatter_jvp(op, src, gi, si, out, dot.astype(np.float32), weight=w)
    assert wide.dtype == np.float64 and (wide != 0).any()
    np.testing.assert_allclose(wide, narrow.astype(np.float64), rtol=1e-5, atol=1e-6)
