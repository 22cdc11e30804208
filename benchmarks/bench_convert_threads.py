"""Converting scatters (float16 / bfloat16 src, ``dtype=np.float64`` on float32) and the same-dtype float32 call
at 1 and 2 threads, interleaved in one run.

    python benchmarks/bench_convert_threads.py                       # both shapes, 15 rounds
    python benchmarks/bench_convert_threads.py --rounds 21 --shape small

Shapes: small = float32-sized (200000, 64) into 5000 groups, large = (1e6, 64) into 1e5. Each round calls every
case at 1 and then 2 threads (the order alternating between rounds), so drift and other load hit both alike. The
table gives per case the median wall and CPU time (ms; CPU: every thread of the process) at 1 and 2 threads and
the medians of the per-round ratios 1-thread / 2-thread (wall, and CPU for 2 threads over 1: the threading
overhead). On a machine whose cores are shared, the wall ratio is bounded by what the other processes leave.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import cyscatter as cs


def cases(shape: str):
    rng = np.random.default_rng(0)
    n, groups = (200_000, 5000) if shape == "small" else (1_000_000, 100_000)
    xc = rng.standard_normal((n, 64)).astype(np.float32)
    idx = rng.integers(0, groups, n)
    out = {"float32 add": lambda t: cs.scatter(xc, idx, "add", dim_size=groups, num_threads=t)}
    x16 = xc.astype(np.float16)
    for op in ("add", "max"):
        out[f"float16 {op}"] = (lambda t, op=op: cs.scatter(x16, idx, op, dim_size=groups, num_threads=t))
    try:
        import ml_dtypes
        xb = xc.astype(ml_dtypes.bfloat16)
        out["bfloat16 add"] = lambda t: cs.scatter(xb, idx, "add", dim_size=groups, num_threads=t)
    except ImportError:
        pass
    out["dtype=float64 add"] = lambda t: cs.scatter(xc, idx, "add", dim_size=groups, dtype=np.float64,
                                                    num_threads=t)
    out["dtype=float64 max"] = lambda t: cs.scatter(xc, idx, "max", dim_size=groups, dtype=np.float64,
                                                    num_threads=t)
    return out


def timed(f, t):
    w, c = time.perf_counter(), time.process_time()
    f(t)
    return (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--shape", choices=["small", "large", "both"], default="both")
    a = p.parse_args()
    for shape in (["small", "large"] if a.shape == "both" else [a.shape]):
        fs = cases(shape)
        rec = {k: {1: [], 2: []} for k in fs}
        for k, f in fs.items():   # warm up
            f(1), f(2)
        for r in range(a.rounds):
            for k, f in fs.items():
                for t in ((1, 2) if r % 2 == 0 else (2, 1)):
                    rec[k][t].append(timed(f, t))
        print(f"\n{shape}: {'(200000, 64) -> 5000' if shape == 'small' else '(1e6, 64) -> 1e5'}, "
              f"{a.rounds} rounds, medians in ms")
        print(f"{'case':20s} {'wall 1t':>8s} {'wall 2t':>8s} {'cpu 1t':>8s} {'cpu 2t':>8s} "
              f"{'1t/2t wall':>11s} {'2t/1t cpu':>10s}")
        for k, d in rec.items():
            w1, c1 = np.array(d[1]).T
            w2, c2 = np.array(d[2]).T
            print(f"{k:20s} {np.median(w1):8.2f} {np.median(w2):8.2f} {np.median(c1):8.2f} {np.median(c2):8.2f} "
                  f"{np.median(w1 / w2):11.2f} {np.median(c2 / c1):10.2f}")


if __name__ == "__main__":
    main()
