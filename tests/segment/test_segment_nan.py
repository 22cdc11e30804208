"""The NaN-skipping ops (nansum, nanprod, fmax/nanmax, fmin/nanmin, nanmean) in `segment`, its reverse functions
and grad: against the plain-loop scatter reference on the index expanded from indptr (helpers/reference.py), against
`cs.scatter` on that index (another code path: the core kernel and its separate counting pass), against
numpy_groupies' ``func="nan..."`` and ``np.fmax.reduceat`` / ``np.nansum`` per segment; over value dtypes, layouts
(axis, batch dims), fill values, indptr dtypes, batched pointers and the numpy / cupy-emulated backends."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from group_cases import random_indptr
from inputs import rng_for, values, with_nans
from reference import ref_scatter
from testing import NAN_OPS, VALUE_DTYPES, op_supports

# (src shape, axis): rows along axis
LAYOUTS = {"axis0": ((13, 3), 0), "batch": ((2, 13, 3), 1), "last": ((2, 13), -1), "rows_only": ((13,), 0),
           "wide": ((13, 67), 0)}
FILLS = (None, -3.0, np.nan)


def _case(op, dtype, layout, seed=(), nseg=6, share=0.4):
    rng = rng_for(op, dtype, layout, *seed)
    shape, axis = LAYOUTS[layout]
    src = with_nans(values(dtype, shape, rng, op), rng, share)
    indptr = random_indptr(rng, shape[axis], nseg)
    if np.dtype(dtype).kind in "fc" and shape[axis] >= 4:   # one segment whose entries are all NaN
        indptr = np.unique(np.concatenate([indptr, [1, 3]]))
        np.moveaxis(src, axis, 0)[1:3] = np.nan
    return src, indptr, axis


def _fill_fits(dtype, fill) -> bool:
    return fill is None or np.dtype(dtype).kind in "fc" or (fill == fill)


@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.valid(lambda op, dtype, fill: op_supports(op, dtype) and _fill_fits(dtype, fill)
                   and not (fill is not None and np.dtype(dtype).kind == "u" and fill < 0))
def test_segment_matches_scatter_reference(backend, op, dtype, layout, fill):
    src, indptr, axis = _case(op, dtype, layout)
    ids = cs.segment_ids(indptr)
    nseg = len(indptr) - 1
    want = ref_scatter(src, ids, op, dim_size=nseg, axis=axis % src.ndim, fill_value=fill)
    got = backend.call(cs.segment, src, indptr, op, axis=axis, fill_value=fill)
    assert_same(got, want, *tolerance(backend.name, op, want.dtype, src))
    # the core scatter on the expanded index (its own kernel and counting pass): the same bits on the host
    via_scatter = backend.call(cs.scatter, src, ids, op, dim_size=nseg, axis=axis, fill_value=fill)
    assert_same(got, via_scatter, *tolerance(backend.name, op, want.dtype, src))


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("dtype", ("float32", "float64", "complex64", "complex128"))
@pytest.mark.parametrize("width", (1, 2, 16, 32, 64, 67))
@pytest.mark.parametrize("fill", (None, 7.0))
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_segment_rows_of_every_width_and_signed_zeros(op, dtype, width, fill):
    """One-element rows take the register loop, wider ones the core row update plus the counting pass."""
    rng = rng_for(op, dtype, width)
    src = with_nans(values(dtype, (40, width), rng, op), rng, 0.3)
    if dtype.startswith("float"):
        src.flat[::5] = -0.0
        src.flat[::7] = 0.0
    src[10:14] = np.nan   # segment [10, 14): every element all-NaN
    indptr = np.unique(np.concatenate([random_indptr(rng, 40, 7), [10, 14]]))
    want = ref_scatter(src, cs.segment_ids(indptr), op, dim_size=len(indptr) - 1, fill_value=fill)
    got = cs.segment(src, indptr, op, fill_value=fill)
    assert_same(got, want, *tolerance("numpy", op, want.dtype, src))
    s = int(np.flatnonzero(indptr == 10)[0])
    expected = cs.get_op(op).identity(got.dtype) if fill is None else fill
    assert np.all(got[s] == expected)


npg = pytest.importorskip("numpy_groupies")


@pytest.mark.parametrize("fill", [0.0, np.nan, -1.0])
@pytest.mark.parametrize("op,func", [("nansum", "nansum"), ("nanprod", "nanprod"), ("nanmax", "nanmax"),
                                     ("nanmin", "nanmin"), ("nanmean", "nanmean"), ("fmax", "nanmax"),
                                     ("fmin", "nanmin")])
def test_numpy_groupies(op, func, fill):
    """numpy_groupies on the segment ids: every segment it fills (empty or all-NaN) is filled here too."""
    rng = rng_for(op, func, fill)
    src = with_nans(rng.standard_normal(300), rng, 0.5)
    indptr = np.unique(np.concatenate([random_indptr(rng, 300, 60), [0, 4, 300]]))
    src[:4] = np.nan   # segment 0: all NaN
    nseg = len(indptr) - 1
    expected = npg.aggregate(cs.segment_ids(indptr), src, func=func, size=nseg, fill_value=fill)
    np.testing.assert_allclose(cs.segment(src, indptr, op, fill_value=fill), expected, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op,ufunc,nanfunc", [("fmax", np.fmax, np.nanmax), ("fmin", np.fmin, np.nanmin),
                                              ("nansum", None, np.nansum), ("nanprod", None, np.nanprod),
                                              ("nanmean", None, np.nanmean)])
def test_reduceat_and_nan_functions_per_segment(op, ufunc, nanfunc, dtype):
    """np.fmax.reduceat on the non-empty segments; np.nan* over each segment's rows (a loop of NumPy calls)."""
    rng = rng_for(op, dtype)
    src = with_nans(rng.standard_normal((50, 4)).astype(dtype), rng, 0.3)
    indptr = np.array([0, 3, 4, 10, 25, 25, 50])
    got = cs.segment(src, indptr, op, fill_value=np.nan)
    nonempty = np.diff(indptr) > 0
    if ufunc is not None:
        np.testing.assert_array_equal(got[nonempty], ufunc.reduceat(src, indptr[:-1][nonempty], axis=0))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # np.nanmax / np.nanmean of an all-NaN column
        want = np.stack([nanfunc(src[a:b], axis=0) if b > a else np.full(4, np.nan, dtype)
                         for a, b in zip(indptr[:-1], indptr[1:])])
    if op in ("nansum", "nanprod"):   # np.nansum of all-NaN is 0 (1): the identity, where fill gives NaN here
        allnan = np.stack([np.isnan(src[a:b]).all(axis=0) for a, b in zip(indptr[:-1], indptr[1:])])
        want[allnan] = np.nan
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32" else 1e-13, equal_nan=True)


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("indptr_dtype", ["int8", "int32", "int64", "uint16", "uint64"])
def test_indptr_dtypes(op, indptr_dtype):
    src, indptr, _ = _case(op, "float64", "axis0", seed=(indptr_dtype,))
    want = cs.segment(src, indptr, op, fill_value=-1.0)
    assert_same(cs.segment(src, indptr.astype(indptr_dtype), op, fill_value=-1.0), want)


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int16"])
def test_integers_are_the_twins(op, dtype):
    src, indptr, _ = _case(op, dtype, "axis0")
    twin = cs.get_op(op).twin
    assert_same(cs.segment(src, indptr, op, fill_value=5), cs.segment(src, indptr, twin, fill_value=5))


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("fill", [None, -2.0])
def test_batched_indptr(backend, op, fill):
    rng = rng_for(op, fill, "batched")
    src = with_nans(rng.standard_normal((2, 3, 9, 2)), rng, 0.4)
    src[0, 1, :4] = np.nan
    ptr = np.stack([random_indptr(rng, 9, 4) for _ in range(6)]).reshape(2, 3, 5)
    ptr[0, 1] = [0, 4, 4, 6, 9]   # a segment of NaNs only
    got = backend.call(cs.segment, src, ptr, op, fill_value=fill)
    for b in np.ndindex(2, 3):
        want = ref_scatter(src[b], cs.segment_ids(ptr[b]), op, dim_size=4, fill_value=fill)
        assert_same(got[b], want, *tolerance(backend.name, op, want.dtype, src[b]))
    shared = ptr[:1, :1]   # broadcast batch dims
    got = backend.call(cs.segment, src, shared, op, fill_value=fill)
    for b in np.ndindex(2, 3):
        want = ref_scatter(src[b], cs.segment_ids(shared[0, 0]), op, dim_size=4, fill_value=fill)
        assert_same(got[b], want, *tolerance(backend.name, op, want.dtype, src[b]))


