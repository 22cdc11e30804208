"""The group kernels' .pxd can be cimported by third-party Cython code (compiles a scratch extension)."""
import numpy as np
import pytest

from reference_extra import ref_segment
from testing import build_scratch_extension

SCRATCH = """
from cython.view cimport contiguous
from libc.stdint cimport int64_t
from cyscatter.group_kernels cimport segment_reduce_rows
from cyscatter.kernels cimport OpMax

def segment_max(const double[:, :, ::contiguous] src, const int64_t[::1] indptr, double[:, :, ::contiguous] out):
    cdef OpMax op
    cdef Py_ssize_t status
    with nogil:
        status = segment_reduce_rows(op, src, indptr, out)
    return status
"""



@pytest.mark.full   # a build: compiles a scratch Cython module
def test_cimport_segment_kernel(tmp_path):
    scratch = build_scratch_extension(tmp_path, "scratch", SCRATCH)
    src = np.array([1.0, 5.0, -2.0, 4.0]).reshape(1, 4, 1)
    indptr = np.array([0, 2, 2, 4], dtype=np.int64)
    out = np.full((1, 3, 1), -np.inf)
    assert scratch.segment_max(src, indptr, out) == -1
    np.testing.assert_array_equal(out.ravel(), ref_segment(src.ravel(), indptr, "max"))
