"""Hostile arguments: each raises its documented exception, names the culprit, and leaves every argument as it was.

The two tables below are also the documentation's "Errors" page (docs/errors.rst):
``python tests/robustness/test_hostile.py`` prints them as markdown. Each call is Python source evaluated in a
fresh namespace of small arrays (`arguments`); after the call every array of the namespace must hold the same
bytes as a copy taken before it.
"""
from __future__ import annotations

import array
import re
from dataclasses import dataclass

import numpy as np
import pytest

import cyscatter as cs
from reference import ref_gather, ref_scatter


class ArrayLike:
    """An object NumPy converts through ``__array__`` (as pandas, xarray or a memory-mapped wrapper would)."""

    def __init__(self, values):
        self.values = values

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)


pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


def arguments() -> dict:
    """Fresh arguments for one case; the calls of docs/errors.rst use these names."""
    a = np.arange(6.0)
    stride0 = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(2,), strides=(0,))
    readonly = np.zeros(2)
    readonly.flags.writeable = False
    return dict(
        np=np, cs=cs, array=array, ArrayLike=ArrayLike,
        src=np.arange(4.0), idx=np.array([0, 1, 0, 1]), dst=np.zeros(2), out=np.array([2.0, 4.0]),
        g=np.ones(2), src2=np.arange(12.0).reshape(4, 3), cube=np.arange(48.0).reshape(4, 6, 2), a=a,
        ints=np.array([0, 1, 1, 0]),
        big=np.array([0, 1, 2**63 + 1, 1], np.uint64), ro=readonly, stride0=stride0, stride0_base=stride0.base,
        misaligned=np.zeros(17, np.uint8)[1:].view(np.float64),   # two float64s at an odd address
    )


@dataclass(frozen=True)
class Raises:
    what: str
    call: str
    error: type
    match: str


@dataclass(frozen=True)
class Accepts:
    what: str
    call: str
    expected: str


