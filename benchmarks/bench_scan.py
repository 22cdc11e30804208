"""Benchmark: grouped scans (cyscatter.scatter_scan) against numpy_groupies and pandas, measured side by side.

Contenders per op, on the same values and the same unsorted group index:
  cyscatter.scatter_scan        one pass over the index with a running value per group (one thread)
  numpy_groupies (default)      aggregate(index, src, func="cumsum"/"cumprod"/"cummax"/"cummin"): its numba
                                implementation when numba is installed (as here), else the NumPy one
  numpy_groupies (numpy)        numpy_groupies.aggregate_np, the implementation without numba (cumsum only)
  pandas groupby                pd.Series(src).groupby(index).cumsum() (and cumprod/cummax/cummin)
Times are the best of --repeat runs; ratios are each contender's time over scatter_scan's in the same run.
The machine may be shared: rerun and compare ratios, not absolute times.

    python benchmarks/bench_scan.py                                  # 1e6 entries, 1e2 and 1e4 groups
    python benchmarks/bench_scan.py --n 100000 --groups 10 1000 --ops add max --repeat 5
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import cyscatter as cs

NPG = {"add": "cumsum", "mul": "cumprod", "max": "cummax", "min": "cummin"}


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--ops", nargs="+", default=list(NPG))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    import numpy_groupies as npg
    import pandas as pd
    rng = np.random.default_rng(0)
    print(f"n={args.n}, float64, unsorted index, best of {args.repeat}; ratio = time / scatter_scan's")
    for groups in args.groups:
        index = rng.integers(0, groups, args.n)
        src = rng.uniform(0.999, 1.001, args.n)   # products stay finite
        for op in args.ops:
            want = npg.aggregate(index, src, func=NPG[op])
            got = cs.scatter_scan(src, index, op)
            assert np.allclose(got, want, rtol=1e-9), op
            series = pd.Series(src)
            rows = [("cyscatter.scatter_scan", lambda: cs.scatter_scan(src, index, op)),
                    (f"numpy_groupies ({npg.aggregate.__module__.rpartition('_')[2]})",
                     lambda: npg.aggregate(index, src, func=NPG[op])),
                    ("pandas groupby", lambda: getattr(series.groupby(index), NPG[op])())]
            if op == "add":   # the NumPy implementation has cumsum only
                rows.insert(2, ("numpy_groupies (numpy)", lambda: npg.aggregate_np(index, src, func="cumsum")))
            base = None
            for name, fn in rows:
                t = best(fn, args.repeat)
                base = base or t
                print(f"groups={groups:>6} {op:>4} {name:<24} {t * 1e3:9.2f} ms  x{t / base:6.2f}")


if __name__ == "__main__":
    main()
