"""fill_value given as a NumPy integer the output cannot hold raises ValueError as a Python int does (it was
wrapped by astype); dropped entries of a string gather into `out` are '' as in a fresh output; grad.gather's
default fill_value is the core's."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs

grad = pytest.importorskip("grad")

IDX = np.array([0, 0, 2])


@pytest.mark.parametrize("call", [
    lambda f: cs.scatter_argmax(np.ones(3), IDX, dim_size=4, fill_value=f),
    lambda f: grad.scatter_argmax(np.ones(3), IDX, dim_size=4, fill_value=f),
], ids=["core", "grad"])
@pytest.mark.parametrize("fill", [np.uint64(2**63), np.uint64(2**64 - 1), 2**63])
def test_argmax_fill_out_of_int64(call, fill):
    with pytest.raises(ValueError, match="fill_value"):
        call(fill)


@pytest.mark.parametrize("dtype, fill", [(np.int8, np.int64(300)), (np.uint8, np.int8(-1)), (np.uint8, np.int64(256)),
                                         (np.int64, np.uint64(2**64 - 1)), (np.int16, np.int32(-40000))])
def test_scatter_and_gather_refuse_numpy_integers_out_of_range(dtype, fill):
    src = np.arange(3, dtype=dtype)
    with pytest.raises(ValueError, match="fill_value"):
        cs.scatter(src, IDX, dim_size=4, fill_value=fill)
    with pytest.raises(ValueError, match="fill_value"):
        cs.gather(src, np.array([0, 9]), mode="drop", fill_value=fill)


@pytest.mark.parametrize("dtype, fill, expected", [(np.uint8, np.int64(7), 7), (np.int8, np.uint8(5), 5),
                                                   (np.int64, np.int64(-1), -1)])
def test_numpy_integers_in_range_are_taken(dtype, fill, expected):
    out = cs.scatter(np.arange(3, dtype=dtype), IDX, dim_size=4, fill_value=fill)
    assert out.dtype == dtype and out[1] == expected and out[3] == expected


@pytest.mark.parametrize("mode", ["drop", "normalize_drop"])
@pytest.mark.parametrize("src", [np.array(["a", "b", "c"]), np.array([b"a", b"b", b"c"])])
def test_string_gather_into_out_fills_empty_strings(src, mode):
    out = np.full(2, src[0])
    got = cs.gather(src, np.array([2, 7]), mode=mode, out=out)
    assert got is out
    np.testing.assert_array_equal(out, cs.gather(src, np.array([2, 7]), mode=mode))
    assert out[1] == src[:0].dtype.type()   # '' / b''


def test_grad_gather_default_fill_is_the_cores():
    src = np.array(["a", "b", "c"])
    np.testing.assert_array_equal(grad.gather(src, np.array([2, 7]), mode="drop"),
                                  cs.gather(src, np.array([2, 7]), mode="drop"))
