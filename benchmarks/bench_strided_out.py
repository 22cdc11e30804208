"""Strided out=/dst/src as this build takes them (in place, by column groups, or through a copy where that is
faster: docs/strided_destinations.rst) against the former way (the call on C-ordered arrays, then a copy into the
caller's array, or a C-ordered copy of src first) and against the same call on C-ordered arrays, one interleaved
run, one thread.

    python benchmarks/bench_strided_out.py                 # 15 rounds
    python benchmarks/bench_strided_out.py --rounds 31

Shapes: float32, table (50000, 64), 100000 entries (features-first cases: the transposes). Medians of wall time
(ms) and the ratio of medians to the C-ordered call.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import cyscatter as cs


def _cases():
    rng = np.random.default_rng(0)
    size, n, f = 50_000, 100_000, 64
    src = rng.standard_normal((n, f)).astype(np.float32)
    idx = rng.integers(0, size, n)
    table = rng.standard_normal((size, f)).astype(np.float32)
    out_c, out_f = np.zeros((size, f), np.float32), np.zeros((size, f), np.float32, order="F")
    src_t = np.ascontiguousarray(src.T)
    ff_c, ff_f = np.zeros((f, size), np.float32), np.zeros((f, size), np.float32, order="F")
    dst_c, dst_f = table.copy(), np.asfortranarray(table)
    rows_c, rows_f = np.zeros((n, f), np.float32), np.zeros((n, f), np.float32, order="F")
    table_f = np.asfortranarray(table)
    return {
        "scatter add, out=": {
            "C out": lambda: cs.scatter(src, idx, "add", dim_size=size, out=out_c),
            "F out (this build)": lambda: cs.scatter(src, idx, "add", dim_size=size, out=out_f),
            "F out, via a C result": lambda: np.copyto(out_f, cs.scatter(src, idx, "add", dim_size=size))},
        "scatter mean, out=": {
            "C out": lambda: cs.scatter(src, idx, "mean", dim_size=size, out=out_c),
            "F out (this build)": lambda: cs.scatter(src, idx, "mean", dim_size=size, out=out_f),
            "F out, via a C result": lambda: np.copyto(out_f, cs.scatter(src, idx, "mean", dim_size=size))},
        "features-first max, axis=1, out=": {
            "C out": lambda: cs.scatter(src_t, idx, "max", dim_size=size, axis=1, out=ff_c),
            "F out (this build)": lambda: cs.scatter(src_t, idx, "max", dim_size=size, axis=1, out=ff_f),
            "F out, via a C result": lambda: np.copyto(ff_f, cs.scatter(src_t, idx, "max", dim_size=size,
                                                                        axis=1))},
        "scatter_into set": {
            "C dst": lambda: cs.scatter_into(dst_c, src, idx, "set"),
            "F dst (this build)": lambda: cs.scatter_into(dst_f, src, idx, "set"),
            "F dst, via a C copy": lambda: np.copyto(dst_f, cs.scatter_into(np.ascontiguousarray(dst_f), src, idx,
                                                                            "set"))},
        "gather, out=": {
            "C out": lambda: cs.gather(table, idx, out=rows_c),
            "F out (this build)": lambda: cs.gather(table, idx, out=rows_f),
            "F out, via a C result": lambda: np.copyto(rows_f, cs.gather(table, idx))},
        "gather_into, F src": {
            "C src": lambda: cs.gather_into(rows_c, table, idx),
            "F src (this build)": lambda: cs.gather_into(rows_c, table_f, idx),
            "F src, via a C copy": lambda: cs.gather_into(rows_c, np.ascontiguousarray(table_f), idx)},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=15)
    a = p.parse_args()
    cs.set_num_threads(1)
    for case, fs in _cases().items():
        times = {k: [] for k in fs}
        for f in fs.values():
            f()
        for _ in range(a.rounds):
            for k, f in fs.items():
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        ref = np.median(next(iter(times.values())))
        print(case)
        for k, ts in times.items():
            print(f"  {k:24} {np.median(ts) * 1e3:8.2f} ms  {np.median(ts) / ref:5.2f}x")


if __name__ == "__main__":
    main()
