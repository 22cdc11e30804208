"""The empty index tuple: ``index=()`` addresses the destination as a whole, NumPy's ``a[()]``.

An index of no arrays has the index shape I = () (NumPy broadcasts no arrays to ()) and addresses no axes
(D = ()): one entry, so ``scatter(src, ())`` is ``op(identity, src)`` element by element, ``scatter_into(dst,
src, ())`` is ``op(dst, src)`` (``np.add.at(a, (), v)``, JAX's ``x.at[()].add(v)``), ``gather(src, ())`` is
``src[()]``. Every public function that takes an index is run with it against the plain-loop references of
tests/helpers/reference*.py (which read an empty tuple by the same NumPy rule), NumPy's ``ufunc.at`` and JAX themselves,
central differences for the reverse functions, and autograd's ``check_grads`` for `grad`.
"""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from reference import numeric_vjp, ref_gather, ref_scatter
from reference_extra import ref_logsumexp, ref_scatter_arg, ref_softmax, ref_var
from reference_gather_scatter import ref_gather_scatter
from reference_scan import ref_scan
from testing import FUSED_OPS, OPS, get_op, op_supports

# (src shape, axis): no batch, a batch before the (absent) index dims, all batch, a 0-d src
GEOMETRIES = [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3), 2), ((), 0)]
DTYPES = ("float64", "float32", "int32", "complex128")
UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
          "min": np.minimum, "fmax": np.fmax, "fmin": np.fmin}


def values(shape, dtype, seed=0, op="add"):
    rng = np.random.default_rng(seed)
    real = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape) if op in ("mul", "div", "nanprod") \
        else rng.integers(-9, 10, shape).astype(float) if np.dtype(dtype).kind == "i" else rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        real = real + 1j * rng.uniform(0.5, 2.0, shape)
    if np.dtype(dtype).kind == "i" and op in ("mul", "div"):
        real = rng.integers(1, 4, shape)
    return np.asarray(real).astype(dtype)


def supported(op, dtype):
    return op_supports(op, dtype) and not (get_op(op).true_division and np.dtype(dtype).kind == "i")


# ---- forward: scatter, scatter_into, gather, gather_into --------------------------------------------------------

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", GEOMETRIES)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_scatter_is_the_op_applied_to_the_identity(backend, op, dtype, shape, axis):
    src = values(shape, dtype, 1, op)
    expected = ref_scatter(src, (), op, axis=axis)
    actual = cs.scatter(backend.asarray(src), (), op, axis=axis)
    assert actual.shape == src.shape
    backend.assert_result(actual, expected, op, src)
    # dim_size=() is the sizes of no axes; out= and num_threads as for any index
    out = backend.asarray(np.empty(expected.shape, expected.dtype))
    got = cs.scatter(backend.asarray(src), (), op, axis=axis, dim_size=(), out=out, num_threads=2)
    assert got is out
    backend.assert_result(out, expected, op, src)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", GEOMETRIES)
@pytest.mark.valid(lambda dtype, op: supported(op, dtype))
def test_scatter_into_is_numpy_ufunc_at_with_an_empty_tuple(backend, op, dtype, shape, axis):
    src, dst = values(shape, dtype, 2, op), values(shape, dtype, 3, op)
    expected = ref_scatter(src, (), op, axis=axis, dst=dst)
    if op in UFUNCS and not (op in ("sub", "div") or np.dtype(dtype).kind == "c" and op in ("fmax", "fmin")):
        peer = dst.copy()
        UFUNCS[op].at(peer, (), src)   # NumPy itself
        # complex products: the reference's formula may round differently from NumPy's by an ulp
        np.testing.assert_allclose(peer, expected, rtol=1e-15 if np.dtype(dtype).kind == "c" else 0)
    d = backend.asarray(dst)
    result = cs.scatter_into(d, backend.asarray(src), (), op, axis=axis, indices_are_sorted=True)
    assert result is d
    backend.assert_result(d, expected, op, src, dst)


@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
def test_scatter_into_broadcasts_a_scalar_src(backend, op):
    dst = values((2, 3), "float64", 4)
    peer = dst.copy()
    UFUNCS[op].at(peer, (), 2.5)
    d = backend.asarray(dst)
    cs.scatter_into(d, 2.5, (), op)
    np.testing.assert_array_equal(backend.to_numpy(d), peer)


@pytest.mark.parametrize("op", ["add", "mul", "max", "min", "set"])
def test_scatter_into_matches_jax_at_empty_tuple(op):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    dst, src = values((3, 2), "float32", 5), values((3, 2), "float32", 6)
    method = {"mul": "multiply"}.get(op, op)
    with jax.enable_x64(False):
        want = np.asarray(getattr(jnp.asarray(dst).at[()], method)(jnp.asarray(src)))
    got = cs.scatter_into(dst.copy(), src, (), op)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", GEOMETRIES)
