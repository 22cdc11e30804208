"""Benchmark: a broadcast src (issue 18, item 1) against NumPy's ufunc.at and against a materialised src.

Contenders per case, on the same index and destination, in one run (taking turns, so machine noise hits all):
  cyscatter broadcast     cs.scatter_into(dst, value, idx): a Python scalar, or a row (F,), read through stride-0
                          rows (a scalar with F > 1 becomes one materialised row, never n of them)
  cyscatter materialised  cs.scatter_into(dst, np.broadcast_to(value, (n, F)).copy(), idx): the same call with
                          the (n, F) array built first, as was needed before src could broadcast (the copy is timed)
  cyscatter given (n, F)  the same call with that array already built (the copy not timed): the kernel alone
  numpy ufunc.at          np.add.at(dst, idx, value) (NumPy broadcasts value itself)
Times are the best of --repeat rounds; ratios are each contender's time over "cyscatter broadcast".

    python benchmarks/bench_broadcast.py                       # defaults: n = 1e6 entries, 1e4 rows, F 1 and 16
    python benchmarks/bench_broadcast.py --entries 200000 --features 1 8 --repeat 5
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import cyscatter as cs


def contenders(dst, value, idx, materialised):
    n, f = idx.shape[0], dst.shape[1:]
    yield "cyscatter broadcast", lambda: cs.scatter_into(dst, value, idx)
    yield "cyscatter materialised", lambda: cs.scatter_into(dst, np.broadcast_to(value, (n,) + f).copy(), idx)
    yield "cyscatter given (n, F)", lambda: cs.scatter_into(dst, materialised, idx)
    yield "numpy ufunc.at", lambda: np.add.at(dst, idx, value)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--features", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, args.rows, args.entries)
    print(f"n = {args.entries} entries into {args.rows} rows, float64, best of {args.repeat} rounds; "
          f"{cs.get_num_threads()} threads (a shared machine: figures are noisy)")
    for features in args.features:
        shape = (args.rows,) if features == 1 else (args.rows, features)
        for label, value in (("scalar 1.0", 1.0), ("row (F,)", np.arange(features, dtype=np.float64) + 1)):
            if features == 1 and label.startswith("row"):
                continue
            dst = np.zeros(shape)
            materialised = np.broadcast_to(value, (args.entries,) + shape[1:]).copy()
            funcs = dict(contenders(dst, value, idx, materialised))
            for func in funcs.values():
                func()   # warm up
            times = {name: [] for name in funcs}
            for _ in range(args.repeat):
                for name, func in funcs.items():
                    start = time.perf_counter()
                    func()
                    times[name].append(time.perf_counter() - start)
            best = {name: min(t) for name, t in times.items()}
            base = best["cyscatter broadcast"]
            print(f"\nF = {features}, src = {label}")
            for name, t in best.items():
                print(f"  {name:<24} {t * 1e3:9.2f} ms   {t / base:6.2f}x")


if __name__ == "__main__":
    main()
