"""The documented errors: type, message content, and `dst` left exactly as it was after every one of them."""
from __future__ import annotations

import re

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from reference import ref_gather, ref_scatter


def check_raises(backend, exc, match, func, dst, src, index, **kw):
    """`func` raises `exc` whose message matches `match`, and the in-place `dst` keeps its values."""
    arr = backend.asarray(dst.copy()) if func.endswith("_into") else None
    with pytest.raises(exc, match=match):
        backend.call(getattr(cs, func), *([] if arr is None else [arr]), src, index, **kw)
    if arr is not None:
        assert_same(backend.to_numpy(arr), dst)


def _shapes(*shapes) -> str:
    """A regex matching a message that names every shape (in any order)."""
    return "".join(f"(?=.*{re.escape(str(tuple(s)))})" for s in shapes)


# ---- shape errors name both shapes ---------------------------------------------------------------------------

def test_scatter_index_shape_not_in_src(backend):
    check_raises(backend, ValueError, _shapes((5, 3), (4,)), "scatter", None, np.ones((5, 3)), np.zeros(4, int))


def test_scatter_into_dst_feature_shape(backend):
    check_raises(backend, ValueError, _shapes((5, 2), (4, 3)), "scatter_into", np.zeros((5, 2)), np.ones((4, 3)),
                 np.zeros(4, int))


def test_scatter_into_rank_mismatch(backend):
    """NNlib's rank assertion: dst (5,) cannot take src (4, 2) rows."""
    check_raises(backend, ValueError, _shapes((5,), (4, 2)), "scatter_into", np.zeros(5), np.ones((4, 2)),
                 np.zeros(4, int))


@pytest.mark.parametrize("func", ["scatter", "scatter_into", "gather", "gather_into"])
def test_tuple_arrays_of_different_shapes(backend, func):
    idx = (np.zeros(4, int), np.zeros(3, int))
    check_raises(backend, ValueError, _shapes((4,), (3,)), func, np.zeros((4, 4)), np.ones((4, 4)), idx)


def test_scatter_into_wrong_number_of_coordinates(backend):
    """A 2-array tuple index needs 2 destination axes before the features: dst (5,) has 1."""
    idx = (np.zeros(4, int), np.zeros(4, int))
    check_raises(backend, ValueError, _shapes((5,), (4,)), "scatter_into", np.zeros(5), np.ones(4), idx)


def test_gather_into_dst_shape(backend):
    """NNlib's gather! case: dst (3, 5) cannot hold index (3, 4) rows of scalars."""
    check_raises(backend, ValueError, _shapes((3, 5), (3, 4)), "gather_into", np.zeros((3, 5)), np.arange(5.0),
                 np.zeros((3, 4), int))


# ---- mode="raise": IndexError naming position, value and bound -----------------------------------------------

BAD_INDICES = [
    ("int", np.array([0, 1, 7, 2]), r"index\[2\] = 7\b.*\b5\b"),
    ("negative", np.array([0, -1, 1, 2]), r"index\[1\] = -1\b.*\b5\b"),
    ("2d", np.array([[0, 1], [4, 9]]), r"index\[1, 1\] = 9\b.*\b5\b"),
    ("int8", np.array([0, 1, 2, 127], np.int8), r"index\[3\] = 127\b.*\b5\b"),
    ("tuple", (np.array([0, 1, 2, 3]), np.array([0, 6, 1, 1])), r"index\[1\]\[1\] = 6\b.*\b4\b"),
]


def _dst_src_for(func, index):
    """dst/src of shape (5,) or (5, 4) (tuple index), with rows for every index entry."""
    ishape = index[0].shape if isinstance(index, tuple) else index.shape
    table = np.arange(20.0).reshape(5, 4) if isinstance(index, tuple) else np.arange(5.0)
    rows = np.arange(float(np.prod(ishape))).reshape(ishape)
    return (table, rows) if func.startswith("scatter") else (rows, table)


@pytest.mark.parametrize("func", ["scatter", "scatter_into", "gather", "gather_into"])
@pytest.mark.parametrize("name,index,match", BAD_INDICES, ids=[b[0] for b in BAD_INDICES])
def test_out_of_range_raises_index_error(backend, name, index, match, func):
    dst, src = _dst_src_for(func, index)
    kw = {"dim_size": dst.shape[:len(index)] if isinstance(index, tuple) else 5} if func == "scatter" else {}
    check_raises(backend, IndexError, match, func, dst, src, index, **kw)


