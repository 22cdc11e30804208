"""The assignment kernels' .pxd can be cimported by third-party Cython code (compiles a scratch extension)."""
import numpy as np
import pytest

from testing import build_scratch_extension

SCRATCH = """
from libc.stdint cimport int64_t
from cyscatter.assign_kernels cimport winner_rows
from cyscatter.kernels cimport MODE_DROP

def first_winners(const int64_t[::1] index, int64_t[::1] winner):
    cdef Py_ssize_t status
    with nogil:
        status = winner_rows(&index[0], index.shape[0], winner.shape[0], False, &winner[0], NULL, MODE_DROP)
    return status
"""


@pytest.mark.full   # a build: compiles a scratch Cython module
def test_cimport_winner_pass(tmp_path):
    scratch = build_scratch_extension(tmp_path, "scratch_assign", SCRATCH)
    index = np.array([2, 0, 2, 9, 0, -1], dtype=np.int64)
    winner = np.zeros(4, np.int64)
    assert scratch.first_winners(index, winner) == -1
    np.testing.assert_array_equal(winner, [1, -1, 0, -1])   # the first entry of each row; row 1, 3: none
