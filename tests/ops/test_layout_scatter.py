"""Same-dtype sums read down their columns (`kernels.scatter_staged`'s AVX2 and AVX-512 tiles, `_layout.h`):
features-first data (index along the last axis) and Fortran-ordered or axis-swapped src, against the plain-loop
reference bit for bit (each table element gets its updates in index order), for every kernel dtype of the add,
tile edges (widths and entry counts that are not whole tiles of either kind), batch slices, out= and
scatter_into, drop and raise, 1 and 2 threads, with the AVX-512 tiles on and off. Without AVX2 the same calls
take the other paths and must give the same bits."""

import numpy as np
import pytest
from memory import traced_peak
from reference import ref_scatter

import cyscatter as cs
from cyscatter import kernels
from cyscatter._backends import host, strided

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint64, np.complex64, np.complex128]


@pytest.fixture(params=["avx512", "avx2"])
def tiles(request):
    """The 4-byte sums on the AVX-512 tiles (where the CPU has them) or on the AVX2 tiles alone."""
    on = request.param == "avx512"
    if kernels._tune_layout_avx512(on) != on:
        kernels._tune_layout_avx512(True)
        pytest.skip("no AVX-512 here")
    yield request.param
    kernels._tune_layout_avx512(True)


@pytest.fixture
def staged(monkeypatch):
    """Small inputs take the staged path too."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)   # large values: int32 sums wrap, as the reference's do
        return rng.integers(info.min // 4 if dtype.kind == "i" else 0, info.max // 4, shape, dtype=dtype)
    x = rng.standard_normal(shape) * 3
    x[rng.random(shape) < 0.03] = -0.0
    if dtype.kind == "c":
        return (x + 1j * rng.standard_normal(shape)).astype(dtype)
    x[rng.random(shape) < 0.02] = np.nan
    x[rng.random(shape) < 0.01] = -np.inf
    return x.astype(dtype)


def _layout(x, layout):
    """`x` (n, F) in `layout`, with the axis the index runs along."""
    if layout == "features-first":
        return np.ascontiguousarray(x.T), 1
    if layout == "features-first-view":
        return np.asfortranarray(x).T, -1
    if layout == "fortran":
        return np.asfortranarray(x), 0
    raise AssertionError(layout)


def _check(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind in "fc":   # the bits: -0.0 and NaN payloads too
        bits = np.dtype(f"u{got.itemsize // (2 if got.dtype.kind == 'c' else 1)}")
        got, want = np.ascontiguousarray(got).view(bits), np.ascontiguousarray(want).view(bits)
    np.testing.assert_array_equal(got, want)


def _result(got, axis):
    return np.moveaxis(got, axis, 0) if axis else got


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["features-first", "features-first-view", "fortran"])
@pytest.mark.parametrize("width", [3, 8, 13, 16, 40, 48, 70])
@pytest.mark.parametrize("n", [203, 16, 15, 40])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads", [1, 2])
def test_sum_read_down_columns_matches_the_loops(tiles, staged, dtype, layout, width, n, index_dtype, threads):
    rng = np.random.default_rng(width * 1000 + n)
    x = _values(rng, (n, width), dtype)
    idx = rng.integers(0, 23, n).astype(index_dtype)
    src, axis = _layout(x, layout)
    got = cs.scatter(src, idx, "add", dim_size=23, axis=axis, num_threads=threads)
    _check(_result(got, axis), ref_scatter(x, idx, "add", dim_size=23))


@pytest.mark.parametrize("op", ["add", "mean", "sum"])
@pytest.mark.parametrize("layout", ["features-first", "fortran"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_drop_counts_and_raise(tiles, staged, op, layout, dtype):
    rng = np.random.default_rng(3)
    x = _values(rng, (301, 24), dtype)
    idx = rng.integers(-4, 34, 301)
    src, axis = _layout(x, layout)
    got = cs.scatter(src, idx, op, dim_size=30, axis=axis, mode="drop")
    _check(_result(got, axis), ref_scatter(x, idx, op, dim_size=30, mode="drop"))
    out = np.full(got.shape, 5, got.dtype)
    before = out.copy()
    bad = np.where((idx < 0) | (idx >= 30), 0, idx)
    bad[250] = 30
    with pytest.raises(IndexError):
        cs.scatter(src, bad, op, dim_size=30, axis=axis, out=out)
    _check(out, before)


@pytest.mark.parametrize("layout", ["features-first", "fortran"])
@pytest.mark.parametrize("dst_order", ["C", "F", "strided"])
@pytest.mark.parametrize("threads", [1, 2])
def test_scatter_into_and_out_add_to_what_is_there(tiles, staged, layout, dst_order, threads):
    rng = np.random.default_rng(4)
    x = _values(rng, (257, 19), np.float32)
    idx = rng.integers(0, 21, 257)
    dst = _values(rng, (21, 19), np.float32)
    want = ref_scatter(x, idx, "add", dst=dst)
    src, axis = _layout(x, layout)
    base = np.ascontiguousarray(dst.T) if axis else dst.copy()
    target = {"C": base.copy(), "F": np.asfortranarray(base),
              "strided": np.repeat(base, 2, axis=-1)[..., ::2]}[dst_order]
    cs.scatter_into(target, src, idx, "add", axis=axis, num_threads=threads)
    _check(_result(target, axis), want)
    out = np.array(base, order="F" if dst_order == "F" else "C")
    cs.scatter(src, idx, "add", dim_size=21, axis=axis, out=out, num_threads=threads)
    _check(_result(out, axis) if axis else out, ref_scatter(x, idx, "add", dim_size=21))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex64])
def test_batch_slices(tiles, staged, dtype):
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 13, 150)
    # (B, F, n), the index along the last axis: B * F one-element-row slices, read transposed
    x = _values(rng, (3, 10, 150), dtype)
    _check(cs.scatter(x, idx, "add", dim_size=13, axis=-1), ref_scatter(x, idx, "add", dim_size=13, axis=2))
    # (B, n, F) with the entries adjacent (a swapped view of C-ordered (B, F, n)): B slices of F columns
    y = np.swapaxes(x, 1, 2)
    _check(cs.scatter(y, idx, "add", dim_size=13, axis=1), ref_scatter(y, idx, "add", dim_size=13, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint64, np.complex64])
@pytest.mark.parametrize("transpose", [True, False])
def test_kernel_entry(tiles, dtype, transpose):
    """`scatter_staged` itself on sizes of every tile edge; the transposed table is filled from out and copied
    back, out read and written in place otherwise."""
    rng = np.random.default_rng(6)
    for width, n in ((8, 8), (9, 17), (16, 16), (33, 64), (48, 35), (64, 77)):
        x = _values(rng, (n, width), dtype)
        idx = rng.integers(0, 12, n)
        init = _values(rng, (12, width), dtype)
        if transpose:
            src = np.ascontiguousarray(x.T)[:, :, None]
            out = np.ascontiguousarray(init.T)[:, :, None]
        else:
            src = np.asfortranarray(x)[None]
            out = init.copy()[None]
        status = kernels.scatter_staged(int(kernels.OpCode.OP_ADD), int(kernels.StageCode.STAGE_COPY), src, idx,
                                        out, None, 0, 1, transpose)
        assert status == -1
        got = out[:, :, 0].T if transpose else out[0]
        _check(got, ref_scatter(x, idx, "add", dst=init))


@pytest.mark.parametrize("check_after", [True, False])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_reports_the_first_bad_entry_and_leaves_out(tiles, check_after, index_dtype, threads):
    """Under mode='raise' the transposed sum may check its index after the tile pass (into its private table):
    the status is still the first bad position, wherever it lies (inside a tile, past the whole tiles, several),
    and out is left as it was."""
    rng = np.random.default_rng(8)
    saved = kernels._tune_layout_check_after()
    try:
        kernels._tune_layout_check_after(check_after)
        width, n, size = 40, 203, 12
        src = np.ascontiguousarray(_values(rng, (n, width), np.float32).T)[:, :, None]
        for bad in ([5], [200], [77, 3], [202, 201], [0]):
            for value in (size, -1, 2**30):
                idx = rng.integers(0, size, n).astype(index_dtype)
                idx[bad] = value
                out = np.ascontiguousarray(_values(rng, (size, width), np.float32).T)[:, :, None]
                before = out.copy()
                status = kernels.scatter_staged(int(kernels.OpCode.OP_ADD), int(kernels.StageCode.STAGE_COPY),
                                                src, idx, out, None, int(kernels.IndexMode.MODE_RAISE), threads,
                                                True)
                assert status == min(bad)
                _check(out, before)
    finally:
        kernels._tune_layout_check_after(saved)


def test_ready_reports_the_tile_widths():
    if not kernels.layout_add_ready(np.float32, 64):
        pytest.skip("no AVX2 here")
    assert kernels.layout_add_ready(np.float64, 4) and not kernels.layout_add_ready(np.float32, 7)
    assert not kernels.layout_add_ready(np.complex128, 64)


@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply:RuntimeWarning")   # inf * 0
@pytest.mark.parametrize("op", ["add", "max", "mul", "mean", "nansum", "set", "fmin"])
@pytest.mark.parametrize("src_layout", ["c", "fortran", "float16"])
@pytest.mark.parametrize("threads", [1, 2])
def test_scatter_into_a_fortran_dst_in_place(op, src_layout, threads, monkeypatch):
    """A Fortran-ordered dst is written in place (down its columns, small blocks of entries here, or a group of
    its columns at a time, groups of one column here) where it is large next to the entries, and through a
    C-ordered copy where it is small: the same bits every way."""
    monkeypatch.setattr(host, "STRIDED_BLOCK_BYTES", 256)
    monkeypatch.setattr(strided, "COLUMN_GROUP_BYTES", 256)
    rng = np.random.default_rng(8)
    x = _values(rng, (90, 12), np.float32)
    for groups in (100, 40, 5):   # 100 x 12 against 90 x 12 entries: by columns; 40 x 12: column groups; 5 x 12: copied
        idx = rng.integers(-2, groups + 2, 90)
        dst = _values(rng, (groups, 12), np.float32)
        want = ref_scatter(x.astype(np.float16).astype(np.float32) if src_layout == "float16" else x, idx, op,
                           dst=dst, mode="drop")
        src = {"c": x, "fortran": np.asfortranarray(x), "float16": x.astype(np.float16)}[src_layout]
        target = np.asfortranarray(dst)
        cs.scatter_into(target, src, idx, op, mode="drop", num_threads=threads)
        _check(target, want)
        assert target.flags.f_contiguous


def test_scatter_into_a_fortran_dst_raises_before_writing():
    rng = np.random.default_rng(9)
    x = _values(rng, (50, 6), np.float64)
    idx = rng.integers(0, 60, 50)
    idx[30] = 60
    target = np.asfortranarray(_values(rng, (60, 6), np.float64))
    before = target.copy()
    with pytest.raises(IndexError):
        cs.scatter_into(target, x, idx, "add")
    _check(target, before)


def test_gather_into_a_fortran_dst():
    rng = np.random.default_rng(10)
    src = _values(rng, (30, 7), np.float32)
    idx = rng.integers(-3, 33, 40)
    target = np.asfortranarray(_values(rng, (40, 7), np.float32))
    want = target.copy()
    ok = (idx >= 0) & (idx < 30)
    want[ok] = src[idx[ok]]
    cs.gather_into(target, src, idx, mode="drop")
    _check(target, want)


def test_scatter_into_a_large_fortran_dst_allocates_no_copy_of_it():
    rng = np.random.default_rng(11)
    n, f, groups = 20_000, 32, 100_000
    x = rng.standard_normal((n, f)).astype(np.float32)
    idx = rng.integers(0, groups, n)
    target = np.asfortranarray(np.ones((groups, f), np.float32))
    cs.scatter_into(np.asfortranarray(np.ones((8, f), np.float32)), x[:100], idx[:100] % 8)   # warm the Python layer
    _, peak = traced_peak(lambda: cs.scatter_into(target, x, idx))
    assert peak < target.nbytes / 4, peak   # blocks of 256 KiB, not the 12.8 MB dst twice
    want = np.ones((groups, f), np.float32)
    np.add.at(want, idx, x)
    np.testing.assert_array_equal(target, want)