@pytest.mark.parametrize("mode", cs.MODES)
def test_gather_and_gather_into_read_the_whole_array(backend, dtype, shape, axis, mode):
    src = values(shape, dtype, 7)
    expected = ref_gather(src, (), axis=axis, mode=mode)
    np.testing.assert_array_equal(expected, src[()])
    np.testing.assert_array_equal(backend.call(cs.gather, src, (), axis=axis, mode=mode), expected)
    dst = backend.asarray(np.zeros(shape, dtype))
    assert cs.gather_into(dst, backend.asarray(src), (), axis=axis, mode=mode) is dst
    np.testing.assert_array_equal(backend.to_numpy(dst), expected)


# ---- the other group functions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", GEOMETRIES)
def test_group_functions_against_their_references(backend, shape, axis):
    src = values(shape, "float64", 8)
    src_nan = src.copy()
    if src.size:
        src_nan.flat[0] = np.nan
    for kind in ("argmax", "argmin"):
        expected = ref_scatter_arg(src, (), kind, axis=axis)
        np.testing.assert_array_equal(backend.call(getattr(cs, f"scatter_{kind}"), src, (), axis=axis), expected)
        # NaN: the nan-variants see an empty group there (position n = 1, or fill_value)
        got = backend.call(getattr(cs, f"scatter_nan{kind}"), src_nan, (), axis=axis, fill_value=-1)
        np.testing.assert_array_equal(got, np.where(np.isnan(src_nan), -1, 0))
    # no device array among the arguments: a host result, on every backend
    assert cs.scatter_count(()) == 1 and cs.scatter_count((), dim_size=()).shape == ()
    positive = np.asarray(src > 0)
    for f in (cs.scatter_any, cs.scatter_all):
        got = f(backend.asarray(positive), (), axis=axis)
        assert type(got) is backend.xp.ndarray   # a 0-d array for a 0-d result, not a NumPy scalar
        np.testing.assert_array_equal(backend.to_numpy(got), positive)
    for ddof in (0, 1):
        for std in (False, True):
            name = "std" if std else "var"
            expected = ref_var(src, (), ddof=ddof, std=std, axis=axis)
            np.testing.assert_allclose(backend.call(getattr(cs, f"scatter_{name}"), src, (), ddof=ddof, axis=axis),
                                       expected, equal_nan=True)
            np.testing.assert_allclose(backend.call(getattr(cs, f"scatter_nan{name}"), src, (), ddof=ddof,
                                                    axis=axis), expected, equal_nan=True)
    np.testing.assert_allclose(backend.call(cs.scatter_logsumexp, src, (), axis=axis),
                               ref_logsumexp(src, (), axis=axis))
    for log in (False, True):
        f = cs.scatter_log_softmax if log else cs.scatter_softmax
        np.testing.assert_allclose(backend.call(f, src, (), axis=axis), ref_softmax(src, (), log=log, axis=axis))
    for op in ("add", "mul", "max", "min"):
        for exclusive in (False, True):
            np.testing.assert_array_equal(
                backend.call(cs.scatter_scan, src, (), op, axis=axis, exclusive=exclusive),
                ref_scan(src, (), op, axis=axis, exclusive=exclusive))


# ---- reverse functions: against central differences of the references ------------------------------------------

def _float_ops():
    return [op for op in OPS if not get_op(op).winner or op in ("set", "first")]


@pytest.mark.parametrize("op", _float_ops())
@pytest.mark.parametrize("shape,axis", [((3, 4), 0), ((2, 3), 1), ((), 0)])
def test_scatter_reverse_functions_match_central_differences(backend, op, shape, axis):
    src, dst = values(shape, "float64", 9, op), values(shape, "float64", 10, op)
    g, t = values(shape, "float64", 11), values(shape, "float64", 12)
    out = ref_scatter(src, (), op, axis=axis)
    want_src = numeric_vjp(lambda s: ref_scatter(s, (), op, axis=axis), src, g)
    got = backend.call(cs.scatter_vjp_src, op, g, src, (), out, axis=axis)
    np.testing.assert_allclose(got, want_src, rtol=1e-6, atol=1e-7)
    got = backend.call(cs.scatter_jvp, op, src, (), out, t, axis=axis)
    np.testing.assert_allclose(np.sum(got * g), np.sum(want_src * t), rtol=1e-6, atol=1e-7)
    # into a given dst: the gradient with respect to dst too
    out = ref_scatter(src, (), op, axis=axis, dst=dst)
    want_dst = numeric_vjp(lambda d: ref_scatter(src, (), op, axis=axis, dst=d), dst, g)
    got = backend.call(cs.scatter_vjp_dst, op, g, dst, src, (), out, axis=axis)
    np.testing.assert_allclose(got, want_dst, rtol=1e-6, atol=1e-7)
    got = backend.call(cs.scatter_jvp, op, src, (), out, t, dst=dst, dst_dot=t, axis=axis)
    want_src = numeric_vjp(lambda s: ref_scatter(s, (), op, axis=axis, dst=dst), src, g)
    np.testing.assert_allclose(np.sum(got * g), np.sum((want_src + want_dst) * t), rtol=1e-6, atol=1e-7)