RAISES = [
    Raises("masked-array dst (its mask would hide the result)",
           "cs.gather_into(np.ma.masked_array(dst, [0, 1]), src, idx[:2])", TypeError,
           "dst is a numpy.ma.MaskedArray with masked entries"),
    # op
    Raises("unknown op name", 'cs.scatter(src, idx, "foo")', ValueError, "unknown op 'foo'"),
    Raises("unknown op name (in place)", 'cs.scatter_into(dst, src, idx, "avg")', ValueError, "unknown op 'avg'"),
    Raises("unknown op name (reverse)", 'cs.scatter_vjp_src("foo", g, src, idx, out)', ValueError, "unknown op"),
    Raises("op not a string", "cs.scatter(src, idx, np.add)", TypeError, "op must be a string"),
    Raises("op None", "cs.scatter_jvp(None, src, idx, out, src)", TypeError, "op must be a string"),
    # index dtype
    Raises("float index", "cs.scatter(src, idx.astype(float))", TypeError, "index must hold integers.*float64"),
    Raises("bool index (a mask)", "cs.gather(src, idx.astype(bool))", TypeError, "index must hold integers.*bool"),
    Raises("object index", "cs.scatter_into(dst, src, idx.astype(object))", TypeError,
           "index must hold integers.*object"),
    Raises("string index", 'cs.gather_into(dst, src, np.array(["0", "1"]))', TypeError, "index must hold integers"),
    Raises("float coordinate in a tuple index", "cs.scatter(src, (idx, idx * 1.0))", TypeError,
           r"index\[1\] must hold integers"),
    Raises("sizes for an empty tuple index", "cs.scatter(src, (), dim_size=2)", ValueError,
           "gives 1 sizes but the index addresses 0 axes"),
    # out-of-range entries
    Raises("uint64 index above 2**63 (raise)", "cs.scatter(src, big, dim_size=2)", IndexError,
           r"index\[2\] = 9223372036854775809 is out of bounds.*size 2"),
    Raises("uint64 index above 2**63 (in place)", "cs.scatter_into(dst, src, big)", IndexError,
           r"index\[2\] = 9223372036854775809"),
    Raises("uint64 index above 2**63 (gather)", "cs.gather(src, big)", IndexError, r"index\[2\]"),
    Raises("negative index under raise", "cs.scatter_into(dst, src, idx - 1)", IndexError,
           r"index\[0\] = -1 is out of bounds"),
    Raises("index past the end, in place: dst untouched", 'cs.scatter_into(dst, src, idx * 2, "mean")', IndexError,
           r"index\[1\] = 2 is out of bounds.*size 2"),
    Raises("index past the end (gather_into)", "cs.gather_into(src, src, idx + 3)", IndexError, r"index\[1\] = 4"),
    Raises("tuple coordinate out of range", "cs.scatter(src, (idx, idx + 1), dim_size=(2, 2))", IndexError,
           r"index\[1\]\[1\] = 2"),
    Raises("wrap into an empty axis", 'cs.gather(np.zeros((0, 2)), idx, mode="wrap")', IndexError, "size 0"),
    # dim_size
    Raises("dim_size negative", "cs.scatter(src, idx, dim_size=-1)", ValueError, "dim_size=-1 must be non-negative"),
    Raises("dim_size not an integer", "cs.scatter(src, idx, dim_size=2.5)", TypeError, "dim_size=2.5"),
    Raises("dim_size a string", 'cs.scatter(src, idx, dim_size="2")', TypeError, "dim_size='2'"),
    Raises("dim_size smaller than an index (raise)", "cs.scatter(src, idx, dim_size=1)", IndexError,
           r"index\[1\] = 1 is out of bounds.*size 1"),
    Raises("dim_size with the wrong number of sizes", "cs.scatter(src, idx, dim_size=(2, 2))", ValueError,
           "gives 2 sizes but the index addresses 1 axes"),
    Raises("output too large to allocate (8 TiB)", "cs.scatter(src, idx, dim_size=2**40)", MemoryError,
           "dim_size=1099511627776 asks for more memory than can be allocated"),
    Raises("output larger than any array", "cs.scatter(src2, idx, dim_size=2**62)", ValueError,
           "dim_size=4611686018427387904 .*too big"),
    Raises("output whose byte count would pass 2**64", "cs.scatter(np.ones((1, 10)), idx[:1], dim_size=2**61 - 1)",
           ValueError, "dim_size=2305843009213693951 .*too big"),
    Raises("dim_size past int64", "cs.scatter(src, idx, dim_size=2**64)", ValueError,
           "dim_size=18446744073709551616 is larger than"),
    Raises("dim_size whose product overflows int64", 'cs.scatter(src, (idx, idx), dim_size=(2**32, 2**32))',
           ValueError, r"dim_size=\(4294967296, 4294967296\) addresses 18446744073709551616 rows"),
    Raises("inferred dim_size past int64 (uint64 index)", "cs.scatter(src, big)", ValueError,
           "index holds 9223372036854775809: the inferred dim_size"),
    Raises("gather_vjp_src src_shape past int64", "cs.gather_vjp_src(src, idx, (2**64,))", ValueError,
           r"src_shape=\(18446744073709551616,\) is larger than"),
    Raises("gather_vjp_src src_shape not integers", "cs.gather_vjp_src(src, idx, (2.5,))", TypeError,
           r"src_shape=\(2.5,\) must be a non-negative integer"),
    Raises("gather_vjp_src src_shape negative", "cs.gather_vjp_src(src, idx, (-2,))", ValueError,
           r"src_shape=\(-2,\) must be non-negative"),
    Raises("gather_vjp_src src_shape that grad_out does not fit", "cs.gather_vjp_src(src2, idx, (4, 5))", ValueError,
           r"grad_out shape \(4, 3\) does not match src_shape \(4, 5\)"),
    Raises("dim_size a bool", "cs.scatter(src, idx, dim_size=True)", TypeError, "dim_size=True"),
    Raises("axis a bool", "cs.scatter(src, idx, axis=False)", TypeError, "axis must be an integer, got False"),
    Raises("num_threads a bool", "cs.gather(src, idx, num_threads=True)", TypeError, "num_threads"),
    Raises("grad_out missing", "cs.scatter_vjp_src('add', None, src, idx, out)", TypeError,
           "grad_out is required, got None"),
    Raises("src_dot missing", "cs.scatter_jvp('add', src, idx, out, None)", TypeError, "src_dot is required"),
    Raises("dst_dot without dst (tangent of a destination that was not given)",
           "cs.scatter_jvp('add', src, idx, out, src, dst_dot=g)", ValueError, "dst_dot was given without dst"),
    Raises("dim_size a 0-d float array", "cs.scatter(src, idx, dim_size=np.array(2.0))", TypeError,
           r"dim_size=array\(2\.\)"),
    Raises("out missing for scatter_jvp", "cs.scatter_jvp('add', src, idx, None, src)", TypeError,
           r"out \(the result of the forward scatter\) is required"),
    Raises("grad_out missing (logsumexp)", "cs.scatter_logsumexp_vjp(None, src, idx, out)", TypeError,
           "grad_out is required, got None"),
    Raises("string out (reverse)", 'cs.scatter_jvp("div", src, idx, out.astype("U4"), src)', TypeError,
           "out must hold numbers.*<U4"),
    Raises("bool grad_out", "cs.scatter_vjp_src('add', g > 0, src, idx, out)", TypeError,
           "grad_out must hold numbers.*bool"),
    Raises("datetime src_dot", "cs.scatter_softmax_jvp(src, idx, src.astype('M8[s]'))", TypeError,
           "src_dot must hold numbers"),
    Raises("src None", "cs.gather(None, idx)", TypeError, "src dtype object"),
    # shapes
    Raises("src and index shapes differ", "cs.scatter(src, idx[:3])", ValueError,
           r"src shape \(4,\) does not hold the index shape \(3,\)"),
    Raises("tuple index arrays of different shapes", "cs.scatter(src, (idx, idx[:2]))", ValueError,
           r"index\[1\] has shape \(2,\)"),
    Raises("dst shape does not fit", "cs.scatter_into(np.zeros((2, 3)), src, idx)", ValueError, r"dst shape \(2, 3\)"),
    Raises("gather_into dst shape does not fit", "cs.gather_into(dst, src, idx)", ValueError, r"dst shape \(2,\)"),
    Raises("axis out of range", "cs.scatter(src2, idx, axis=2)", ValueError, "axis=2 does not fit"),
    Raises("axis not an integer", "cs.gather(src, idx, axis=0.0)", TypeError, "axis must be an integer"),
    Raises("0-d src (gather)", "cs.gather(np.float64(1.0), idx)", ValueError, "axis=0 does not fit"),
    Raises("grad_out shape differs from out", "cs.scatter_vjp_src('add', np.ones(3), src, idx, out)", ValueError,
           r"grad_out shape \(3,\)"),
    Raises("out too small for the index (reverse)", "cs.scatter_vjp_dst('max', g[:1], dst[:1], src, idx, out[:1])",
           IndexError, r"index\[1\] = 1"),
    Raises("index past the end (add's dst gradient, which needs no kernel)",
           "cs.scatter_vjp_dst('add', g, dst, src, idx + 1, out)", IndexError, r"index\[1\] = 2 is out of bounds"),
    Raises("src_dot shape differs from src", "cs.scatter_jvp('mul', src, idx, out, g)", ValueError,
           r"src_dot shape \(2,\)"),
    Raises("dst missing for scatter_vjp_dst", "cs.scatter_vjp_dst('add', g, None, src, idx, out)", TypeError,
           "dst is required, got None"),
    Raises("gather_vjp_src src_shape with fewer dims than the index addresses", "cs.gather_vjp_src(src, idx, ())",
           ValueError, r"src_shape=\(\) has 0 dims but the index addresses 1"),
    # mode
    Raises("unknown mode", 'cs.scatter(src, idx, mode="ignore")', ValueError, "mode='ignore' is not one of"),
    # dst
    Raises("dst read-only", "cs.scatter_into(ro, src, idx)", ValueError, "dst is read-only"),
    Raises("dst read-only (gather_into)", "cs.gather_into(ro, src, idx[:2])", ValueError, "dst is read-only"),
    Raises("dst with overlapping elements (stride 0)", "cs.scatter_into(stride0, src, idx)", ValueError,
           "overlapping elements"),
    Raises("dst not an ndarray", "cs.scatter_into([0.0, 0.0], src, idx)", TypeError, "dst must be a numpy.ndarray"),
    # dtypes
    Raises("bool values", "cs.scatter(src > 1, idx)", TypeError, "does not support src dtype bool"),
    Raises("object values", "cs.scatter(src.astype(object), idx)", TypeError, "src dtype object"),
    Raises("complex values for max", 'cs.scatter(src + 1j, idx, "max")', TypeError, "complex"),
    Raises("complex values for max (reverse)", 'cs.scatter_vjp_src("max", g, src + 1j, idx, out)', TypeError,
           "op 'max' needs ordered values; src dtype complex128"),
    Raises("complex values for min (forward mode)", 'cs.scatter_jvp("min", src + 1j, idx, out, src)', TypeError,
           "op 'min' needs ordered values"),
    Raises("bool values (reverse)", 'cs.scatter_vjp_dst("add", g, dst, src > 1, idx, out)', TypeError,
           "src dtype bool"),
    Raises("integer dst for div", 'cs.scatter_into(ints, ints, idx, "div")', TypeError, "non-integer results"),
    Raises("float src into integer dst", "cs.scatter_into(ints[:2], src, idx)", TypeError,
           "cannot cast src dtype float64 to dst dtype int64"),
    Raises("fill_value not castable", 'cs.scatter(ints, idx, fill_value=0.5)', TypeError, "same_kind"),
    Raises("gather of object arrays", "cs.gather(src.astype(object), idx)", TypeError, "object"),
]

