"""segment, gather_segment and scatter's sorted-run path against the loop references, NumPy's reduceat/repeat,
and their validation."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from group_cases import LAYOUTS, make_case, random_indptr, values
from reference import ref_scatter
from reference_extra import ref_gather_segment, ref_scatter_arg, ref_segment
from testing import INDEX_KINDS, PLAIN_OPS, VALUE_DTYPES, op_supports

# (src shape, axis): rows along axis
SEGMENT_LAYOUTS = {"axis0": ((11, 3), 0), "batch": ((2, 11, 3), 1), "last": ((2, 11), -1), "rows_only": ((11,), 0)}


def _segment_case(seed, layout, dtype, nseg=6):
    rng = np.random.default_rng(seed)
    shape, axis = SEGMENT_LAYOUTS[layout]
    src = values(rng, shape, dtype)
    return src, random_indptr(rng, shape[axis], nseg), axis


@pytest.mark.parametrize("op", PLAIN_OPS)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("layout", SEGMENT_LAYOUTS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_segment_matches_reference(backend, op, dtype, layout):
    src, indptr, axis = _segment_case(1, layout, dtype)
    if op == "div":
        src = np.where(src == 0, 1, src).astype(dtype)
    got = backend.call(cs.segment, src, indptr, op, axis=axis)
    want = ref_segment(src, indptr, op, axis=axis)
    # host: the same order of updates, so the same bits; GPU: float atomics reorder sums (within `tolerance`)
    assert_same(got, want, *tolerance(backend.name, op, want.dtype, src))


@pytest.mark.parametrize("op", PLAIN_OPS)
@pytest.mark.parametrize("dtype", ("float32", "float64", "int64", "complex128"))
@pytest.mark.parametrize("width", (2, 4, 8, 16, 32, 64, 67))
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_segment_rows_of_every_unrolled_width(op, dtype, width):
    """Rows wider than one element go through the core's row update, unrolled and vectorised per common width;
    NaN and signed zeros in every lane check max/min's rules there."""
    rng = np.random.default_rng(width)
    src = values(rng, (40, width), dtype)
    if dtype.startswith("float"):
        src.flat[::5] = -0.0
        src.flat[::7] = 0.0
        src.flat[::13] = np.nan
    if op == "div":
        src = np.where(src == 0, 1, src).astype(dtype)
    indptr = random_indptr(rng, 40, 7)
    assert_same(cs.segment(src, indptr, op), ref_segment(src, indptr, op))


@pytest.mark.parametrize("op", ("add", "max", "mean"))
def test_segment_fill_value_and_all_empty(backend, op):
    src = np.array([[1.0, 2.0], [3.0, 4.0]])
    indptr = np.array([0, 0, 2, 2])
    got = backend.call(cs.segment, src, indptr, op, fill_value=-7)
    np.testing.assert_array_equal(got, ref_segment(src, indptr, op, fill_value=-7))
    assert (got[[0, 2]] == -7).all()
    empty = backend.call(cs.segment, np.zeros((0, 2)), np.array([0, 0, 0]), op)
    np.testing.assert_array_equal(empty, ref_segment(np.zeros((0, 2)), [0, 0, 0], op))


@pytest.mark.parametrize("ufunc, op", [(np.add, "add"), (np.maximum, "max"), (np.minimum, "min"),
                                       (np.multiply, "mul")])
def test_segment_agrees_with_reduceat_on_nonempty_segments(ufunc, op):
    rng = np.random.default_rng(5)
    src = rng.integers(-9, 10, (40, 3))
    indptr = np.array([0, 3, 4, 10, 25, 40])
    np.testing.assert_array_equal(cs.segment(src, indptr, op), ufunc.reduceat(src, indptr[:-1], axis=0))


def test_segment_empty_segment_differs_from_reduceat():
    # reduceat copies the next row into an empty segment; segment gives the identity
    src, indptr = np.array([5, 6, 7]), np.array([0, 1, 1, 3])
    np.testing.assert_array_equal(cs.segment(src, indptr), [5, 0, 13])
    assert np.add.reduceat(src, indptr[:-1])[1] == 6


@pytest.mark.parametrize("op", PLAIN_OPS)
def test_segment_equals_scatter_with_segment_ids(op):
    rng = np.random.default_rng(2)
    src = rng.standard_normal((2, 30, 4))
    indptr = random_indptr(rng, 30, 9)
    ids = cs.segment_ids(indptr)
    np.testing.assert_array_equal(ids, np.repeat(np.arange(9), np.diff(indptr)))
    np.testing.assert_array_equal(cs.segment(src, indptr, op, axis=1),
                                  cs.scatter(src, ids, op, dim_size=9, axis=1))


