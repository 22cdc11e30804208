"""The staged scatter (`kernels.scatter_staged`, `host.rows_source`): src read in place a block of rows at a time
(float16/bfloat16 into float32, dtype= and small-integer widening, Fortran-ordered, strided, reversed and
features-first layouts), against the plain-loop reference, bit for bit: the blocks go in index order, so every
element sees its updates in the order of the reference."""
import tracemalloc

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import kernels
from cyscatter._backends import host
from reference import ref_scatter

# float16 products overflow to inf in both cyscatter and the reference: the values still compare
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

OPS = ["add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "nansum", "nanprod", "fmax", "fmin",
       "nanmean", "set"]


@pytest.fixture(params=[(True, 512, False), (True, 1 << 14, False), (False, 512, False), (False, 1 << 18, False),
                        (False, 1 << 18, True)],
                ids=["tiny-bands", "bands", "tiny-blocks", "blocks", "rows"])
def staged_everywhere(request):
    """Every size takes the staged path, in the one-thread bands or the blocks of the core kernel, of `param`
    bytes (tiny ones: many bands or blocks, and column blocks), or ("rows") with the loops that convert each row
    as they combine it where those apply (float16/bfloat16 -> float32 and float32 -> float64 add/max/min)."""
    knobs = ("stage_bands", "stage_band_bytes", "stage_bytes")
    old_min, old = host.STAGE_MIN_ELEMENTS, {k: kernels._tune()[k] for k in knobs}
    old_rows = kernels._tune_convert_rows()
    host.STAGE_MIN_ELEMENTS = 0
    bands, size, rows = request.param
    kernels._tune(stage_bands=bands, stage_band_bytes=size, stage_bytes=size)
    kernels._tune_convert_rows(rows)
    yield request.param
    host.STAGE_MIN_ELEMENTS = old_min
    kernels._tune(**old)
    kernels._tune_convert_rows(old_rows)


def _values(rng, shape, dtype, nan=False):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    x = rng.standard_normal(shape) * 3
    if nan:
        x[rng.random(shape) < 0.1] = np.nan
    if dtype.name == "bfloat16" or dtype == np.float16:
        return x.astype(np.float32).astype(dtype)
    return x.astype(dtype)


def _layout(x, layout):
    """`x` (n, F) in `layout`, with the axis the index runs along and the F-side equivalent in C order."""
    if layout == "c":
        return x, 0
    if layout == "fortran":
        return np.asfortranarray(x), 0
    if layout == "reversed":
        return np.ascontiguousarray(x[::-1])[::-1], 0   # negative row stride, the same values
    if layout == "strided-features":
        wide = np.repeat(x, 2, axis=1)
        return wide[:, ::2], 0
    if layout == "features-first":
        return np.ascontiguousarray(x.T), 1
    if layout == "features-first-view":
        return np.asfortranarray(x).T, -1   # x.T's memory is x's: rows of features adjacent
    raise AssertionError(layout)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.itemsize}")) if a.dtype.kind == "f" else a


def _check(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(_bits(got), _bits(want))
    elif got.dtype.name == "bfloat16":
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["c", "fortran", "reversed", "strided-features", "features-first",
                                    "features-first-view"])
def test_float16_every_layout_matches_the_loops(staged_everywhere, op, layout):
    rng = np.random.default_rng(1)
    x = _values(rng, (300, 7), np.float16, nan=op.startswith(("nan", "f")))
    idx = rng.integers(0, 40, 300)
    src, axis = _layout(x, layout)
    got = cs.scatter(src, idx, op, dim_size=40, axis=axis)
    want = ref_scatter(x, idx, op, dim_size=40)
    _check(np.moveaxis(got, axis, 0) if axis else got, want)


@pytest.mark.parametrize("op", ["add", "max", "min", "mean", "mul", "nansum", "fmax"])
@pytest.mark.parametrize("layout", ["c", "fortran", "features-first"])
def test_bfloat16_matches_the_float32_loops(staged_everywhere, op, layout):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(2)
    x = _values(rng, (200, 9), ml_dtypes.bfloat16, nan=op in ("nansum", "fmax"))
    idx = rng.integers(0, 30, 200)
    src, axis = _layout(x, layout)
    got = cs.scatter(src, idx, op, dim_size=30, axis=axis)
    want = ref_scatter(x.astype(np.float32), idx, op, dim_size=30).astype(ml_dtypes.bfloat16)
    _check(np.moveaxis(got, axis, 0) if axis else got, want)


