"""Every case of the NNlib.jl / ScatterNNlib.jl reference file (see /work/shared/cases/README.md).

The shared copy is used when it exists, else the vendored tests/data copy. Forward cases compare values (floats
with rtol 1e-12, integers exactly) and the dtype our rules promise; error cases must raise IndexError,
ValueError or TypeError and leave dst unchanged; gradient cases go through the split reverse functions with the
forward output taken from the reference implementation.
"""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from nnlib_cases import CASES, ERRORS, array, assert_matches, by_kind, index_of, src_of
from reference import ref_scatter, result_dtype

def test_every_case_is_run():
    """A new kind of case in the file must get a test here rather than being skipped silently."""
    known = {"scatter", "scatter!", "gather", "gather!", "grad scatter! wrt dst and src", "maximum_dims",
             "reverse_indices", "gather_along_axis (ScatterNNlib only)"}
    assert {c["kind"] for c in CASES} <= known
    assert len(CASES) >= 124


@by_kind("scatter")
def test_scatter(backend, case):
    src, idx = backend.asarray(src_of(case)), backend.asarray(index_of(case))
    m = len(idx) if isinstance(idx, tuple) else 1
    out_shape = tuple(case["out_shape"])
    if "expected_error" in case:
        with pytest.raises(ERRORS):
            cs.scatter(src, idx, case["op"], dim_size=out_shape[:m])
        return
    if "init" in case:   # NNlib's init: the start of every position, i.e. an in-place scatter into a full array
        dst = backend.xp.full(out_shape, case["init"], src.dtype)
        out = cs.scatter_into(dst, src, idx, case["op"])
    else:
        out = cs.scatter(src, idx, case["op"], dim_size=out_shape[:m] if m > 1 else out_shape[0])
        assert out.dtype == result_dtype(case["op"], src.dtype)
    assert_matches(backend.to_numpy(out), array(case, "expected"))


@by_kind("scatter!")
def test_scatter_into(backend, case):
    src, idx = backend.asarray(src_of(case)), backend.asarray(index_of(case))
    dst = backend.asarray(array(case, "dst_init", case["dtype"]))
    if "expected_error" in case:
        with pytest.raises(ERRORS):
            cs.scatter_into(dst, src, idx, case["op"])
        np.testing.assert_array_equal(backend.to_numpy(dst), array(case, "dst_init", case["dtype"]))
        return
    assert cs.scatter_into(dst, src, idx, case["op"]) is dst
    assert_matches(backend.to_numpy(dst), array(case, "expected"))


@by_kind("gather")
def test_gather(backend, case):
    src, idx = backend.asarray(src_of(case)), backend.asarray(index_of(case))
    if "expected_error" in case:
        with pytest.raises(ERRORS):
            cs.gather(src, idx)
        return
    out = cs.gather(src, idx)
    assert out.dtype == src.dtype
    expected = array(case, "expected")
    assert_matches(backend.to_numpy(out), expected.reshape(case.get("out_shape", expected.shape)))


@by_kind("gather!")
def test_gather_into(backend, case):
    src, idx = backend.asarray(src_of(case)), backend.asarray(index_of(case))
    dst = backend.asarray(array(case, "dst_init", case["dtype"]))
    if "expected_error" in case:
        with pytest.raises(ERRORS):
            cs.gather_into(dst, src, idx)
        np.testing.assert_array_equal(backend.to_numpy(dst), array(case, "dst_init", case["dtype"]))
        return
    assert_matches(backend.to_numpy(cs.gather_into(dst, src, idx)), array(case, "expected"))


@by_kind("grad scatter! wrt dst and src")
def test_gradients(case):
    """True gradients (ties split evenly), never NNlib's or ScatterNNlib's own numbers."""
    src, idx = src_of(case), index_of(case)
    dst, delta = array(case, "dst_init", case["dtype"]), array(case, "delta")
    out = ref_scatter(src, idx, case["op"], dst=dst)
    grad_src = cs.scatter_vjp_src(case["op"], delta, src, idx, out, dst=dst)
    grad_dst = cs.scatter_vjp_dst(case["op"], delta, dst, src, idx, out)
    assert_matches(grad_src, array(case, "expected_grad_src"))
    assert_matches(grad_dst, array(case, "expected_grad_dst"))


@by_kind("maximum_dims")
def test_inferred_dim_size(case):
    """NNlib's maximum_dims is our default dim_size: per coordinate, the largest entry + 1."""
    idx = index_of(case)
    ishape = (idx[0] if isinstance(idx, tuple) else idx).shape
    out = cs.scatter(np.zeros(ishape), idx)
    assert out.shape == tuple(case["expected"])


@by_kind("reverse_indices")
def test_reverse_indices(case):
    """NNlib's reverse_indices (positions k with idx[k] == v, per v) is no API of ours; its content is checked
    through scatters of the positions: per v the count, smallest, largest and sum of the flat positions."""
    idx = index_of(case)
    groups = [np.ravel_multi_index(tuple(np.array(g).T), idx.shape) for g in case["expected"]]
    positions = np.arange(idx.size).reshape(idx.shape)
    assert_matches(cs.scatter(np.ones(idx.shape, np.int64), idx, "add"), np.array([len(g) for g in groups]))
    assert_matches(cs.scatter(positions, idx, "min"), np.array([g.min() for g in groups]))
    assert_matches(cs.scatter(positions, idx, "max"), np.array([g.max() for g in groups]))
    assert_matches(cs.scatter(positions, idx, "add"), np.array([g.sum() for g in groups]))


@by_kind("gather_along_axis (ScatterNNlib only)")
def test_gather_along_axis(case):
    """ScatterNNlib's gather(X, index, dims) is np.take_along_axis, no API of ours; it is a gather with a tuple
    index whose other coordinate is the position itself."""
    src, idx, axis = array(case, "src", case["dtype"]), np.array(case["index"]), case["axis"]
    grid = np.indices(idx.shape)
    coords = tuple(idx if a == axis else grid[a] for a in range(idx.ndim))
    out = cs.gather(src, coords)
    assert_matches(out, array(case, "expected"))
    assert_matches(out, np.take_along_axis(src, idx, axis))
