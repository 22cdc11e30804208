"""op "sqrt_n" (TensorFlow's ``tf.math.unsorted_segment_sqrt_n``) against an explicit NumPy loop
with TF's definition (TF is not installed): ``out[j] = sum_{k: index[k] == j} src[k] / sqrt(N_j)``, N_j the number
of entries of group j, 0 for an empty group; integers give float64. Also its in-place meaning (mean's
convention), its reverse functions, segment / gather_scatter / Dask, and the GPU path (emulated)."""
import numpy as np
import pytest
from testing import INDEX_DTYPES, INDEX_KINDS

import cyscatter as cs

DIMS = {"int": (5,), "tuple": (2, 3)}


def tf_sqrt_n(src, coords, dims, axis=0):
    """TF's unsorted_segment_sqrt_n by loops, on B + I + F (B = src.shape[:axis]); float64 for integer src."""
    src = np.asarray(src)
    out_dtype = np.float64 if src.dtype.kind in "iu" else src.dtype
    ishape = coords[0].shape
    batch, feat = src.shape[:axis], src.shape[axis + len(ishape):]
    sums = np.zeros(batch + dims + feat, np.float64 if out_dtype != np.complex128 else np.complex128)
    count = np.zeros(dims, np.int64)
    for k in np.ndindex(*ishape):
        j = tuple(int(c[k]) for c in coords)
        count[j] += 1
        for b in np.ndindex(*batch):
            sums[b + j] += src[b + k]
    out = np.zeros_like(sums)
    for j in np.ndindex(*dims):
        if count[j]:
            for b in np.ndindex(*batch):
                out[b + j] = sums[b + j] / np.sqrt(count[j])
    return out.astype(out_dtype), count


def _case(kind, index_dtype, axis, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dims = DIMS[kind]
    n = 11
    coords = tuple(rng.integers(0, d, n).astype(index_dtype) for d in dims)
    coords[-1][coords[-1] == 1] = 0   # groups (..., 1) are empty
    coords[0][0] = dims[0] - 1   # the last row reached
    batch = (2,) * axis
    src = rng.integers(-4, 5, batch + (n, 3)) if np.dtype(dtype).kind in "iu" else rng.standard_normal(batch + (n, 3))
    if np.dtype(dtype).kind == "u":
        src = np.abs(src)
    index = coords[0] if kind == "int" else coords
    return src.astype(dtype), index, coords, dims


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8", "int64", "complex128"])
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", [0, 1])
def test_matches_tf_definition(backend, kind, index_dtype, axis, dtype):
    src, index, coords, dims = _case(kind, index_dtype, axis, dtype)
    expected, count = tf_sqrt_n(src, coords, dims, axis)
    assert (count == 0).any()   # an empty group: 0
    got = backend.call(cs.scatter, src, index, "sqrt_n", dim_size=dims, axis=axis)
    assert got.dtype == expected.dtype
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


def test_float16_accumulates_in_float32():
    src, index = np.ones(3000, np.float16), np.zeros(3000, np.int64)
    got = cs.scatter(src, index, "sqrt_n")
    assert got.dtype == np.float16 and got[0] == np.float16(3000 / np.sqrt(3000.0))


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_scatter_into_follows_mean_convention(backend, kind):
    """In place, each reached row gets ``sum / sqrt(count)`` added (as mean adds the group mean); dst is not a
    member of the group and rows no entry reaches keep their values."""
    src, index, coords, dims = _case(kind, np.int64, 0, np.float64)
    dst = np.random.default_rng(1).standard_normal(dims + (3,))
    expected_sqrt_n, count = tf_sqrt_n(src, coords, dims)
    got = backend.call(cs.scatter_into, dst.copy(), src, index, "sqrt_n")
    np.testing.assert_allclose(got, dst + expected_sqrt_n, rtol=1e-12)
    assert np.array_equal(got[count == 0], dst[count == 0])
    means = backend.call(cs.scatter_into, dst.copy(), src, index, "mean")
    reached = count > 0
    np.testing.assert_allclose((got - dst)[reached], (means - dst)[reached] * np.sqrt(count[reached])[:, None],
                               rtol=1e-12)


def test_fill_value_and_modes():
    src, index = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 0, -1, 9])
    got = cs.scatter(src, index, "sqrt_n", dim_size=3, mode="drop", fill_value=-7.0)
    np.testing.assert_allclose(got, [3 / np.sqrt(2), -7.0, -7.0])
    got = cs.scatter(src, index, "sqrt_n", dim_size=3, mode="normalize_drop")
    np.testing.assert_allclose(got, [3 / np.sqrt(2), 0.0, 3.0])
    with pytest.raises(TypeError, match="sqrt_n.*int64"):
        cs.scatter_into(np.zeros(3, np.int64), src, np.array([0, 1, 2, 0]), "sqrt_n")


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_reverse_functions(backend, kind):
    """Linear: the VJP is g / sqrt(count) gathered, the JVP the sqrt_n of the tangents."""
    src, index, coords, dims = _case(kind, np.int64, 0, np.float64)
    out = cs.scatter(src, index, "sqrt_n", dim_size=dims)
    _, count = tf_sqrt_n(src, coords, dims)
    g = np.random.default_rng(2).standard_normal(out.shape)
    expected = np.stack([g[tuple(int(c[k]) for c in coords)] / np.sqrt(count[tuple(int(c[k]) for c in coords)])
                         for k in range(src.shape[0])])
    got = backend.call(cs.scatter_vjp_src, "sqrt_n", g, src, index, out)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    tangent = np.random.default_rng(3).standard_normal(src.shape)
    got = backend.call(cs.scatter_jvp, "sqrt_n", src, index, out, tangent)
    np.testing.assert_allclose(got, tf_sqrt_n(tangent, coords, dims)[0], rtol=1e-12, atol=1e-15)


