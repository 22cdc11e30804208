"""The NaN-skipping reductions: the ops nansum, nanprod, fmax (nanmax), fmin (nanmin), nanmean,
and scatter_nanargmax/argmin, scatter_nanvar/std. Compared with the plain-loop reference (tests/helpers/reference.py),
with NumPy's ``np.fmax.at``/``np.fmin.at``, with numpy_groupies' ``aggregate(func="nan...")`` and with NumPy's
``np.nan*`` per group; over value dtypes, index dtypes and kinds, axis, modes and the numpy / cupy-emulated
backends; their reverse functions against explicit rules and autograd's check_grads (order 2, fwd and rev)."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from inputs import index as make_index, rng_for, values, with_nans
from reference import ref_scatter, result_dtype
from testing import INDEX_DTYPES, INDEX_KINDS, NAN_OPS, VALUE_DTYPES, op_supports

DIMS = {"int": (5,), "tuple": (3, 2)}


def case(op, dtype, kind, axis=0, index_dtype="int64", mode="raise", n=12, seed=()):
    rng = rng_for(op, dtype, kind, axis, index_dtype, mode, *seed)
    dims = DIMS[kind]
    shape = (2, n, 3) if axis == 1 else (n, 3)
    src = with_nans(values(dtype, shape, rng, op), rng)
    idx = make_index(kind, index_dtype, (n,), dims, rng, out_of_range=mode != "raise")
    return rng, src, idx, (dims if kind == "tuple" else dims[0])


def supported(*lists):
    return [p for p in itertools.product(*lists) if op_supports(p[0], p[1])]


# ---- forward: the reference, both forms, every dtype ------------------------------------------------------------

@pytest.mark.parametrize("form", ["scatter", "scatter_into"])
@pytest.mark.parametrize("op,dtype,kind", supported(NAN_OPS, VALUE_DTYPES, INDEX_KINDS))
def test_against_reference(backend, op, dtype, kind, form):
    rng, src, idx, dim_size = case(op, dtype, kind)
    if form == "scatter":
        expected = ref_scatter(src, idx, op, dim_size=dim_size)
        actual = backend.call(cs.scatter, src, idx, op, dim_size=dim_size)
        dst = None
    else:
        dst = with_nans(values(result_dtype(op, dtype), (5, 3) if kind == "int" else (3, 2, 3), rng, op), rng)
        expected = ref_scatter(src, idx, op, dst=dst)
        work = backend.asarray(dst.copy())
        assert cs.scatter_into(work, backend.asarray(src), backend.asarray(idx), op) is work
        actual = backend.to_numpy(work)
    assert_same(actual, expected, *tolerance(backend.name, op, dtype, src, dst))


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", [0, 1, -2])
@pytest.mark.parametrize("mode", ["raise", "drop", "wrap", "clip", "normalize_drop"])
def test_axis_and_modes(backend, op, kind, axis, mode):
    rng, src, idx, dim_size = case(op, "float64", kind, axis=1 if axis else 0, mode=mode)
    ref_axis = 1 if axis else 0
    expected = ref_scatter(src, idx, op, dim_size=dim_size, axis=ref_axis, mode=mode, fill_value=-7.0)
    actual = backend.call(cs.scatter, src, idx, op, dim_size=dim_size, axis=axis if axis else 0, mode=mode,
                          fill_value=-7.0)
    assert_same(actual, expected, *tolerance(backend.name, op, "float64", src))


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_index_dtypes(op, index_dtype):
    _, src, idx, dim_size = case(op, "float32", "int", index_dtype=index_dtype)
    assert_same(cs.scatter(src, idx, op, dim_size=dim_size), ref_scatter(src, idx, op, dim_size=dim_size))


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("threads", [1, 4])
def test_threads_and_sorted_hint_give_the_same_bits(op, threads):
    rng = rng_for(op, threads)
    src = with_nans(rng.standard_normal((20000, 3)), rng)
    idx = np.sort(rng.integers(0, 300, 20000))
    expected = ref_scatter(src[:2000], idx[:2000], op, dim_size=300)
    assert_same(cs.scatter(src[:2000], idx[:2000], op, dim_size=300, num_threads=threads), expected)
    assert_same(cs.scatter(src[:2000, :1], idx[:2000], op, dim_size=300, indices_are_sorted=True),
                expected[:, :1])
    big = cs.scatter(src, idx, op, dim_size=300, num_threads=threads)
    assert_same(big, cs.scatter(src, idx, op, dim_size=300, num_threads=1))


# ---- the peers -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ufunc,op", [(np.fmax, "fmax"), (np.fmin, "fmin"), (np.fmax, "nanmax"),
                                      (np.fmin, "nanmin")])
def test_scatter_into_is_ufunc_at(backend, ufunc, op, dtype):
    """np.fmax.at / np.fmin.at, NaN already in dst included (zeros of both signs excluded: NumPy keeps whichever
    came last, we order them)."""
    rng = rng_for(op, dtype)
    dst = with_nans(rng.standard_normal(40), rng, 0.4).astype(dtype)
    src = with_nans(rng.standard_normal(200), rng, 0.4).astype(dtype)
    idx = rng.integers(0, 40, 200)
    expected = dst.copy()
    ufunc.at(expected, idx, src)
    work = backend.asarray(dst.copy())
    cs.scatter_into(work, backend.asarray(src), backend.asarray(idx), op)
    assert_same(backend.to_numpy(work), expected)


npg = pytest.importorskip("numpy_groupies")


@pytest.mark.parametrize("fill", [0.0, np.nan, -1.0])
@pytest.mark.parametrize("op,func", [("nansum", "nansum"), ("nanprod", "nanprod"), ("nanmax", "nanmax"),
                                     ("nanmin", "nanmin"), ("nanmean", "nanmean")])
def test_numpy_groupies(op, func, fill):
    """With fill_value, every group numpy_groupies fills (empty or all-NaN) is filled here too."""
    rng = rng_for(op, fill)
    src = with_nans(rng.standard_normal(300), rng, 0.5)
    src[:4] = np.nan
    idx = rng.integers(0, 60, 300)
    idx[:4] = 60   # group 60: all NaN; some of 0..59 may be empty or all-NaN as well
    expected = npg.aggregate(idx, src, func=func, size=63, fill_value=fill)
    actual = cs.scatter(src, idx, op, dim_size=63, fill_value=fill)
    np.testing.assert_allclose(actual, expected, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("func", ["nanvar", "nanstd"])
@pytest.mark.parametrize("ddof", [0, 1])
def test_nanvar_nanstd_numpy_groupies_and_numpy(func, ddof):
    rng = rng_for(func, ddof)
    src = with_nans(rng.standard_normal(300), rng, 0.5)
    idx = rng.integers(0, 50, 300)
    idx[:3], src[:3] = 50, np.nan
    actual = getattr(cs, f"scatter_{func}")(src, idx, ddof=ddof, dim_size=52)
    expected = npg.aggregate(idx, src, func=func, size=52, fill_value=np.nan, ddof=ddof)
    np.testing.assert_allclose(actual, expected, rtol=1e-10, equal_nan=True)
    with warnings.catch_warnings():   # NumPy warns on all-NaN and empty slices
        warnings.simplefilter("ignore")
        per_group = [getattr(np, func)(src[idx == j], ddof=ddof) if (idx == j).any() else np.nan
                     for j in range(52)]
    np.testing.assert_allclose(actual, per_group, rtol=1e-10, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "int32"])
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_nanvar_axis_and_dtypes(backend, dtype, kind):
    _, src, idx, dim_size = case("add", dtype, kind, axis=1)
    actual = backend.call(cs.scatter_nanvar, src, idx, ddof=1, dim_size=dim_size, axis=1)
    flat = np.ravel_multi_index(idx, dim_size) if kind == "tuple" else idx
    groups = int(np.prod(dim_size))
    expected = np.full((2, groups, 3), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for j in range(groups):
            if (flat == j).any():
                expected[:, j] = np.nanvar(src[:, flat == j], axis=1, ddof=1)
    expected = expected.reshape(actual.shape)
    np.testing.assert_allclose(actual, expected, rtol=1e-5 if dtype == "float32" else 1e-10, equal_nan=True)


@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
def test_nanarg_numpy_groupies_and_loops(backend, which, dtype):
    rng = rng_for(which, dtype)
    src = with_nans(values(dtype, 200, rng), rng, 0.4)
    idx = rng.integers(0, 30, 200)
    if np.dtype(dtype).kind == "f":
        src[idx == 7] = np.nan   # an all-NaN group
    func = getattr(cs, f"scatter_nanarg{which}")
    actual = backend.call(func, src, idx, dim_size=32, fill_value=-1)
    expected = np.full(32, -1)
    for j in range(32):
        members = np.flatnonzero((idx == j) & ~np.isnan(src.astype(float)))
        if members.size:
            best = getattr(np, which)(src[members])
            expected[j] = members[np.flatnonzero(src[members] == best)[0]]
    np.testing.assert_array_equal(actual, expected)
    peer = npg.aggregate(idx, src, func=f"nanarg{which}", size=32, fill_value=-1)
    if np.dtype(dtype).kind == "f":   # numpy_groupies' all-NaN group: its fill_value too
        np.testing.assert_array_equal(actual, peer)


# ---- decisions: integers, complex, zeros, the GPU twin ------------------------------------------------------------

@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int16", "uint64"])
def test_integers_are_the_twins(op, dtype):
    rng = rng_for(op, dtype)
    src, idx = values(dtype, (30, 2), rng, op), rng.integers(0, 7, 30)
    twin = cs.get_op(op).twin
    assert_same(cs.scatter(src, idx, op, dim_size=8), cs.scatter(src, idx, twin, dim_size=8))
    assert_same(cs.scatter(src, idx, op, dim_size=8, fill_value=3),
                cs.scatter(src, idx, twin, dim_size=8, fill_value=3))


@pytest.mark.parametrize("op", ["nansum", "nanprod", "nanmean"])
def test_complex_nan_in_either_part(op):
    src = np.array([1 + 1j, np.nan + 2j, 3 + 1j * np.nan, 2 - 1j, complex(np.nan, np.nan)])
    idx = np.array([0, 0, 0, 1, 2])
    out = cs.scatter(src, idx, op, dim_size=3, fill_value=9)
    keep = {"nansum": [1 + 1j, 2 - 1j, 9], "nanprod": [1 + 1j, 2 - 1j, 9], "nanmean": [1 + 1j, 2 - 1j, 9]}[op]
    np.testing.assert_array_equal(out, np.array(keep, complex))


def test_fmax_is_ordered_and_refuses_complex():
    with pytest.raises(TypeError, match="fmax.*complex"):
        cs.scatter(np.ones(2, complex), np.array([0, 1]), "nanmax")


def test_all_nan_and_empty_groups_are_the_identity_without_fill():
    src, idx = np.array([np.nan, np.nan, 2.0]), np.array([0, 0, 2])
    assert_same(cs.scatter(src, idx, "nansum", dim_size=3), np.array([0.0, 0.0, 2.0]))
    assert_same(cs.scatter(src, idx, "nanprod", dim_size=3), np.array([1.0, 1.0, 2.0]))
    assert_same(cs.scatter(src, idx, "nanmax", dim_size=3), np.array([-np.inf, -np.inf, 2.0]))
    assert_same(cs.scatter(src, idx, "nanmin", dim_size=3), np.array([np.inf, np.inf, 2.0]))
    assert_same(cs.scatter(src, idx, "nanmean", dim_size=3), np.array([0.0, 0.0, 2.0]))
    assert_same(cs.scatter(src, idx, "nanmean", dim_size=3, fill_value=np.nan), np.array([np.nan, np.nan, 2.0]))


def test_signed_zeros_and_nan_in_dst():
    # fmax orders -0.0 < +0.0 as max does (C's fmax and NumPy leave it to the order); a NaN entry of nansum and
    # nanprod is absent: the value held stays as it is, bit for bit (np.add.at over the other entries), so a -0.0
    # dst stays -0.0, and a fresh output starts from +0.0 as np.nansum's sum does
    assert_same(cs.scatter(np.array([0.0, -0.0, np.nan]), np.array([0, 0, 0]), "fmax"), np.array([0.0]))
    assert_same(cs.scatter(np.array([0.0, -0.0, np.nan]), np.array([0, 0, 0]), "fmin"), np.array([-0.0]))
    assert_same(cs.scatter(np.array([-0.0, np.nan]), np.array([0, 0]), "nansum"), np.array([np.nansum([-0.0, np.nan])]))
    for op, expected in (("nansum", [-0.0, -0.0]), ("nanprod", [-0.0, 0.0]),   # -0.0 * -0.0 = +0.0
                         ("nanmean", [-0.0, 0.0])):   # mean's rule: dst + the group mean (summed from +0.0)
        dst = np.array([-0.0, -0.0])
        cs.scatter_into(dst, np.array([np.nan, -0.0, np.nan]), np.array([0, 1, 1]), op)
        assert_same(dst, np.array(expected))
        mean_dst = np.array([-0.0, -0.0])
        if op == "nanmean":   # as mean on the entries left
            cs.scatter_into(mean_dst, np.array([-0.0]), np.array([1]), "mean")
            assert_same(dst, mean_dst)
    dst = np.array([complex(2, np.nan), complex(-0.0, -0.0)])   # complex: no product with 1+0j, no sum with +0.0
    for op in ("nansum", "nanprod"):
        work = dst.copy()
        cs.scatter_into(work, np.array([complex(np.nan, 1), complex(1, np.nan)]), np.array([0, 1]), op)
        assert_same(work, dst)
    v = np.array([0.5j, complex(-0.0, -0.25), complex(np.nan, 1.0)])
    expected = np.zeros(1, complex) + 1
    np.multiply.at(expected, np.zeros(2, int), v[:2])
    assert_same(cs.scatter(v, np.zeros(3, int), "nanprod"), expected)
    dst = np.array([np.nan, np.nan, 1.0])
    cs.scatter_into(dst, np.array([2.0, np.nan, np.nan]), np.array([0, 1, 2]), "nansum")
    assert_same(dst, np.array([np.nan, np.nan, 1.0]))   # nansum skips NaN in src only: dst is the start value
    dst = np.array([np.nan, np.nan, 1.0])
    cs.scatter_into(dst, np.array([2.0, np.nan, np.nan]), np.array([0, 1, 2]), "fmax")
    assert_same(dst, np.array([2.0, np.nan, 1.0]))      # np.fmax.at: NaN only where both are


@pytest.mark.parametrize("op", NAN_OPS)
def test_segment_and_gather_scatter_take_the_nan_ops(op):
    """Once refused there; now scatter on the segment ids, and scatter of the gathered messages (more in
    tests/segment/test_segment_nan.py and tests/gather_scatter/test_gather_scatter_nan.py)."""
    x = np.array([1.0, np.nan, 3.0, np.nan])
    assert_same(cs.segment(x, np.array([0, 1, 2, 4]), op, fill_value=-1.0),
                cs.scatter(x, np.array([0, 1, 2, 2]), op, dim_size=3, fill_value=-1.0))
    gi, si = np.array([0, 1, 2, 3, 1]), np.array([1, 0, 0, 2, 2])
    assert_same(cs.gather_scatter(x, gi, si, op, fill_value=-1.0), cs.scatter(x[gi], si, op, fill_value=-1.0))


def test_aliases():
    assert cs.get_op("nanmax") is cs.get_op("fmax") and cs.get_op("nanmin") is cs.get_op("fmin")
    assert cs.get_op("nanadd").name == "nansum" and cs.get_op("nanmul").name == "nanprod"


# ---- reverse functions -----------------------------------------------------------------------------------------

def test_vjp_rules_by_hand():
    src = np.array([1.0, np.nan, 3.0, 3.0, np.nan, 2.0, 0.0])
    idx = np.array([0, 0, 0, 0, 1, 2, 2])
    g = np.array([1.0, 10.0, 100.0])
    vjp = {op: cs.scatter_vjp_src(op, g, src, idx, cs.scatter(src, idx, op)) for op in NAN_OPS}
    assert_same(vjp["nansum"], np.array([1, 0, 1, 1, 0, 100, 100.0], float))
    assert_same(vjp["nanmean"], np.array([1 / 3, 0, 1 / 3, 1 / 3, 0, 50, 50], float))
    assert_same(vjp["fmax"], np.array([0, 0, 0.5, 0.5, 0, 100, 0], float))     # ties split, NaN never wins
    assert_same(vjp["fmin"], np.array([1, 0, 0, 0, 0, 0, 100.0], float))
    assert_same(vjp["nanprod"], np.array([9, 0, 3, 3, 0, 0, 200.0], float))    # exact with the zero, NaN is 1
    dst = np.array([5.0, np.nan, 2.0])
    out = cs.scatter_into(dst.copy(), src, idx, "fmax")
    # row 1: a NaN dst reached only by a NaN holds its own value, so its cotangent goes to dst (as on a row no
    # entry reaches; tests/test_issue18_regressions.py); row 2 ties with src 2.0
    assert_same(cs.scatter_vjp_dst("fmax", g, dst, src, idx, out), np.array([1.0, 10, 50], float))
    assert_same(cs.scatter_vjp_src("fmax", g, src, idx, out, dst=dst), np.array([0, 0, 0, 0, 0, 50, 0], float))


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_jvp_is_the_transpose_of_the_vjp(backend, op, kind):
    rng, src, idx, dim_size = case(op, "float64", kind, axis=1)
    out = backend.call(cs.scatter, src, idx, op, dim_size=dim_size, axis=1)
    v, w = rng.standard_normal(src.shape), rng.standard_normal(out.shape)
    jv = backend.call(cs.scatter_jvp, op, src, idx, out, v, axis=1)
    jtw = backend.call(cs.scatter_vjp_src, op, w, src, idx, out, axis=1)
    assert np.all(jtw[np.isnan(src)] == 0)
    np.testing.assert_allclose(np.sum(jv * w), np.sum(v * jtw), rtol=1e-10)


autograd = pytest.importorskip("autograd")


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("form", ["scatter", "scatter_into"])
def test_check_grads_order_2(op, form):
    """NaN entries sit where the result stays differentiable: no ties, each group keeps a number."""
    from autograd.test_util import check_grads
    import grad as csgrad
    rng = rng_for(op, form)
    src = rng.uniform(0.5, 2.0, (9, 2)) * rng.choice([-1.0, 1.0], (9, 2))
    idx = np.array([0, 1, 2, 0, 1, 2, 0, 1, 3])
    src[[3, 7], 0] = np.nan
    src[4, 1] = np.nan
    nan = np.isnan(src)

    def f(x):   # NaN entries held fixed: the numerical derivative moves the others only
        import autograd.numpy as anp
        return anp.where(nan, np.nan, x)

    base = np.where(nan, 0.0, src)
    if form == "scatter":
        check_grads(lambda x: csgrad.scatter(f(x), idx, op, dim_size=4), modes=["fwd", "rev"], order=2)(base)
    else:
        dst = rng.uniform(0.5, 2.0, (4, 2))
        check_grads(lambda d, x: csgrad.scatter_into(d, f(x), idx, op), (0, 1), modes=["fwd", "rev"],
                    order=2)(dst, base)


# ---- Dask -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("fill", [None, -3.0])
def test_dask_partials_combine(op, fill):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    rng = rng_for(op, "dask", fill)
    src = with_nans(rng.standard_normal((60, 2)), rng, 0.5)
    idx = rng.integers(0, 9, 60)
    src[:3], idx[:3] = np.nan, 9   # group 9: all NaN; 10: empty
    lazy = csd.scatter(da.from_array(src, chunks=(7, 2)), da.from_array(idx, chunks=7), op, dim_size=11,
                       dim_chunks=4, split_every=2, fill_value=fill)
    expected = ref_scatter(src, idx, op, dim_size=11, fill_value=fill)
    np.testing.assert_allclose(lazy.compute(), expected, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("split_every", [2, 4])
def test_dask_nanarg_is_the_in_memory_result(which, split_every):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    rng = rng_for(which, "dask-arg", split_every)
    src = np.round(with_nans(rng.standard_normal((60, 2)), rng, 0.5), 1)   # rounded: ties across blocks
    idx = rng.integers(0, 9, 60)
    src[:3], idx[:3] = np.nan, 9   # group 9: all NaN; 10: empty
    lazy = getattr(csd, f"scatter_nanarg{which}")(da.from_array(src, chunks=(7, 2)), da.from_array(idx, chunks=7),
                                                 dim_size=11, dim_chunks=4, split_every=split_every, fill_value=-1)
    expected = getattr(cs, f"scatter_nanarg{which}")(src, idx, dim_size=11, fill_value=-1)
    np.testing.assert_array_equal(lazy.compute(), expected)
    assert (expected[9:] == -1).all()
