"""Destinations and sources of any strides, read and written in place: ``scatter(out=)``, ``scatter_into``,
``gather(out=)`` and ``gather_into`` with a Fortran-ordered, transposed, row- or column-strided or reversed
`out`/`dst`/`src`, against the plain-loop reference on C-ordered copies, bit for bit, for every op and the
dtypes it takes; the result lands in the caller's own array (same memory), a bad index leaves it as it was, and
no call copies the whole destination or source (tracemalloc)."""

import numpy as np
import pytest
from compare import assert_same, tolerance
from inputs import rng_for, values, with_nans
from memory import traced_peak
from reference import ref_gather, ref_scatter
from testing import OPS, into_supports, op_supports

import cyscatter as cs
from cyscatter._backends import host, strided
from cyscatter._registry.ops import get_op

DTYPES = ("float32", "float64", "int32", "int64", "float16", "complex64", "complex128")
LAYOUTS = ("F", "T", "rows2", "cols2", "neg")
# (shape of the table with the index dim at `axis`, axis, entries): rows, features first, batch slices, and
# fewer or many more entries than table rows (the three ways of `host._scatter_strided_out`)
GEOMETRIES = {"rows": ((13, 6), 0, 17), "features-first": ((6, 13), 1, 17), "batched": ((3, 13, 5), 1, 17),
              "few-entries": ((40, 6), 0, 17), "many-entries": ((5, 6), 0, 30)}


def laid_out(a: np.ndarray, layout: str) -> np.ndarray:
    """A writeable array holding `a`'s values in `layout`: F / T (the transpose of a C array of the reversed
    shape: F's strides reached another way), rows2 / cols2 (every other entry of the first / last dim of a
    twice longer array), neg (every dim reversed)."""
    if layout == "C":
        return a.copy()
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "T":
        return np.ascontiguousarray(a.T).T
    if layout == "neg":
        flip = (slice(None, None, -1),) * a.ndim
        return np.ascontiguousarray(a[flip])[flip]
    dim = 0 if layout == "rows2" else a.ndim - 1
    shape = list(a.shape)
    shape[dim] *= 2
    base = np.zeros(shape, a.dtype)
    every_other = tuple(slice(None, None, 2) if d == dim else slice(None) for d in range(a.ndim))
    base[every_other] = a
    return base[every_other]


@pytest.fixture
def small_groups(monkeypatch):
    """Groups of one column (two of int8): the small tables here take several groups."""
    monkeypatch.setattr(strided, "COLUMN_GROUP_BYTES", 1)


def _src_values(op, dtype, shape, rng):
    x = values(dtype, shape, rng, op)
    if get_op(op).skips_nan and np.dtype(dtype).kind in "fc":
        x = with_nans(x, rng)
    return x


def _case(op, dtype, geometry, *key):
    """(src, index, table shape, axis) of `geometry`."""
    rng = rng_for(op, dtype, geometry, *key)
    shape, axis, n = GEOMETRIES[geometry]
    src_shape = shape[:axis] + (n,) + shape[axis + 1:]
    index = rng.integers(0, shape[axis], n)
    index[:3] = (2, 2, 4)   # repeated entries: the assignments' winners and the reductions' order matter
    return _src_values(op, dtype, src_shape, rng), index, shape, axis


def _pointer(a):
    return a.__array_interface__["data"][0]


def _assert_written_in_place(got, given, pointer, strides):
    """The call returned the caller's own array, which still addresses the same memory with the same strides."""
    assert got is given
    assert _pointer(given) == pointer and given.strides == strides


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.valid(lambda op, dtype: op_supports(op, dtype))
def test_scatter_out_of_any_strides_matches_the_loops(small_groups, op, dtype, layout, geometry):
    src, index, shape, axis = _case(op, dtype, geometry, layout, "out")
    want = ref_scatter(src, index, op, dim_size=shape[axis], axis=axis)
    out = laid_out(np.full(shape, 7, want.dtype), layout)
    pointer, strides = _pointer(out), out.strides
    got = cs.scatter(src, index, op, dim_size=shape[axis], axis=axis, out=out)
    _assert_written_in_place(got, out, pointer, strides)
    assert_same(out, want, *tolerance("numpy", op, dtype, src))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.parametrize("side", ["dst", "src", "both"])
