"""gather_into a dst whose row elements are apart (Fortran order, and other strides that keep entries adjacent or
not): written in place by `kernels.gather_apart` (AVX2 tiles for 4- and 8-byte items from rows of adjacent
features, a blocked column loop for the rest), against the plain-loop reference for every dtype gather moves,
both index kinds, every axis, the modes and 1-3 threads; no dst-sized temporary; a bad index leaves dst as it
was."""

import numpy as np
import pytest
from memory import traced_peak
from reference import ref_gather

import cyscatter as cs
from cyscatter import kernels

# 4- and 8-byte items take the tiles (when the features are adjacent in src), the others the column loop
DTYPES = [np.float32, np.int32, "U1", np.float64, np.int64, np.complex64, "M8[ns]", "m8[s]",
          np.int8, np.uint8, np.bool_, np.float16, np.int16, np.complex128, "U5", "S3", "f,i"]


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    x = rng.standard_normal(shape) * 50
    if dtype.names:
        out = np.empty(shape, dtype)
        out["f0"], out["f1"] = x, x.astype(np.int64) * 3
        return out
    if dtype.kind == "c":
        return (x + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind in "Mm":
        return rng.integers(-10**12, 10**12, shape).astype(dtype)
    if dtype.kind in "US":
        return np.array([str(v)[:dtype.itemsize // (4 if dtype.kind == "U" else 1)] for v in x.ravel()],
                        dtype).reshape(shape)
    if dtype.kind == "b":
        return x > 0
    if dtype.kind == "f":
        x[rng.random(shape) < 0.05] = -0.0
        x[rng.random(shape) < 0.05] = np.nan
    return x.astype(dtype)


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


@pytest.fixture
def threads_on_small_inputs():
    old = kernels._tune()["min_work"]
    kernels._tune(min_work=1)
    yield
    kernels._tune(min_work=old)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 3, 8, 9, 40, 70])
@pytest.mark.parametrize("n", [5, 16, 203])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fortran_dst_matches_the_loops(threads_on_small_inputs, dtype, width, n, threads):
    rng = np.random.default_rng(width * 1000 + n)
    src = _values(rng, (31, width), dtype)
    idx = rng.integers(0, 31, n).astype(np.int32 if threads == 2 else np.int64)
    dst = np.asfortranarray(_values(rng, (n, width), dtype))
    want = ref_gather(src, idx, dst=dst)
    got = cs.gather_into(dst, src, idx, num_threads=threads)
    assert got is dst and dst.flags.f_contiguous
    _same(dst, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.complex128, "U5"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("src_order", ["C", "F", "strided"])
@pytest.mark.parametrize("threads", [1, 2])
def test_every_axis_and_src_layout(threads_on_small_inputs, dtype, axis, src_order, threads):
    rng = np.random.default_rng(axis + 10)
    src = _values(rng, (4, 11, 40), dtype)
    if src_order == "F":
        src = np.asfortranarray(src)
    elif src_order == "strided":
        src = np.repeat(src, 2, axis=2)[:, :, ::2]
    size = src.shape[axis]
    idx = rng.integers(0, size, 37)
    shape = list(src.shape)
    shape[axis] = 37
    dst = np.asfortranarray(_values(rng, tuple(shape), dtype))
    want = ref_gather(src, idx, axis=axis, dst=dst)
    cs.gather_into(dst, src, idx, axis=axis, num_threads=threads)
    _same(dst, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex64])
@pytest.mark.parametrize("index_kind", ["array", "2d-array", "tuple"])
def test_index_kinds(threads_on_small_inputs, dtype, index_kind):
    rng = np.random.default_rng(3)
    if index_kind == "tuple":
        src = _values(rng, (7, 9, 24), dtype)
        idx = (rng.integers(0, 7, 50), rng.integers(0, 9, 50))
        shape = (50, 24)
    else:
        src = _values(rng, (13, 24), dtype)
        idx = rng.integers(0, 13, (50,) if index_kind == "array" else (5, 10))
        shape = idx.shape + (24,)
    dst = np.asfortranarray(_values(rng, shape, dtype))
    want = ref_gather(src, idx, dst=dst)
    for threads in (1, 2):
        d = dst.copy(order="F")
        cs.gather_into(d, src, idx, num_threads=threads)
        _same(d, want)


@pytest.mark.parametrize("mode", ["drop", "clip", "wrap"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, "U3"])
def test_modes(threads_on_small_inputs, mode, dtype):
    rng = np.random.default_rng(4)
    src = _values(rng, (40, 33), dtype)
    idx = rng.integers(-45, 85, 301)
    dst = np.asfortranarray(_values(rng, (301, 33), dtype))
    want = ref_gather(src, idx, mode=mode, dst=dst)   # dropped entries keep dst's values
    for threads in (1, 2):
        d = dst.copy(order="F")
        cs.gather_into(d, src, idx, mode=mode, num_threads=threads)
        _same(d, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.complex128, "U5"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("where", [0, 150, 300])
def test_a_bad_index_leaves_dst_as_it_was(threads_on_small_inputs, dtype, threads, where):
    rng = np.random.default_rng(5)
    src = _values(rng, (40, 33), dtype)
    idx = rng.integers(0, 40, 301)
    idx[where] = 40 if where != 150 else -41
    dst = np.asfortranarray(_values(rng, (301, 33), dtype))
    before = dst.copy(order="F")
    with pytest.raises(IndexError, match=rf"index\[{where}\]"):
        cs.gather_into(dst, src, idx, num_threads=threads)
    _same(dst, before)


def test_other_strides_with_entries_apart(threads_on_small_inputs):
    """A transposed view (entries apart, features adjacent in neither) and a Fortran slice of a bigger array."""
    rng = np.random.default_rng(6)
    src = _values(rng, (20, 30), np.float64)
    idx = rng.integers(0, 20, 45)
    base = np.asfortranarray(_values(rng, (90, 70), np.float64))
    for dst in (base[::2, 5:35], np.ascontiguousarray(_values(rng, (30, 45), np.float64)).T):
        want = ref_gather(src, idx, dst=dst)
        cs.gather_into(dst, src, idx, num_threads=2)
        _same(dst, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_no_dst_sized_temporary(dtype):
    rng = np.random.default_rng(7)
    n, f = 200_000, 64
    src = _values(rng, (5000, f), dtype)
    idx = rng.integers(0, 5000, n)
    dst = np.zeros((n, f), dtype, order="F")
    cs.gather_into(dst[:100], src, idx[:100])   # warm the Python layer
    _, peak = traced_peak(lambda: cs.gather_into(dst, src, idx))
    assert peak < dst.nbytes / 16, peak
    _same(dst, np.asfortranarray(src[idx]))