@pytest.mark.parametrize("indptr", ([0], [0, 0], [0, 3], [0, 0, 2, 2, 5, 5], [0, 1, 2, 3]))
@pytest.mark.parametrize("dtype", ("int32", "int64", "uint8"))
def test_segment_ids(backend, indptr, dtype):
    got = backend.call(cs.segment_ids, np.array(indptr, dtype))
    want = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("indptr, error, match", [
    ([0, 3, 2, 5], ValueError, r"must not decrease, but indptr\[1\] = 3 > indptr\[2\] = 2"),
    ([1, 3, 5], ValueError, r"indptr\[0\] = 1 must be 0"),
    ([0, 3, 4], ValueError, r"indptr\[-1\] = 4 must equal .* 5"),
    ([0, 3, 6], ValueError, r"indptr\[-1\] = 6"),
    ([[0, 5]], ValueError, "1 batch dims"),   # a batched pointer needs a batch dim in src
    ([], ValueError, "1-D with at least one entry"),
    ([0.0, 5.0], TypeError, "integers"),
    ([False, True], TypeError, "integers"),
])
def test_segment_validation(backend, indptr, error, match):
    indptr = np.array(indptr, dtype=np.int64 if indptr == [] else None)
    with pytest.raises(error, match=match):
        backend.call(cs.segment, np.arange(5.0), indptr)


def test_segment_other_errors(backend):
    src = backend.asarray(np.arange(3.0))
    with pytest.raises(ValueError, match="unknown op"):
        cs.segment(src, [0, 3], "medoid")
    with pytest.raises(TypeError, match="complex"):
        cs.segment(src.astype(complex), [0, 3], "max")
    with pytest.raises(ValueError, match="axis"):
        cs.segment(src, [0, 3], axis=1)


@pytest.mark.parametrize("indptr_dtype", ("int8", "uint16", "int32", "int64", "uint64"))
def test_segment_index_dtypes(backend, indptr_dtype):
    src = np.arange(6.0)
    indptr = np.array([0, 2, 2, 6], dtype=indptr_dtype)
    np.testing.assert_array_equal(backend.call(cs.segment, src, indptr), ref_segment(src, [0, 2, 2, 6], "add"))


@pytest.mark.parametrize("dtype", ("float64", "int8", "complex64", "V3"))
@pytest.mark.parametrize("layout", SEGMENT_LAYOUTS)
@pytest.mark.valid(lambda backend, dtype: not (dtype == "V3" and backend == "cupy"))   # no void dtypes in CuPy
def test_gather_segment_matches_reference(backend, dtype, layout):
    rng = np.random.default_rng(4)
    shape, axis = SEGMENT_LAYOUTS[layout]
    nseg = 6
    seg_shape = list(shape)
    seg_shape[axis] = nseg
    src = rng.integers(0, 100, seg_shape).astype("u1" if dtype == "V3" else dtype)
    if dtype == "V3":
        src = np.frombuffer(np.repeat(src, 3).tobytes(), "V3").reshape(seg_shape)
    indptr = random_indptr(rng, 13, nseg)
    got = backend.call(cs.gather_segment, src, indptr, axis=axis)
    np.testing.assert_array_equal(got, ref_gather_segment(src, indptr, axis=axis))


@pytest.mark.parametrize("dtype", [">f8", ">i4"])
def test_gather_segment_of_a_big_endian_src_is_native(dtype):
    """Results are native, as gather's: np.repeat keeps the byte order, gather_segment does not."""
    src = np.arange(6).reshape(3, 2).astype(dtype)
    got = cs.gather_segment(src, np.array([0, 1, 3, 3]))
    assert got.dtype.isnative and got.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(got, np.repeat(src, [1, 2, 0], axis=0))


def test_gather_segment_validation(backend):
    with pytest.raises(ValueError, match="describes 2 segments, but src has 3 rows"):
        backend.call(cs.gather_segment, np.arange(3), np.array([0, 1, 4]))
    with pytest.raises(ValueError, match="must not decrease"):
        backend.call(cs.gather_segment, np.arange(3), np.array([0, 2, 1, 4]))


