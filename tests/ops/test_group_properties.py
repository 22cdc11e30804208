"""Property-based checks (hypothesis) of the group ops on arbitrary floats (NaN, infinities, signed zeros) and
arbitrary indices against the loop references."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cyscatter as cs
from reference import ref_scatter
from reference_extra import ref_logsumexp, ref_scatter_arg, ref_segment, ref_softmax

SETTINGS = settings(max_examples=60, deadline=None)
floats = hnp.arrays(np.float64, st.integers(0, 12), elements=st.floats(allow_nan=True, allow_infinity=True,
                                                                        width=64))


@st.composite
def values_and_index(draw, sizes=st.integers(1, 4)):
    src = draw(floats)
    size = draw(sizes)
    index = draw(hnp.arrays(np.int64, src.shape, elements=st.integers(0, size - 1)))
    return src, index, size


@SETTINGS
@given(values_and_index(), st.sampled_from(["max", "min"]))
def test_argext_property(case, kind):
    src, index, size = case
    func = cs.scatter_argmax if kind == "max" else cs.scatter_argmin
    np.testing.assert_array_equal(func(src, index, dim_size=size),
                                  ref_scatter_arg(src, index, kind, dim_size=size))


@SETTINGS
@given(values_and_index(), st.sampled_from(["add", "mul", "max", "min", "mean"]))
def test_segment_and_sorted_scatter_property(case, op):
    src, index, size = case
    index = np.sort(index)
    indptr = np.searchsorted(index, np.arange(size + 1))
    with np.errstate(all="ignore"):
        want = ref_scatter(src, index, op, dim_size=size)
        np.testing.assert_array_equal(cs.segment(src, indptr, op), ref_segment(src, indptr, op))
        np.testing.assert_array_equal(cs.segment(src, indptr, op), want)
        np.testing.assert_array_equal(cs.scatter(src, index, op, dim_size=size, indices_are_sorted=True), want)


@SETTINGS
@given(values_and_index())
def test_softmax_family_property(case):
    src, index, size = case
    np.testing.assert_allclose(cs.scatter_logsumexp(src, index, dim_size=size),
                               ref_logsumexp(src, index, dim_size=size), rtol=1e-12)
    np.testing.assert_allclose(cs.scatter_softmax(src, index, dim_size=size),
                               ref_softmax(src, index, dim_size=size), rtol=1e-12, atol=1e-300)
    # x - logsumexp cancels where one member dominates its group: an absolute error of an ulp of |x| there
    scale = float(np.abs(src[np.isfinite(src)]).max(initial=1.0))
    np.testing.assert_allclose(cs.scatter_log_softmax(src, index, dim_size=size),
                               ref_softmax(src, index, log=True, dim_size=size), rtol=1e-12,
                               atol=4 * np.finfo(np.float64).eps * scale)
