"""Benchmark: scatter_any / scatter_all against the max / min scatter of the same src (the issue's bar: within
~1.5x), against numpy_groupies' func="any"/"all" and a NumPy composition, and bfloat16 / sqrt_n against their
neighbours (bfloat16 add against float32 and float16 add, sqrt_n against mean), all measured side by side in one run.

Times are the best of --repeat runs (the run least disturbed by other processes); each ratio is a contender's
time over its reference's (the first row of its block), from the same run.

    python benchmarks/bench_logical.py                       # n = 1e6 entries, 1e4 groups, features 1 and 16
    python benchmarks/bench_logical.py --n 200000 --features 1 --repeat 5
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import cyscatter as cs


def best(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def blocks(src, index, groups, npg, bf16):
    order = np.argsort(index, kind="stable")

    def numpy_any():   # sort, then reduceat of the nonzero flags: the plain NumPy way
        flags = src[order] != 0
        starts = np.searchsorted(index[order], np.arange(groups))
        out = np.zeros((groups,) + src.shape[1:], bool)
        present = np.bincount(index, minlength=groups) > 0
        out[present] = np.logical_or.reduceat(flags, starts[present], axis=0)
        return out

    yield "any", [("cyscatter.scatter(max)", lambda: cs.scatter(src, index, "max", dim_size=groups)),
                  ("cyscatter.scatter_any", lambda: cs.scatter_any(src, index, dim_size=groups)),
                  ("numpy sort + logical_or.reduceat", numpy_any)] + (
        [("numpy_groupies any", lambda: npg.aggregate(index, src, func="any", size=groups))]
        if npg is not None and src.ndim == 1 else [])
    yield "all", [("cyscatter.scatter(min)", lambda: cs.scatter(src, index, "min", dim_size=groups)),
                  ("cyscatter.scatter_all", lambda: cs.scatter_all(src, index, dim_size=groups))] + (
        [("numpy_groupies all", lambda: npg.aggregate(index, src, func="all", size=groups))]
        if npg is not None and src.ndim == 1 else [])
    yield "sqrt_n", [("cyscatter.scatter(mean)", lambda: cs.scatter(src, index, "mean", dim_size=groups)),
                     ("cyscatter.scatter(sqrt_n)", lambda: cs.scatter(src, index, "sqrt_n", dim_size=groups))]
    if bf16 is not None:
        s32, s16, sbf = src.astype(np.float32), src.astype(np.float16), src.astype(bf16)
        yield "bfloat16 add", [("float32 add", lambda: cs.scatter(s32, index, "add", dim_size=groups)),
                               ("float16 add", lambda: cs.scatter(s16, index, "add", dim_size=groups)),
                               ("bfloat16 add", lambda: cs.scatter(sbf, index, "add", dim_size=groups))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--features", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    try:
        import numpy_groupies as npg
    except ImportError:
        npg = None
    try:
        import ml_dtypes
        bf16 = ml_dtypes.bfloat16
    except ImportError:
        bf16 = None
    rng = np.random.default_rng(0)
    for f in args.features:
        n = args.n // f
        src = rng.standard_normal((n, f)) if f > 1 else rng.standard_normal(n)
        src[src < -0.5] = 0.0
        index = rng.integers(0, args.groups, n)
        print(f"\nn = {n} entries x {f} features, {args.groups} groups, float64 src")
        for name, rows in blocks(src, index, args.groups, npg, bf16):
            base = None
            for label, fn in rows:
                t = best(fn, args.repeat)
                base = base or t
                print(f"  {name:13s} {label:34s} {t * 1e3:9.2f} ms  {t / base:5.2f}x")


if __name__ == "__main__":
    main()
