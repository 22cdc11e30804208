"""In-place forms whose src or index share memory with dst behave as if they had been copied first."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from reference import ref_gather, ref_scatter
from testing import OPS

# (name, view of the (6, 2) dst used as src): the whole array, a reversed view, a shifted overlapping slice
SRC_VIEWS = {
    "itself": lambda d: d,
    "reversed": lambda d: d[::-1],
    "shifted": lambda d: d[1:],
    "column": lambda d: d[:, ::-1],
}


def _index_for(src):
    return np.arange(src.shape[0])[::-1] % 4


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", SRC_VIEWS)
def test_scatter_into_src_is_a_view_of_dst(backend, view, op):
    dst = backend.asarray(np.arange(1.0, 13.0).reshape(6, 2))
    src = SRC_VIEWS[view](dst)
    idx = _index_for(src)
    expected = ref_scatter(backend.to_numpy(src).copy(), idx, op, dst=backend.to_numpy(dst).copy())
    src_host = backend.to_numpy(src).copy()
    cs.scatter_into(dst, src, backend.asarray(idx), op)
    backend.assert_result(dst, expected, op, src_host, expected)


@pytest.mark.parametrize("view", SRC_VIEWS)
def test_gather_into_src_is_a_view_of_dst(backend, view):
    dst = backend.asarray(np.arange(1.0, 13.0).reshape(6, 2))
    src = SRC_VIEWS[view](dst)
    idx = np.array([3, 0, 0, 2, 1, 0]) % src.shape[0]
    expected = ref_gather(backend.to_numpy(src).copy(), idx, dst=backend.to_numpy(dst).copy())
    cs.gather_into(dst, src, backend.asarray(idx))
    assert_same(backend.to_numpy(dst), expected)


@pytest.mark.parametrize("index_dtype", ["int64", "int32", "int16"])
@pytest.mark.parametrize("func", ["scatter_into", "gather_into"])
def test_index_is_a_view_of_dst(func, index_dtype):
    """The index is read from dst's own memory, which the call overwrites."""
    dst = np.array([3, 1, 0, 2, 0, 1], index_dtype)
    idx = dst[::-1] if func == "scatter_into" else dst
    src = np.arange(10, 16).astype(index_dtype)
    if func == "scatter_into":
        expected = ref_scatter(src, idx.copy(), dst=dst.copy())
    else:
        expected = ref_gather(src, idx.copy(), dst=dst.copy())
    getattr(cs, func)(dst, src, idx)
    assert_same(dst, expected)


def test_tuple_index_part_is_a_view_of_dst():
    dst = np.array([[1, 0], [0, 1]], np.int64)
    idx = (dst[0], dst[:, 1])   # both coordinates read from dst
    src = np.array([5, 7], np.int64)
    expected = ref_scatter(src, (idx[0].copy(), idx[1].copy()), dst=dst.copy())
    cs.scatter_into(dst, src, idx)
    assert_same(dst, expected)