# ---- scatter's sorted-run path -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", PLAIN_OPS)
@pytest.mark.parametrize("dtype", ("float64", "float32", "int64", "int8", "complex128"))
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", ("raise", "drop"))
@pytest.mark.parametrize("presorted", (True, False), ids=("sorted", "unsorted"))
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_scatter_sorted_hint_matches_reference(backend, op, dtype, index_kind, layout, mode, presorted):
    src, index, dim_size, axis = make_case(7, index_kind, layout, mode, dtype)
    if presorted:   # sort the index entries (the src rows stay: the hint is about the index only)
        index = tuple(np.sort(c, axis=None).reshape(c.shape) for c in index) if index_kind == "tuple" \
            else np.sort(index, axis=None).reshape(index.shape)
    if op == "div":
        src = np.where(src == 0, 1, src).astype(dtype)
    got = cs.scatter(backend.asarray(src), backend.asarray(index), op, dim_size=dim_size, axis=axis, mode=mode,
                     indices_are_sorted=True)
    want = ref_scatter(src, index, op, dim_size=dim_size, axis=axis, mode=mode)
    assert_same(backend.to_numpy(got), want, *tolerance(backend.name, op, want.dtype, src))   # GPU: atomics
    dst = np.asarray(want).astype(want.dtype)
    if op not in ("div", "mean") or dst.dtype.kind in "fc":
        into = cs.scatter_into(backend.asarray(dst.copy()), backend.asarray(src.astype(dst.dtype)),
                               backend.asarray(index), op, axis=axis, mode=mode, indices_are_sorted=True)
        assert_same(backend.to_numpy(into), ref_scatter(src.astype(dst.dtype), index, op, axis=axis, mode=mode,
                                                        dst=dst), *tolerance(backend.name, op, dst.dtype, src, dst))


@pytest.mark.parametrize("into", (False, True), ids=("scatter", "scatter_into"))
@pytest.mark.parametrize("op", ("add", "max", "mean"))
def test_sorted_hint_routes_one_element_rows_to_the_run_kernel(monkeypatch, op, into):
    """The hint reaches the run kernel for one-element rows also on the fast path of a plain call (it was once
    dropped there), and wider rows go to the core kernel, which can use threads."""
    from cyscatter._backends import host as _sorted
    calls = []
    real = _sorted.group_kernels.scatter_runs
    monkeypatch.setattr(_sorted.group_kernels, "scatter_runs", lambda *a: calls.append(a[2].size) or real(*a))
    index = np.repeat(np.arange(50), 4)
    for width, expected_calls in ((1, [200]), (16, [])):
        calls.clear()
        src = np.random.default_rng(width).standard_normal((200, width)).squeeze()
        if into:
            dst = np.ones((50, width)).squeeze()
            got = cs.scatter_into(dst.copy(), src, index, op, indices_are_sorted=True)
            want = ref_scatter(src, index, op, dst=dst)
        else:
            got = cs.scatter(src, index, op, dim_size=50, indices_are_sorted=True)
            want = ref_scatter(src, index, op, dim_size=50)
        np.testing.assert_array_equal(got, want, strict=True)
        assert calls == expected_calls


def test_scatter_sorted_hint_raises_like_the_core():
    with pytest.raises(IndexError, match=r"index\[2\] = 7"):
        cs.scatter(np.ones(4), np.array([0, 0, 7, 1]), dim_size=3, indices_are_sorted=True)
    dst = np.zeros(3)
    with pytest.raises(IndexError):
        cs.scatter_into(dst, np.ones(4), np.array([0, 1, 1, 3]), indices_are_sorted=True)
    assert (dst == 0).all()


def test_strided_and_fortran_inputs():
    # views whose rows are strided or reversed (the kernels need only adjacent elements within a row)
    rng = np.random.default_rng(8)
    base = rng.integers(-5, 6, (4, 9, 3)).astype(float)
    index, indptr = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3]), np.array([0, 2, 5, 7, 9])
    for src in (base[::2], np.asfortranarray(base), base[:, ::-1]):
        np.testing.assert_array_equal(cs.segment(src, indptr, "max", axis=1),
                                      ref_segment(src, indptr, "max", axis=1))
        np.testing.assert_array_equal(cs.scatter_argmin(src, index, axis=1),
                                      ref_scatter_arg(src, index, "min", axis=1))
        np.testing.assert_array_equal(cs.scatter(src[:, :, 1], index, "add", axis=1, indices_are_sorted=True),
                                      ref_scatter(src[:, :, 1], index, "add", axis=1))


@pytest.mark.parametrize("op", ("max", "min"))
@pytest.mark.parametrize("special", (np.nan, 0.0, -0.0, np.inf, -np.inf))
def test_segment_extremes_in_long_segments(backend, op, special):
    # long segments (the kernel splits max/min over several chains): a special value at every position
    rng = np.random.default_rng(9)
    for dtype in ("float64", "float32"):
        for pos in range(11):
            src = np.where(rng.random(11) < 0.5, -0.0, 0.0).astype(dtype)
            src[pos] = special
            indptr = np.array([0, 0, 11, 11])
            got = backend.call(cs.segment, src, indptr, op)
            want = ref_segment(src, indptr, op)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
