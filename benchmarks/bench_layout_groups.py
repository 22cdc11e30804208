"""The NaN-counting scatter ops and the group reductions on a Fortran-ordered or float16 `src` (read a block of
rows at a time) against the same call on the C-ordered float32 array, with the traced peak memory of each, and
pandas' groupby where it computes the same thing; one interleaved run.

    python benchmarks/bench_layout_groups.py               # 200000 x 64 float32 into 5000 groups, 1% NaN
    python benchmarks/bench_layout_groups.py --rounds 7

Each figure is the best of `--rounds` interleaved rounds (ms, one thread); "peak" is tracemalloc's peak during
one call (MiB), against src's 48.8 MiB. Results are checked first: the Fortran-ordered call equals the C-ordered
one bit for bit, the float16 one equals the call on the float32 values rounded once.
"""
from __future__ import annotations

import argparse
import timeit
import tracemalloc

import numpy as np

import cyscatter as cs

CALLS = {
    "nanmean": lambda a, i: cs.scatter(a, i, "nanmean", dim_size=5000),
    "fmax fill": lambda a, i: cs.scatter(a, i, "fmax", dim_size=5000, fill_value=-1.0),
    "var": lambda a, i: cs.scatter_var(a, i, dim_size=5000),
    "logsumexp": lambda a, i: cs.scatter_logsumexp(a, i, dim_size=5000),
    "log_softmax": lambda a, i: cs.scatter_log_softmax(a, i, dim_size=5000),
    "softmax": lambda a, i: cs.scatter_softmax(a, i, dim_size=5000),
}


def peak_mib(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    cs.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200_000, 64)).astype(np.float32)
    x[rng.random(x.shape) < 0.01] = np.nan
    index = rng.integers(0, 5000, 200_000)
    layouts = {"C": x, "Fortran": np.asfortranarray(x), "float16": x.astype(np.float16)}
    try:
        import pandas as pd
        frame = pd.DataFrame(x)
        peers = {"nanmean": lambda: frame.groupby(index).mean()}
    except ImportError:
        peers = {}
    print(f"{'call':12s} {'C ms':>8s} {'F ms':>8s} {'f16 ms':>8s} {'C MiB':>7s} {'F MiB':>7s} {'f16 MiB':>8s} "
          f"{'pandas ms':>10s}")
    for name, call in CALLS.items():
        with np.errstate(all="ignore"):
            c = call(x, index)
            assert np.array_equal(call(layouts["Fortran"], index), c, equal_nan=True), name
            if name not in ("softmax", "log_softmax"):   # (per-entry results of float16 round per entry)
                half = call(layouts["float16"], index)
                want = call(layouts["float16"].astype(np.float32), index).astype(half.dtype)
                assert np.array_equal(half, want, equal_nan=True), name
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for tag, a in layouts.items():
                t = min(timeit.repeat(lambda a=a: call(a, index), number=1, repeat=3)) * 1e3
                best[tag] = min(best.get(tag, t), t)
            if name in peers:
                t = min(timeit.repeat(peers[name], number=1, repeat=3)) * 1e3
                best["pandas"] = min(best.get("pandas", t), t)
        peaks = {tag: peak_mib(lambda a=a: call(a, index)) for tag, a in layouts.items()}
        print(f"{name:12s} {best['C']:8.1f} {best['Fortran']:8.1f} {best['float16']:8.1f} {peaks['C']:7.1f} "
              f"{peaks['Fortran']:7.1f} {peaks['float16']:8.1f} {best.get('pandas', float('nan')):10.1f}",
              flush=True)


if __name__ == "__main__":
    main()
