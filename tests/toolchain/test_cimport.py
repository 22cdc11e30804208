"""The shipped `cyscatter/kernels.pxd` can be cimported: a scratch Cython module, compiled in a temporary folder
against `cyscatter.get_include()` (the in-place tree or the installed package, whichever is imported), calls the
per-op entry points without the GIL and is checked against NumPy's ufunc.at."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cyscatter

pytestmark = pytest.mark.full   # full tier: a build: compiles a scratch Cython module

pytest.importorskip("Cython")

SCRATCH = textwrap.dedent("""\
    # cython: language_level=3
    from cython.view cimport contiguous
    from libc.stdint cimport int32_t, int64_t
    from cyscatter.kernels cimport scatter_add, scatter_max

    # The fused entry points match views declared as in the .pxd (last axis ::contiguous) ...
    def add_float64(const double[:, :, ::contiguous] src, const int64_t[::1] index,
                    double[:, :, ::contiguous] out):
        cdef Py_ssize_t status
        with nogil:
            status = scatter_add(src, index, out)
        return status

    # ... and C-contiguous (::1) views once the specialisation is named.
    def max_int32(const int32_t[:, :, ::1] src, const int32_t[::1] index, int32_t[:, :, ::1] out):
        cdef Py_ssize_t status
        with nogil:
            status = scatter_max[int32_t, int32_t](src, index, out)
        return status
    """)

SETUP = textwrap.dedent("""\
    import sys
    from Cython.Build import cythonize
    from setuptools import Extension, setup
    setup(ext_modules=cythonize([Extension("scratch_cimport", ["scratch_cimport.pyx"])],
                                include_path=[sys.argv.pop()], quiet=True),
          script_args=["build_ext", "--inplace"])
    """)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """Compile the scratch module once per test session and import it."""
    folder = tmp_path_factory.mktemp("cimport")
    (folder / "scratch_cimport.pyx").write_text(SCRATCH)
    (folder / "setup.py").write_text(SETUP)
    build = subprocess.run([sys.executable, "setup.py", cyscatter.get_include()], cwd=folder,
                           capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    built = next(folder.glob("scratch_cimport*.so"), None) or next(folder.glob("scratch_cimport*.pyd"))
    spec = importlib.util.spec_from_file_location("scratch_cimport", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_get_include_holds_the_pxd():
    from pathlib import Path
    assert (Path(cyscatter.get_include()) / "cyscatter" / "kernels.pxd").is_file()


def test_cimported_scatter_add_matches_add_at(scratch):
    rng = np.random.default_rng(0)
    src = rng.standard_normal((2, 50, 3))
    index = rng.integers(0, 7, 50)
    out = np.zeros((2, 7, 3))
    assert scratch.add_float64(src, index, out) == -1
    expected = np.zeros((2, 7, 3))
    np.add.at(expected, (slice(None), index), src)
    np.testing.assert_array_equal(out, expected)


def test_cimported_scatter_max_matches_maximum_at(scratch):
    rng = np.random.default_rng(1)
    src = rng.integers(-100, 100, (1, 40, 2)).astype(np.int32)
    index = rng.integers(0, 5, 40).astype(np.int32)
    out = np.full((1, 5, 2), np.iinfo(np.int32).min, np.int32)
    assert scratch.max_int32(src, index, out) == -1
    expected = np.full((1, 5, 2), np.iinfo(np.int32).min, np.int32)
    np.maximum.at(expected, (slice(None), index), src)
    np.testing.assert_array_equal(out, expected)


def test_cimported_kernel_reports_the_bad_position(scratch):
    """Kernels never raise: an out-of-range entry comes back as its position."""
    out = np.zeros((1, 3, 1))
    assert scratch.add_float64(np.ones((1, 4, 1)), np.array([0, 2, 3, 1]), out) == 2
