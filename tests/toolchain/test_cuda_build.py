"""Checks of the GPU backend that need no GPU: the CUDA sources compile with nvcc, dispatch keeps host and device
arrays apart, and `import cyscatter` stays free of CuPy."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cyscatter
from cyscatter._backends import cuda_kernels as _cuda_kernels
from cyscatter._registry.ops import OPS

pytestmark = pytest.mark.full   # full tier: builds: nvcc compiles

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
HEADER = Path(cyscatter.__file__).parent / "include" / "cuda_atomics.cuh"

# C++ value types of the kernels' compute dtypes (see _ops.Op.compute_dtype), by NumPy name
CTYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long",
          "uint64": "unsigned long long", "complex64": "thrust::complex<float>",
          "complex128": "thrust::complex<double>"}
ATOMIC_DTYPES = {  # the dtypes each GPU update meets through the atomic kernel
    "add": list(CTYPES), "sub": list(CTYPES),
    "mul": [d for d in CTYPES if d != "complex128"], "div": ["float32", "float64", "complex64"],
    "max": ["float32", "float64", "int32", "int64", "uint64"],
    "min": ["float32", "float64", "int32", "int64", "uint64"],
    "nanadd": list(CTYPES), "nanmul": [d for d in CTYPES if d != "complex128"],
    "fmax": ["float32", "float64", "int32", "int64", "uint64"],
    "fmin": ["float32", "float64", "int32", "int64", "uint64"],
}


def _nvcc(tmp_path: Path, source: str, *include_dirs) -> None:
    cu = tmp_path / "check.cu"
    cu.write_text(source)
    flags = [f"-I{d}" for d in include_dirs]
    result = subprocess.run([NVCC, "-std=c++17", "-c", *flags, str(cu), "-o", str(tmp_path / "check.o")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]


def test_every_gpu_update_has_its_dtypes_listed():
    assert {op.gpu_update for op in OPS if not op.winner} == set(ATOMIC_DTYPES)
    assert all(not op.gpu_update for op in OPS if op.winner)   # assignments: winner pass + gather


@needs_nvcc
def test_cuda_header_compiles_with_nvcc(tmp_path):
    """cuda_atomics.cuh, as shipped in the package, compiles with every helper instantiated for its types."""
    lines = ["#include <thrust/complex.h>", f'#include "{HEADER.name}"']
    for update, dtypes in ATOMIC_DTYPES.items():
        for dtype in dtypes:
            t = CTYPES[dtype]
            lines.append(f"__global__ void atomic_{update}_{dtype}({t}* out, const {t}* src) "
                         f"{{ cs_atomic_{update}(out, src[0]); *out = cs_{update}(*out, src[1]); }}")
    for t in ("float", "double"):   # the max/min winners of the fused gather-scatter's reverse kernels
        lines.append(f"__global__ void ties_{t}(bool* out, const {t}* v) {{ *out = cs_ties(v[0], v[1]); }}")
    lines.append("__global__ void locate(long long* out, long long i) "
                 "{ cs_position at = cs_locate(i, 3, 5); *out = cs_offset(at.outer, at.row, at.inner, 3, 5); }")
    _nvcc(tmp_path, "\n".join(lines) + "\n", HEADER.parent)


# ---- the ElementwiseKernels exactly as CuPy writes them --------------------------------------------------------

def _kernel_instances():
    """(spec, {type placeholder: dtype}) for every kernel and dtype combination the backend launches."""
    for update, dtypes in ATOMIC_DTYPES.items():
        for dtype in dtypes:
            for index in ("int32", "int64"):
                yield _cuda_kernels.scatter_spec(update), {"S": dtype, "I": index}
    for update in ("mul", "div", "nanmul"):
        yield _cuda_kernels.ordered_spec(update), {"S": "complex128"}
    for index in ("int32", "int64"):
        yield _cuda_kernels.COUNT_ROWS, {"I": index}
        for winner in ("last", "first"):   # the assignment ops' winner pass
            yield _cuda_kernels.winner_spec(winner), {"I": index}
        for dtype in ("uint8", "uint16", "uint32", "uint64"):   # gather moves items of these sizes
            yield _cuda_kernels.GATHER, {"T": dtype, "I": index}
    for dtype in ("float32", "float64", "complex64", "complex128"):
        yield _cuda_kernels.EXCLUSIVE_PRODUCTS, {"S": dtype}
    yield from _fused_kernel_instances()


def _fused_kernel_instances():
    """The fused gather-scatter's kernels (cyscatter._reverse.gather_scatter_cuda): the forward for every op's compute
    dtypes (the atomics' list; complex128 mul/div/nanmul along CSR rows), the reverse kernels for the derivative dtypes
    (real for the winners of max/min and fmax/fmin)."""
    for update, dtypes in ATOMIC_DTYPES.items():
        for dtype in dtypes:
            yield _cuda_kernels.gather_scatter_spec(update), {"S": dtype}
    for update in ("mul", "div", "nanmul"):   # the CAS updates that take complex values (nanprod too)
        yield _cuda_kernels.gather_scatter_ordered_spec(update), {"S": "complex128"}
    for count in ("int32", "int64"):   # NaN-skipping ops counting their non-NaN messages (nanmean, fill_value)
        for update in ("nanadd", "nanmul", "fmax", "fmin"):
            for dtype in ("float32", "float64") + (("complex64", "complex128") if update == "nanadd" else ()):
                yield _cuda_kernels.gather_scatter_spec(update, counted=True), {"S": dtype, "C": count}
        yield _cuda_kernels.gather_scatter_spec("nanmul", counted=True), {"S": "complex64", "C": count}
        yield _cuda_kernels.gather_scatter_ordered_spec("nanmul", counted=True), {"S": "complex128", "C": count}
    for select in _cuda_kernels.SELECTS:   # the selecting ops' reverse kernels: present (nansum/nanmean) on complex too
        for dtype in ("float32", "float64") + (("complex64", "complex128") if select == "present" else ()):
            for make in (_cuda_kernels.edge_counts_spec, _cuda_kernels.shares_back_spec, _cuda_kernels.tangents_spec,
                         _cuda_kernels.edge_dots_spec):
                yield make(select), {"S": dtype}
    for dtype in ("float32", "float64", "complex64", "complex128"):
        yield _cuda_kernels.EDGE_DOTS, {"S": dtype}


def _cupy_kernel_source(spec, types, name):
    """CuPy's generated CUDA source of one ElementwiseKernel launch on 1-d arrays (CuPy internals)."""
    kernel = pytest.importorskip("cupy._core._kernel")
    from cupy._core import _carray

    ndarray, indexer, scalar = 1, 2, 3   # CuPy's _ArgKind values
    ins = kernel._get_param_info(spec.in_params, True)
    outs = kernel._get_param_info(spec.out_params, False)
    args = []
    for p in ins + outs:
        if p.raw or p.dtype is None:
            dtype = np.dtype(types[p.ctype]) if p.dtype is None else p.dtype
            args.append(kernel._ArgInfo(ndarray, kernel.cupy.ndarray, dtype, 1, True, False))
        else:
            args.append(kernel._ArgInfo(scalar, type(None), p.dtype, 0, True, True))
    args.append(kernel._ArgInfo(indexer, _carray.Indexer, None, 1, True, False))
    params = ins + outs + (kernel.ParameterInfo("CIndexer _ind", False),)
    type_map = kernel._TypeMap(tuple((c, np.dtype(t)) for c, t in types.items()))
    return kernel._get_elementwise_kernel_code(tuple(args), type_map, params, spec.operation, name, "")


@needs_nvcc
def test_cupy_generated_kernels_compile_with_nvcc(tmp_path):
    """Every kernel body, in the source CuPy generates around it, compiles for every dtype the backend uses.

    CuPy builds these with NVRTC on the GPU machine; nvcc with CuPy's headers is the closest check without one.
    """
    cupy = pytest.importorskip("cupy")
    core = pytest.importorskip("cupy._core.core")
    try:
        parts = [f"namespace k{n} {{\n{_cupy_kernel_source(spec, types, f'{spec.name}_{n}')}\n}}"
                 for n, (spec, types) in enumerate(_kernel_instances())]
    except (AttributeError, AssertionError, TypeError) as exc:   # CuPy changed its internals
        pytest.skip(f"cannot generate CuPy kernel sources with this CuPy: {exc!r}")
    headers = "".join(f"#include <{h}>\n" for h in core._cupy_header_list)
    source = headers + HEADER.read_text() + "\n" + "\n".join(parts) + "\n"
    _nvcc(tmp_path, source, Path(cupy.__file__).parent / "_core" / "include")


# ---- dispatch without a GPU -----------------------------------------------------------------------------------

class FakeDeviceArray:
    """Stands for a CUDA array: dispatch recognises those by type, before anything touches a device."""

    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (0, False), "version": 3}
    shape, ndim, dtype = (3,), 1, np.dtype(np.float64)


