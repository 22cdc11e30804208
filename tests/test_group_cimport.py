"""The group kernels' .pxd can be cimported by third-party Cython code (compiles a scratch extension)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cyscatter as cs
from reference_extra import ref_segment

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

SETUP = """
from Cython.Build import cythonize
from setuptools import Extension, setup
import numpy as np
setup(ext_modules=cythonize([Extension("scratch", ["scratch.pyx"], include_dirs=[np.get_include()])],
                            include_path=[{include!r}], compiler_directives={{"language_level": 3}}),
      script_args=["build_ext", "--inplace", "-q"])
"""


@pytest.mark.slow
def test_cimport_segment_kernel(tmp_path):
    (tmp_path / "scratch.pyx").write_text(textwrap.dedent(SCRATCH))
    (tmp_path / "setup.py").write_text(SETUP.format(include=cs.get_include()))
    build = subprocess.run([sys.executable, "setup.py"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    sys.path.insert(0, str(tmp_path))
    try:
        import scratch
    finally:
        sys.path.remove(str(tmp_path))
    src = np.array([1.0, 5.0, -2.0, 4.0]).reshape(1, 4, 1)
    indptr = np.array([0, 2, 2, 4], dtype=np.int64)
    out = np.full((1, 3, 1), -np.inf)
    assert scratch.segment_max(src, indptr, out) == -1
    np.testing.assert_array_equal(out.ravel(), ref_segment(src.ravel(), indptr, "max"))
