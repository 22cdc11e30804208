"""Benchmark: per-group median and quantile against pandas' groupby and numpy_groupies, interleaved in one run.

Contenders, on the same float32 values and the same random group index (groups of varied size, some empty):
  cyscatter.scatter(op="median")        one sort by (group, value) per column, NumPy's np.median formula
  cyscatter.scatter_quantile(q=0.9)     the same sort, np.quantile's formula
  pandas groupby().median() / .quantile(0.9), if pandas is installed
  numpy_groupies aggregate(func="median"), if installed (one feature column at a time: it takes 1-d values)
Each round runs every contender once, in turn; the best of --repeat rounds is kept (the run least disturbed by
other processes), and ratios are each contender's time over cyscatter's median in the same run.

    python benchmarks/bench_quantile.py                          # 2e5 rows, 16 features, 1e4 groups
    python benchmarks/bench_quantile.py --rows 1000000 --features 4 --groups 100000 --repeat 3
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import cyscatter as cs


def _optional(name):
    try:
        return __import__(name)
    except Exception:   # not installed
        return None


def contenders(src, index, groups):
    yield "cyscatter median", lambda: cs.scatter(src, index, "median", dim_size=groups)
    yield "cyscatter quantile 0.9", lambda: cs.scatter_quantile(src, index, 0.9, dim_size=groups)
    pd = _optional("pandas")
    if pd is not None:
        frame = pd.DataFrame(src)
        yield "pandas median", lambda: frame.groupby(index).median()
        yield "pandas quantile 0.9", lambda: frame.groupby(index).quantile(0.9)
    npg = _optional("numpy_groupies")
    if npg is not None:
        yield "numpy_groupies median", lambda: [npg.aggregate(index, src[:, f], func="median", size=groups)
                                                for f in range(src.shape[1])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    src = rng.standard_normal((args.rows, args.features)).astype(np.float32)
    index = (rng.pareto(1.5, args.rows) * args.groups / 20).astype(np.int64) % args.groups
    runs = list(contenders(src, index, args.groups))
    best = {name: np.inf for name, _ in runs}
    for _ in range(args.repeat):
        for name, run in runs:
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    base = best["cyscatter median"]
    print(f"{args.rows} rows x {args.features} float32 features into {args.groups} groups, best of {args.repeat}")
    for name, seconds in best.items():
        print(f"  {name:28s} {seconds * 1e3:9.1f} ms   {seconds / base:5.2f}x cyscatter median")


if __name__ == "__main__":
    main()