ACCEPTS = [
    Accepts("Python lists", "cs.scatter([1.0, 2.0, 3.0], [0, 0, 1])",
            "ref_scatter(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 1]))"),
    Accepts("empty lists", "cs.scatter([], [])", "ref_scatter(np.zeros(0), np.zeros(0, int))"),
    Accepts("empty tuple index (NumPy's a[()]: the whole array)", "cs.scatter_into(dst, 2.0, (), 'mul')",
            "dst * 2.0"),
    Accepts("tuple of lists as a tuple index", "cs.scatter([1.0, 2.0], ([0, 1], [1, 1]))",
            "ref_scatter(np.array([1.0, 2.0]), (np.array([0, 1]), np.array([1, 1])))"),
    Accepts("array.array and memoryview", "cs.scatter(array.array('d', [1, 2, 3]), memoryview(np.array([0, 0, 1])))",
            "ref_scatter(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 1]))"),
    Accepts("objects with __array__", "cs.gather(ArrayLike([5, 6, 7]), ArrayLike([2, 2, 0]))",
            "ref_gather(np.array([5, 6, 7]), np.array([2, 2, 0]))"),
    Accepts("0-d src and index", "cs.scatter(np.float64(3.0), np.int64(1))",
            "ref_scatter(np.array(3.0), np.array(1))"),
    Accepts("Python int index (gather)", "cs.gather(src2, 2)", "ref_gather(src2, np.array(2))"),
    Accepts("uint64 index above 2**63, mode='drop'", "cs.scatter(src, big, dim_size=2, mode='drop')",
            "ref_scatter(src, big, dim_size=2, mode='drop')"),
    Accepts("uint64 index above 2**63, mode='wrap'", "cs.scatter(src, big, dim_size=3, mode='wrap')",
            "ref_scatter(src, big, dim_size=3, mode='wrap')"),
    Accepts("dim_size as a 0-d integer array", "cs.scatter(src, idx, dim_size=np.array(3))",
            "ref_scatter(src, idx, dim_size=3)"),
    Accepts("num_threads far beyond the cores", "cs.scatter(src, idx, num_threads=2**40)", "ref_scatter(src, idx)"),
    Accepts("gather_vjp_src src_shape as an int", "cs.gather_vjp_src(src, idx, 2)",
            "ref_scatter(src, idx, dst=np.zeros(2))"),
    Accepts("big-endian values and index", 'cs.scatter(src.astype(">f8"), idx.astype(">i4"), "max")',
            'ref_scatter(src, idx, "max")'),
    Accepts("big-endian dst", 'cs.scatter_into(np.ones(2, ">f4"), src, idx, "mean")',
            'ref_scatter(src, idx, "mean", dst=np.ones(2, "f4"))'),
    Accepts("big-endian src (softmax, var, ...)", 'cs.scatter_softmax(src.astype(">f8"), idx)',
            "cs.scatter_softmax(src, idx)"),
    Accepts("integer grad_out (cast to float64)", "cs.scatter_vjp_src('add', np.ones(2, int), src, idx, out)",
            "cs.scatter_vjp_src('add', np.ones(2), src, idx, out)"),
    Accepts("NumPy integers for ints", "cs.scatter(src, idx, dim_size=np.int64(3), axis=np.uint8(0), "
            "num_threads=np.int32(2))", "ref_scatter(src, idx, dim_size=3)"),
    Accepts("read-only src and index", "cs.scatter(np.asarray(ro), np.asarray(ro).astype(int), 'max')",
            "ref_scatter(np.zeros(2), np.zeros(2, int), 'max')"),
    Accepts("big-endian arrays (reverse)", 'cs.scatter_vjp_src("min", g, src.astype(">f4"), idx, out.astype(">f4"))',
            'cs.scatter_vjp_src("min", g, src.astype("f4"), idx, out.astype("f4"))'),
    Accepts("strided batch dims (src)", "cs.scatter(cube[::2, ::2], ints[:3], 'max', axis=1)",
            "ref_scatter(cube[::2, ::2], ints[:3], 'max', axis=1)"),
    Accepts("strided batch dims (dst)",
            "cs.scatter_into(np.ones((4, 2, 2))[::2], cube[::2, ::2], ints[:3], 'mul', axis=1)",
            "ref_scatter(cube[::2, ::2], ints[:3], 'mul', axis=1, dst=np.ones((2, 2, 2)))"),
    Accepts("strided src (gather)", "cs.gather(cube[::2, ::3], ints, axis=1)",
            "ref_gather(cube[::2, ::3], ints, axis=1)"),
    Accepts("strided 1-d src, 0-d index", "cs.scatter(src[::2], np.int64(0), axis=1)",
            "ref_scatter(src[::2], np.array(0), axis=1)"),
    Accepts("fill_value of a string gather", "cs.gather(np.array(['a', 'b']), [1, 5], mode='drop', fill_value='-')",
            "ref_gather(np.array(['a', 'b']), np.array([1, 5]), mode='drop', fill_value='-')"),
    Accepts("src sharing memory with dst", "cs.scatter_into(a[:2], a[1:5], idx)",
            "ref_scatter(a[1:5], idx, dst=a[:2])"),
    Accepts("index sharing memory with dst", "cs.scatter_into(ints, ints * 10, ints)",
            "ref_scatter(ints * 10, ints, dst=ints)"),
    Accepts("index is dst (gather_into)", "cs.gather_into(ints, ints[::-1] + 5, ints)",
            "ref_gather(ints[::-1] + 5, ints)"),
    Accepts("misaligned dst", "cs.scatter_into(misaligned, src, idx, 'max')",
            "ref_scatter(src, idx, 'max', dst=np.zeros(2))"),
    Accepts("np.matrix dst", "cs.scatter_into(np.matrix(np.zeros((2, 1))), src2[:, :1], idx, 'max')",
            "ref_scatter(src2[:, :1], idx, 'max', dst=np.zeros((2, 1)))"),
    Accepts("masked-array dst with no masked entry", "cs.gather_into(np.ma.masked_array(dst, [0, 0]), src, idx[:2])",
            "ref_gather(src, idx[:2])"),
    Accepts("int32 indptr (segment mean)", "cs.segment(src, np.array([0, 2, 4], np.int32), 'mean')",
            "np.array([0.5, 2.5])"),
    Accepts("int32 index wrapped into an axis of 2**31",
            "cs.scatter(np.ones((3, 0)), np.array([0, -1, 5], np.int32), dim_size=2**31, mode='wrap')",
            "np.zeros((2**31, 0))"),
    Accepts("int32 index clipped into an axis of 2**31 (gather)",
            "cs.gather(np.zeros((2**31, 0)), np.array([0, -1, 5], np.int32), mode='clip')", "np.zeros((3, 0))"),
]


