"""Build script: cythonizes and compiles the kernels; all metadata lives in pyproject.toml.

Environment switches (read at build time):

- ``CYSCATTER_DEBUG=1``: Cython bounds, wraparound and initialization checks in every kernel (a debug build for
  the test suite; its C files go to ``build/cython``), compiled with ``-g`` and not stripped.
- ``CYSCATTER_SANITIZE=1``: AddressSanitizer and UndefinedBehaviorSanitizer flags (GCC/Clang), with ``-g``, not
  stripped (``tools/sanitize.sh`` runs the tests against such a build).
- ``CYSCATTER_JAX_FFI=0``: skip the optional C++ extension ``cyscatter.jax._ffi`` (the XLA FFI bridge through
  which jitted ``cyscatter.jax`` functions get XLA's buffers without copies). It is built only where ``jaxlib``
  imports and ships the XLA FFI headers (``jaxlib/include/xla/ffi/api/ffi.h``), so not in an isolated build
  environment without jaxlib (``pip install --no-build-isolation``, or ``build_ext --inplace``, with JAX
  installed); if it is missing or fails to compile, ``cyscatter.jax`` falls back to ``jax.pure_callback``.
- ``CYSCATTER_OPENMP=0``: build without OpenMP (the kernels then run on one thread). With the default (``1``) a
  tiny OpenMP program is compiled and linked first; if the compiler cannot, the build goes on without OpenMP and
  says so in a warning.

Flags per compiler (``build_ext`` below asks the compiler, not the platform): GCC and Clang get ``-O3 -fwrapv
-fno-strict-aliasing``, complex products by the plain formula (GCC ``-fcx-limited-range``; Clang the same flag or
``-fcomplex-arithmetic=basic``, whichever it takes, else nothing) and, on ELF platforms, a release build without
debug information (``-g0``, ``-Wl,--strip-debug``: a fraction of a debug build's size); MSVC
gets ``/O2`` and ``/openmp``. Every optional flag is tried on a scratch file first and dropped if refused.

Rebuilds: each compiled module is kept in ``build/cyscatter-cache`` (its three newest builds) under a key made of
everything that goes into it (the sources of the project it depends on, Cython, NumPy and Python versions,
compiler and flags, this file). A later build with the same key (the README's second ``pip install -e``, whose
isolated build environment is new and so looks newer than every compiled file) copies it instead of compiling;
``build_ext --force`` compiles anew.
"""
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
DEBUG = os.environ.get("CYSCATTER_DEBUG", "0") == "1"
SANITIZE = os.environ.get("CYSCATTER_SANITIZE", "0") == "1"
OPENMP = os.environ.get("CYSCATTER_OPENMP", "1") == "1"
JAX_FFI = os.environ.get("CYSCATTER_JAX_FFI", "1") == "1"
CACHE = os.path.join(HERE, "build", "cyscatter-cache")
KEEP = 3   # builds kept per module in CACHE
HEADERS = ("include/_cpu.h", "include/_cdiv.h", "include/_fused.h", "include/_halfconv.h", "include/_stage.h",
           "include/_convscatter.h", "include/_layout.h", "include/_gather_apart.h",
           "include/_halfround.h", "include/_index_at.h", "include/_csrsum.h")   # setuptools does not scan includes
HEADERS_PATHS = tuple(f"cyscatter/{h}" for h in HEADERS)

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

OPENMP_PROBE = r"""
#include <omp.h>
int cyscatter_openmp_probe(int n) {
    int s = 0;
    #pragma omp parallel for reduction(+:s)
    for (int i = 0; i < n; i++) s += i;
    return s + omp_get_max_threads();
}
"""


@contextlib.contextmanager
def _quiet():
    """Silences the compiler's own stderr/stdout during a probe (a refused flag is expected there)."""
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        sys.stdout.flush(), sys.stderr.flush()
        os.dup2(null.fileno(), 1), os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            os.close(saved[0]), os.close(saved[1])


