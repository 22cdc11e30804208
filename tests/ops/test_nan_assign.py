"""nanlast / nanfirst: per output element the value of its last (first) non-NaN entry in index order
(numpy_groupies' nanlast / nanfirst), against a plain-loop reference, numpy_groupies, per-element NumPy
indexing; in scatter, scatter_into, segment and Dask; their reverse functions against finite differences and
grad's check_grads."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from testing import NAN_ASSIGN_OPS

DTYPES = ("float64", "float32", "float16", "complex64", "int32", "uint8")


def ref_nan_assign(src, index, op, size, fill=0, dst=None):
    """Per output element: a loop over the entries in index order keeping the last (first) non-NaN one."""
    out = np.full((size,) + src.shape[1:], fill, src.dtype) if dst is None else dst.copy()
    for f in np.ndindex(*src.shape[1:]):
        for j in range(size):
            members = [k for k in range(len(index)) if index[k] == j and not np.isnan(src[(k,) + f])]
            if members:
                out[(j,) + f] = src[(members[-1] if op == "nanlast" else members[0],) + f]
    return out


def _case(seed, dtype, n=40, size=7, width=3):
    rng = np.random.default_rng(seed)
    index = rng.integers(0, size - 1, n)   # the last row stays empty
    src = (rng.integers(-9, 10, (n, width)) + (0.5 if np.dtype(dtype).kind in "fc" else 0)).astype(dtype)
    if np.dtype(dtype).kind in "fc":
        src[rng.random(src.shape) < 0.4] = np.nan
        src[index == 0, width - 1] = np.nan   # an element whose entries are all NaN
        if np.dtype(dtype).kind == "c":
            src[3, width - 1] = complex(1.0, np.nan)   # a NaN part alone makes the entry NaN
    return src, index, size


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fill", [None, 2])
def test_scatter_matches_loop_reference(backend, op, dtype, fill):
    src, index, size = _case(1, dtype)
    got = backend.call(cs.scatter, src, index, op, dim_size=size, fill_value=fill)
    assert_same(got, ref_nan_assign(src, index, op, size, 0 if fill is None else fill))


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
def test_integers_are_the_twins(op):
    src, index, size = _case(2, "int64")
    twin = cs.get_op(op).twin
    assert_same(cs.scatter(src, index, op, dim_size=size), cs.scatter(src, index, twin, dim_size=size))


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
def test_matches_numpy_groupies(op):
    npg = pytest.importorskip("numpy_groupies")
    src, index, size = _case(3, "float64", width=1)
    want = npg.aggregate(index, src[:, 0], func=op, size=size, fill_value=0.0)
    np.testing.assert_array_equal(cs.scatter(src[:, 0], index, op, dim_size=size), want)


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
@pytest.mark.parametrize("dtype", ("float64", "complex128"))
def test_scatter_into_keeps_elements_without_a_number(backend, op, dtype):
    src, index, size = _case(4, dtype)
    dst = np.full((size, 3), 5, dtype)
    got = backend.call(cs.scatter_into, dst, src, index, op)
    assert_same(got, ref_nan_assign(src, index, op, size, dst=dst))


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
def test_segment_batch_axis_and_modes(backend, op):
    src, index, size = _case(5, "float64")
    order = np.argsort(index, kind="stable")
    indptr = np.searchsorted(index[order], np.arange(size + 1))
    got = backend.call(cs.segment, src[order], indptr, op)
    assert_same(got, ref_nan_assign(src[order], index[order], op, size))
    batched = np.stack([src, src[::-1]])   # batch dims before axis
    got = backend.call(cs.scatter, batched, index, op, axis=1, dim_size=size)
    assert_same(got, np.stack([ref_nan_assign(b, index, op, size) for b in batched]))
    wild = np.where(np.arange(len(index)) % 5 == 0, size + 3, index)   # dropped entries take no part
    got = backend.call(cs.scatter, src, wild, op, dim_size=size, mode="drop")
    keep = wild < size
    assert_same(got, ref_nan_assign(src[keep], index[keep], op, size))


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
@pytest.mark.parametrize("chunks", [(40,), (7, 0, 13, 20), (1,) * 40])
def test_dask_matches_in_memory(op, chunks):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    src, index, size = _case(6, "float64")
    got = csd.scatter(da.from_array(src, chunks=(chunks, 2)), da.from_array(index, chunks=chunks), op,
                      dim_size=size, fill_value=-1.0).compute(scheduler="threads")
    assert_same(got, ref_nan_assign(src, index, op, size, fill=-1.0))


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
def test_reverse_functions(backend, op):
    """The cotangent of an element goes to its winning entry; dst's to the elements no number reached; the
    JVP is the winner's tangent (a NaN entry's tangent, even inf, never reaches the output)."""
    src, index, size = _case(7, "float64")
    rng = np.random.default_rng(8)
    g = rng.standard_normal((size, 3))
    out = cs.scatter(src, index, op, dim_size=size)
    want = np.zeros_like(src)
    for f in range(3):
        for j in range(size):
            members = [k for k in range(len(index)) if index[k] == j and not np.isnan(src[k, f])]
            if members:
                want[members[-1] if op == "nanlast" else members[0], f] = g[j, f]
    got = backend.call(cs.scatter_vjp_src, op, g, src, index, out)
    np.testing.assert_array_equal(got, want)
    dot = rng.standard_normal(src.shape)
    dot[np.isnan(src)] = np.inf
    jvp = backend.call(cs.scatter_jvp, op, src, index, out, dot)
    np.testing.assert_allclose((jvp * g).sum(), (want * np.where(np.isnan(src), 0, dot)).sum(), rtol=1e-13)
    dst = np.zeros((size, 3))
    into = cs.scatter_into(dst.copy(), src, index, op)
    grad_dst = backend.call(cs.scatter_vjp_dst, op, g, dst, src, index, into)
    reached = ref_nan_assign(src, index, op, size, fill=np.nan) == ref_nan_assign(src, index, op, size, fill=np.nan)
    np.testing.assert_array_equal(grad_dst, np.where(reached, 0.0, g))


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
def test_grad(op):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad
    src, index, size = _case(9, "float64")
    np.testing.assert_array_equal(grad.scatter(src, index, op, dim_size=size),
                                  ref_nan_assign(src, index, op, size))
    check_grads(lambda s: grad.scatter(s, index, op, dim_size=size), modes=["rev", "fwd"], order=2)(src)
    check_grads(lambda d: grad.scatter_into(d, src, index, op), modes=["rev", "fwd"], order=2)(np.ones((size, 3)))


@pytest.mark.parametrize("op", NAN_ASSIGN_OPS)
def test_gather_scatter_refuses_assignments(op):
    with pytest.raises(ValueError, match="assignment"):
        cs.gather_scatter(np.ones((3, 2)), np.array([0, 1]), np.array([1, 1]), op)