@pytest.mark.parametrize("func", ["scatter_into", "gather_into"])
def test_out_of_range_after_many_valid_entries_leaves_dst_unchanged(backend, func):
    """The bad entry comes last, after a long run of valid ones that would already have been applied."""
    index = np.append(np.arange(1000) % 5, 5)
    dst, src = _dst_src_for(func, index)
    check_raises(backend, IndexError, r"index\[1000\] = 5\b", func, dst, src, index)


@pytest.mark.parametrize("func", ["scatter", "scatter_into", "gather", "gather_into"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("n,pos", [(1, 0), (255, 254), (256, 0), (256, 255), (257, 256), (600, 300), (600, 511),
                                   (600, 512), (600, 599)])
@pytest.mark.parametrize("bad", ["size", "-1", "min", "max"])
def test_first_bad_entry_is_found_in_every_block_position(backend, func, index_dtype, n, pos, bad):
    """The bounds scan runs in blocks of 256 entries, then looks for the position inside the first bad block:
    a bad entry at either end of a block, or in the tail, is reported at its own position (and nothing is
    written); a second bad entry after it does not change which one is named."""
    info = np.iinfo(index_dtype)
    value = {"size": 5, "-1": -1, "min": info.min, "max": info.max}[bad]
    index = (np.arange(n) % 5).astype(index_dtype)
    index[pos] = value
    if pos + 1 < n:
        index[-1] = -2
    dst, src = _dst_src_for(func, index)
    kw = {"dim_size": 5} if func == "scatter" else {}
    check_raises(backend, IndexError, rf"index\[{pos}\] = {value}\b", func, dst, src, index, **kw)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("size", [0, 1, 5, 2**31 - 1, 2**31, 2**31 + 5, 2**62, 2**63 - 1])
def test_bounds_scan_matches_a_plain_loop(index_dtype, size):
    """The kernels' scan (an or of signs, so that it vectorises) against a comparison per entry, at the limits
    of both index types; sizes past 2**31 make every non-negative int32 entry valid."""
    from cyscatter import kernels
    info = np.iinfo(index_dtype)
    rng = np.random.default_rng(size % 2**32)
    specials = np.array([0, 1, -1, info.min, info.max, min(size, info.max), max(min(size, info.max) - 1, 0)],
                        index_dtype)
    for trial in range(200):
        n = int(rng.integers(0, 800))
        index = rng.integers(0, max(1, min(size, info.max)), n, dtype=index_dtype)
        for _ in range(int(rng.integers(0, 3))):
            if n:
                index[rng.integers(0, n)] = rng.choice(specials)
        expected = next((k for k in range(n) if not 0 <= int(index[k]) < size), -1)
        assert kernels.check_index(index, size) == expected


# ---- other argument errors leave dst unchanged ---------------------------------------------------------------

@pytest.mark.parametrize("kw,exc,match", [({"op": "median"}, ValueError, "median"), ({"op": 3}, TypeError, "op"),
                                          ({"mode": "fill"}, ValueError, "mode='fill'"),
                                          ({"axis": 2}, ValueError, "axis=2"), ({"axis": 0.5}, TypeError, "axis")],
                         ids=str)
def test_bad_arguments_to_scatter_into(backend, kw, exc, match):
    check_raises(backend, exc, match, "scatter_into", np.arange(5.0), np.ones(4), np.array([0, 1, 1, 4]), **kw)


def test_unsafe_src_cast_into_dst(backend):
    check_raises(backend, TypeError, "float64.*int64", "scatter_into", np.arange(5), np.full(2, 0.5),
                 np.array([0, 1]))


@pytest.mark.parametrize("dim_size,exc", [(-1, ValueError), (2.5, TypeError), ((5, 5), ValueError)], ids=str)
def test_bad_dim_size(backend, dim_size, exc):
    check_raises(backend, exc, "dim_size", "scatter", None, np.ones(3), np.array([0, 1, 1]), dim_size=dim_size)


def test_dim_size_smaller_than_index(backend):
    check_raises(backend, IndexError, r"index\[2\] = 3\b.*\b3\b", "scatter", None, np.ones(3),
                 np.array([0, 1, 3]), dim_size=3)


# ---- dst must be writeable and free of overlapping elements -----------------------------------------------

def _stride0(n):
    return np.lib.stride_tricks.as_strided(np.zeros(1), shape=(n,), strides=(0,), writeable=True)


def _overlapping_rows():
    """A (3, 3) view whose rows overlap: row i starts one element after row i - 1."""
    return np.lib.stride_tricks.as_strided(np.zeros(5), shape=(3, 3), strides=(8, 8), writeable=True)


@pytest.mark.parametrize("func", ["scatter_into", "gather_into"])
@pytest.mark.parametrize("make,match", [(_stride0, "overlap"), (_overlapping_rows, "overlap")],
                         ids=["stride0", "overlapping-rows"])
def test_overlapping_dst_raises(func, make, match):
    dst = make(3) if make is _stride0 else make()
    before = dst.copy()
    src = np.ones(dst.shape)
    with pytest.raises(ValueError, match=match):
        getattr(cs, func)(dst, src, np.arange(dst.shape[0]))
    assert_same(dst, before)


@pytest.mark.parametrize("func", ["scatter_into", "gather_into"])
def test_read_only_dst_raises(func):
    dst = np.arange(3.0)
    dst.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        getattr(cs, func)(dst, np.ones(3), np.arange(3))
    assert_same(dst, np.arange(3.0))


@pytest.mark.parametrize("func", ["scatter_into", "gather_into"])
def test_stride0_on_a_length_one_axis_is_fine(func):
    """A zero stride is only an overlap when the axis has more than one element."""
    dst = np.lib.stride_tricks.as_strided(np.zeros(3), shape=(1, 3), strides=(0, 8), writeable=True)
    src, idx = np.arange(1.0, 4.0).reshape(1, 3), np.array([0])
    expected = ref_scatter(src, idx, dst=dst) if func == "scatter_into" else ref_gather(src, idx, dst=dst)
    getattr(cs, func)(dst, src, idx)
    assert_same(dst, expected)


# ---- the bound errors name the first bad entry and the source of the size ------------------------------------

@pytest.mark.parametrize("func", ["scatter", "gather"])
def test_a_uint64_index_names_its_first_bad_entry(func):
    """Entries past int64 do not hide an earlier entry that is out of range already."""
    index = np.array([0, 9, 2**63, 1], np.uint64)
    src = np.ones(4) if func == "scatter" else np.ones(5)
    kw = {"dim_size": 5} if func == "scatter" else {}
    with pytest.raises(IndexError, match=r"index\[1\] = 9 "):
        getattr(cs, func)(src, index, **kw)
    with pytest.raises(IndexError, match=r"index\[2\] = 9223372036854775808 "):
        getattr(cs, func)(src, np.array([0, 4, 2**63, 1], np.uint64), **kw)


def test_gather_scatter_names_src_shape_not_an_argument_it_lacks():
    with pytest.raises(IndexError, match=r"gather_index\[1\] = 9 .*read from src's shape") as info:
        cs.gather_scatter(np.ones((4, 2)), np.array([0, 9]), np.array([0, 1]))
    assert "src_size" not in str(info.value)
    with pytest.raises(IndexError, match=r"src_size=4 was given"):
        cs.gather_scatter_plan(np.array([0, 9]), np.array([0, 1]), src_size=4)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
def test_an_empty_axis_cannot_be_wrapped_or_clipped_into(mode):
    with pytest.raises(IndexError, match=rf"index cannot be {mode}ped into an indexed axis of size 0; mode='drop'") \
            as info:
        cs.scatter(np.ones((3, 4)), np.arange(4), axis=1, dim_size=0, mode=mode)
    assert "axis 0" not in str(info.value)
    np.testing.assert_array_equal(cs.scatter(np.ones((3, 4)), np.arange(4), axis=1, dim_size=0, mode="drop"),
                                  np.ones((3, 0)))


@pytest.mark.parametrize("call", ["add", "median", "nanmedian", "logsumexp"])
def test_sizes_read_off_out_are_named_so(call):
    """Without dim_size, D is read off `out`'s shape (scatter's median ops too; scatter_quantile's `out` must
    fit the index instead); a bound error then names out's shape, not a dim_size the caller never passed."""
    x, idx = np.arange(30.).reshape(10, 3), np.arange(10) % 4
    run = {"add": lambda out: cs.scatter(x, idx, "add", out=out),
           "median": lambda out: cs.scatter(x, idx, "median", out=out),
           "nanmedian": lambda out: cs.scatter(x, idx, "nanmedian", out=out),
           "logsumexp": lambda out: cs.scatter_logsumexp(x, idx, out=out)}[call]
    out = np.full((6, 3), 7.0)
    assert run(out) is out
    want = {"add": ref_scatter(x, idx, "add", dim_size=6), "logsumexp": cs.scatter_logsumexp(x, idx, dim_size=6)}
    want = want.get(call, np.vstack([np.median(x[idx == j], axis=0) if (idx == j).any() else np.full(3, np.nan)
                                     for j in range(6)]))
    np.testing.assert_array_equal(out, want)
    small = np.full((3, 3), 7.0)
    with pytest.raises(IndexError, match=r"read from out's shape") as info:
        run(small)
    assert "dim_size" not in str(info.value)
    np.testing.assert_array_equal(small, np.full((3, 3), 7.0))