def test_every_bfloat16_bit_pattern_converts_as_ml_dtypes(staged_everywhere):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    src = bits.view(ml_dtypes.bfloat16).reshape(-1, 1)
    got = cs.scatter(src, np.arange(65536), "max", dtype=np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), src.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("layout", ["c", "fortran"])
def test_every_float16_bit_pattern_converts_as_numpy(staged_everywhere, layout):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16).reshape(-1, 8)
    src = bits.view(np.float16) if layout == "c" else np.asfortranarray(bits.view(np.float16))
    got = cs.scatter(src, np.arange(8192), "max", dtype=np.float32)   # max keeps each bit pattern (NaNs too)
    np.testing.assert_array_equal(got.view(np.uint32), src.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("src_dtype, dtype", [(np.float32, np.float64), (np.int64, np.float64),
                                              (np.int8, np.float64), (np.uint32, np.float64),
                                              (np.int16, np.int64), (np.uint8, np.int64)])
@pytest.mark.parametrize("op", ["add", "max", "min", "mean", "mul"])
@pytest.mark.parametrize("layout", ["c", "fortran", "features-first"])
def test_dtype_cast_matches_the_loops_on_the_cast_src(staged_everywhere, src_dtype, dtype, op, layout):
    rng = np.random.default_rng(3)
    x = _values(rng, (250, 5), src_dtype)
    idx = rng.integers(0, 20, 250)
    src, axis = _layout(x, layout)
    got = cs.scatter(src, idx, op, dim_size=20, axis=axis, dtype=dtype)
    want = ref_scatter(x.astype(dtype), idx, op, dim_size=20)
    _check(np.moveaxis(got, axis, 0) if axis else got, want)


@pytest.mark.parametrize("src_dtype", [np.int8, np.uint8, np.int16, np.uint16, np.uint32])
@pytest.mark.parametrize("op", ["add", "max", "mul", "min"])
def test_small_integers_widen_in_blocks(staged_everywhere, src_dtype, op):
    rng = np.random.default_rng(4)
    x = _values(rng, (260, 3), src_dtype)
    idx = rng.integers(0, 25, 260)
    _check(cs.scatter(x, idx, op, dim_size=25), ref_scatter(x, idx, op, dim_size=25))
    _check(cs.scatter(np.asfortranarray(x), idx, op, dim_size=25), ref_scatter(x, idx, op, dim_size=25))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint64, np.complex64,
                                   np.complex128])
@pytest.mark.parametrize("op", ["add", "max", "mul"])
def test_kernel_dtypes_in_foreign_layouts(staged_everywhere, dtype, op):
    if np.dtype(dtype).kind == "c" and op == "max":
        pytest.skip("max takes no complex")
    rng = np.random.default_rng(5)
    x = _values(rng, (220, 6), np.float64).astype(dtype) if np.dtype(dtype).kind in "fc" else \
        _values(rng, (220, 6), dtype)
    idx = rng.integers(0, 15, 220)
    want = ref_scatter(x, idx, op, dim_size=15)
    for layout in ("fortran", "reversed", "features-first", "features-first-view"):
        src, axis = _layout(x, layout)
        got = cs.scatter(src, idx, op, dim_size=15, axis=axis)
        _check(np.moveaxis(got, axis, 0) if axis else got, want)


@pytest.mark.parametrize("op", ["add", "max", "mean"])
def test_batch_dims_and_index_along_a_middle_axis(staged_everywhere, op):
    rng = np.random.default_rng(6)
    x = _values(rng, (3, 120, 4), np.float16)
    idx = rng.integers(0, 11, 120)
    want = ref_scatter(x, idx, op, dim_size=11, axis=1)
    _check(cs.scatter(x, idx, op, dim_size=11, axis=1), want)
    _check(cs.scatter(np.asfortranarray(x), idx, op, dim_size=11, axis=1), want)
    # one-element rows under batch dims: (B, n) with the index along the last axis
    y = _values(rng, (5, 120), np.float32)
    _check(cs.scatter(y, idx, op, dim_size=11, axis=-1), ref_scatter(y, idx, op, dim_size=11, axis=1))


