"""scatter without dim_size: the size is inferred from the index (its largest entry + 1, 0 for an empty index).

The common call (a C-contiguous src of a kernel dtype, a 1-d int32/int64 index, an op of the fast table) is
answered by the compiled fast path, which infers the size itself; every other call takes the general path. Both
must give the same bits: each result is checked against the plain-loop reference (tests/helpers/reference.py)
and against the same call with ``dim_size=index.max() + 1``, and the errors of a negative or huge entry are the
general path's, message for message.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import cyscatter as cs
import cyscatter._api.scatter as scatter_module
from compare import assert_same, tolerance
from cyscatter import kernels
from cyscatter._registry.ops import FAST
from inputs import rng_for, values, with_nans
from reference import ref_scatter
from testing import get_op

# the ops and dtypes the fast path runs (mean, sqrt_n and nanmean have no identity table there: general path)
FAST_CASES = [(op, np.dtype(dt).name) for op, (_, identities) in sorted(FAST.items())
              for dt in sorted(identities, key=lambda d: np.dtype(d).name)]
FAST_OPS = sorted({op for op, _ in FAST_CASES})
# every index dtype: int32/int64 reach the fast path, the others (and intp's twin) the general one
INDEX_DTYPES = ("int8", "int16", "int32", "int64", "intp", "uint8", "uint16", "uint32", "uint64")


def src_values(op, dtype, shape, rng):
    """Values for `op` (finite products), with NaNs among the floats so that NaN handling is compared too."""
    src = values(dtype, shape, rng, op)
    if np.dtype(dtype).kind in "fc" and src.size:
        src = with_nans(src, rng, share=0.1)
    return src


def draw_index(dtype, n, groups, rng):
    idx = rng.integers(0, groups, n)
    if n:
        idx[rng.integers(n)] = groups - 1   # the largest entry is known: the inferred size is `groups`
    return idx.astype(dtype)


def check_default_size(src, idx, op):
    """scatter(src, idx, op) equals the reference and, bit for bit, the same call with the size given."""
    size = int(idx.max()) + 1 if idx.size else 0
    got = cs.scatter(src, idx, op)
    assert got.shape == (size,) + src.shape[1:]
    assert_same(got, cs.scatter(src, idx, op, dim_size=size))
    ulps, scale = tolerance("numpy", get_op(op).name, src.dtype, src)   # complex products: NumPy's FMA
    with np.errstate(all="ignore"):   # NaN and inf entries, as the kernels meet them
        expected = ref_scatter(src, idx, op, dim_size=size)
    assert_same(got, expected, ulps, scale)
    return got


@pytest.mark.parametrize("op,dtype", FAST_CASES)
@pytest.mark.parametrize("index_dtype", ("int32", "int64"))
def test_every_fast_op_and_dtype(op, dtype, index_dtype):
    rng = rng_for("every", op, dtype, index_dtype)
    src = src_values(op, dtype, (41, 3), rng)
    check_default_size(src, draw_index(index_dtype, 41, 7, rng), op)


@pytest.mark.parametrize("op", FAST_OPS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_every_index_dtype(op, index_dtype):
    rng = rng_for("index dtype", op, index_dtype)
    src = src_values(op, "float64", (30, 2), rng)
    check_default_size(src, draw_index(index_dtype, 30, 9, rng), op)


@pytest.mark.parametrize("op", FAST_OPS)
@pytest.mark.parametrize("shape", [(25,), (25, 1), (25, 2, 3), (25, 0)], ids=str)
def test_src_shapes(op, shape):
    """1-d src (one element per entry), one-column, several feature dims and zero-width rows."""
    rng = rng_for("shapes", op, shape)
    check_default_size(src_values(op, "float32", shape, rng), draw_index("int64", 25, 6, rng), op)


@pytest.mark.parametrize("op", FAST_OPS)
@pytest.mark.parametrize("dtype", ("float64", "int32", "complex128"))
@pytest.mark.parametrize("src_shape", [(0,), (0, 4), (0, 2, 3)], ids=str)
@pytest.mark.parametrize("index_dtype", ("int32", "int64", "uint8"))
@pytest.mark.valid(lambda op, dtype: np.dtype(dtype) in FAST[op][1])   # the pairs the fast path runs
def test_empty_index_gives_an_empty_output(op, dtype, src_shape, index_dtype):
    src = np.zeros(src_shape, dtype)
    got = check_default_size(src, np.zeros(0, index_dtype), op)
    assert got.shape == (0,) + src_shape[1:] and got.dtype == src.dtype


@pytest.mark.parametrize("op", ("add", "max", "min", "mul"))
@pytest.mark.parametrize("layout", ("strided", "reversed", "byte-swapped", "read-only"))
def test_index_layouts(op, layout):
    """Indices that the fast path does not read as they are (the general path copies them), and a read-only one
    (which it does): the same results."""
    rng = rng_for("layout", op, layout)
    src = src_values(op, "float64", (20, 3), rng)
    base = draw_index("int64", 40, 8, rng)
    if layout == "strided":
        idx = base[::2]
    elif layout == "reversed":
        idx = base[:20][::-1]
    elif layout == "read-only":
        idx = base[:20].copy()
        idx.flags.writeable = False
    else:
        idx = base[:20].astype(base.dtype.newbyteorder())
    check_default_size(src, idx, op)


@pytest.mark.parametrize("index_dtype", ("int32", "int64"))
def test_the_largest_entry_sets_the_size(index_dtype):
    """Rows past every entry but the largest one hold the identity; an index of zeros addresses one row."""
    src = np.arange(12.0).reshape(4, 3)
    got = check_default_size(src, np.array([3, 1000, 7, 3], index_dtype), "max")
    assert got.shape == (1001, 3)
    assert np.all(got[[0, 1, 2, 4, 5, 6, 8, 999]] == -np.inf)
    assert_same(got[[3, 7, 1000]], np.array([[9.0, 10, 11], [6, 7, 8], [3, 4, 5]]))
    assert check_default_size(src, np.zeros(4, index_dtype), "add").shape == (1, 3)


@pytest.mark.parametrize("index_dtype", ("int32", "int64"))
def test_largest_entries_of_the_index_dtype(index_dtype):
    """Entries up to the dtype's largest value are read as themselves, not wrapped: zero-width rows take no
    memory, so an index holding 2**31 - 1 (int32) or 2**40 (int64) still gives an output."""
    top = np.iinfo(np.int32).max if index_dtype == "int32" else 2 ** 40
    idx = np.array([0, top, 5], index_dtype)
    got = cs.scatter(np.zeros((3, 0)), idx, "add")
    assert got.shape == (top + 1, 0)
    assert_same(got, cs.scatter(np.zeros((3, 0)), idx, "add", dim_size=top + 1))


def test_num_threads_gives_the_same_bits():
    """A table large enough to be split among threads: the same result on 1 and 2 threads."""
    rng = rng_for("threads")
    src = src_values("add", "float64", (20000, 16), rng)
    idx = draw_index("int64", 20000, 3000, rng)
    one = cs.scatter(src, idx, "add", num_threads=1)
    assert_same(cs.scatter(src, idx, "add", num_threads=2), one)
    assert_same(cs.scatter(src, idx, "add", dim_size=3000, num_threads=2), one)


def test_the_numpy_example():
    """The documented default call, against ``np.add.at`` into zeros of the inferred size."""
    rng = rng_for("numpy example")
    src = rng.standard_normal((100, 4))
    idx = draw_index("int64", 100, 10, rng)
    expected = np.zeros((10, 4))
    np.add.at(expected, idx, src)
    assert_same(cs.scatter(src, idx, "add"), expected)


def test_many_dims():
    """More feature dims than the fast path takes: the general path, the same result."""
    src = np.arange(2.0).reshape((2,) + (1,) * 32)
    idx = np.array([1, 1])
    got = cs.scatter(src, idx, "add")
    assert got.shape == (2,) + (1,) * 32
    assert_same(got, cs.scatter(src, idx, "add", dim_size=2))


# ---- which path answers ----------------------------------------------------------------------------------------

@pytest.fixture
def general_path_refused(monkeypatch):
    """`prepare` (the planner) is reached only on the general path: while this fixture holds, reaching it
    raises."""
    class GeneralPathTaken(Exception):
        pass

    def refuse(kind, *args, **kwargs):
        raise GeneralPathTaken(kind)

    monkeypatch.setattr(scatter_module, "prepare", refuse)
    return GeneralPathTaken


@pytest.mark.parametrize("op,dtype", FAST_CASES)
@pytest.mark.parametrize("index_dtype", ("int32", "int64"))
def test_default_call_takes_the_fast_path(general_path_refused, op, dtype, index_dtype):
    rng = rng_for("fast", op, dtype, index_dtype)
    src = values(dtype, (17, 2), rng, op)
    idx = draw_index(index_dtype, 17, 5, rng)
    assert cs.scatter(src, idx, op).shape == (5, 2)
    assert cs.scatter(src[:0], idx[:0], op).shape == (0, 2)   # the empty index too


@pytest.mark.parametrize("index_dtype", ("int32", "int64"))
@pytest.mark.parametrize("op", ("add", "max"))
def test_a_long_index_infers_its_size_as_a_short_one(op, index_dtype):
    """Past 64k entries the size comes from NumPy's maximum instead of the kernel's scan: the same result, and
    a negative entry still leaves the fast path for the general path's error."""
    rng = np.random.default_rng(11)
    n = 70_000
    idx = rng.integers(0, 3000, n).astype(index_dtype)
    idx[n // 2] = 4321   # the largest entry, away from either end
    src = rng.standard_normal((n, 2))
    check_default_size(src, idx, op)
    opcode, identities = FAST[op]
    fast = kernels.scatter_simple(src, idx, opcode, identities[src.dtype], None, 0)
    assert fast is not None and fast.shape == (4322, 2)
    idx[n - 3] = -1
    assert kernels.scatter_simple(src, idx, opcode, identities[src.dtype], None, 0) is None
    with pytest.raises(IndexError, match=re.escape(f"index[{n - 3}] = -1 is out of bounds")):
        cs.scatter(src, idx, op)


def test_a_negative_entry_leaves_the_fast_path(general_path_refused):
    with pytest.raises(general_path_refused):
        cs.scatter(np.ones((3, 2)), np.array([0, -1, 2]), "add")


@pytest.mark.parametrize("index_dtype", ("int32", "int64"))
@pytest.mark.parametrize("negative", ([0, -1, 2], [4, 1, -7, -1], [-5, -1, -2], [-2**31, 3, 3]), ids=str)
def test_a_negative_entry_raises_the_general_paths_error(negative, index_dtype):
    """The fast path declines a negative entry (it never raises), so the error is the general path's: the first
    negative position, and the inferred size of the other entries."""
    idx = np.array(negative, index_dtype)
    src = np.ones((len(negative), 2))
    first = next(k for k, v in enumerate(negative) if v < 0)
    size = max(max(negative) + 1, 0)
    message = (f"index[{first}] = {negative[first]} is out of bounds for an indexed axis of size {size} "
               "(mode='raise'; use mode='drop', 'wrap', 'clip' or 'normalize_drop' to accept it)")
    with pytest.raises(IndexError, match=f"^{re.escape(message)}$"):
        cs.scatter(src, idx, "add")
    opcode, identities = FAST["add"]
    assert kernels.scatter_simple(src, idx, opcode, identities[src.dtype], None, 0) is None


@pytest.mark.parametrize("op", ("add", "max"))
def test_an_entry_too_large_to_allocate_names_the_inferred_size(op):
    """2**40 rows of 2 float64 (16 TiB): the fast path declines, the general path names what sized the output."""
    with pytest.raises(MemoryError, match=re.escape("the dim_size inferred from index=(1099511627777,) asks for "
                                                    "more memory than can be allocated")):
        cs.scatter(np.ones((3, 2)), np.array([0, 2 ** 40, 1]), op)


@pytest.mark.parametrize("entry,message", [
    (2 ** 62, "the dim_size inferred from index=(4611686018427387905,) asks for an output of shape "
              "(4611686018427387905, 2) and dtype float64: 73786976294838206480 bytes, too big for any array"),
    (2 ** 63 - 1, "index holds 9223372036854775807: the inferred dim_size 9223372036854775808 is larger than an "
                  "array axis can be"),
], ids=("2**62", "2**63-1"))
def test_an_entry_past_any_array_names_the_inferred_size(entry, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        cs.scatter(np.ones((3, 2)), np.array([0, entry, 1], np.int64), "add")


@pytest.mark.parametrize("dims", [(0, 2 ** 62), (2 ** 61, 0)])
def test_an_empty_output_with_a_huge_dim_names_dim_size(dims):
    """NumPy refuses an array whose non-zero dims pass 2**63 - 1 bytes, empty or not: so does the planner, up
    front and naming dim_size; one that NumPy can make (2**59 rows of 0 features) is made."""
    index = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    with pytest.raises(ValueError, match=re.escape(f"dim_size={dims!r} asks for an output of shape {dims}")):
        cs.scatter(np.ones(0), index, dim_size=dims)
    assert cs.scatter(np.ones((0, 0)), np.zeros(0, np.int64), dim_size=2 ** 59).shape == (2 ** 59, 0)