def test_family_reverse_functions_match_central_differences(backend):
    src, g, t = values((3, 4), "float64", 13), values((3, 4), "float64", 14), values((3, 4), "float64", 15)
    cases = {"logsumexp": lambda s: ref_logsumexp(s, ()), "softmax": lambda s: ref_softmax(s, ()),
             "log_softmax": lambda s: ref_softmax(s, (), log=True), "var": lambda s: ref_var(s, (), ddof=0),
             "std": lambda s: ref_var(s + 0.0, (), ddof=0, std=True)}
    for name, ref in cases.items():
        out = getattr(cs, f"scatter_{name}")(src, ())
        want = numeric_vjp(ref, src, g)
        if name == "std":   # one entry: std 0, whose derivative is not defined; the VJP gives 0 (docs/semantics.rst)
            want = np.zeros_like(src)
        if name in ("var", "std"):
            got = backend.call(getattr(cs, f"scatter_{name}_vjp"), g, src, (), out)
        elif name == "logsumexp":
            got = backend.call(cs.scatter_logsumexp_vjp, g, src, (), out)
        else:
            got = backend.call(getattr(cs, f"scatter_{name}_vjp"), g, out, ())
        np.testing.assert_allclose(got, want, atol=1e-7, err_msg=name)
    for op in ("add", "mul", "max", "min"):
        out = ref_scan(src, (), op)
        want = numeric_vjp(lambda s: ref_scan(s, (), op), src, g)
        np.testing.assert_allclose(backend.call(cs.scatter_scan_vjp, op, g, src, ()), want, atol=1e-7)
        np.testing.assert_allclose(backend.call(cs.scatter_scan_jvp, op, src, (), t), t, atol=1e-12)
    np.testing.assert_array_equal(backend.call(cs.gather_vjp_src, g, (), (3, 4)), g)
    np.testing.assert_array_equal(backend.call(cs.gather_jvp, t, ()), t)