# ---- reverse functions and grad ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("batched", [False, True])
def test_reverse_functions_match_scatter_and_transpose(backend, op, batched):
    rng = rng_for(op, batched, "reverse")
    src = with_nans(rng.standard_normal((2, 10, 3)), rng, 0.3)
    ptr = np.array([0, 3, 3, 7, 10])
    if batched:
        ptr = np.stack([ptr, np.array([0, 1, 5, 9, 10])])
    out = backend.call(cs.segment, src, ptr, op, axis=1)
    g = rng.standard_normal(out.shape)
    v = np.where(np.isnan(src), 0.0, rng.standard_normal(src.shape))
    vjp = backend.call(cs.segment_vjp_src, op, g, src, ptr, out, axis=1)
    jvp = backend.call(cs.segment_jvp, op, src, ptr, out, v, axis=1)
    assert np.all(vjp[np.isnan(src)] == 0)
    np.testing.assert_allclose(np.sum(jvp * g), np.sum(v * vjp), rtol=1e-10)
    rows = [ptr] * 2 if not batched else list(ptr)
    for b, p in enumerate(rows):   # scatter's reverse functions on the expanded index
        ids = cs.segment_ids(p)
        np.testing.assert_allclose(vjp[b], cs.scatter_vjp_src(op, g[b], src[b], ids, out[b]), rtol=1e-13)
        np.testing.assert_allclose(jvp[b], cs.scatter_jvp(op, src[b], ids, out[b], v[b]), rtol=1e-13)


