"""Property-based tests: scatter, scatter_into, gather and gather_into against the plain-loop reference.

Random shapes (empty ones included), every op and alias, value and index dtype, int and tuple indices, axis
(positive or negative), every mode, every memory layout, values with NaN, +-inf, -0.0, huge and tiny magnitudes.
Results must match the reference bit for bit (complex products: a few ulps, see `compare.tolerance`), the same
exception must be raised where the reference raises one, and no argument but `dst` may change.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cyscatter as cs
from compare import assert_same, tolerance
from reference import ref_gather, ref_scatter
from strategies import (GATHER_DTYPES, axis_as_given, elements, examples, inferred_dims, lay_out, laid_out, problems,
                        value_arrays, value_dtypes)
from testing import VALUE_DTYPES, op_supports, true_division


@contextlib.contextmanager
def unchanged(*arrays):
    """Assert that the arrays (or tuples of arrays) hold the same bytes after the block, whatever it raised."""
    flat = [a for x in arrays for a in (x if isinstance(x, tuple) else (x,))]
    before = [a.copy() for a in flat]
    try:
        yield
    finally:
        for a, b in zip(flat, before):
            assert a.tobytes() == b.tobytes(), "an input argument was modified"


def reference_or_error(call):
    """The reference's result, or the exception class it raised (an out-of-range index under the mode)."""
    with np.errstate(all="ignore"):
        try:
            return call()
        except IndexError:
            return IndexError


def assert_moved(got, expected):
    """gather's results: `compare.assert_same`, extended to the item types gather alone accepts."""
    if got.dtype.kind == "M":   # NaT != NaT: compare the stored integers
        got, expected = got.view("i8"), expected.view("i8")
    if got.dtype.kind in "fc" and got.dtype.itemsize > 8:   # 80-bit long double: its padding bytes are not data
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got.real), np.signbit(expected.real))
    else:
        assert_same(got, expected)


def check(call, expected, compare=assert_same):
    if isinstance(expected, type):
        with pytest.raises(expected):
            call()
        return None
    with np.errstate(all="ignore"):
        got = call()
    compare(got, expected)
    return got


@examples(250)
@given(data=st.data())
def test_scatter_matches_reference(data):
    p = data.draw(problems())
    dtype = np.dtype(data.draw(value_dtypes(p.op)))
    src = laid_out(data.draw, data.draw(value_arrays(dtype, p.batch + p.ishape + p.feat, op=p.op)))
    result_dtype = np.float64 if true_division(p.op) and dtype.kind in "iu" else dtype
    fill = data.draw(st.none() | elements(result_dtype))
    axis = axis_as_given(data.draw, p, src.ndim)
    expected = reference_or_error(lambda: ref_scatter(src, p.index, p.op, dim_size=inferred_dims(p.case), axis=p.axis,
                                                      fill_value=fill, mode=p.mode))
    with unchanged(src, p.index):
        check(lambda: cs.scatter(src, p.index, p.op_name, dim_size=p.case.dim_size, axis=axis, fill_value=fill,
                                 mode=p.mode),
              expected, lambda a, b: assert_same(a, b, *tolerance("numpy", p.op, dtype, src)))


def _scatter_into_refusal(op: str, src_dtype, dst_dtype):
    """The TypeError scatter_into documents for these dtypes, or None."""
    if not op_supports(op, dst_dtype) or (true_division(op) and dst_dtype.kind in "iu"):
        return TypeError
    return None if np.can_cast(src_dtype, dst_dtype, "same_kind") else TypeError


@examples(250)
@given(data=st.data())
def test_scatter_into_matches_reference(data):
    p = data.draw(problems())
    src_dtype = np.dtype(data.draw(value_dtypes(p.op)))
    dst_dtype = np.dtype(data.draw(st.just(src_dtype) | st.sampled_from(VALUE_DTYPES)))
    src = laid_out(data.draw, data.draw(value_arrays(src_dtype, p.batch + p.ishape + p.feat, op=p.op,
                                                     complex_result=dst_dtype.kind == "c")))
    dst = lay_out(data.draw(value_arrays(dst_dtype, p.out_shape(p.case.dims), op=p.op)),
                  data.draw(st.sampled_from(("C", "F", "strided", "reversed"))))
    axis = axis_as_given(data.draw, p, src.ndim)
    expected = _scatter_into_refusal(p.op, src_dtype, dst_dtype) or reference_or_error(
        lambda: ref_scatter(src, p.index, p.op, axis=p.axis, mode=p.mode, dst=dst.view))
    base_before = dst.base.copy()
    with unchanged(src, p.index):
        got = check(lambda: cs.scatter_into(dst.view, src, p.index, p.op_name, axis=axis, mode=p.mode),
                    expected, lambda a, b: assert_same(a, b, *tolerance("numpy", p.op, dst_dtype, src)))
    if got is None:
        assert dst.base.tobytes() == base_before.tobytes(), "dst changed although the call raised"
    else:
        assert got is dst.view
        dst.assert_outside_untouched(base_before)


def _gather_src(data, p):
    dtype = np.dtype(data.draw(st.sampled_from(GATHER_DTYPES)))
    src = laid_out(data.draw, data.draw(value_arrays(dtype, p.batch + p.case.dims + p.feat)))
    return dtype, src, axis_as_given(data.draw, p, src.ndim)


@examples(200)
@given(data=st.data())
def test_gather_matches_reference(data):
    p = data.draw(problems())
    dtype, src, axis = _gather_src(data, p)
    # strings and datetimes: their own zero ('' and the epoch); gather's default 0 does not cast to them
    fill = data.draw(st.just(0) | elements(dtype)) if dtype.kind in "iufc" else np.zeros((), dtype)[()]
    expected = reference_or_error(lambda: ref_gather(src, p.index, axis=p.axis, mode=p.mode, fill_value=fill))
    with unchanged(src, p.index):
        check(lambda: cs.gather(src, p.index, axis=axis, mode=p.mode, fill_value=fill), expected, assert_moved)


@examples(200)
@given(data=st.data())
def test_gather_into_matches_reference(data):
    p = data.draw(problems())
    src_dtype, src, axis = _gather_src(data, p)
    dst_dtype = np.dtype(data.draw(st.just(src_dtype) | st.sampled_from(GATHER_DTYPES)))
    dst = lay_out(data.draw(value_arrays(dst_dtype, p.batch + p.ishape + p.feat)),
                  data.draw(st.sampled_from(("C", "F", "strided", "reversed"))))
    expected = TypeError if not np.can_cast(src_dtype, dst_dtype, "same_kind") else reference_or_error(
        lambda: ref_gather(src, p.index, axis=p.axis, mode=p.mode, dst=dst.view))
    base_before = dst.base.copy()
    with unchanged(src, p.index):
        got = check(lambda: cs.gather_into(dst.view, src, p.index, axis=axis, mode=p.mode), expected, assert_moved)
    if got is None:
        assert dst.base.tobytes() == base_before.tobytes(), "dst changed although the call raised"
    else:
        assert got is dst.view
        dst.assert_outside_untouched(base_before)
