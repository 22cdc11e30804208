"""segment reading a src it must convert (float16/bfloat16 into float32, small integers into int64) or lay out
(Fortran order, strided rows) a chunk of rows at a time (`host.converted_chunks`), segments running across chunk
boundaries, against the loop reference of the equivalent scatter (the segment ids as index), bit for bit: rows
are combined in the same order."""
import itertools
import tracemalloc

import numpy as np
import pytest
from group_cases import random_indptr
from reference import ref_scatter

import cyscatter as cs
from cyscatter._backends import host

OPS = ["add", "sub", "mul", "max", "min", "mean", "sqrt_n", "nansum", "nanprod", "fmax", "fmin", "nanmean"]


@pytest.fixture(params=[48, 1 << 20], ids=["tiny-chunks", "chunks"])
def chunked(request, monkeypatch):
    """Every size takes the chunked path, in chunks of `param` bytes (tiny ones: a few rows each)."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    monkeypatch.setattr(host, "STAGE_CHUNK_BYTES", request.param)
    return request.param


def _values(rng, shape, dtype, nan):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -50, 50, shape).astype(dtype)
    x = rng.standard_normal(shape) * 3
    x[rng.random(shape) < 0.1] = -0.0
    if nan:
        x[rng.random(shape) < 0.1] = np.nan
    return x.astype(np.float32).astype(dtype)


def ref_segment(x, indptr, op, axis=0):
    ids = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return ref_scatter(x, ids, op, dim_size=len(indptr) - 1, axis=axis)


def _bits(a):
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        return a.view(np.uint16)
    return a.view(np.dtype(f"u{a.itemsize}")) if a.dtype.kind == "f" else a


def _layout(x, layout):
    if layout == "fortran":
        return np.asfortranarray(x)
    if layout == "strided":
        return np.repeat(x, 2, axis=0)[::2]
    return x


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "uint16", "float32"])
@pytest.mark.parametrize("layout", ["c", "fortran", "strided"])
@pytest.mark.parametrize("width", [1, 5])
@pytest.mark.valid(lambda dtype, op: dtype.startswith("float") or not op.startswith(("nan", "f")))
def test_segment_reads_src_a_chunk_at_a_time(chunked, op, dtype, layout, width):
    """(integers: the NaN-skipping ops are their twins, tested as those)"""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(width)
    x = _values(rng, (90, width), dtype, nan=op.startswith(("nan", "f")))
    indptr = random_indptr(rng, 90, 9)
    got = cs.segment(_layout(x, layout), indptr, op)
    # bfloat16 accumulates in float32 and rounds once (the reference would round every update)
    want = ref_segment(x.astype(np.float32), indptr, op).astype(x.dtype) if x.dtype.name == "bfloat16" else \
        ref_segment(x, indptr, op)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("op", ["add", "max", "nanmean"])
def test_segment_batched_rows_in_chunks(chunked, op):
    rng = np.random.default_rng(3)
    x = _values(rng, (3, 70, 4), np.float16, nan=op == "nanmean")
    indptr = random_indptr(rng, 70, 8)
    want = ref_segment(x, indptr, op, axis=1)
    for src in (x, np.asfortranarray(x)):
        np.testing.assert_array_equal(_bits(cs.segment(src, indptr, op, axis=1)), _bits(want))


def test_chunks_cover_every_row_once(monkeypatch):
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    x = np.arange(2 * 1000 * 3, dtype=np.float16).reshape(2, 1000, 3)
    source = host.rows_source(np.asfortranarray(x), np.float32, 2, 1000, 3)
    assert type(source) is host.StagedRows
    seen = [(r0, r1, rows3.copy()) for r0, r1, rows3 in host.converted_chunks(source, chunk_bytes=4096)]
    assert seen[0][0] == 0 and seen[-1][1] == 1000 and all(a[1] == b[0] for a, b in itertools.pairwise(seen))
    np.testing.assert_array_equal(np.concatenate([r for _, _, r in seen], axis=1), x.astype(np.float32))


def test_float16_segment_allocates_no_converted_copy(monkeypatch):
    monkeypatch.setattr(host, "STAGE_CHUNK_BYTES", 1 << 20)
    rng = np.random.default_rng(5)
    n, f = 100_000, 32
    x = rng.standard_normal((n, f)).astype(np.float16)
    indptr = np.linspace(0, n, 1001).astype(np.int64)
    cs.segment(x[:100], np.array([0, 100]), "add")   # warm caches of the Python layer
    tracemalloc.start()
    try:
        got = cs.segment(x, indptr, "add")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * f * 4 / 4, peak   # a 1 MiB chunk and the table (128 KB), not n x F float32 (12.8 MB)
    want = np.add.reduceat(x.astype(np.float32), indptr[:-1], axis=0)
    assert got.dtype == np.float16   # accumulated in float32, rounded once
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-3, atol=1e-2)