autograd = pytest.importorskip("autograd")


@pytest.mark.parametrize("op", NAN_OPS)
@pytest.mark.parametrize("batched", [False, True])
def test_check_grads_order_2(op, batched):
    """NaN entries held fixed where the result stays differentiable (no ties, each segment keeps a number)."""
    from autograd.test_util import check_grads

    import grad as csgrad
    rng = rng_for(op, batched, "grad")
    src = rng.uniform(0.5, 2.0, (2, 9, 2)) * rng.choice([-1.0, 1.0], (2, 9, 2))
    ptr = np.array([0, 3, 6, 9]) if not batched else np.array([[0, 3, 6, 9], [0, 2, 7, 9]])
    src[:, [1, 4], 0] = np.nan
    src[:, 7, 1] = np.nan
    nan = np.isnan(src)

    def f(x):
        import autograd.numpy as anp
        return anp.where(nan, np.nan, x)

    base = np.where(nan, 0.0, src)
    assert_same(csgrad.segment(src, ptr, op, axis=1), cs.segment(src, ptr, op, axis=1))
    check_grads(lambda x: csgrad.segment(f(x), ptr, op, axis=1), modes=["fwd", "rev"], order=2)(base)


# ---- the kernel's own checks ------------------------------------------------------------------------------------

def test_counted_kernel_checks_its_arguments():
    from cyscatter import group_kernels, kernels
    src = np.ones((1, 4, 2))
    ptr = np.array([0, 2, 4])
    out, counts = np.zeros((1, 2, 2)), np.zeros((1, 2, 2), np.int32)
    with pytest.raises(ValueError, match="NaN-skipping op code"):
        group_kernels.segment_reduce_counted(kernels.OpCode.OP_ADD, src, ptr, out, counts)
    with pytest.raises(ValueError, match="counts shape"):
        group_kernels.segment_reduce_counted(kernels.OpCode.OP_NANADD, src, ptr, out, np.zeros((1, 3, 2), np.int32))
    assert group_kernels.segment_reduce_counted(kernels.OpCode.OP_NANADD, src, np.array([0, 3, 2]), out,
                                                counts) == 1
    assert not out.any() and not counts.any()   # refused before anything is written
