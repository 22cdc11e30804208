"""The GPU kernels: CuPy ElementwiseKernels built from `cuda_atomics.cuh`, on first use.

Every kernel works on the canonical (outer, rows, inner) view (see `cyscatter._backends.host`), raw arrays passed
raveled and C-contiguous; `i` is the flat position of the thread's element. A kernel object serves every dtype:
CuPy compiles it once per device and dtype combination and caches the binary (in memory and on disk).

The kernels are kept as `KernelSpec` data so that the test suite can have CuPy generate their CUDA source and
compile it with nvcc on a machine without a GPU.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

HEADER = Path(__file__).parents[1] / "include" / "cuda_atomics.cuh"


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

# One thread per index entry, for the assignment ops (set / last, first): its position k onto its row's slot of
# `winner` with atomicMax (the last entry wins; slots start at -1) or atomicMin (the first wins; slots start at
# n, which the gather then skips as out of range). The max / min of the positions does not depend on the order
# the threads arrive in, so the assignment is deterministic; GATHER then moves the winners' rows.
def winner_spec(winner: str) -> KernelSpec:
    atomic = {"last": "atomicMax", "first": "atomicMin"}[winner]
    return KernelSpec(
        "I j, int64 n_dst", "raw int64 winner",
        f"if (j >= 0 && j < n_dst) {atomic}(reinterpret_cast<long long*>(&winner[j]), (long long)i);",
        f"cyscatter_winner_{winner}")


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



# ---- fused gather-scatter (cyscatter._reverse.gather_scatter_cuda) -----------------------------------------------------
# Every kernel below runs one thread per (outer, edge, feature) of the edge list `gather`/`scatter` (int64, the
# plan's flattened indices; an edge with either end outside [0, n_src) / [0, n_dst) is dropped, mode='drop'),
# launched with size=outer * n_edges * inner. An edge's message is `weight[edge, head] * src[outer, gather[edge],
# feature]` rounded to the value type, as gather-then-scatter rounds it (`weighted` false: the src element);
# `weight` is (n_edges, heads) C order, a head spanning inner / heads consecutive features.
_EDGE_PARAMS = ("raw S src, raw int64 gather, raw int64 scatter, raw S weight, bool weighted, int64 n_edges, "
                "int64 inner, int64 heads, int64 n_src, int64 n_dst")
_EDGE_HEAD = """const cs_position at = cs_locate(i, n_edges, inner);
    const long long s = gather[at.row], d = scatter[at.row];
    if (s >= 0 && s < n_src && d >= 0 && d < n_dst) {
        const long long from = cs_offset(at.outer, s, at.inner, n_src, inner);
        const long long to = cs_offset(at.outer, d, at.inner, n_dst, inner);
        const S w = weighted ? weight[at.row * heads + at.inner / (inner / heads)] : S(1);
        const S message = weighted ? cs_mul(w, src[from]) : src[from];
"""


# The forward pass in one launch, no E x F message matrix: each message applied to out[outer, scatter[edge],
# feature] with the op's atomic. With gather and scatter swapped (and src the destination-side cotangent) it is
# the transposed product, the add-family gradient with respect to src. `counted` (a NaN-skipping op that divides
# by its counts or fills empty elements: nanmean, a fill_value) also adds 1 to counts[to] (C: int32, or int64
# past 2**31 - 1 edges) for each non-NaN message, as the CPU kernel counts: an element whose messages are all
# NaN is an empty group.
_COUNTED_PARAMS = ", raw C counts"


def gather_scatter_spec(update: str, counted: bool = False) -> KernelSpec:
    count = "\n        if (!cs_isnan(message)) cs_atomic_add(&counts[to], C(1));" if counted else ""
    return KernelSpec(
        _EDGE_PARAMS, "raw S out" + (_COUNTED_PARAMS if counted else ""),
        _EDGE_HEAD + f"""        cs_atomic_{update}(&out[to], message);{count}
    }}""",
        f"cyscatter_gather_scatter_{'counted_' if counted else ''}{update}")


# One thread per destination element (outer, row, feature), walking the row's edges of the plan's CSR (cols: the
# source rows, edge_ids: the edges, in index order): for updates without an atomic of the element's width
# (complex128 mul/div). Deterministic, and the CPU kernel's order. Launched with size=outer * n_dst * inner.
# `counted` as above, the thread's own count written once.
def gather_scatter_ordered_spec(update: str, counted: bool = False) -> KernelSpec:
    start, count, store = ("\n        long long present = 0;", "\n            present += !cs_isnan(message);",
                           "\n        counts[to] = C(present);") if counted else ("", "", "")
    return KernelSpec(
        "raw S src, raw int64 indptr, raw int64 cols, raw int64 edge_ids, raw S weight, bool weighted, "
        "int64 n_dst, int64 inner, int64 heads, int64 n_src", "raw S out" + (_COUNTED_PARAMS if counted else ""),
        f"""const cs_position at = cs_locate(i, n_dst, inner);
        const long long to = cs_offset(at.outer, at.row, at.inner, n_dst, inner);
        S acc = out[to];{start}
        for (long long p = indptr[at.row]; p < indptr[at.row + 1]; ++p) {{
            const S x = src[cs_offset(at.outer, cols[p], at.inner, n_src, inner)];
            const S message = weighted ? cs_mul(weight[edge_ids[p] * heads + at.inner / (inner / heads)], x) : x;
            acc = cs_{update}(acc, message);{count}
        }}
        out[to] = acc;{store}""",
        f"cyscatter_gather_scatter_ordered_{'counted_' if counted else ''}{update}")


# The reverse kernels of the selecting ops, which pass each output element's cotangent to some of its messages:
# `select` names which (a C condition on the edge's `message` and the forward result `out[to]`).
SELECTS = {
    "tied": "cs_ties(message, out[to])",                      # max/min: the messages equal to the kept value
    "won": "!cs_isnan(message) && cs_ties(message, out[to])",  # fmax/fmin: the same, a NaN never winning
    "present": "!cs_isnan(message)",                          # nansum/nanmean: the non-NaN messages (any dtype)
}


# Reverse, step 1: how many edges each output element selects (max/min: the tie counts; nanmean: the non-NaN
# messages); `out` is the forward result (outer, n_dst, inner).
def edge_counts_spec(select: str) -> KernelSpec:
    return KernelSpec(
        _EDGE_PARAMS + ", raw S out", "raw int64 ties",
        _EDGE_HEAD + f"""        if ({SELECTS[select]})
            atomicAdd(reinterpret_cast<unsigned long long*>(&ties[to]), 1ULL);
    }}""",
        f"cyscatter_edge_counts_{select}")


# Reverse, step 2 (gradient with respect to src): each selected edge sends its share of the output element's
# cotangent (`share`: the cotangent, divided by the count where the op averages) back to its source row, times
# its weight.
def shares_back_spec(select: str) -> KernelSpec:
    return KernelSpec(
        _EDGE_PARAMS + ", raw S out, raw S share", "raw S result",
        _EDGE_HEAD + f"""        if ({SELECTS[select]})
            cs_atomic_add(&result[from], weighted ? w * share[to] : share[to]);
    }}""",
        f"cyscatter_shares_back_{select}")


# JVP: the sum of the selected edges' tangent messages, w * src_dot + w_dot * src (divided by the counts
# afterwards where the op averages).
def tangents_spec(select: str) -> KernelSpec:
    return KernelSpec(
        _EDGE_PARAMS + ", raw S out, raw S src_dot, bool use_src_dot, raw S weight_dot, bool use_weight_dot",
        "raw S acc",
        _EDGE_HEAD + f"""        if ({SELECTS[select]}) {{
            S tangent = S(0);
            if (use_src_dot) tangent = weighted ? w * src_dot[from] : src_dot[from];
            if (use_weight_dot) tangent = tangent + weight_dot[at.row * heads + at.inner / (inner / heads)] * src[from];
            cs_atomic_add(&acc[to], tangent);
        }}
    }}""",
        f"cyscatter_tangents_{select}")


# Gradient with respect to the weight (SDDMM): one thread per (edge, head), the dot product over the batch and the
# head's features of the destination-side cotangent `g` (outer, n_dst, inner) with the source row, in the CPU
# kernel's order; 0 for a dropped edge. Launched with size=n_edges * heads.
_DOTS_HEAD = """const long long e = i / heads, h = i % heads, chunk = inner / heads;
    const long long s = gather[e], d = scatter[e];
    S acc = S(0);
    if (s >= 0 && s < n_src && d >= 0 && d < n_dst) {
        for (long long o = 0; o < outer; ++o) {
            for (long long f = h * chunk; f < (h + 1) * chunk; ++f) {
                const long long from = cs_offset(o, s, f, n_src, inner), to = cs_offset(o, d, f, n_dst, inner);
"""
_DOTS_PARAMS = ("raw S g, raw S src, raw int64 gather, raw int64 scatter, int64 n_edges, int64 outer, int64 inner, "
                "int64 heads, int64 n_src, int64 n_dst")
EDGE_DOTS = KernelSpec(
    _DOTS_PARAMS, "raw S result",
    _DOTS_HEAD + """                acc = acc + g[to] * src[from];
            }
        }
    }
    result[i] = acc;""",
    "cyscatter_edge_dots")

# The same for the selecting ops: only the features where `select` takes the edge's message count (g: the
# shares).
def edge_dots_spec(select: str) -> KernelSpec:
    return KernelSpec(
        _DOTS_PARAMS + ", raw S out, raw S weight, bool weighted", "raw S result",
        _DOTS_HEAD + f"""                const S message = weighted ? weight[e * heads + h] * src[from] : src[from];
                if ({SELECTS[select]}) acc = acc + g[to] * src[from];
            }}
        }}
    }}
    result[i] = acc;""",
        f"cyscatter_edge_dots_{select}")


@functools.cache
def build(spec: KernelSpec):
    """The ElementwiseKernel of `spec` (CuPy compiles it per device and dtype on its first call)."""
    import cupy

    return cupy.ElementwiseKernel(spec.in_params, spec.out_params, spec.operation, spec.name,
                                  preamble=HEADER.read_text(), no_return=True)