@pytest.mark.valid(lambda op, dtype: into_supports(op, dtype))
def test_scatter_into_any_strides_matches_the_loops(small_groups, op, dtype, layout, geometry, side):
    src, index, shape, axis = _case(op, dtype, geometry, layout, side)
    rng = rng_for(op, dtype, geometry, layout, side, "dst")
    start = values(dtype, shape, rng, op)
    want = ref_scatter(src, index, op, axis=axis, dst=start.copy())
    dst = laid_out(start, layout if side != "src" else "C")
    src_given = laid_out(src, layout if side != "dst" else "C")
    before, pointer, strides = dst.copy(), _pointer(dst), dst.strides
    got = cs.scatter_into(dst, src_given, index, op, axis=axis)
    _assert_written_in_place(got, dst, pointer, strides)
    assert_same(dst, want, *tolerance("numpy", op, dtype, src, start))
    if not np.array_equal(want, before, equal_nan=True):
        assert not np.array_equal(dst, before, equal_nan=True)   # the caller's memory was written


GATHER_DTYPES = ("float32", "float64", "int32", "int64", "float16", "complex128", "int8", "U3")


def _gather_values(dtype, shape, rng):
    if np.dtype(dtype).kind == "U":
        return np.array([f"{v:03d}" for v in rng.integers(0, 999, int(np.prod(shape)))]).reshape(shape)
    return values(dtype, shape, rng)


@pytest.mark.parametrize("dtype", GATHER_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.parametrize("side", ["dst", "src", "both"])
@pytest.mark.parametrize("into", [True, False])
def test_gather_any_strides_matches_the_loops(small_groups, dtype, layout, geometry, side, into):
    rng = rng_for(dtype, layout, geometry, side, into)
    table_shape, axis, n = GEOMETRIES[geometry]   # (many entries: src copied whole, else by column groups)
    table = _gather_values(dtype, table_shape, rng)
    index = rng.integers(0, table_shape[axis], n)
    out_shape = table_shape[:axis] + (n,) + table_shape[axis + 1:]
    start = _gather_values(dtype, out_shape, rng)
    want = ref_gather(table, index, axis=axis)
    dst = laid_out(start, layout if side != "src" else "C")
    src = laid_out(table, layout if side != "dst" else "C")
    pointer, strides = _pointer(dst), dst.strides
    got = (cs.gather_into(dst, src, index, axis=axis) if into
           else cs.gather(src, index, axis=axis, out=dst))
    _assert_written_in_place(got, dst, pointer, strides)
    assert_same(dst, want)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["F", "T", "rows2", "neg"])