HOST, DEVICE = np.arange(3.0), FakeDeviceArray()
INDEX = np.array([0, 1, 0])
MIXED_CALLS = {
    "scatter": lambda: cyscatter.scatter(DEVICE, INDEX),
    "scatter_into": lambda: cyscatter.scatter_into(DEVICE, HOST, INDEX),
    "gather": lambda: cyscatter.gather(HOST, (INDEX, DEVICE)),
    "gather_into": lambda: cyscatter.gather_into(HOST, DEVICE, INDEX),
    "scatter_vjp_src": lambda: cyscatter.scatter_vjp_src("add", DEVICE, HOST, INDEX, HOST),
    "scatter_vjp_dst": lambda: cyscatter.scatter_vjp_dst("add", HOST, HOST, HOST, INDEX, DEVICE),
    "gather_vjp_src": lambda: cyscatter.gather_vjp_src(DEVICE, INDEX, (3,)),
    "scatter_jvp": lambda: cyscatter.scatter_jvp("max", HOST, INDEX, HOST, DEVICE),
    "gather_jvp": lambda: cyscatter.gather_jvp(DEVICE, INDEX),
}


@pytest.mark.parametrize("func", list(MIXED_CALLS))
def test_mixing_host_and_device_arrays_raises_type_error(func):
    with pytest.raises(TypeError, match=r"is a .*\(GPU\) but .* is a numpy\.ndarray \(host\)"):
        MIXED_CALLS[func]()


def test_type_error_names_the_arguments():
    with pytest.raises(TypeError, match=r"^index\[1\] is a .*FakeDeviceArray \(GPU\) but src is a numpy"):
        cyscatter.gather(HOST, (INDEX, DEVICE))


def test_import_does_not_import_cupy():
    code = "import sys, cyscatter; cyscatter.scatter([1.0, 2.0], [0, 0]); assert 'cupy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(cyscatter.__file__).parents[1])
