"""The gather along the last axis of features-first data (one-element rows under many batch slices: the AVX2
tiles of `_layout.h` in `kernels.gather`, src transposed once into a table), against the plain-loop reference,
for every item size, tile edges (widths and entry counts that are not whole tiles), both index dtypes, the
modes, out= and gather_into, batch dims and 1 and 2 threads. Without AVX2 the same calls take the per-slice
path and must give the same values."""
import numpy as np
import pytest
from reference import ref_gather

import cyscatter as cs

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.complex64, np.complex128, np.float16, np.int8]


def _values(rng, shape, dtype):
    x = rng.standard_normal(shape) * 50
    x[rng.random(shape) < 0.05] = -0.0
    if np.dtype(dtype).kind == "c":
        return (x + 1j * rng.standard_normal(shape)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.random(shape) < 0.05] = np.nan
    return x.astype(dtype)


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [3, 8, 9, 40, 70])
@pytest.mark.parametrize("n", [16, 203, 5])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads", [1, 2])
def test_gather_along_the_last_axis_matches_the_loops(dtype, width, n, index_dtype, threads):
    rng = np.random.default_rng(width * 100 + n)
    src = _values(rng, (width, 31), dtype)
    idx = rng.integers(0, 31, n).astype(index_dtype)
    got = cs.gather(src, idx, axis=1, num_threads=threads)
    _same(got, ref_gather(src, idx, axis=1))


@pytest.mark.parametrize("mode", ["raise", "drop", "clip", "wrap"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_modes(mode, dtype):
    rng = np.random.default_rng(1)
    src = _values(rng, (24, 40), dtype)
    idx = rng.integers(-45, 85, 301) if mode != "raise" else rng.integers(0, 40, 301)
    _same(cs.gather(src, idx, axis=-1, mode=mode), ref_gather(src, idx, axis=1, mode=mode))
    if mode == "raise":
        bad = idx.copy()
        bad[200] = 40
        out = np.full((24, 301), 3, dtype)
        with pytest.raises(IndexError):
            cs.gather(src, bad, axis=1, out=out)
        assert (out == 3).all()


@pytest.mark.parametrize("order", ["C", "F", "strided"])
def test_out_and_gather_into(order):
    rng = np.random.default_rng(2)
    src = _values(rng, (33, 50), np.float32)
    idx = rng.integers(0, 50, 130)
    want = ref_gather(src, idx, axis=1)
    out = {"C": np.zeros((33, 130), np.float32), "F": np.zeros((33, 130), np.float32, order="F"),
           "strided": np.zeros((33, 260), np.float32)[:, ::2]}[order]
    cs.gather(src, idx, axis=1, out=out)
    _same(out, want)
    out[...] = 0
    cs.gather_into(out, src, idx, axis=1)
    _same(out, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_batch_dims_and_strided_src(dtype):
    rng = np.random.default_rng(3)
    src = _values(rng, (3, 10, 45), dtype)
    idx = rng.integers(0, 45, 170)
    _same(cs.gather(src, idx, axis=-1), ref_gather(src, idx, axis=2))
    view = _values(rng, (10, 90), dtype)[:, ::2]   # rows not adjacent: the per-slice path
    _same(cs.gather(view, idx, axis=1), ref_gather(view, idx, axis=1))
    few = _values(rng, (16, 5), dtype)   # a table much larger than nothing: a 2-entry index
    _same(cs.gather(few, idx[:2] % 5, axis=1), ref_gather(few, idx[:2] % 5, axis=1))
