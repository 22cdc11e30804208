"""The NaN-counting kernel's .pxd can be cimported by third-party Cython code (compiles a scratch extension)."""
import numpy as np
import pytest

from testing import build_scratch_extension

SCRATCH = """
from libc.stdint cimport uint8_t, int64_t
from cyscatter.nan_kernels cimport nan_pass

def count_rows(const double[:, ::1] src, const int64_t[::1] index, uint8_t[:, ::1] counts):
    cdef Py_ssize_t found
    with nogil:
        found = nan_pass(&src[0, 0], 0, src.shape[1], 1, &index[0], index.shape[0], NULL, 0, 0, 0,
                         &counts[0, 0], counts.shape[0], src.shape[1], 0, 1, 0, src.shape[1])
    return found

def nansum_rows(const double[:, ::1] src, const int64_t[::1] index, double[:, ::1] out):
    cdef Py_ssize_t found
    cdef uint8_t* none = NULL
    with nogil:
        found = nan_pass(&src[0, 0], 0, src.shape[1], 1, &index[0], index.shape[0], &out[0, 0], 0, out.shape[1],
                         1, none, out.shape[0], src.shape[1], 0, 1, 0, src.shape[1])
    return found
"""


@pytest.mark.full   # a build: compiles a scratch Cython module
def test_cimport_nan_pass(tmp_path):
    scratch = build_scratch_extension(tmp_path, "scratch_nan", SCRATCH)
    src = np.array([[1.0, np.nan], [np.nan, np.nan], [3.0, 4.0], [np.nan, 0.0]])
    index = np.array([2, 0, 2, 7], dtype=np.int64)   # 7 is out of range: skipped
    counts = np.zeros((3, 2), np.uint8)
    assert scratch.count_rows(src, index, counts) > 0
    np.testing.assert_array_equal(counts, [[1, 1], [0, 0], [0, 1]])
    clean = np.zeros((4, 2))
    assert scratch.count_rows(clean, index, counts) == 0
    out = np.full((3, 2), -0.0)
    assert scratch.nansum_rows(src, index, out) > 0
    np.testing.assert_array_equal(out, [[-0.0, -0.0], [-0.0, -0.0], [4.0, 4.0]])
    assert np.signbit(out[0]).all()