@pytest.mark.parametrize("into", [True, False])
@pytest.mark.valid(lambda op, dtype: into_supports(op, dtype))
def test_features_first_through_the_staged_kernel(monkeypatch, op, dtype, layout, into):
    """Features-first data read a block at a time (`host.StagedRows`, small inputs let in here), into a table
    whose batch slices are adjacent (F, T: the transposed problem written straight into it) or not."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    rng = rng_for(op, dtype, layout, into)
    src = _src_values(op, dtype, (6, 40), rng)
    index = rng.integers(-1, 14, 40)
    start = values(dtype, (6, 13), rng, op)
    dst = laid_out(start if into else np.zeros_like(start), layout)
    if into:
        want = ref_scatter(src, index, op, axis=1, mode="drop", dst=start.copy())
        cs.scatter_into(dst, src, index, op, axis=1, mode="drop")
    else:
        want = ref_scatter(src, index, op, dim_size=13, axis=1, mode="drop")
        cs.scatter(src, index, op, dim_size=13, axis=1, mode="drop", out=dst)
    assert_same(dst, want, *tolerance("numpy", op, dtype, src, start if into else None))


@pytest.mark.parametrize("mode", ["drop", "clip", "wrap"])
@pytest.mark.parametrize("op", ["add", "mean", "set", "first", "nanlast", "max"])
@pytest.mark.parametrize("layout", ["F", "cols2", "neg"])
def test_modes_into_strided_destinations(small_groups, mode, op, layout):
    rng = rng_for(mode, op, layout)
    src = _src_values(op, "float64", (40, 6), rng)
    index = rng.integers(-20, 30, 40)
    start = values("float64", (13, 6), rng)
    dst = laid_out(start, layout)
    cs.scatter_into(dst, laid_out(src, layout), index, op, mode=mode)
    assert_same(dst, ref_scatter(src, index, op, mode=mode, dst=start.copy()))
    out = laid_out(np.zeros((13, 6)), layout)
    cs.scatter(src, index, op, dim_size=13, mode=mode, out=out)
    assert_same(out, ref_scatter(src, index, op, dim_size=13, mode=mode))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("call", ["scatter_into", "scatter(out=)", "gather_into", "gather(out=)"])
def test_a_bad_index_leaves_the_strided_destination_as_it_was(small_groups, op, layout, call):
    rng = rng_for(op, layout, call)
    src = _src_values(op, "float64", (17, 6), rng)
    index = rng.integers(0, 13, 17)
    index[9] = 13
    gathers = call.startswith("gather")
    dst = laid_out(values("float64", (17 if gathers else 13, 6), rng), layout)
    before = dst.copy()
    with pytest.raises(IndexError, match=r"index\[9\]"):
        if call == "scatter_into":
            cs.scatter_into(dst, laid_out(src, layout), index, op)
        elif call == "scatter(out=)":
            cs.scatter(src, index, op, dim_size=13, out=dst)
        elif call == "gather_into":
            cs.gather_into(dst, laid_out(src[:13], layout), index)
        else:
            cs.gather(src[:13], index, out=dst)
    assert_same(dst, before)


# ---- memory: no copy of the whole destination or source ---------------------------------------------------------

N, SIZE, F = 16384, 8192, 64   # float64: src 8 MiB, table 4 MiB


def _inputs():
    rng = np.random.default_rng(3)
    return rng.standard_normal((N, F)), rng.integers(0, SIZE, N), rng.standard_normal((SIZE, F))


def _peak(call):
    call()   # warm: lazily imported modules, the kernels' kept blocks
    return traced_peak(call)[1]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["F", "cols2", "neg", "rows2"])
@pytest.mark.valid(lambda op, layout: layout == "rows2" or get_op(op).winner)
def test_scatter_out_of_any_strides_makes_no_table_copy(op, layout):
    """Rows apart are written in place by the assignments; the reductions make their table and copy it in
    (their column passes cost more), so they are held to this only where the row elements are adjacent."""
    src, index, table = _inputs()
    out_c = np.zeros_like(table)
    out = laid_out(out_c, layout)
    base = _peak(lambda: cs.scatter(src, index, op, dim_size=SIZE, out=out_c))
    peak = _peak(lambda: cs.scatter(src, index, op, dim_size=SIZE, out=out))
    assert peak < base + out.nbytes / 4, (peak, base)


@pytest.mark.parametrize("op", ["add", "max", "mul", "mean", "sqrt_n", "nansum", "nanmean", "fmin"])
@pytest.mark.parametrize("layout", ["F", "cols2", "neg"])
def test_scatter_out_with_fewer_entries_than_rows_is_written_in_place(op, layout):
    src, index, table = _inputs()
    src, index = src[:SIZE // 2], index[:SIZE // 2]
    out_c = np.zeros_like(table)
    out = laid_out(out_c, layout)
    base = _peak(lambda: cs.scatter(src, index, op, dim_size=SIZE, out=out_c))
    peak = _peak(lambda: cs.scatter(src, index, op, dim_size=SIZE, out=out))
    assert peak < base + out.nbytes / 4, (peak, base)
    assert_same(out, out_c)   # (the values against the loops: the small cases above)


UFUNCS = {"add": np.add, "max": np.maximum, "mul": np.multiply, "nansum": np.add, "fmin": np.fmin}


@pytest.mark.parametrize("op", list(UFUNCS))
@pytest.mark.parametrize("layout", ["F", "cols2", "neg"])
@pytest.mark.parametrize("entries", [SIZE // 2, 2 * SIZE])
def test_scatter_into_strided_dst_by_columns_or_column_groups(op, layout, entries):
    """Fewer entries than rows: down the columns; up to four times as many: a group of columns at a time through
    a buffer of about 1 MiB (here 4 MiB of dst)."""
    src, index, table = _inputs()
    src, index = src[:entries], index[:entries]
    dst = laid_out(table, layout)
    want = table.copy()   # src holds no NaN: nansum and fmin update as add and the ufunc's own rule
    UFUNCS[op].at(want, index, src)
    peak = _peak(lambda: cs.scatter_into(dst, src, index, op))
    assert peak < dst.nbytes / 3, peak
    dst[...] = table
    cs.scatter_into(dst, src, index, op)
    assert_same(dst, want)


@pytest.mark.parametrize("op", ["add", "max", "mean", "nanmean", "set", "first"])
def test_features_first_into_a_fortran_out_takes_at_most_what_a_c_out_takes(op):
    src, index, table = _inputs()
    src_t = np.ascontiguousarray(src.T)
    out_c = np.zeros(table.T.shape)
    out_f = np.asfortranarray(out_c)
    base = _peak(lambda: cs.scatter(src_t, index, op, dim_size=SIZE, axis=1, out=out_c))
    peak = _peak(lambda: cs.scatter(src_t, index, op, dim_size=SIZE, axis=1, out=out_f))
    assert peak < base + out_f.nbytes / 4, (peak, base)
    if not get_op(op).counts:   # no table of the kernel's own: the transposed problem is written into out itself
        assert peak < out_f.nbytes / 3, peak
        into = _peak(lambda: cs.scatter_into(out_f, src_t, index, op, axis=1))
        assert into < out_f.nbytes / 3, into


@pytest.mark.parametrize("op", ["set", "first", "nanlast", "nanfirst", "add", "min"])
@pytest.mark.parametrize("side", ["dst", "src"])
@pytest.mark.parametrize("layout", ["F", "cols2", "neg"])
def test_scatter_into_strided_arrays_copies_neither(op, side, layout):
    src, index, table = _inputs()
    dst = laid_out(table, layout if side == "dst" else "C")
    src = laid_out(src, layout if side == "src" else "C")
    peak = _peak(lambda: cs.scatter_into(dst, src, index, op))
    assert peak < 0.3 * (dst if side == "dst" else src).nbytes, peak   # (the kernels' blocks: 1 MiB at most)


@pytest.mark.parametrize("side", ["dst", "src", "both"])
@pytest.mark.parametrize("layout", ["F", "cols2", "neg"])
@pytest.mark.parametrize("into", [True, False])
def test_gather_of_strided_arrays_copies_neither(side, layout, into):
    """(A strided src into a C-ordered dst goes by groups of its columns through a 1 MiB buffer; one under a
    quarter of the output would be copied whole.)"""
    rows, index, table = _inputs()
    dst = laid_out(np.zeros_like(rows), layout if side != "src" else "C")
    src = laid_out(table, layout if side != "dst" else "C")
    peak = _peak((lambda: cs.gather_into(dst, src, index)) if into else (lambda: cs.gather(src, index, out=dst)))
    assert peak < src.nbytes / 3, peak
    assert_same(dst, table[index])
