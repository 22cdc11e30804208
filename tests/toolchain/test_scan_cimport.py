"""The scan kernels' .pxd can be cimported by third-party Cython code (compiles a scratch extension)."""
import numpy as np
import pytest

from reference_scan import ref_scan
from testing import build_scratch_extension

SCRATCH = """
from cython.view cimport contiguous
from libc.stdint cimport int64_t
from cyscatter.scan_kernels cimport scan_rows
from cyscatter.kernels cimport OpAdd, MODE_RAISE

def running_sum(const double[:, :, ::contiguous] src, const int64_t[::1] index, double[:, :, ::contiguous] out,
                double[:, ::contiguous] table, int64_t[:, :, ::contiguous] arg, int64_t[:, ::contiguous] targ):
    cdef OpAdd op
    cdef Py_ssize_t status
    with nogil:
        status = scan_rows(op, src, index, out, table, 0.0, False, False, MODE_RAISE, False, arg, targ)
    return status
"""


@pytest.mark.full   # a build: compiles a scratch Cython module
def test_cimport_scan_kernel(tmp_path):
    scratch = build_scratch_extension(tmp_path, "scratch_scan", SCRATCH)
    index = np.array([0, 1, 0, 2, 0], dtype=np.int64)
    src = np.array([1.0, 5.0, -2.0, 4.0, 0.5]).reshape(1, 5, 1)
    out = np.empty_like(src)
    table = np.empty((3, 1))
    assert scratch.running_sum(src, index, out, table, np.zeros((1, 1, 1), np.int64), np.zeros((1, 1), np.int64)) == -1
    np.testing.assert_array_equal(out.ravel(), ref_scan(src.ravel(), index, "add"))
