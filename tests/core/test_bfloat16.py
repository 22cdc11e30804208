"""bfloat16 values (ml_dtypes.bfloat16): accumulated in float32 and rounded once to bfloat16,
as float16 is. Compared against the plain-loop reference run on the float32 values and rounded (bit for bit),
against torch.bfloat16 (scatter_reduce / index_add_) and JAX (segment ops) where installed, on NumPy, Dask, the
CuPy emulation (which must refuse: CuPy has no bfloat16) and grad (forward only: autograd has no bfloat16)."""
import subprocess
import sys

import numpy as np
import pytest
from reference import ref_scatter
from testing import FUSED_OPS, INDEX_KINDS, OPS, PLAIN_OPS

import cyscatter as cs

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32
INDEX_DTYPES = ("int8", "uint16", "int32", "int64", "uint64")
DIMS = {"int": (5,), "tuple": (2, 3)}


def same_bits(actual, expected):
    """Equal bfloat16 arrays bit for bit (-0.0 is not +0.0), NaNs equal whatever their payload."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == BF16 and expected.dtype == BF16 and actual.shape == expected.shape
    a, e = actual.astype(F32), expected.astype(F32)
    assert np.array_equal(np.isnan(a), np.isnan(e))
    ok = np.isnan(a) | (np.ascontiguousarray(actual).view(np.uint16) == np.ascontiguousarray(expected).view(np.uint16))
    assert ok.all(), f"differ at {np.argwhere(~ok)[:5].tolist()}: {a[~ok][:5]} != {e[~ok][:5]}"


def make_case(kind, index_dtype, axis, op, seed=0, n=17):
    rng = np.random.default_rng(seed)
    dims = DIMS[kind]
    coords = tuple(rng.integers(0, d, n).astype(index_dtype) for d in dims)
    shape = (2,) * axis + (n, 3)
    magnitude = 1.0 if op in ("mul", "div") else 100.0
    src = (rng.uniform(0.5, 2.0, shape) if op in ("mul", "div") else rng.standard_normal(shape)) * magnitude
    src = src.astype(BF16)
    return src, (coords[0] if kind == "int" else coords), dims


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_is_float32_rounded_once(op, kind, index_dtype, axis):
    src, index, dims = make_case(kind, index_dtype, axis, op)
    got = cs.scatter(src, index, op, dim_size=dims, axis=axis)
    assert got.dtype == BF16   # also for div/mean/sqrt_n: a float stays its dtype
    same_bits(got, ref_scatter(src.astype(F32), index, op, dim_size=dims, axis=axis).astype(BF16))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("src_dtype", ["bfloat16", "float32", "int16"])
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_scatter_into_bfloat16_dst(op, src_dtype, kind):
    src, index, dims = make_case(kind, np.int64, 0, op)
    src = src.astype(F32).astype(src_dtype if src_dtype != "bfloat16" else BF16)
    dst = np.random.default_rng(9).uniform(0.5, 2.0, dims + (3,)).astype(BF16)
    expected = ref_scatter(src.astype(BF16).astype(F32), index, op, dst=dst.astype(F32)).astype(BF16)
    got = cs.scatter_into(dst, src, index, op)
    same_bits(got, expected)


def test_scatter_into_casts_follow_same_kind():
    index = np.array([0, 1])
    with pytest.raises(TypeError, match="cannot cast src dtype bfloat16 to dst dtype int32"):
        cs.scatter_into(np.zeros(2, np.int32), np.ones(2, BF16), index)
    dst = np.zeros(2, np.float32)   # bfloat16 into float32: exact
    cs.scatter_into(dst, np.array([1.5, 3.0], BF16), index)
    assert dst.tolist() == [1.5, 3.0]


@pytest.mark.parametrize("op", ["add", "max", "mean"])
def test_dtype_and_out(op):
    src, index, dims = make_case("int", np.int64, 0, op)
    src32 = src.astype(F32)
    got = cs.scatter(src32, index, op, dim_size=dims, dtype=BF16)
    same_bits(got, ref_scatter(src32, index, op, dim_size=dims).astype(BF16))
    out = np.empty(dims + (3,), BF16)
    assert cs.scatter(src, index, op, dim_size=dims, out=out) is out
    same_bits(out, got)
    wide = cs.scatter(src, index, op, dim_size=dims, dtype=np.float64)
    assert wide.dtype == np.float64
    np.testing.assert_allclose(wide, ref_scatter(src.astype(np.float64), index, op, dim_size=dims), rtol=1e-12)


def test_nan_inf_signed_zero():
    src = np.array([np.nan, 1.0, -0.0, 0.0, np.inf, -np.inf, 3.0, 0.0, -0.0], BF16)
    index = np.array([0, 0, 1, 1, 2, 2, 3, 4, 4])
    same_bits(cs.scatter(src, index, "max"), np.array([np.nan, 0.0, np.inf, 3.0, 0.0], BF16))
    same_bits(cs.scatter(src, index, "min"), np.array([np.nan, -0.0, -np.inf, 3.0, -0.0], BF16))
    same_bits(cs.scatter(src, index, "add"), np.array([np.nan, 0.0, np.nan, 3.0, 0.0], BF16))
    # 3000 ones: a bfloat16 accumulator would stop at 256; the float32 one gives 3000, rounded to 3008 (8 bits)
    assert cs.scatter(np.ones(3000, BF16), np.zeros(3000, np.int64))[0] == np.float32(3000).astype(BF16)
    # overflow past bfloat16's max only at the final rounding
    big = np.full(4, 3e38, BF16)
    assert np.isinf(cs.scatter(big, np.zeros(4, np.int64)).astype(F32))[0]


@pytest.mark.parametrize("fill_value", [0.5, -2, np.nan, np.float32(1.25), np.array(7.0, BF16)[()], True])
def test_fill_values(fill_value):
    src, index = np.array([1.0, 2.0], BF16), np.array([0, 2])
    got = cs.scatter(src, index, "max", dim_size=4, fill_value=fill_value)
    expected = np.array([1.0, fill_value, 2.0, fill_value], F32).astype(BF16)
    same_bits(got, expected)


@pytest.mark.parametrize("fill_value", [1 + 2j, np.complex64(1), "a", np.array([1.0, 2.0])])
def test_fill_values_refused(fill_value):
    with pytest.raises(TypeError, match="fill_value"):
        cs.scatter(np.ones(2, BF16), np.array([0, 2]), dim_size=4, fill_value=fill_value)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", ["raise", "drop"])
def test_gather_moves_bytes(kind, mode):
    rng = np.random.default_rng(3)
    dims = DIMS[kind]
    src = rng.standard_normal(dims + (3,)).astype(BF16)
    src.flat[0] = np.nan
    coords = [rng.integers(0, d, 9) for d in dims]
    if mode == "drop":
        coords[0][[1, 4]] = -1
    index = coords[0] if kind == "int" else tuple(coords)
    got = cs.gather(src, index, mode=mode, fill_value=-1.5 if mode == "drop" else None)
    keep = coords[0] >= 0
    expected = np.full((9, 3), -1.5, BF16)
    expected[keep] = src[tuple(c[keep] for c in coords)]
    same_bits(got, expected)
    dst = np.zeros((9, 3), BF16)
    if mode == "raise":
        same_bits(cs.gather_into(dst, src, index), expected)
    same_bits(cs.gather(src.astype(F32), index, mode=mode, fill_value=-1.5 if mode == "drop" else None,
                        dtype=BF16), expected)


@pytest.mark.parametrize("op", OPS)
def test_reverse_functions_are_the_float64_ones(op):
    """The reverse functions compute bfloat16 inputs in float64 and return float64, as for float16: the same
    numbers as for the float64 copies of the inputs (bfloat16 values are exact in float64)."""
    src, index, dims = make_case("int", np.int64, 0, op)
    out = cs.scatter(src, index, op, dim_size=dims)
    g = np.random.default_rng(4).standard_normal(out.shape).astype(BF16)
    t = np.random.default_rng(5).standard_normal(src.shape).astype(BF16)
    w = [a.astype(np.float64) for a in (src, out, g, t)]
    got = cs.scatter_vjp_src(op, g, src, index, out)
    np.testing.assert_array_equal(got, cs.scatter_vjp_src(op, w[2], w[0], index, w[1]))
    dst = np.ones(out.shape, BF16)
    out_into = cs.scatter_into(dst.copy(), src, index, op)
    np.testing.assert_array_equal(cs.scatter_vjp_dst(op, g, dst, src, index, out_into),
                                  cs.scatter_vjp_dst(op, w[2], dst.astype(np.float64), w[0], index,
                                                     out_into.astype(np.float64)))
    np.testing.assert_array_equal(cs.scatter_jvp(op, src, index, out, t),
                                  cs.scatter_jvp(op, w[0], index, w[1], w[3]))
    np.testing.assert_array_equal(cs.gather_vjp_src(t, index, dims + (3,)),
                                  cs.gather_vjp_src(w[3], index, dims + (3,)))


def test_argmax_argmin_positions_as_float32():
    src, index, dims = make_case("tuple", np.int32, 1, "max")
    src.flat[::5] = src.flat[1]   # ties
    for f in (cs.scatter_argmax, cs.scatter_argmin):
        np.testing.assert_array_equal(f(src, index, dim_size=dims, axis=1, fill_value=-1),
                                      f(src.astype(F32), index, dim_size=dims, axis=1, fill_value=-1))


@pytest.mark.parametrize("name", ["scatter_var", "scatter_std", "scatter_logsumexp", "scatter_softmax",
                                  "scatter_log_softmax"])
def test_group_ops_are_float32_rounded(name):
    src, index, dims = make_case("int", np.int64, 0, "add")
    f = getattr(cs, name)
    got = f(src, index, dim_size=dims) if "softmax" not in name else f(src, index)
    want = f(src.astype(F32), index, dim_size=dims) if "softmax" not in name else f(src.astype(F32), index)
    same_bits(got, want.astype(BF16))


@pytest.mark.parametrize("op", PLAIN_OPS)
def test_segment_and_gather_scatter(op):
    src, _, _ = make_case("int", np.int64, 0, op)
    indptr = np.array([0, 4, 4, 11, 17])
    same_bits(cs.segment(src, indptr, op), cs.segment(src.astype(F32), indptr, op).astype(BF16))
    rng = np.random.default_rng(6)
    gi, si = rng.integers(0, 17, 30), rng.integers(0, 6, 30)
    if op not in FUSED_OPS:   # the assignments: gather_scatter refuses them (tests/ops/test_assign.py)
        return
    same_bits(cs.gather_scatter(src, gi, si, op, dim_size=6),
              cs.gather_scatter(src.astype(F32), gi, si, op, dim_size=6).astype(BF16))
    assert cs.scatter_count(si, 6).tolist() == np.bincount(si, minlength=6).tolist()   # unaffected


@pytest.mark.parametrize("op, torch_op", [("add", "sum"), ("mul", "prod"), ("max", "amax"), ("min", "amin"),
                                          ("mean", "mean")])
def test_against_torch_bfloat16(op, torch_op):
    torch = pytest.importorskip("torch")
    src, index, dims = make_case("int", np.int64, 0, op, n=400)
    got = cs.scatter(src, index, op, dim_size=dims).astype(F32)
    t_src = torch.from_numpy(src.astype(F32)).to(torch.bfloat16)
    t_index = torch.from_numpy(index.astype(np.int64))[:, None].expand(-1, 3)
    init = torch.full((dims[0], 3), float(cs.get_op(op).identity(np.float32)), dtype=torch.bfloat16)
    want = init.scatter_reduce(0, t_index, t_src, torch_op, include_self=False).float().numpy()
    # torch may accumulate in bfloat16 (sum/prod/mean): a few bfloat16 ulps of the largest partial magnitude
    if op in ("max", "min"):
        np.testing.assert_array_equal(got, want)
    else:
        scale = np.abs(src.astype(F32)).sum() if op != "mul" else np.abs(got).max()
        np.testing.assert_allclose(got, want, rtol=2 ** -6, atol=float(scale) * 2 ** -8)
    if op == "add":
        added = torch.zeros((dims[0], 3), dtype=torch.bfloat16).index_add_(0, t_index[:, 0], t_src)
        np.testing.assert_allclose(got, added.float().numpy(), rtol=2 ** -6,
                                   atol=float(np.abs(src.astype(F32)).sum()) * 2 ** -8)


@pytest.mark.parametrize("op, segment", [("add", "segment_sum"), ("max", "segment_max"), ("min", "segment_min"),
                                         ("mul", "segment_prod")])
def test_against_jax_bfloat16(op, segment):
    jax = pytest.importorskip("jax")
    src, index, dims = make_case("int", np.int64, 0, op, n=200)
    want = np.asarray(getattr(jax.ops, segment)(jax.numpy.asarray(src), jax.numpy.asarray(index),
                                                num_segments=dims[0]))
    assert want.dtype == BF16
    got = cs.scatter(src, index, op, dim_size=dims)
    if op in ("max", "min"):
        same_bits(got, want)
    else:   # JAX's own accumulation order and precision: within a few bfloat16 ulps of the magnitudes
        scale = np.abs(src.astype(F32)).sum() if op == "add" else np.abs(got.astype(F32)).max()
        np.testing.assert_allclose(got.astype(F32), want.astype(F32), rtol=2 ** -6, atol=float(scale) * 2 ** -8)


@pytest.mark.parametrize("op", OPS)
def test_dask_matches_in_memory(op):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    src, index, dims = make_case("int", np.int64, 0, op)
    lazy = csd.scatter(da.from_array(src, chunks=(5, 3)), da.from_array(index, chunks=5), op, dim_size=dims)
    assert lazy.dtype == BF16
    # the partials are merged in float32 in a different grouping: equal after rounding for max/min, within
    # one bfloat16 ulp otherwise
    got, want = lazy.compute(scheduler="threads"), cs.scatter(src, index, op, dim_size=dims)
    if op in ("max", "min"):
        same_bits(got, want)
    else:
        np.testing.assert_allclose(got.astype(F32), want.astype(F32), rtol=2 ** -7, atol=1e-30)
    same_bits(csd.gather(da.from_array(src, chunks=4), index % 17).compute(), cs.gather(src, index % 17))
    same_bits(csd.scatter(da.from_array(src.astype(F32), chunks=(5, 3)), da.from_array(index, chunks=5), "max",
                          dim_size=dims, dtype=BF16).compute(), cs.scatter(src, index, "max", dim_size=dims))


@pytest.mark.parametrize("call", [
    lambda cp, a: cs.scatter(cp.asarray(a), cp.asarray(np.array([0, 1, 0]))),
    lambda cp, a: cs.scatter_into(cp.asarray(a[:2]), cp.asarray(np.ones(3, F32)), cp.asarray(np.array([0, 1, 0]))),
    lambda cp, a: cs.gather(cp.asarray(a), cp.asarray(np.array([0, 1, 0]))),
    lambda cp, a: cs.scatter_softmax(cp.asarray(a), cp.asarray(np.array([0, 1, 0]))),
    lambda cp, a: cs.segment(cp.asarray(a), cp.asarray(np.array([0, 1, 3]))),
    lambda cp, a: cs.gather_scatter(cp.asarray(a), cp.asarray(np.array([0, 1, 0])), cp.asarray(np.array([1, 0, 0]))),
    lambda cp, a: cs.scatter_argmax(cp.asarray(a), cp.asarray(np.array([0, 1, 0]))),
], ids=["scatter", "scatter_into", "gather", "softmax", "segment", "gather_scatter", "argmax"])
def test_gpu_refuses_bfloat16_arrays(call):
    from emulated_cupy import installed
    with installed():
        cp = sys.modules["cupy"]
        with pytest.raises(TypeError, match=r"(src|dst) has dtype bfloat16, which CuPy does not have"):
            call(cp, np.ones(3, BF16))


@pytest.mark.parametrize("func", [cs.scatter, cs.gather])
def test_gpu_refuses_dtype_bfloat16(func):
    from emulated_cupy import installed
    with installed():
        cp = sys.modules["cupy"]
        with pytest.raises(TypeError, match="dtype=bfloat16 with CuPy arrays"):
            func(cp.asarray(np.ones(3, F32)), cp.asarray(np.array([0, 1, 0])), dtype=BF16)


def test_grad_forward_and_refused_derivative():
    pytest.importorskip("autograd")
    from autograd import grad as agrad

    import grad as csgrad
    src, index, dims = make_case("int", np.int64, 0, "max")
    same_bits(csgrad.scatter(src, index, "max", dim_size=dims), cs.scatter(src, index, "max", dim_size=dims))
    with pytest.raises(TypeError, match="src of dtype bfloat16: autograd has no bfloat16"):
        agrad(lambda s: csgrad.scatter(s, index, "add", dim_size=dims).astype(F32).sum())(src)


def test_import_does_not_import_ml_dtypes():
    code = "import sys, cyscatter, grad; assert 'ml_dtypes' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=cs.__file__.rsplit("/cyscatter/", 1)[0])


@pytest.mark.parametrize("func", [cs.scatter_any, cs.scatter_all])
def test_any_all_of_bfloat16(func):
    src = np.array([0.0, -0.0, np.nan, 1.0, 0.0, 2.0], BF16)
    index = np.array([0, 0, 1, 2, 2, 3])
    np.testing.assert_array_equal(func(src, index, dim_size=5), func(src.astype(F32), index, dim_size=5))


@pytest.mark.parametrize("op", ["max", "min"])
def test_gather_scatter_reverse_finds_the_float32_winners(op):
    """The weighted messages tie in float32 (37 x 1.796875 = 66.484375 on three edges) but not once rounded: the
    reverse functions find the winners among the float32 messages, as the forward compared them, and split the
    cotangent among the three (the float32 call's derivatives, rounded to bfloat16)."""
    x, w = np.array([[37.0]]), np.full(3, 1.796875)
    gi = si = np.zeros(3, np.int64)
    got_out = cs.gather_scatter(x.astype(BF16), gi, si, op, weight=w.astype(BF16), dim_size=1)
    ref_out = cs.gather_scatter(x.astype(F32), gi, si, op, weight=w.astype(F32), dim_size=1)
    same_bits(got_out, ref_out.astype(BF16))
    g = np.ones((1, 1))
    for func in (cs.gather_scatter_vjp_src, cs.gather_scatter_vjp_weight):
        got = func(op, g.astype(BF16), x.astype(BF16), gi, si, got_out, weight=w.astype(BF16))
        want = func(op, g.astype(F32), x.astype(F32), gi, si, ref_out, weight=w.astype(F32))
        np.testing.assert_allclose(np.asarray(got, F32), want, rtol=2 ** -7)
        assert np.all(np.asarray(got, F32) != 0)


def test_gather_scatter_messages_are_float32_not_rounded_one_by_one():
    """The documented rule: weighted bfloat16 messages are formed and summed in float32 and rounded once, so a
    sum can differ from scatter(gather(x) * w) (which rounds each message): 199 against 200 here; max/min
    equal the composition's bits."""
    x, w = np.array([[37.0]], BF16), np.full(3, 1.796875).astype(BF16)
    gi = si = np.zeros(3, np.int64)
    messages32 = x.astype(F32)[gi] * w.astype(F32)[:, None]
    same_bits(cs.gather_scatter(x, gi, si, "add", weight=w, dim_size=1), messages32.sum(0, keepdims=True).astype(BF16))
    assert float(cs.gather_scatter(x, gi, si, "add", weight=w, dim_size=1)[0, 0]) == 199.0
    assert float(cs.scatter(cs.gather(x, gi) * w[:, None], si, "add", dim_size=1)[0, 0]) == 200.0
    for op in ("max", "min"):
        same_bits(cs.gather_scatter(x, gi, si, op, weight=w, dim_size=1),
                  cs.scatter(cs.gather(x, gi) * w[:, None], si, op, dim_size=1))


@pytest.mark.parametrize("value", [2, 2.5, -3])
def test_python_scalar_src_into_bfloat16_out(value):
    """A Python int or float takes a bfloat16 out's dtype, as NumPy 2's weak scalars do (NEP 50)."""
    index = np.array([0, 1, 0])
    want = np.zeros(2, BF16)
    np.add.at(want, index, np.array(value, BF16))
    got = cs.scatter(value, index, out=np.zeros(2, BF16))
    same_bits(got, want)
    with pytest.raises(TypeError, match="complex"):
        cs.scatter(1 + 1j, index, out=np.zeros(2, BF16))