def test_segment_and_gather_scatter():
    rng = np.random.default_rng(5)
    src = rng.standard_normal((7, 2))
    indptr = np.array([0, 3, 3, 7])
    ids = np.repeat(np.arange(3), np.diff(indptr))
    expected = tf_sqrt_n(src, (ids,), (3,))[0]
    np.testing.assert_allclose(cs.segment(src, indptr, "sqrt_n"), expected, rtol=1e-12)
    gi, si = rng.integers(0, 7, 12), rng.integers(0, 4, 12)
    w = rng.standard_normal(12)
    expected = tf_sqrt_n(src[gi] * w[:, None], (si,), (4,))[0]
    out = cs.gather_scatter(src, gi, si, "sqrt_n", weight=w, dim_size=4)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    g = rng.standard_normal(out.shape)
    count = np.bincount(si, minlength=4)
    expected_src = np.zeros_like(src)
    np.add.at(expected_src, gi, (g[si] / np.sqrt(count[si])[:, None]) * w[:, None])
    np.testing.assert_allclose(cs.gather_scatter_vjp_src("sqrt_n", g, src, gi, si, out=out, weight=w, dim_size=4),
                               expected_src, rtol=1e-12)


@pytest.mark.parametrize("chunks", [(12,), (5, 0, 7), (1,) * 12])
def test_dask_merges_sums_and_counts(chunks):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    rng = np.random.default_rng(6)
    src, index = rng.standard_normal((12, 2)), rng.integers(0, 5, 12)
    lazy = csd.scatter(da.from_array(src, chunks=(chunks, 2)), da.from_array(index, chunks=chunks), "sqrt_n",
                       dim_size=6, split_every=2)
    np.testing.assert_allclose(lazy.compute(scheduler="threads"), tf_sqrt_n(src, (index,), (6,))[0], rtol=1e-12)


def test_registry_entry():
    op = cs.get_op("sqrt_n")
    assert op.counts and op.sqrt_counts and op.linear and op.true_division and op.combine == "add"
    assert op.opcode == cs.get_op("mean").opcode   # mean's path: the add kernel, then a division
