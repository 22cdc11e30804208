"""The NaN-skipping ops that count (nanmean; nansum, nanprod, fmax, fmin with a fill_value) read a src that needs
converting or laying out (float16/bfloat16, Fortran order, a strided or reversed view, features-first data) a
block of converted rows at a time instead of a whole converted copy. Against the plain-loop reference, and bit
for bit against the same call on a C-ordered copy in the compute dtype, with blocks of a few rows (many blocks
per call), both counting strategies (one pass, or sums then counts), scatter, out= and scatter_into, batch dims,
drop mode; and the memory: no src-sized array."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from compare import assert_same
from memory import traced_peak
from reference import ref_scatter

import cyscatter as cs
from cyscatter._backends import host
from cyscatter._runtime import machine

OPS = [("nanmean", None), ("nansum", -1.5), ("nanprod", 7.0), ("fmax", -2.0), ("fmin", 3.0), ("nanmean", 9.0)]
LAYOUTS = ["fortran", "reversed", "float16", "bfloat16", "features-first"]


@pytest.fixture(params=["one pass", "two passes"])
def small_blocks(request, monkeypatch):
    """Small srcs take the block path too, in blocks of a few rows; the counts in one pass with the sums or
    after them."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    monkeypatch.setattr(host, "STAGE_CHUNK_BYTES", 96)
    if request.param == "two passes":
        # a last-level cache of one byte: no table "fits" it, so the counts take their own pass
        monkeypatch.setattr(machine, "ACTIVE", dataclasses.replace(machine.ACTIVE, llc_bytes=1))
    return request.param


def _src(layout, rng, n=70, f=5):
    x = rng.standard_normal((n, f)) * 4
    x[rng.random(x.shape) < 0.15] = np.nan
    x[rng.random(x.shape) < 0.05] = -0.0
    x[:, 1] = np.nan   # a feature column of NaNs only: its groups are empty, their fill_value shows
    if layout == "float16":
        return x.astype(np.float16), 0
    if layout == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return x.astype(ml_dtypes.bfloat16), 0
    if layout == "fortran":
        return np.asfortranarray(x.astype(np.float32)), 0
    if layout == "reversed":
        return x[::-1, ::-1], 0
    return np.ascontiguousarray(x.T), 1   # features-first: the index along the last axis


@pytest.mark.parametrize("op,fill", OPS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_counted_nan_ops_read_blocks_in_place(small_blocks, op, fill, layout):
    rng = np.random.default_rng([len(layout), len(op)])
    src, axis = _src(layout, rng)
    index = rng.integers(0, 9, src.shape[axis])
    index[index == 8] = 0   # the last group is empty
    if layout == "bfloat16":   # (the reference loops know NumPy's dtypes: the float32 values, rounded once)
        expected = ref_scatter(src.astype(np.float32), index, op, dim_size=9, axis=axis, fill_value=fill)
        expected = expected.astype(src.dtype)
    else:
        expected = ref_scatter(src, index, op, dim_size=9, axis=axis, fill_value=fill)
    got = cs.scatter(src, index, op, dim_size=9, axis=axis, fill_value=fill)
    assert_same(got, expected, *_ulps(op, src))
    # and bit for bit the whole-array path of a C-ordered copy (the same sums in the same order)
    assert_same(got, cs.scatter(np.ascontiguousarray(src), index, op, dim_size=9, axis=axis, fill_value=fill))
    out = np.full(got.shape, 123, got.dtype)
    cs.scatter(src, index, op, dim_size=9, axis=axis, fill_value=fill, out=out)
    assert_same(out, got)


def _ulps(op, src):
    # the reference accumulates as the kernels do; products and float16 means may round once differently
    return (4, None) if op in ("nanprod", "nanmean") else (0, None)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scatter_into_adds_nan_means(small_blocks, layout):
    rng = np.random.default_rng([len(layout)])
    src, axis = _src(layout, rng)
    index = rng.integers(0, 6, src.shape[axis])
    dst = rng.standard_normal((6, 5) if axis == 0 else (5, 6)).astype(np.float32 if src.dtype.itemsize == 2
                                                                    else src.dtype)
    expected = ref_scatter(src.astype(np.float32) if layout == "bfloat16" else src, index, "nanmean", axis=axis,
                           dst=dst)
    got = dst.copy()
    cs.scatter_into(got, src, index, "nanmean", axis=axis)
    assert_same(got, expected, 4)


def test_batch_dims_and_dropped_entries(small_blocks):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 40, 6)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    src = np.asfortranarray(x)
    index = rng.integers(-2, 9, 40)
    for op, fill in OPS:
        expected = ref_scatter(src, index, op, dim_size=7, axis=1, fill_value=fill, mode="drop")
        got = cs.scatter(src, index, op, dim_size=7, axis=1, fill_value=fill, mode="drop")
        assert_same(got, expected, *_ulps(op, src))


def test_no_src_sized_copy():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((200_000, 16)).astype(np.float32)
    x[rng.random(x.shape) < 0.01] = np.nan
    index = rng.integers(0, 100, 200_000)
    for src in (np.asfortranarray(x), x.astype(np.float16)):
        for op, fill in (("nanmean", None), ("fmax", -1.0)):
            cs.scatter(src, index, op, dim_size=100, fill_value=fill)
            _, peak = traced_peak(lambda s=src, o=op, f=fill: cs.scatter(s, index, o, dim_size=100, fill_value=f))
            assert peak < x.nbytes / 2, (src.dtype, op, peak)
