"""Non-contiguous inputs and destinations: views whose inner stride is 1 but whose rows are not packed must
work (the kernels need fully C-contiguous canonical views, so these are copied once)."""
import numpy as np
import pytest

import cyscatter as cs
from reference import ref_gather, ref_scatter

VIEWS = {
    "row_slice": lambda a: a[:, :2],        # unit inner stride, rows not packed
    "column_step": lambda a: a[:, ::2],
    "row_step": lambda a: a[::2],
    "transposed": lambda a: a.T,
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_scatter_from_a_view(backend, view):
    src = VIEWS[view](np.arange(48.0).reshape(8, 6))
    index = np.arange(src.shape[0]) % 3
    got = cs.scatter(backend.asarray(src), backend.asarray(index), "add", axis=0)
    np.testing.assert_array_equal(backend.to_numpy(got), ref_scatter(src, index, "add"))


@pytest.mark.parametrize("view", list(VIEWS))
def test_scatter_into_a_view(backend, view):
    base = np.arange(48.0).reshape(8, 6)
    dst = VIEWS[view](base)
    src, index = np.full((5,) + dst.shape[1:], 100.0), np.array([0, 1, 0, 2, 1])
    expected = ref_scatter(src, index, "max", dst=dst.copy())
    target = VIEWS[view](backend.asarray(base))
    cs.scatter_into(target, backend.asarray(src), backend.asarray(index), "max")
    np.testing.assert_array_equal(backend.to_numpy(target), expected)


@pytest.mark.parametrize("view", list(VIEWS))
def test_gather_into_a_view(backend, view):
    base = np.zeros((8, 6))
    dst = VIEWS[view](base)
    src = np.arange(10.0 * dst.shape[1]).reshape(10, dst.shape[1])
    index = np.arange(dst.shape[0]) % 10
    target = VIEWS[view](backend.asarray(base))
    cs.gather_into(target, backend.asarray(src), backend.asarray(index))
    np.testing.assert_array_equal(backend.to_numpy(target), ref_gather(src, index))
