"""gather_scatter and its reverse functions on a float16/bfloat16 node table, one thread: the fused kernels reading
the table as it is (each edge's row widened exactly as it is gathered) against the same build with the table
converted whole to float32 first (`host.HALF_IN_PLACE` emptied, the path before), against a float32 table of the
same values, and against torch's ``index_select`` + ``index_add_`` on the half table (accumulating in the half
dtype, where cyscatter accumulates in float32). Interleaved in one run: median times and tracemalloc peaks.

Shapes: 100000 nodes of 64 features, 1000000 edges, one float32 weight per edge for the weight VJP. Run:
``PYTHONPATH=. python benchmarks/bench_half_node_table.py [rounds]``."""
import sys
import time
import tracemalloc

import numpy as np

import cyscatter as cs
from cyscatter._backends import host

cs.set_num_threads(1)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
rng = np.random.default_rng(0)
S, E, F = 100_000, 1_000_000, 64
gi, si = rng.integers(0, S, E), rng.integers(0, S, E)
PLAN = cs.gather_scatter_plan(gi, si, dim_size=S, src_size=S)
X32 = rng.standard_normal((S, F)).astype(np.float32)
W = rng.standard_normal(E).astype(np.float32)
DTYPES = {"float16": np.float16}
try:
    import ml_dtypes
    DTYPES["bfloat16"] = ml_dtypes.bfloat16
except ImportError:   # bfloat16 rows left out
    pass
try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None


def calls(x):
    out = {op: cs.gather_scatter(x, None, None, op, plan=PLAN) for op in ("add", "max")}
    g = np.ones(out["add"].shape, np.float32)
    made = {}
    for op in ("add", "max"):
        made[f"forward {op}"] = lambda op=op: cs.gather_scatter(x, None, None, op, plan=PLAN)
        made[f"vjp_src {op}"] = lambda op=op: cs.gather_scatter_vjp_src(op, g, x, None, None, out[op], plan=PLAN)
        made[f"vjp_weight {op}"] = lambda op=op: cs.gather_scatter_vjp_weight(
            op, g, x, None, None, cs.gather_scatter(x, None, None, op, plan=PLAN, weight=W), plan=PLAN, weight=W)
    return made


def median_ms(fun, rounds):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fun()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def peak_mb(fun):
    tracemalloc.start()
    fun()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def whole(fun):
    def run():
        saved, host.HALF_IN_PLACE = host.HALF_IN_PLACE, {}
        try:
            return fun()
        finally:
            host.HALF_IN_PLACE = saved
    return run


def main():
    print(f"{S} nodes x {F} features, {E} edges, one thread, median of {ROUNDS}; ms (peak MB)")
    f32 = calls(X32)
    print(f"{'dtype':9} {'call':18} {'in place':>16} {'converted whole':>16} {'float32 table':>14} {'torch':>8}")
    for name, dtype in DTYPES.items():
        x = X32.astype(dtype)
        made = calls(x)
        for key, fun in made.items():
            fun(), whole(fun)(), f32[key]()   # warm
            runs = {0: [], 1: [], 2: []}
            for _ in range(ROUNDS):   # interleaved rounds: the machine's drift falls on all three alike
                for k, f in enumerate((fun, whole(fun), f32[key])):
                    runs[k].append(median_ms(f, 1))
            a, b, c = (float(np.median(runs[k])) for k in range(3))
            t = ""
            if torch is not None and key == "forward add" and name == "float16":
                xt, git, sit = torch.from_numpy(x), torch.from_numpy(gi), torch.from_numpy(si)
                t = f"{median_ms(lambda: torch.zeros(S, F, dtype=xt.dtype).index_add_(0, sit, xt[git]), ROUNDS):8.1f}"
            print(f"{name:9} {key:18} {a:7.1f} ({peak_mb(fun):6.1f}) {b:7.1f} ({peak_mb(whole(fun)):6.1f}) "
                  f"{c:14.1f} {t:>8}")


if __name__ == "__main__":
    main()