def _snapshot(ns: dict) -> dict:
    return {k: v.copy() for k, v in ns.items() if isinstance(v, np.ndarray)}


def _assert_unchanged(ns: dict, before: dict) -> None:
    for name, old in before.items():
        new = ns[name]
        assert new.dtype == old.dtype and new.shape == old.shape, name
        assert new.tobytes() == old.tobytes(), f"{name} was modified"


@pytest.mark.parametrize("case", RAISES, ids=[c.what for c in RAISES])
def test_hostile_argument_raises_and_changes_nothing(case):
    ns = arguments()
    before = _snapshot(ns)
    with pytest.raises(case.error, match=case.match):
        eval(case.call, ns)
    _assert_unchanged(ns, before)


@pytest.mark.parametrize("case", ACCEPTS, ids=[c.what for c in ACCEPTS])
def test_unusual_argument_is_accepted(case):
    ns = arguments()
    expected = eval(case.expected, {**arguments(), "ref_scatter": ref_scatter, "ref_gather": ref_gather})
    got = eval(case.call, ns)
    assert got.dtype.newbyteorder("=") == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def markdown() -> str:
    """The tables above as markdown (docs/errors.rst shows them)."""
    def code(s):
        return "`" + s + "`"
    lines = ["| hostile input | example | raises | message says |", "|---|---|---|---|"]
    for c in RAISES:
        says = re.sub(r"\\(.)", r"\1", c.match).replace(".*", " … ").replace("|", "\\|")
        lines.append(f"| {c.what} | {code(c.call)} | `{c.error.__name__}` | {says} |")
    lines += ["", "| accepted input | example |", "|---|---|"]
    lines += [f"| {c.what} | {code(c.call)} |" for c in ACCEPTS]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
