"""Build script: only cythonizes the kernels; all metadata lives in pyproject.toml.

CYSCATTER_DEBUG=1 turns on Cython bounds and wraparound checks (a debug build for the test suite);
CYSCATTER_SANITIZE=1 adds AddressSanitizer and UndefinedBehaviorSanitizer flags;
CYSCATTER_OPENMP=0 builds without OpenMP (the kernels then run on one thread).
"""
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("CYSCATTER_DEBUG", "0") == "1"
SANITIZE = os.environ.get("CYSCATTER_SANITIZE", "0") == "1"
OPENMP = os.environ.get("CYSCATTER_OPENMP", "1") == "1"

# -fcx-limited-range: complex products by the plain formula, as NumPy computes them (C99 Annex G's recovery
# of infinities would differ from np.multiply.at; complex division goes through Smith's method in _cdiv.h)
compile_args = ["-O3", "-fwrapv", "-fno-strict-aliasing", "-fcx-limited-range"]
link_args = []
if OPENMP:
    openmp = ["/openmp"] if sys.platform == "win32" else ["-fopenmp"]
    compile_args += openmp
    link_args += [] if sys.platform == "win32" else openmp
if SANITIZE:
    flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]
    compile_args += flags
    link_args += flags

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

extensions = [
    Extension(
        f"cyscatter.{module}",
        [f"cyscatter/{module}.pyx"],
        include_dirs=[np.get_include(), "cyscatter"],
        depends=[os.path.join("cyscatter", h) for h in ("_cpu.h", "_cdiv.h", "_fused.h")],   # setuptools does not scan includes
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"), ("CYSCATTER_DEBUG", "1" if DEBUG else "0")],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for module in ("kernels", "group_kernels", "fused_kernels")
]

setup(ext_modules=cythonize(extensions, compiler_directives=directives,
                            build_dir="build/cython" if DEBUG else None))