class cyscatter_build_ext(build_ext):
    """Chooses flags by asking the compiler, cythonizes, and reuses an identical earlier build (see the docstring)."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:   # one compiler per core unless -j says otherwise: six modules of minutes each
            self.parallel = os.cpu_count() or 1

    def _probe(self, source: str, compile_args=(), link_args=None) -> bool:
        """True if `source` compiles with `compile_args` (and, given `link_args`, links into a shared object)."""
        with tempfile.TemporaryDirectory() as tmp:
            c_file = os.path.join(tmp, "probe.c")
            with open(c_file, "w") as f:
                f.write(source)
            try:
                with _quiet():
                    objects = self.compiler.compile([c_file], output_dir=tmp, extra_postargs=list(compile_args))
                    if link_args is not None:
                        self.compiler.link_shared_object(objects, os.path.join(tmp, "probe.so"),
                                                         extra_postargs=list(link_args))
            except Exception:
                return False
            return True

    def _accepts(self, *flags: str) -> bool:
        # -Werror: Clang only warns about some flags it does not use
        return self._probe("int cyscatter_probe(void) { return 0; }\n", ["-Werror", *flags])

    def _choose_flags(self):
        compile_args, link_args, notes = [], [], []
        kind = self.compiler.compiler_type
        if kind == "msvc":
            compile_args = ["/O2"]
            if OPENMP:
                compile_args.append("/openmp")
            return compile_args, link_args, "msvc: /O2" + (" /openmp" if OPENMP else "")
        is_clang = self._probe("#ifndef __clang__\n#error not clang\n#endif\nint x;\n")
        is_gcc = not is_clang and self._probe("#if !defined(__GNUC__) || defined(__INTEL_COMPILER)\n#error\n#endif\n"
                                              "int x;\n")
        family = "clang" if is_clang else "gcc" if is_gcc else kind
        for flag in ("-O3", "-fwrapv", "-fno-strict-aliasing"):
            if self._accepts(flag):
                compile_args.append(flag)
        # complex products by the plain formula, as NumPy computes them (C99 Annex G's recovery of infinities would
        # differ from np.multiply.at; complex division goes through Smith's method in _cdiv.h)
        candidates = {"gcc": ["-fcx-limited-range"],
                      "clang": ["-fcx-limited-range", "-fcomplex-arithmetic=basic"]}.get(family, [])
        complex_flag = next((flag for flag in candidates if self._accepts(flag)), None)
        if complex_flag:
            compile_args.append(complex_flag)
        else:
            notes.append("no flag for plain complex products")
        if OPENMP:
            if self._probe(OPENMP_PROBE, ["-fopenmp"], ["-fopenmp"]):
                compile_args.append("-fopenmp")
                link_args.append("-fopenmp")
            else:
                notes.append("no OpenMP")
                print("WARNING: cyscatter: the compiler could not build an OpenMP program with -fopenmp; building "
                      "WITHOUT OpenMP, so every kernel runs on one thread (CYSCATTER_OPENMP=0 skips this check)",
                      file=sys.stderr)
        if SANITIZE:
            flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]
            compile_args += flags
            link_args += flags
        elif DEBUG:
            compile_args.append("-g")
        elif sys.platform.startswith(("linux", "freebsd")) and self._probe(
                "int cyscatter_probe(void) { return 0; }\n", ["-g0"], ["-Wl,--strip-debug"]):
            # release build on ELF: no debug information (Python's own CFLAGS ask for -g; the last flag wins)
            compile_args.append("-g0")
            link_args.append("-Wl,--strip-debug")
        return compile_args, link_args, f"{family}: {' '.join(compile_args)} | link: {' '.join(link_args)}" + (
            f" ({'; '.join(notes)})" if notes else "")

    def _key(self, ext) -> str:
        """Everything the compiled `ext` depends on, hashed."""
        h = hashlib.sha256()
        package = os.path.join(HERE, "cyscatter")
        files = [ext._cyscatter_source, "setup.py"] + sorted(
            f"cyscatter/{f}" for f in os.listdir(package) if f.endswith((".pxd", ".pxi"))) + list(HEADERS_PATHS)
        for path in files:
            h.update(path.encode() + b"\0")
            with open(os.path.join(HERE, path), "rb") as f:
                h.update(f.read())
        import Cython
        compiler_id = ""
        if self.compiler.compiler_type != "msvc":
            compiler_id = subprocess.run([*self.compiler.compiler_so[:1], "--version"], capture_output=True,
                                         text=True).stdout
        for part in (ext.name, Cython.__version__, np.__version__, sys.version, sysconfig.get_platform(),
                     sysconfig.get_config_var("EXT_SUFFIX"), str(getattr(self.compiler, "compiler_so", "")),
                     compiler_id, repr(ext.extra_compile_args), repr(ext.extra_link_args), repr(ext.define_macros),
                     repr(sorted(directives.items())), repr(self.debug), getattr(ext, "_cyscatter_versions", "")):
            h.update(str(part).encode() + b"\0")
        return h.hexdigest()[:20]

    def build_extensions(self):
        compile_args, link_args, summary = self._choose_flags()
        print(f"cyscatter build flags ({summary})")
        for ext in self.extensions:
            ext.extra_compile_args = list(compile_args)
            ext.extra_link_args = list(link_args)
            ext._cyscatter_source = ext.sources[0]
            if ext.language == "c++":
                ext.extra_compile_args.append("/std:c++17" if self.compiler.compiler_type == "msvc" else "-std=c++17")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        to_build = []
        for ext in self.extensions:
            ext._cyscatter_cached = os.path.join(CACHE, f"{ext.name}.{self._key(ext)}{suffix}")
            target = self.get_ext_fullpath(ext.name)
            if not self.force and os.path.exists(ext._cyscatter_cached):
                print(f"cyscatter: {ext.name} unchanged since an earlier build: copying it, not compiling")
                self.mkpath(os.path.dirname(target))
                shutil.copyfile(ext._cyscatter_cached, target)
                shutil.copymode(ext._cyscatter_cached, target)
            else:
                to_build.append(ext)
        if not to_build:
            return
        from Cython.Build import cythonize   # once, here: Cython is not safe to run in build_ext's -j threads
        cython = [ext for ext in to_build if ext.sources[0].endswith(".pyx")]
        for ext, cythonized in zip(cython, cythonize(cython, compiler_directives=directives, force=self.force,
                                                     build_dir="build/cython" if DEBUG else None,
                                                     nthreads=self.parallel or 0)):
            ext.sources = cythonized.sources
            ext.depends = cythonized.depends
        # compile them even where build_ext's own check finds an output newer than its sources: that output may be
        # of other flags (a debug build, say), which its timestamps cannot tell
        every, force = self.extensions, self.force
        self.extensions, self.force = to_build, True
        try:
            super().build_extensions()
        finally:
            self.extensions, self.force = every, force
        os.makedirs(CACHE, exist_ok=True)
        for ext in to_build:
            if not os.path.exists(self.get_ext_fullpath(ext.name)):   # an optional extension that failed
                continue
            shutil.copyfile(self.get_ext_fullpath(ext.name), ext._cyscatter_cached + ".tmp")
            os.replace(ext._cyscatter_cached + ".tmp", ext._cyscatter_cached)
            # the newest KEEP builds of each module (a release and a debug build, say, side by side)
            kept = sorted((os.path.join(CACHE, f) for f in os.listdir(CACHE)
                           if f.startswith(f"{ext.name}.") and f.endswith(suffix)), key=os.path.getmtime)
            for old in kept[:-KEEP]:
                os.remove(old)


extensions = [
    Extension(
        f"cyscatter.{module}",
        [f"cyscatter/{module}.pyx"],
        include_dirs=[np.get_include(), "cyscatter"],
        depends=[os.path.join("cyscatter", h) for h in HEADERS],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"), ("CYSCATTER_DEBUG", "1" if DEBUG else "0")],
    )
    for module in ("kernels", "group_kernels", "fused_kernels", "assign_kernels", "scan_kernels", "nan_kernels")
]



def _jax_ffi_extension():
    """``cyscatter.jax._ffi`` where jaxlib's XLA FFI headers are at hand, else None (see the docstring)."""
    if not JAX_FFI:
        return None
    try:
        import jaxlib
    except ImportError:
        return None
    include = os.path.join(os.path.dirname(jaxlib.__file__), "include")
    if not os.path.exists(os.path.join(include, "xla", "ffi", "api", "ffi.h")):
        return None
    ext = Extension("cyscatter.jax._ffi", ["cyscatter/jax/_ffi.cc"], include_dirs=[np.get_include(), include],
                    language="c++", optional=True,   # a compiler error leaves the pure_callback fallback
                    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])
    ext._cyscatter_versions = f"jaxlib {getattr(jaxlib, '__version__', '')}"
    return ext


extensions += [ext for ext in (_jax_ffi_extension(),) if ext is not None]

setup(ext_modules=extensions, cmdclass={"build_ext": cyscatter_build_ext})
