"""GPU benchmark: cyscatter's CuPy backend beside CuPy's own scatter/gather, against device memory bandwidth.

Workloads (float32 values, int32 index): uniform and skewed (Zipf) scatter-add, scatter-max, gather. Peers:
``cupyx.scatter_add`` / ``cupyx.scatter_max`` and ``cupy.add.at`` / ``cupy.maximum.at`` (in place into a
preallocated destination, refilled with the identity inside the timed call), ``cupy.take`` for gather; each
is checked against cyscatter before it is timed. cyscatter runs both as ``scatter`` (allocating,
mode="raise": includes the output fill and the on-device index check) and as ``scatter_into`` (mode="drop",
in place like the peers).

GB/s counts src read + index read + output written once (1 GB = 1e9 B); the ceiling is a device-to-device
copy (read + write) of a large array measured in the same run. Times are GPU medians of
``cupyx.profiler.benchmark``. Run: ``python benchmarks/bench_gpu.py [--entries N] [--rows R] [--inner F ...]``.
"""
from __future__ import annotations

import argparse
import datetime

import cupy
import cupyx
import numpy as np
from cupyx.profiler import benchmark

import cyscatter as cs


def median_seconds(func, repeat: int) -> float:
    return float(np.median(benchmark(func, n_repeat=repeat, n_warmup=3).gpu_times))


def copy_bandwidth(repeat: int) -> float:
    """GB/s of a device-to-device copy of 512 MiB (read + write)."""
    a = cupy.ones(1 << 27, np.float32)
    b = cupy.empty_like(a)
    return 2 * a.nbytes / median_seconds(lambda: cupy.copyto(b, a), repeat) / 1e9


def workloads(n: int, rows: int, inner: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    src = cupy.asarray(rng.standard_normal((n, inner), dtype=np.float32))
    uniform = cupy.asarray(rng.integers(0, rows, n, dtype=np.int32))
    skewed = cupy.asarray(np.minimum(rng.zipf(1.3, n) - 1, rows - 1).astype(np.int32))
    table = cupy.asarray(rng.standard_normal((rows, inner), dtype=np.float32))
    yield "scatter-add uniform", "add", src, uniform, rows
    yield "scatter-add skewed", "add", src, skewed, rows
    yield "scatter-max uniform", "max", src, uniform, rows
    yield "gather uniform", "gather", table, uniform, rows


def peers(op: str, src, index, rows: int):
    """name -> (function returning its result) for the implementations of one workload."""
    if op == "gather":
        return {"cyscatter.gather": lambda: cs.gather(src, index),
                "cupy.take": lambda: cupy.take(src, index, axis=0)}
    start = 0 if op == "add" else -np.inf
    dst = cupy.full((rows,) + src.shape[1:], start, src.dtype)

    def in_place(func):
        def run():
            dst.fill(start)
            func()
            return dst
        return run

    impls = {"cyscatter.scatter": lambda: cs.scatter(src, index, op, dim_size=rows),
             "cyscatter.scatter_into(drop)": in_place(lambda: cs.scatter_into(dst, src, index, op, mode="drop"))}
    impls[f"cupyx.scatter_{op}"] = in_place(lambda: getattr(cupyx, f"scatter_{op}")(dst, index, src))
    ufunc = cupy.add if op == "add" else cupy.maximum
    if hasattr(ufunc, "at"):
        impls[f"cupy.{ufunc.__name__}.at"] = in_place(lambda: ufunc.at(dst, index, src))
    return impls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1 << 24, help="index entries (default 2**24)")
    parser.add_argument("--rows", type=int, default=1 << 16, help="destination rows (default 2**16)")
    parser.add_argument("--inner", type=int, nargs="+", default=[1, 16], help="feature sizes (default 1 16)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    ceiling = copy_bandwidth(args.repeat)
    print(f"# {datetime.date.today()}  {props['name'].decode()}  CuPy {cupy.__version__}  "
          f"device copy {ceiling:.0f} GB/s")
    header = (f"{'workload':<22} {'inner':>5} {'implementation':<30} {'ms':>9} {'GB/s':>8} {'% copy':>7} "
              f"{'time/cyscatter':>14}")
    print(header)
    print("-" * len(header))
    for inner in args.inner:
        n = max(args.entries // inner, 1)
        for name, op, src, index, rows in workloads(n, args.rows, inner):
            impls = peers(op, src, index, rows)
            reference = None
            times = {}
            for impl, func in impls.items():
                try:
                    result = func()
                except (NotImplementedError, TypeError) as exc:   # a peer without this op or dtype
                    print(f"{name:<22} {inner:>5} {impl:<30} skipped: {exc}")
                    continue
                if reference is None:
                    reference = result.copy()
                elif not cupy.allclose(result, reference, rtol=1e-4, atol=1e-4):
                    print(f"{name:<22} {inner:>5} {impl:<30} WRONG RESULT, not timed")
                    continue
                times[impl] = median_seconds(func, args.repeat)
            out_rows = len(index) if op == "gather" else rows
            moved = (len(index) + out_rows) * inner * src.dtype.itemsize + index.nbytes   # values in + out, index
            base = times.get(next(iter(impls)))
            for impl, t in times.items():
                gbs = moved / t / 1e9
                ratio = f"{t / base:.2f}x" if base else "-"
                print(f"{name:<22} {inner:>5} {impl:<30} {t * 1e3:9.3f} {gbs:8.1f} {100 * gbs / ceiling:6.1f}% "
                      f"{ratio:>14}")


if __name__ == "__main__":
    main()
