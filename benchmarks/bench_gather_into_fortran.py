"""gather_into a Fortran-ordered dst (written in place) against the same call into a C-ordered dst and against
the former way (gather into a C-ordered result, then copy it into the Fortran dst), one interleaved run.

    python benchmarks/bench_gather_into_fortran.py                 # 15 rounds, 1 thread
    python benchmarks/bench_gather_into_fortran.py --threads 2

Shape: src float32 (5000, 64) (and int8, float64), index of 200000 entries, dst (200000, 64). Medians of wall
and process CPU time (ms) and the ratio of medians to the C-ordered dst.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import cyscatter as cs


def _cases(src, idx, t):
    dc, df = np.zeros((idx.size, src.shape[1]), src.dtype), np.zeros((idx.size, src.shape[1]), src.dtype, order="F")
    return {"C dst": lambda: cs.gather_into(dc, src, idx, num_threads=t),
            "Fortran dst, in place": lambda: cs.gather_into(df, src, idx, num_threads=t),
            "Fortran dst, via a C copy": lambda: np.copyto(df, cs.gather(src, idx, num_threads=t))}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 5000, 200_000)
    for dtype in (np.float32, np.float64, np.int8):
        src = (rng.standard_normal((5000, 64)) * 50).astype(dtype)
        fs = _cases(src, idx, a.threads)
        rec = {k: [] for k in fs}
        for f in fs.values():
            f()
        for _ in range(a.rounds):
            for k, f in fs.items():
                w, c = time.perf_counter(), time.process_time()
                f()
                rec[k].append(((time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3))
        print(f"\n{np.dtype(dtype).name}, {a.threads} thread(s), {a.rounds} rounds (ms, medians)")
        ref_w, ref_c = np.median(np.array(rec["C dst"]), axis=0)
        for k, r in rec.items():
            w, c = np.median(np.array(r), axis=0)
            print(f"  {k:28s} wall {w:7.2f} ({w / ref_w:4.2f}x)   cpu {c:7.2f} ({c / ref_c:4.2f}x)")


if __name__ == "__main__":
    main()