# ---- gather_scatter ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", FUSED_OPS)
@pytest.mark.parametrize("indices", ["both", "gather", "scatter"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gather_scatter_and_its_reverse(backend, op, indices, weighted):
    """One edge: ``() -> ()``, or an empty tuple on one side and a 0-d index on the other (same shape I = ())."""
    src = values((3, 4), "float64", 16, op)
    gather_index = () if indices != "scatter" else np.array(2)
    scatter_index = () if indices != "gather" else np.array(1)
    dim_size = () if indices != "gather" else 2
    weight = np.array(1.5) if weighted else None
    expected = ref_gather_scatter(src, gather_index, scatter_index, op, weight=weight, dim_size=dim_size)
    got = backend.call(cs.gather_scatter, src, gather_index, scatter_index, op, weight=weight, dim_size=dim_size)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    plan = cs.gather_scatter_plan(gather_index, scatter_index, src_size=src.shape[:0 if indices != "scatter"
                                                                                   else 1], dim_size=dim_size)
    np.testing.assert_allclose(cs.gather_scatter(src, plan=plan, op=op, weight=weight), expected, rtol=1e-12)
    g = values(expected.shape, "float64", 17)
    kw = dict(weight=weight, dim_size=dim_size)

    def forward(s, w=weight):
        return ref_gather_scatter(s, gather_index, scatter_index, op, weight=w, dim_size=dim_size)

    want_src = numeric_vjp(forward, src, g)
    got = backend.call(cs.gather_scatter_vjp_src, op, g, src, gather_index, scatter_index, expected, **kw)
    np.testing.assert_allclose(got, want_src, rtol=1e-6, atol=1e-8)
    if weighted:
        want_w = numeric_vjp(lambda w: forward(src, w), weight, g)
        got = backend.call(cs.gather_scatter_vjp_weight, op, g, src, gather_index, scatter_index, expected, **kw)
        np.testing.assert_allclose(got, want_w, rtol=1e-6, atol=1e-8)
    t = values(src.shape, "float64", 18)
    got = backend.call(cs.gather_scatter_jvp, op, src, gather_index, scatter_index, expected, t, **kw)
    np.testing.assert_allclose(np.sum(got * g), np.sum(want_src * t), rtol=1e-6)


# ---- grad: second order, both modes -----------------------------------------------------------------------------

@pytest.mark.parametrize("op", [op for op in OPS if op not in ("div", "nanprod")] + ["div"])
def test_grad_second_order(op):
    csgrad = pytest.importorskip("grad")
    check_grads = pytest.importorskip("autograd.test_util").check_grads
    src, dst = values((2, 3), "float64", 19, op), values((2, 3), "float64", 20, op)
    check_grads(lambda x: csgrad.scatter(x, (), op, axis=1), modes=["fwd", "rev"], order=2)(src)
    check_grads(lambda d, x: csgrad.scatter_into(d, x, (), op), modes=["fwd", "rev"], order=2)(dst, src)
    if op in FUSED_OPS:
        check_grads(lambda x, w: csgrad.gather_scatter(x, (), (), op, weight=w), modes=["fwd", "rev"],
                    order=2)(src, np.array(1.5))


def test_grad_family_second_order():
    csgrad = pytest.importorskip("grad")
    check_grads = pytest.importorskip("autograd.test_util").check_grads
    src = values((2, 3), "float64", 21)
    for name in ("gather", "scatter_logsumexp", "scatter_softmax", "scatter_log_softmax", "scatter_var"):
        check_grads(lambda x: getattr(csgrad, name)(x, ()), modes=["fwd", "rev"], order=2)(src)
    check_grads(lambda x: csgrad.scatter_scan(x, (), "mul"), modes=["fwd", "rev"], order=2)(src)
    check_grads(lambda d, x: csgrad.gather_into(d, x, ()), modes=["fwd", "rev"], order=2)(src, src + 1)


# ---- Dask -------------------------------------------------------------------------------------------------------

def test_dask_functions_match_the_in_memory_ones():
    da = pytest.importorskip("dask.array")
    csd = pytest.importorskip("cyscatter.dask")
    src = values((5, 4), "float64", 22)
    src[1, 2] = np.nan
    lazy = da.from_array(src, chunks=(2, 3))
    for axis in (0, 1, 2, -1):
        for op in ("add", "mean", "max", "nansum", "mul"):
            np.testing.assert_array_equal(csd.scatter(lazy, (), op, dim_size=(), axis=axis).compute(),
                                          ref_scatter(src, (), op, axis=axis))
        for kind in ("argmax", "argmin", "nanargmax", "nanargmin"):
            np.testing.assert_array_equal(getattr(csd, f"scatter_{kind}")(lazy, (), dim_size=(), axis=axis)
                                          .compute(), getattr(cs, f"scatter_{kind}")(src, (), axis=axis))
        np.testing.assert_array_equal(csd.scatter_any(lazy > 0, (), dim_size=(), axis=axis).compute(), src > 0)
        np.testing.assert_array_equal(csd.scatter_all(lazy > 0, (), dim_size=(), axis=axis).compute(), src > 0)
        np.testing.assert_array_equal(csd.scatter_scan(lazy, (), "add", dim_size=(), axis=axis).compute(),
                                      ref_scan(src, (), "add", axis=axis))
        np.testing.assert_array_equal(csd.gather(lazy, (), axis=axis).compute(), src)
    unknown = lazy[lazy[:, 0] > 0]   # chunk sizes unknown until computed
    with pytest.raises(ValueError, match="src has unknown chunk sizes"):
        csd.gather(unknown, ())
    count = csd.scatter_count((), dim_size=())
    assert count.shape == () and int(count.compute()) == 1
    with pytest.raises(ValueError, match="dim_size=3"):
        csd.scatter(lazy, (), dim_size=3)
    with pytest.raises(ValueError, match="dim_chunks"):
        csd.scatter(lazy, (), dim_size=(), dim_chunks=(2,))


# ---- errors -----------------------------------------------------------------------------------------------------

def test_sizes_for_axes_the_index_does_not_address_are_refused():
    src = np.ones((2, 3))
    for bad in (5, (5,), [1, 2]):
        with pytest.raises(ValueError, match="addresses 0 axes"):
            cs.scatter(src, (), dim_size=bad)
    with pytest.raises(ValueError, match="one entry of each per edge"):
        cs.gather_scatter(src, (), np.array([0, 1]))
    with pytest.raises(ValueError, match="dst shape"):
        cs.scatter_into(np.zeros((3, 2)), src, ())
    with pytest.raises(ValueError, match="does not fit"):
        cs.scatter(src, (), axis=3)
