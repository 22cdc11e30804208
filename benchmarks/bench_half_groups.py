"""float16 group reductions, their reverse functions and scatter mul, one thread: median time and tracemalloc
peak of each call, for comparing two trees (run it once per tree, alternating, e.g.
``for t in /work/main /work/wt-x /work/main /work/wt-x; do PYTHONPATH=$t python benchmarks/bench_half_groups.py; done``)
plus, in the same run, the float32 call on the same values as the yardstick.

Shapes: 200000 x 64 float16 rows into 5000 groups (the issue's); for gather_scatter, 200000 edges between 5000
nodes with a 200000 x 64 weight."""
import sys
import time
import tracemalloc

import numpy as np

import cyscatter as cs

cs.set_num_threads(1)
rng = np.random.default_rng(0)
N, F, SIZE = 200000, 64, 5000
idx = rng.integers(0, SIZE, N)
x32 = rng.standard_normal((N, F)).astype(np.float32)
x16 = x32.astype(np.float16)
CALLS = {
    "scatter mul": lambda x: cs.scatter(x, idx, "mul", dim_size=SIZE),
    "scatter_var": lambda x: cs.scatter_var(x, idx, dim_size=SIZE),
    "scatter_std": lambda x: cs.scatter_std(x, idx, dim_size=SIZE),
    "scatter_nanvar": lambda x: cs.scatter_nanvar(x, idx, dim_size=SIZE),
    "scatter_logsumexp": lambda x: cs.scatter_logsumexp(x, idx, dim_size=SIZE),
    "scatter_softmax": lambda x: cs.scatter_softmax(x, idx, dim_size=SIZE),
    "scatter_log_softmax": lambda x: cs.scatter_log_softmax(x, idx, dim_size=SIZE),
    "scatter_argmax": lambda x: cs.scatter_argmax(x, idx, dim_size=SIZE),
    "scatter_scan add": lambda x: cs.scatter_scan(x, idx, dim_size=SIZE),
    "scatter_scan max": lambda x: cs.scatter_scan(x, idx, "max", dim_size=SIZE),
}
# the reverse functions, told of the float16 src (derivatives in float64) or of the same values in float64
G = rng.standard_normal((SIZE, F))
OUT_DIV = cs.scatter(x16, idx, "div", dim_size=SIZE)
OUT_VAR = cs.scatter_var(x16, idx, dim_size=SIZE)
OUT_LSE = cs.scatter_logsumexp(x16, idx, dim_size=SIZE)
OUT_MAX = cs.scatter(x16, idx, "max", dim_size=SIZE)
REVERSE = {
    "scatter_vjp_src div": lambda x: cs.scatter_vjp_src("div", G, x, idx, OUT_DIV),
    "scatter_var_vjp": lambda x: cs.scatter_var_vjp(G, x, idx, OUT_VAR),
    "scatter_logsumexp_vjp": lambda x: cs.scatter_logsumexp_vjp(G, x, idx, OUT_LSE),
    "scatter_vjp_src max": lambda x: cs.scatter_vjp_src("max", G, x, idx, OUT_MAX),
}
# gather_scatter's reverse functions with a float16 weight of one value per edge and feature (N edges between
# SIZE nodes), against the same weight in float32
NODES = rng.standard_normal((SIZE, F)).astype(np.float16)
GIDX = rng.integers(0, SIZE, N)
G32 = G.astype(np.float32)


EDGE_OUT = {(op, w.dtype): cs.gather_scatter(NODES, GIDX, idx, op, weight=w, dim_size=SIZE)
            for op in ("add", "max") for w in (x16, x32)}


def _edge_call(fun, op):
    def call(w):
        out = EDGE_OUT[op, w.dtype]
        if fun == "vjp_src":
            return cs.gather_scatter_vjp_src(op, G32, NODES, GIDX, idx, out, weight=w, dim_size=SIZE)
        return cs.gather_scatter_jvp(op, NODES, GIDX, idx, out, NODES, weight=w, dim_size=SIZE)
    return call


EDGE = {f"gather_scatter_{fun} {op}": _edge_call(fun, op) for fun in ("vjp_src", "jvp") for op in ("add", "max")}


def timed(f, x, repeat=7):
    f(x)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(x)
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    f(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return np.median(times) * 1e3, peak / 1e6


print(cs.__file__, file=sys.stderr)
with np.errstate(all="ignore"):
    for name, f in CALLS.items():
        (t16, p16), (t32, _) = timed(f, x16), timed(f, x32)
        print(f"{name:22s} float16 {t16:7.2f} ms  peak {p16:6.1f} MB   float32 {t32:7.2f} ms   ratio {t16 / t32:4.2f}")
    x64 = x16.astype(np.float64)
    for name, f in REVERSE.items():
        (t16, p16), (t64, _) = timed(f, x16), timed(f, x64)
        print(f"{name:22s} float16 {t16:7.2f} ms  peak {p16:6.1f} MB   float64 {t64:7.2f} ms   ratio {t16 / t64:4.2f}")
    for name, f in EDGE.items():
        (t16, p16), (t32, _) = timed(f, x16), timed(f, x32)
        print(f"{name:22s} float16 {t16:7.2f} ms  peak {p16:6.1f} MB   float32 {t32:7.2f} ms   ratio {t16 / t32:4.2f}")
