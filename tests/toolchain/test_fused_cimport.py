"""The fused gather-scatter kernels' .pxd can be cimported by third-party Cython code: a scratch extension
groups the edges with `build_csr` and runs `gather_scatter_csr` without the GIL; checked against the plain-loop
reference."""
import numpy as np
import pytest

from reference_gather_scatter import ref_gather_scatter
from testing import build_scratch_extension

pytest.importorskip("Cython")

SCRATCH = """
from cython.view cimport contiguous
from libc.stdint cimport int64_t
from cyscatter.fused_kernels cimport build_csr, gather_scatter_csr
from cyscatter.kernels cimport OpMax

def weighted_max(const double[:, :, ::contiguous] src, const int64_t[::1] gather, const int64_t[::1] scatter,
                 const double[::1] weight, double[:, :, ::contiguous] out):
    cdef OpMax op
    cdef Py_ssize_t status
    cdef int64_t[::1] indptr = np.empty(out.shape[1] + 1, np.int64)
    cdef int64_t[::1] ids = np.empty(gather.shape[0], np.int64)
    cdef int64_t[::1] cols = np.empty(gather.shape[0], np.int64)
    with nogil:
        status = build_csr(scatter, out.shape[1], gather, src.shape[1], False, indptr, ids, cols)
        if status == -1:
            status = gather_scatter_csr(op, src, indptr, cols[:indptr[out.shape[1]]], &ids[0], &weight[0], 1, out, 2)
    return status

import numpy as np
"""



@pytest.mark.full   # a build: compiles a scratch Cython module
def test_cimport_fused_kernel(tmp_path):
    scratch_fused = build_scratch_extension(tmp_path, "scratch_fused", SCRATCH)
    rng = np.random.default_rng(2)
    src = rng.standard_normal((1, 6, 3))
    gather, scatter, weight = rng.integers(0, 6, 20), rng.integers(0, 4, 20), rng.standard_normal(20)
    out = np.full((1, 4, 3), -np.inf)
    assert scratch_fused.weighted_max(src, gather, scatter, weight, out) == -1
    expected = ref_gather_scatter(src[0], gather, scatter, "max", weight=weight, dim_size=4)
    np.testing.assert_array_equal(out[0], expected)
    bad = scatter.copy()
    bad[7] = 4
    assert scratch_fused.weighted_max(src, gather, bad, weight, out) == 7   # a status, never a crash