@pytest.mark.parametrize("op", ["add", "max", "mul", "min", "mean", "sqrt_n", "nansum", "fmax", "nanmean"])
@pytest.mark.parametrize("layout", ["c", "fortran", "features-first"])
def test_scatter_into_reads_src_in_place(staged_everywhere, op, layout):
    rng = np.random.default_rng(7)
    x = _values(rng, (200, 6), np.float16, nan=op in ("nansum", "fmax", "nanmean"))
    idx = rng.integers(0, 17, 200)
    dst = _values(rng, (17, 6), np.float32)
    want = ref_scatter(x, idx, op, dst=dst)
    src, axis = _layout(x, layout)
    target = np.ascontiguousarray(dst.T) if axis else dst.copy()
    cs.scatter_into(target, src, idx, op, axis=axis)
    _check(target.T if axis else target, want)


def test_out_and_drop_and_raise(staged_everywhere):
    rng = np.random.default_rng(8)
    x = _values(rng, (200, 4), np.float16)
    idx = rng.integers(-3, 23, 200)
    want = ref_scatter(x, idx, "add", dim_size=20, mode="drop")
    _check(cs.scatter(np.asfortranarray(x), idx, "add", dim_size=20, mode="drop"), want)
    out = np.full((20, 4), 7, np.float16)
    cs.scatter(x, idx, "add", dim_size=20, mode="drop", out=out)
    _check(out, want)
    bad = np.where(idx < 0, 0, idx)
    bad[150] = 20
    before = out.copy()
    with pytest.raises(IndexError):
        cs.scatter(x, bad, "add", dim_size=20, out=out)
    _check(out, before)
    with pytest.raises(IndexError):
        cs.scatter(np.ascontiguousarray(x.T), bad, "max", dim_size=20, axis=1)


def test_threads_give_the_same_bits(staged_everywhere):
    rng = np.random.default_rng(9)
    x = _values(rng, (3000, 40), np.float16)
    idx = rng.integers(0, 50, 3000)
    want = ref_scatter(x, idx, "add", dim_size=50)
    for threads in (1, 2):
        _check(cs.scatter(x, idx, "add", dim_size=50, num_threads=threads), want)
        _check(cs.scatter(np.asfortranarray(x), idx, "add", dim_size=50, num_threads=threads), want)


