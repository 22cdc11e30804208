"""Shared parametrisation lists and backend helpers: every test module draws its ops, dtypes, index kinds and
backends from here (the op list comes from cyscatter's own registry, so a new op is tested everywhere)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from cyscatter import OP_NAMES, get_op
from cyscatter import OPS as _REGISTRY

OPS = OP_NAMES
# the reductions: the ops other than the assignments set/first (tests/ops/test_assign.py)
REDUCTION_OPS = tuple(op.name for op in _REGISTRY if not op.winner)
# the NaN-skipping twins run in scatter/scatter_into, segment, gather_scatter, their reverse
# functions, grad and dask (tests/ops/test_nan_ops.py, test_segment_nan.py, test_gather_scatter_nan.py)
NAN_OPS = tuple(name for name in OPS if get_op(name).skips_nan and not get_op(name).winner)
# nanlast / nanfirst: NaN-skipping assignments (tests/ops/test_nan_assign.py)
NAN_ASSIGN_OPS = tuple(name for name in OPS if get_op(name).skips_nan and get_op(name).winner)
PLAIN_OPS = tuple(name for name in OPS if not get_op(name).skips_nan)
# the ops gather_scatter and its reverse functions take: the reductions (the assignments are refused there with
# a ValueError); the NaN-skipping ones are tested on inputs with NaN in tests/gather_scatter/test_gather_scatter_nan.py
FUSED_OPS = REDUCTION_OPS
VALUE_DTYPES = ("float32", "float64", "int32", "int64", "int8", "uint8", "int16", "uint16", "uint32", "uint64",
                "float16", "complex64", "complex128")
KERNEL_VALUE_DTYPES = ("float32", "float64", "int32", "int64")
INDEX_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp")
INDEX_KINDS = ("int", "tuple")
REQUIRE_GPU = os.environ.get("CYSCATTER_REQUIRE_GPU", "0") == "1"


def numpy_groupies_scans() -> list:
    """The (func, op) pairs of the grouped scans the installed numpy_groupies provides (0.16 kept only cumsum;
    pandas' groupby scans still cover the others); all four without numpy_groupies, whose tests then skip."""
    pairs = [("cumsum", "add"), ("cumprod", "mul"), ("cummax", "max"), ("cummin", "min")]
    try:
        import numpy_groupies as npg
    except ImportError:
        return pairs
    provided = []
    for func, op in pairs:
        try:
            npg.aggregate(np.zeros(1, np.intp), np.ones(1), func=func)
        except NotImplementedError:
            continue
        provided.append((func, op))
    return provided


def true_division(op: str) -> bool:
    """The op divides truly (div, mean, nanmean): integer inputs give float64, an integer dst is refused."""
    return get_op(op).true_division


def twin(op: str) -> str:
    """The NaN-propagating twin of a NaN-skipping op (its tolerances and dtype rules), else `op` itself (names
    outside the registry, as "gather", included)."""
    try:
        return get_op(op).twin or op
    except ValueError:
        return op


def op_supports(op: str, dtype) -> bool:
    return not (get_op(op).ordered and np.dtype(dtype).kind == "c")


def into_supports(op: str, dtype) -> bool:
    """`op` takes a destination of `dtype` in place: ordered ops refuse complex, true division integers."""
    return op_supports(op, dtype) and not (true_division(op) and np.dtype(dtype).kind in "iu")


def _cupy_or_none():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        cupy.zeros(1)
        return cupy
    except Exception:
        return None


def gpu_available() -> bool:
    if not hasattr(gpu_available, "cached"):
        gpu_available.cached = _cupy_or_none() is not None
    return gpu_available.cached


def require_gpu():
    """Skip without a GPU, or fail when CYSCATTER_REQUIRE_GPU=1 (the GPU machine's check)."""
    if not gpu_available():
        if REQUIRE_GPU:
            pytest.fail("CYSCATTER_REQUIRE_GPU=1 but no usable CuPy device was found")
        pytest.skip("no CUDA device / CuPy")


# "cupy-emulated" runs the GPU backend's Python code on a host stand-in for CuPy (tests/helpers/emulated_cupy.py)
BACKENDS = ("numpy", pytest.param("cupy", marks=pytest.mark.gpu), "cupy-emulated")


class Backend:
    """Moves arrays to and from one backend so a test body can run on NumPy and CuPy alike."""

    def __init__(self, name: str):
        self.name = name
        if name == "cupy":
            require_gpu()
            import cupy
            self.xp = cupy
        elif name == "cupy-emulated":
            import sys
            self.xp = sys.modules["cupy"]   # installed by the `backend` fixture
        else:
            self.xp = np

    def asarray(self, a):
        if isinstance(a, tuple):
            return tuple(self.asarray(x) for x in a)
        return self.xp.asarray(a)

    def assert_result(self, actual, expected, op: str, src, dst=None) -> None:
        """`actual` (of this backend) equals the reference `expected`, within the backend's tolerance for `op`."""
        from compare import assert_same, tolerance
        assert_same(self.to_numpy(actual), expected, *tolerance(self.name, op, expected.dtype, src, dst))

    def to_numpy(self, a):
        """`a` on the host; results of a GPU backend must be its arrays (never host arrays)."""
        if self.name != "numpy":
            assert type(a) is self.xp.ndarray, f"{type(a)} from the {self.name} backend"
            return a.get()
        return np.asarray(a)

    def call(self, func, *args, **kwargs):
        """`func` with every NumPy array argument (or tuple of them) moved to this backend; result as NumPy."""
        def move(a):
            return self.asarray(a) if isinstance(a, np.ndarray) or (
                isinstance(a, tuple) and a and all(isinstance(x, np.ndarray) for x in a)) else a
        return self.to_numpy(func(*map(move, args), **{k: move(v) for k, v in kwargs.items()}))


_SCRATCH_SETUP = """
from Cython.Build import cythonize
from setuptools import Extension, setup
import numpy as np
setup(ext_modules=cythonize([Extension({name!r}, [{name!r} + ".pyx"], include_dirs=[np.get_include()])],
                            include_path=[{include!r}], compiler_directives={{"language_level": 3}}),
      script_args=["build_ext", "--inplace", "-q"])
"""


def build_scratch_extension(tmp_path, name: str, source: str):
    """Compile `source` as the Cython module `name` in `tmp_path` against the imported cyscatter's .pxd files
    (`cyscatter.get_include()`) and import it: how third-party code cimports the kernels."""
    import importlib
    import subprocess
    import sys
    import textwrap

    import cyscatter
    (tmp_path / f"{name}.pyx").write_text(textwrap.dedent(source))
    (tmp_path / "setup.py").write_text(_SCRATCH_SETUP.format(name=name, include=cyscatter.get_include()))
    build = subprocess.run([sys.executable, "setup.py"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))
