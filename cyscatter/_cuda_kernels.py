"""The GPU kernels: CuPy ElementwiseKernels built from `cuda_atomics.cuh`, on first use.

Every kernel works on the canonical (outer, rows, inner) view (see `cyscatter._canonical`), raw arrays passed
raveled and C-contiguous; `i` is the flat position of the thread's element. A kernel object serves every dtype:
CuPy compiles it once per device and dtype combination and caches the binary (in memory and on disk).

The kernels are kept as `KernelSpec` data so that the test suite can have CuPy generate their CUDA source and
compile it with nvcc on a machine without a GPU.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

HEADER = Path(__file__).with_name("cuda_atomics.cuh")


@dataclass(frozen=True)
class KernelSpec:
    """Arguments of `cupy.ElementwiseKernel`."""

    in_params: str
    out_params: str
    operation: str
    name: str


# One thread per src element: its destination row from the index, then the op's atomic update. Entries outside
# [0, n_dst) are skipped: mode='drop' (under mode='raise' the index was checked before the launch).
def scatter_spec(update: str) -> KernelSpec:
    return KernelSpec(
        "S src, raw I index, int64 n, int64 inner, int64 n_dst", "raw S out",
        f"""const cs_position at = cs_locate(i, n, inner);
        const long long j = (long long)index[at.row];
        if (j >= 0 && j < n_dst) cs_atomic_{update}(&out[cs_offset(at.outer, j, at.inner, n_dst, inner)], src);""",
        f"cyscatter_scatter_{update}")


# One thread per destination element, walking its group's entries in index order: for updates without an
# atomic of the element's width (complex128 mul/div). Deterministic, and the order of the CPU kernels.
def ordered_spec(update: str) -> KernelSpec:
    return KernelSpec(
        "raw S src, raw int64 order, raw int64 indptr, int64 n, int64 inner, int64 n_dst", "S out",
        f"""const cs_position at = cs_locate(i, n_dst, inner);
        S acc = out;
        for (long long p = indptr[at.row]; p < indptr[at.row + 1]; ++p)
            acc = cs_{update}(acc, src[cs_offset(at.outer, order[p], at.inner, n, inner)]);
        out = acc;""",
        f"cyscatter_scatter_ordered_{update}")


# One thread per index entry: the size of each destination group (mean, fill_value).
COUNT_ROWS = KernelSpec(
    "I j, int64 n_dst", "raw int64 counts",
    "if (j >= 0 && j < n_dst) atomicAdd(reinterpret_cast<unsigned long long*>(&counts[j]), 1ULL);",
    "cyscatter_count_rows")

# One thread per output element; dropped entries leave the output as it was (fill value or dst).
GATHER = KernelSpec(
    "raw T src, raw I index, int64 n, int64 inner, int64 n_src", "T out",
    """const cs_position at = cs_locate(i, n, inner);
    const long long j = (long long)index[at.row];
    if (j >= 0 && j < n_src) out = src[cs_offset(at.outer, j, at.inner, n_src, inner)];""",
    "cyscatter_gather")

# One thread per (outer, group, inner): each entry's product of the other members of its group, as suffix x
# prefix products (exact with zeros, no division), in the order of the CPU kernel.
EXCLUSIVE_PRODUCTS = KernelSpec(
    "raw S src, raw int64 order, raw int64 indptr, int64 n, int64 inner, int64 n_groups", "raw S partials",
    """const cs_position at = cs_locate(i, n_groups, inner);
    const long long first = indptr[at.row], end = indptr[at.row + 1];
    S acc = S(1);
    for (long long p = end - 1; p >= first; --p) {
        const long long x = cs_offset(at.outer, order[p], at.inner, n, inner);
        partials[x] = acc;
        acc = cs_mul(acc, src[x]);
    }
    acc = S(1);
    for (long long p = first; p < end; ++p) {
        const long long x = cs_offset(at.outer, order[p], at.inner, n, inner);
        partials[x] = cs_mul(partials[x], acc);
        acc = cs_mul(acc, src[x]);
    }""",
    "cyscatter_exclusive_products")


@functools.cache
def build(spec: KernelSpec):
    """The ElementwiseKernel of `spec` (CuPy compiles it per device and dtype on its first call)."""
    import cupy

    return cupy.ElementwiseKernel(spec.in_params, spec.out_params, spec.operation, spec.name,
                                  preamble=HEADER.read_text(), no_return=True)