def test_dtype_float64_allocates_no_converted_copy():
    rng = np.random.default_rng(10)
    n, f = 100_000, 32
    x = rng.standard_normal((n, f)).astype(np.float32)
    idx = rng.integers(0, 1000, n)
    cs.scatter(x[:100], idx[:100], dim_size=1000, dtype=np.float64)   # warm caches of the Python layer
    tracemalloc.start()
    try:
        got = cs.scatter(x, idx, dim_size=1000, dtype=np.float64)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * f * 8 / 8, peak   # the table (256 KB) and one block buffer, not n x F float64 (25.6 MB)
    want = np.zeros((1000, f))
    np.add.at(want, idx, x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("op, ufunc", [("add", np.add), ("max", np.maximum), ("mul", np.multiply)])
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16])
def test_small_integers_are_read_in_place(dtype, op, ufunc):
    """A small-integer src accumulates in an int64 table read from src a block at a time: the table is the only
    memory beyond the result, not an n x F int64 copy of src; the result wraps as NumPy's ufunc.at in the dtype."""
    rng = np.random.default_rng(5)
    n, f = 200_000, 8
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, (n, f)).astype(dtype)
    idx = rng.integers(0, 1000, n)
    cs.scatter(x[:100], idx[:100], op, dim_size=1000)   # warm caches of the Python layer
    tracemalloc.start()
    try:
        got = cs.scatter(x, idx, op, dim_size=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * f * 8 / 4, peak   # the 64 KB table and one block buffer, not n x F int64 (12.8 MB)
    want = np.full((1000, f), {"add": 0, "mul": 1, "max": info.min}[op], dtype)
    ufunc.at(want, idx, x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


def test_kernel_refuses_what_it_cannot_stage():
    src = np.zeros((1, 4, 2), np.float16)
    out = np.zeros((1, 3, 2), np.float64)
    with pytest.raises(TypeError, match="no staging"):
        kernels.scatter_staged(0, kernels.StageCode.STAGE_HALF, src, np.zeros(4, np.int64), out)
    with pytest.raises(ValueError, match="one-element rows"):
        kernels.scatter_staged(0, kernels.StageCode.STAGE_COPY, np.zeros((1, 4, 2)), np.zeros(4, np.int64),
                               np.zeros((1, 3, 2)), transpose=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex128])
def test_kernel_transposed_copy_matches_the_loops(staged_everywhere, dtype):
    """The kernel's transposed reading of one-element rows (the public path reads same-dtype ones per slice)."""
    rng = np.random.default_rng(11)
    x = _values(rng, (9, 150), np.float64).astype(dtype) if np.dtype(dtype).kind in "fc" else \
        _values(rng, (9, 150), dtype)
    idx = rng.integers(0, 12, 150)
    out = np.zeros((9, 12, 1), dtype)
    status = kernels.scatter_staged(int(kernels.OpCode.OP_ADD), int(kernels.StageCode.STAGE_COPY), x[:, :, None],
                                    idx, out, None, 0, 1, True)
    assert status == -1
    _check(out[:, :, 0], ref_scatter(x, idx, "add", dim_size=12, axis=1))


def _special(rng, shape, dtype, op):
    """Values with signed zeros, infinities and NaN of one payload: the order of the operands of a sum of two
    NaN is the compiler's (both results are NaN, but their payloads may differ between builds), so sums get no
    -inf either (inf - inf makes the negative default NaN)."""
    x = rng.standard_normal(shape) * 3
    for value, share in ((0.0, 0.05), (-0.0, 0.05), (np.inf, 0.02), (-np.inf, 0.02 * (op in ("max", "min"))),
                         (np.nan, 0.05)):
        x[rng.random(shape) < share] = value
    return x.astype(np.float32).astype(dtype)


@pytest.mark.parametrize("src_dtype, dtype", [("float16", None), ("bfloat16", None), ("float32", np.float64)])
@pytest.mark.parametrize("op", ["add", "max", "min", "mean"])
@pytest.mark.parametrize("width", [1, 3, 8, 13, 16, 64, 70])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("rows", ["c", "strided-rows", "batch"])
def test_rows_converted_as_combined_match_the_loops(src_dtype, dtype, op, width, index_dtype, rows):
    """The loops that convert each row in registers as they combine it (`_convscatter.h`, one thread), every
    vector width and tail, against the plain loops on the converted src, bit for bit."""
    if src_dtype == "bfloat16":
        src_dtype = pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(width)
    old_min, host.STAGE_MIN_ELEMENTS = host.STAGE_MIN_ELEMENTS, 0
    try:
        x = _special(rng, (2, 150, width) if rows == "batch" else (150, width), src_dtype, op)
        idx = rng.integers(0, 23, 150).astype(index_dtype)
        src = np.repeat(x, 3, axis=0)[::3] if rows == "strided-rows" else x
        axis = 1 if rows == "batch" else 0
        got = cs.scatter(src, idx, op, dim_size=23, axis=axis, dtype=dtype, num_threads=1)
        want = ref_scatter(x.astype(np.float32 if dtype is None else dtype), idx, op, dim_size=23, axis=axis)
        if dtype is None:
            want = want.astype(x.dtype)
        _check(got, want)
    finally:
        host.STAGE_MIN_ELEMENTS = old_min


@pytest.mark.parametrize("op", ["max", "min", "add"])
def test_every_float16_bit_pattern_through_the_row_loops(op):
    """Signalling NaN included: F16C's conversion quiets it, the loop restores NumPy's bits."""
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16).reshape(-1, 16)
    src = bits.view(np.float16)
    got = cs.scatter(src, np.arange(4096), op, dtype=np.float32, num_threads=1)
    want = src.astype(np.float32)
    if op == "add":   # 0 + x: NaN payloads quieted, -0.0 turned +0.0, as the core's sum
        want = np.float32(0) + want
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_kernel_converts_rows_as_numpy():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(12)
    for src_dtype, dtype, code in ((np.float16, np.float32, kernels.StageCode.STAGE_HALF),
                                   (ml_dtypes.bfloat16, np.float32, kernels.StageCode.STAGE_BFLOAT),
                                   (np.float32, np.float64, kernels.StageCode.STAGE_F4),
                                   (np.int8, np.int64, kernels.StageCode.STAGE_I1)):
        x = _values(rng, (3, 40, 7), src_dtype)
        for src in (x, np.asfortranarray(x), x[:, ::2]):
            out = np.empty(src.shape, dtype)
            kernels.stage_rows(int(code), src, out)
            _check(out, src.astype(dtype))
    with pytest.raises(TypeError, match="no staging"):
        kernels.stage_rows(int(kernels.StageCode.STAGE_HALF), np.zeros((1, 2, 2), np.float16),
                           np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="same shape"):
        kernels.stage_rows(int(kernels.StageCode.STAGE_HALF), np.zeros((1, 2, 2), np.float16),
                           np.zeros((1, 3, 2), np.float32))
