"""The NaN-skipping ops (nansum, nanprod, fmax/nanmax, fmin/nanmin, nanmean) in `gather_scatter`, its reverse
functions and grad. The definition is the composition ``scatter(gather(src) * weight, scatter_index, op)``: a NaN
message (NaN in src or weight, or inf * 0) is left out. Compared with the plain-loop reference
(helpers/reference_gather_scatter.py, built on the scatter loops of helpers/reference.py), with `cs.scatter` on the
materialised messages, with numpy_groupies' ``func="nan..."`` on the messages, and by central differences and
autograd's check_grads (order 2, fwd and rev); over value dtypes, index kinds, weight kinds, plans, threads,
modes, batch axes, fill values and the numpy / cupy-emulated backends."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from inputs import DST_DIMS, SRC_DIMS, WEIGHTS, edges, rng_for, values, with_nans
from reference import numeric_vjp
from reference_gather_scatter import ref_gather_scatter, ref_gather_scatter_vjp
from testing import NAN_OPS, op_supports

DTYPES = ("float32", "float64", "int32", "int64", "uint8", "float16", "complex64", "complex128")


def weight_for(kind, n_edges, feat, dtype, rng, nan_share=0.15):
    if kind == "none":
        return None
    shape = {"edge": (n_edges,), "head": (n_edges, feat[0]), "head-broadcast": (n_edges, 1)}[kind]
    w = rng.choice([0.5, 1.0, -2.0, 3.0], shape)
    if np.dtype(dtype).kind not in "fc":
        return np.rint(w).astype(np.int64)
    return with_nans(w.astype(dtype), rng, nan_share)


def messages(src, gi, si, w, axis=0):
    """The E x F messages gather(src) * w of the composition (NumPy's promotion), as cs.gather would take them."""
    taken = cs.gather(src, gi, axis=axis)
    if w is None:
        return taken
    w = np.asarray(w)
    return taken * w.reshape((1,) * axis + w.shape + (1,) * (taken.ndim - axis - w.ndim))


def check(actual, expected, op, dtype, src):
    assert_same(actual, expected, *tolerance("numpy", op, np.dtype(dtype), src))


@pytest.mark.parametrize("kind", ["int", "tuple"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_forward_matches_reference_and_composition(op, dtype, kind):
    rng = rng_for("gs-nan", op, dtype, kind)
    feat = (2, 3)
    src = with_nans(values(dtype, SRC_DIMS[kind] + feat, rng, op), rng, 0.3)
    gi, si = edges(kind, 23, rng)
    plan = cs.gather_scatter_plan(gi, si, src_size=SRC_DIMS[kind], dim_size=DST_DIMS[kind])
    for wkind in WEIGHTS:
        w = weight_for(wkind, 23, feat, "float32" if dtype == "float16" else dtype, rng)
        for fill in (None, 4.0 if dtype == "uint8" else -4.0):
            expected = ref_gather_scatter(src, gi, si, op, weight=w, dim_size=DST_DIMS[kind], fill_value=fill)
            if dtype != "float16":   # float16 messages: the kernel forms them in float32 (see gather_scatter)
                composed = cs.scatter(messages(src, gi, si, w), si, op, dim_size=DST_DIMS[kind], fill_value=fill)
                check(composed, expected, op, dtype, src)
            for threads in (1, 2):
                got = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=DST_DIMS[kind], fill_value=fill,
                                        num_threads=threads)
                check(got, expected, op, dtype, src)
                got = cs.gather_scatter(src, op=op, weight=w, plan=plan, fill_value=fill, num_threads=threads)
                check(got, expected, op, dtype, src)


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
def test_modes_batch_axis_and_fill(op, mode):
    rng = rng_for("gs-nan-modes", op, mode)
    src = with_nans(values("float64", (2, 7, 3), rng, op), rng, 0.4)
    src[:, 2] = np.nan   # a source row of NaNs only
    gi, si = edges("int", 30, rng, out_of_range=True)
    for fill in (None, -7.5, np.nan):
        expected = ref_gather_scatter(src, gi, si, op, dim_size=6, axis=1, mode=mode, fill_value=fill)
        got = cs.gather_scatter(src, gi, si, op, dim_size=6, axis=1, mode=mode, fill_value=fill)
        check(got, expected, op, "float64", src)
        plan = cs.gather_scatter_plan(gi, si, src_size=7, dim_size=6, mode=mode)
        got = cs.gather_scatter(src, op=op, axis=-2, plan=plan, fill_value=fill)
        check(got, expected, op, "float64", src)


def test_nan_is_tested_on_the_message():
    """inf * 0 and a NaN weight make NaN messages, which are left out; a NaN src row with weight 0 too."""
    src = np.array([[np.inf], [2.0], [np.nan], [5.0]])
    gi = np.array([0, 1, 2, 3, 1])
    si = np.array([0, 0, 0, 1, 1])
    w = np.array([0.0, 3.0, 0.0, np.nan, 1.0])
    # messages: nan (inf * 0), 6, nan (nan * 0), nan (5 * nan), 2
    assert_same(cs.gather_scatter(src, gi, si, "nansum", weight=w), np.array([[6.0], [2.0]]))
    assert_same(cs.gather_scatter(src, gi, si, "nanmean", weight=w), np.array([[6.0], [2.0]]))
    assert_same(cs.gather_scatter(src, gi, si, "fmin", weight=w), np.array([[6.0], [2.0]]))
    assert_same(cs.gather_scatter(src, gi, si, "nanprod", weight=w), np.array([[6.0], [2.0]]))
    w[4] = np.nan   # row 1: all its messages NaN, an empty group
    assert_same(cs.gather_scatter(src, gi, si, "nanmean", weight=w, fill_value=-1), np.array([[6.0], [-1.0]]))
    assert_same(cs.gather_scatter(src, gi, si, "fmax", weight=w), np.array([[6.0], [-np.inf]]))
    # the twins propagate the same NaN messages
    assert np.isnan(cs.gather_scatter(src, gi, si, "add", weight=w)).all()


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integers_are_the_twins(op, dtype):
    rng = rng_for("gs-nan-int", op, dtype)
    src = values(dtype, (7, 3), rng, op)
    gi, si = edges("int", 20, rng)
    twin = cs.get_op(op).twin
    for w in (None, rng.integers(1, 3, 20)):
        assert_same(cs.gather_scatter(src, gi, si, op, weight=w, dim_size=6, fill_value=5),
                    cs.gather_scatter(src, gi, si, twin, weight=w, dim_size=6, fill_value=5))


npg = pytest.importorskip("numpy_groupies")


@pytest.mark.parametrize("fill", [0.0, np.nan, -1.0])
@pytest.mark.parametrize("op,func", [("nansum", "nansum"), ("nanprod", "nanprod"), ("nanmax", "nanmax"),
                                     ("nanmin", "nanmin"), ("nanmean", "nanmean")])
def test_numpy_groupies_on_the_messages(op, func, fill):
    rng = rng_for("gs-npg", op, fill)
    x = with_nans(rng.standard_normal(40), rng, 0.3)
    gi, si = rng.integers(0, 40, 300), rng.integers(0, 60, 300)
    si[:3] = 60   # destination 60: its messages all NaN
    w = with_nans(rng.uniform(0.5, 2.0, 300), rng, 0.2)
    w[:3] = np.nan
    expected = npg.aggregate(si, x[gi] * w, func=func, size=63, fill_value=fill)
    got = cs.gather_scatter(x, gi, si, op, weight=w, dim_size=63, fill_value=fill)
    np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("fill", [None, -3.0])
@pytest.mark.parametrize("wkind", ["none", "edge", "head"])
def test_backends(backend, op, fill, wkind):
    """numpy and the (emulated) CuPy path: atomics of the NaN-skipping updates, counting the non-NaN messages
    for nanmean and a fill value; complex128 nanprod takes the ordered CSR kernel."""
    rng = rng_for("gs-nan-backend", op, fill, wkind)
    for dtype in ("float64", "float32", "complex128"):
        if not op_supports(op, dtype):
            continue
        src = with_nans(values(dtype, (2, 7, 4), rng, op), rng, 0.3)
        gi, si = edges("int", 25, rng)
        w = weight_for(wkind, 25, (4,), dtype, rng)
        expected = ref_gather_scatter(src, gi, si, op, weight=w, dim_size=6, axis=1, fill_value=fill)
        got = backend.call(cs.gather_scatter, src, gi, si, op, weight=w, dim_size=6, axis=1, fill_value=fill)
        assert_same(got, expected, *tolerance(backend.name, op, expected.dtype, src))


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_gpu_forward_counts_in_its_kernel(monkeypatch, op, dtype):
    """On CuPy (emulated) nanmean, and every NaN-skipping op with a fill_value, count each element's non-NaN
    messages in the forward kernel (the atomic one, or the CSR one for complex128 nanprod): no E x F message
    array is formed (the materialising scatter is never reached) and the result is the reference's."""
    from emulated_cupy import installed
    import cyscatter._api.gather_scatter_cuda as gpu
    rng = rng_for("gs-nan-gpu-counted", op, dtype)
    src = with_nans(values(dtype, (2, 9, 3), rng, op), rng, 0.4)
    src[:, 4] = np.nan   # a source row of NaNs only
    gi, si = edges("int", 40, rng)
    si[:3], gi[:3] = 5, 4   # destination 5: its messages all NaN
    w = weight_for("head-broadcast", 40, (3,), dtype, rng)
    launched = []

    def no_messages(*args, **kwargs):
        raise AssertionError("the messages were materialised")
    with installed() as cp:
        real_build = gpu.build

        def build(spec):
            launched.append(spec.name)
            return real_build(spec)
        monkeypatch.setattr(gpu, "scatter", no_messages)
        monkeypatch.setattr(gpu, "build", build)
        for fill in ([None] if op != "nanmean" else []) + [-3.0, None if op == "nanmean" else 2.0]:
            launched.clear()
            expected = ref_gather_scatter(src, gi, si, op, weight=w, dim_size=7, axis=1, fill_value=fill)
            got = cs.gather_scatter(cp.asarray(src), cp.asarray(gi), cp.asarray(si), op, weight=cp.asarray(w),
                                    dim_size=7, axis=1, fill_value=fill)
            assert_same(got.get(), expected, *tolerance("cupy-emulated", op, expected.dtype, src))
            counted = fill is not None or op == "nanmean"
            assert len(launched) == 1 and ("_counted_" in launched[0]) == counted, launched


# ---- reverse functions and grad ---------------------------------------------------------------------------------

def _reverse_case(op, wkind, seed=()):
    rng = rng_for("gs-nan-rev", op, wkind, *seed)
    src = rng.uniform(0.5, 2.0, (2, 7, 4)) * rng.choice([-1.0, 1.0], (2, 7, 4))
    src[0, 1, 0] = src[1, 3, 2] = src[0, 5, 3] = np.nan
    gi, si = edges("int", 25, rng)
    w = None if wkind == "none" else rng.uniform(0.5, 2.0, {"edge": (25,), "head": (25, 4)}[wkind])
    if w is not None:
        w[4] = np.nan   # an edge whose messages are all NaN
    return rng, src, gi, si, w


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("wkind", ["none", "edge", "head"])
def test_reverse_functions_by_central_differences(backend, op, wkind):
    """NaN entries (of src and weight) stay fixed; no ties in the random values, so each op is differentiable."""
    rng, src, gi, si, w = _reverse_case(op, wkind)
    out = backend.call(cs.gather_scatter, src, gi, si, op, weight=w, dim_size=6, axis=1)
    g = rng.standard_normal(out.shape)
    nan_src = np.isnan(src)
    got_src = backend.call(cs.gather_scatter_vjp_src, op, g, src, gi, si, out, weight=w, dim_size=6, axis=1)
    assert np.all(got_src[nan_src] == 0) and not np.isnan(got_src).any()

    def f_src(x):
        return ref_gather_scatter(np.where(nan_src, np.nan, x), gi, si, op, weight=w, dim_size=6, axis=1)
    np.testing.assert_allclose(got_src, numeric_vjp(f_src, np.where(nan_src, 0.0, src), g), rtol=1e-6, atol=1e-6)
    v_src = np.where(nan_src, 0.0, rng.standard_normal(src.shape))
    v_w = None if w is None else np.where(np.isnan(w), 0.0, rng.standard_normal(w.shape))
    jvp = backend.call(cs.gather_scatter_jvp, op, src, gi, si, out, v_src, weight=w, weight_dot=v_w, dim_size=6,
                       axis=1)
    expected = np.sum(got_src * v_src)
    if w is not None:
        nan_w = np.isnan(w)
        got_w = backend.call(cs.gather_scatter_vjp_weight, op, g, src, gi, si, out, weight=w, dim_size=6, axis=1)
        assert np.all(got_w[nan_w] == 0) and not np.isnan(got_w).any()

        def f_w(v):
            return ref_gather_scatter(src, gi, si, op, weight=np.where(nan_w, np.nan, v), dim_size=6, axis=1)
        np.testing.assert_allclose(got_w, numeric_vjp(f_w, np.where(nan_w, 0.0, w), g), rtol=1e-6, atol=1e-6)
        expected += np.sum(got_w * v_w)
    np.testing.assert_allclose(np.sum(g * jvp), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex128"])
@pytest.mark.parametrize("wkind", ["none", "edge", "head"])
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_gpu_reverse_functions_select_on_the_edges(monkeypatch, op, dtype, wkind):
    """On CuPy (emulated), the reverse functions of nansum/nanmean (the non-NaN messages) and fmax/fmin (the
    tied non-NaN winners) run the edge kernels, no E x F message array (the core scatter rules on materialised
    messages are never reached); nanprod materialises. NaN in src and weight, inf * 0 messages, ties and a
    destination whose messages are all NaN; the results equal the CPU's (tested against references above)."""
    from emulated_cupy import installed
    import cyscatter._reverse.gather_scatter_cuda as gpu
    rng = rng_for("gs-nan-gpu-reverse", op, dtype, wkind)
    src = rng.integers(-2, 3, (2, 8, 4)).astype(dtype)   # small integers: ties
    src[0, 1, 0] = src[1, 3, 2] = np.nan
    src[0, 6, 1] = np.inf
    src[:, 7] = np.nan
    gi, si = edges("int", 30, rng)   # (sources 0-6, destinations 0-5)
    gi[0], gi[1:3], si[1:3] = 6, 7, 6   # destination 6: its messages all NaN
    w = None if wkind == "none" else rng.choice([1.0, 2.0, 0.5], {"edge": (30,), "head": (30, 4)}[wkind])
    if w is not None:
        w = w.astype(np.float32 if dtype == "float16" else dtype)
        w[4], w[0] = np.nan, 0.0   # an edge whose messages are all NaN; inf * 0 from src row 6
    kw = dict(weight=w, dim_size=7, axis=1)
    # NaN where every message is NaN (destination 6): no NaN message wins it under fmax/fmin
    out = cs.gather_scatter(src, gi, si, op, fill_value=np.nan, **kw)
    assert np.isnan(out[:, 6]).all()
    g = rng.standard_normal(out.shape).astype(out.dtype)
    s_dot = rng.standard_normal(src.shape)
    w_dot = None if w is None else rng.standard_normal(w.shape)
    expected = [cs.gather_scatter_vjp_src(op, g, src, gi, si, out, **kw),
                cs.gather_scatter_jvp(op, src, gi, si, out, s_dot, weight_dot=w_dot, **kw)]
    if w is not None:
        expected.append(cs.gather_scatter_vjp_weight(op, g, src, gi, si, out, **kw))

    def no_messages(*args, **kwargs):
        raise AssertionError("the messages were materialised")
    if op != "nanprod":
        monkeypatch.setattr(gpu, "scatter_vjp_src", no_messages)
        monkeypatch.setattr(gpu, "scatter_jvp", no_messages)
    with installed() as cp:
        d = {name: None if a is None else cp.asarray(a)
             for name, a in dict(src=src, gi=gi, si=si, out=out, g=g, s_dot=s_dot, w_dot=w_dot, w=w).items()}
        dkw = dict(weight=d["w"], dim_size=7, axis=1)
        got = [cs.gather_scatter_vjp_src(op, d["g"], d["src"], d["gi"], d["si"], d["out"], **dkw),
               cs.gather_scatter_jvp(op, d["src"], d["gi"], d["si"], d["out"], d["s_dot"], weight_dot=d["w_dot"],
                                     **dkw)]
        if w is not None:
            got.append(cs.gather_scatter_vjp_weight(op, d["g"], d["src"], d["gi"], d["si"], d["out"], **dkw))
    rtol = 1e-3 if dtype in ("float16", "float32") else 1e-12
    for name, a, b in zip(("vjp_src", "jvp", "vjp_weight"), got, expected):
        assert type(a).__module__ == "cupy", name
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_allclose(a.get(), b, rtol=rtol, atol=rtol, err_msg=name)   # inf messages: NaN tangents


@pytest.mark.parametrize("op", ["nansum", "nanmean", "fmax", "fmin"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("wkind", ["none", "edge", "head"])
def test_selecting_reverse_functions_match_loops(backend, op, dtype, wkind):
    """The fused reverse kernels of the selecting NaN-skipping ops (no E x F messages) against explicit loops:
    NaN in src and weight, ties and -0.0 / +0.0 among the messages, a destination whose messages are all NaN
    (and whose output is a NaN fill_value: no NaN message wins it); threads 1 and 2, indices or a plan; the JVP
    through the transpose identity <g, J v> = <vjp_src(g), v_src> + <vjp_weight(g), v_w>."""
    rng = rng_for("gs-nan-select", op, dtype, wkind)
    src = rng.integers(-2, 3, (2, 8, 4)).astype(dtype)   # small integers: ties
    src[0, 2, 1], src[1, 4, 2] = -0.0, -0.0
    src[0, 1, 0] = src[1, 3, 2] = np.nan
    src[:, 7] = np.nan
    gi, si = edges("int", 30, rng)   # (sources 0-6, destinations 0-5)
    gi[1:3], si[1:3] = 7, 6   # destination 6: its messages all NaN
    w = None if wkind == "none" else rng.choice([1.0, 2.0, 0.5], {"edge": (30,), "head": (30, 4)}[wkind])
    if w is not None:
        w = w.astype(dtype)
        w[4] = np.nan   # an edge whose messages are all NaN
    out = cs.gather_scatter(src, gi, si, op, weight=w, dim_size=7, axis=1, fill_value=np.nan)
    assert np.isnan(out[:, 6]).all()
    g = rng.standard_normal(out.shape).astype(dtype)
    ref_src, ref_w = ref_gather_scatter_vjp(op, g, src, gi, si, out, weight=w, dim_size=7, axis=1)
    v_src = rng.standard_normal(src.shape)
    v_w = None if w is None else rng.standard_normal(w.shape)
    expected_jvp = np.sum(ref_src * v_src) + (0 if w is None else np.sum(ref_w * v_w))
    rtol = 1e-5 if dtype == "float32" else 1e-12
    plan = cs.gather_scatter_plan(gi, si, src_size=8, dim_size=7)
    for kw in (dict(gather_index=gi, scatter_index=si, dim_size=7), dict(plan=plan)):
        for threads in ((1, 2) if backend.name == "numpy" else (None,)):
            extra = {} if threads is None else {"num_threads": threads}
            got_src = backend.call(cs.gather_scatter_vjp_src, op, g, src, out=out, weight=w, axis=1, **kw, **extra)
            assert got_src.dtype == np.dtype(dtype)
            np.testing.assert_allclose(got_src, ref_src, rtol=rtol, atol=rtol)
            if w is not None:
                got_w = backend.call(cs.gather_scatter_vjp_weight, op, g, src, out=out, weight=w, axis=1, **kw,
                                     **extra)
                np.testing.assert_allclose(got_w, ref_w, rtol=rtol, atol=rtol)
            jvp = backend.call(cs.gather_scatter_jvp, op, src, out=out, src_dot=v_src.astype(dtype), weight=w,
                               weight_dot=None if v_w is None else v_w.astype(dtype), axis=1, **kw, **extra)
            assert not np.isnan(jvp).any()
            np.testing.assert_allclose(np.sum(g * jvp, dtype=np.float64), expected_jvp, rtol=100 * rtol,
                                       atol=100 * rtol)


def test_reverse_functions_with_a_plan_and_inf_times_zero():
    """A message inf * 0 is NaN, left out: the weight 0 gets no gradient from it (not 0 * inf), nor its src row."""
    src = np.array([[np.inf], [2.0], [3.0]])
    gi, si = np.array([0, 1, 2]), np.array([0, 0, 0])
    w = np.array([0.0, 1.5, 2.0])
    plan = cs.gather_scatter_plan(gi, si, src_size=3, dim_size=1)
    out = cs.gather_scatter(src, op="nansum", weight=w, plan=plan)
    assert_same(out, np.array([[9.0]]))
    g = np.array([[1.0]])
    assert_same(cs.gather_scatter_vjp_weight("nansum", g, src, out=out, weight=w, plan=plan),
                np.array([0.0, 2.0, 3.0]))
    assert_same(cs.gather_scatter_vjp_src("nansum", g, src, out=out, weight=w, plan=plan),
                np.array([[0.0], [1.5], [2.0]]))


autograd = pytest.importorskip("autograd")


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("wkind", ["none", "edge", "head"])
def test_check_grads_order_2(op, wkind):
    """In float64, NaN entries of src held fixed (wrapped): derivatives in src and weight, fwd and rev, order 2."""
    from autograd.test_util import check_grads

    import grad as csgrad
    _, src, gi, si, w = _reverse_case(op, wkind, seed=("grad",))
    nan = np.isnan(src)

    def f(x):
        import autograd.numpy as anp
        return anp.where(nan, np.nan, x)

    base = np.where(nan, 0.0, src)
    assert_same(csgrad.gather_scatter(src, gi, si, op, weight=w, dim_size=6, axis=1),
                cs.gather_scatter(src, gi, si, op, weight=w, dim_size=6, axis=1))
    if w is None:
        # a fill for the row no edge reaches: fmax's -inf there has no finite differences
        check_grads(lambda x: csgrad.gather_scatter(f(x), gi, si, op, dim_size=6, axis=1, fill_value=-1.0),
                    modes=["fwd", "rev"], order=2)(base)
        return
    w = np.where(np.isnan(w), 1.0, w)   # check_grads moves every weight: NaN weights only in the test above
    check_grads(lambda x, v: csgrad.gather_scatter(f(x), gi, si, op, weight=v, dim_size=6, axis=1, fill_value=-1.0),
                (0, 1), modes=["fwd", "rev"], order=2)(base, w)


@pytest.mark.parametrize("op", ["nansum", "nanmean", "fmax", "fmin"])
@pytest.mark.parametrize("wkind", ["none", "edge", "head"])
def test_grad_first_order_is_fused_and_matches_loops(monkeypatch, op, wkind):
    """grad's gather_scatter of the selecting NaN-skipping ops runs the fused forward and first-order rules (the
    materialised composition is never built at first order); its gradients in src and weight, with NaN in both,
    ties and a NaN fill_value, equal the explicit loops'."""
    from autograd import grad as agrad
    import autograd.numpy as anp

    import grad as csgrad
    import grad._gather_scatter as ggs
    rng = rng_for("gs-nan-grad-fused", op, wkind)
    src = rng.integers(-2, 3, (2, 8, 4)).astype(np.float64)
    src[0, 1, 0] = src[1, 3, 2] = np.nan
    src[:, 7] = np.nan
    gi, si = edges("int", 30, rng)
    gi[1:3], si[1:3] = 7, 6
    w = None if wkind == "none" else rng.choice([1.0, 2.0, 0.5], {"edge": (30,), "head": (30, 4)}[wkind])
    if w is not None:
        w[4] = np.nan
    kw = dict(dim_size=7, axis=1, fill_value=np.nan)
    out = cs.gather_scatter(src, gi, si, op, weight=w, **kw)
    g = np.where(np.isnan(out), 0.0, rng.standard_normal(out.shape))   # (the NaN fills carry no cotangent)
    ref_src, ref_w = ref_gather_scatter_vjp(op, g, src, gi, si, out, weight=w, dim_size=7, axis=1)

    def built(*args, **kwargs):
        raise AssertionError("the materialised composition was built at first order")
    monkeypatch.setattr(ggs, "_materialised", built)

    def loss(x, v):
        y = csgrad.gather_scatter(x, gi, si, op, weight=v, **kw)
        return anp.sum(anp.where(np.isnan(out), 0.0, y) * g)
    np.testing.assert_allclose(agrad(loss, 0)(src, w), ref_src, rtol=1e-12, atol=1e-12)
    if w is not None:
        np.testing.assert_allclose(agrad(loss, 1)(src, w), ref_w, rtol=1e-12, atol=1e-12)


# ---- the kernel's own checks ------------------------------------------------------------------------------------

def test_forward_nan_kernel_checks_its_arguments():
    from cyscatter import fused_kernels, kernels
    src, out = np.ones((1, 3, 2)), np.zeros((1, 2, 2))
    indptr, cols, ids = np.array([0, 2, 3]), np.array([0, 1, 2]), np.zeros(0, np.int64)
    w = np.zeros((0, 1))
    counts = np.zeros((1, 2, 2), np.int32)
    with pytest.raises(ValueError, match="NaN-skipping op code"):
        fused_kernels.forward_nan(kernels.OpCode.OP_ADD, src, indptr, cols, ids, w, False, out, counts, True, 1)
    with pytest.raises(ValueError, match="counts must have out's shape"):
        fused_kernels.forward_nan(kernels.OpCode.OP_NANADD, src, indptr, cols, ids, w, False, out,
                                  np.zeros((1, 3, 2), np.int32), True, 1)
    with pytest.raises(ValueError, match="CSR"):
        fused_kernels.forward_nan(kernels.OpCode.OP_NANADD, src, indptr, np.array([0, 1, 5]), ids, w, False, out,
                                  counts, True, 1)
    assert not out.any() and not counts.any()
    assert fused_kernels.forward_nan(kernels.OpCode.OP_NANADD, src, indptr, cols, ids, w, False, out, counts, True,
                                     1) == -1
    assert_same(out, np.array([[[2.0, 2.0], [1.0, 1.0]]]))
    assert_same(counts, np.array([[[2, 2], [1, 1]]], np.int32))
