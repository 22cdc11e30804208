"""The reverse functions of the selecting ops (max/min, fmax/fmin, and the JVPs of nansum/nanmean) and of the
products (mul, nanprod) on a float16/bfloat16 src, and those of the grouped scans (`scatter_scan_vjp`/`_jvp`
for mul, max and min, reading src by blocks of widened rows) and of nanlast (by chunks of rows), one thread: the kernels reading the half-precision rows
themselves (each row widened in a stack buffer) against the src converted whole to float64 first (the path before they did: the same
build with the chunked source turned off, `host.STAGE_MIN_ELEMENTS` raised past the src's size), interleaved in
one run; median times, their ratio and the tracemalloc peaks.

Also gather_scatter's forward pass with a float16/bfloat16 weight of one value per edge and feature (200000 edges
between 5000 nodes of 64 float32 features), the kernel widening each edge's weights against the weight converted
whole to float32 first (`host.HALF_IN_PLACE` emptied); and the VJPs/JVP of its linear ops with such a weight
(against the weight converted up front, as the reverse calls did: `_Call.w2` made in `__init__`).

Shapes: 200000 x 64 rows into 5000 groups (the issue's). Run:
``PYTHONPATH=. python benchmarks/bench_half_selection_reverse.py [rounds [name-substring]]``."""
import sys
import time
import tracemalloc

import numpy as np

import cyscatter as cs
from cyscatter._backends import host
from cyscatter._reverse import gather_scatter_host as gsh

cs.set_num_threads(1)
rng = np.random.default_rng(0)
N, F, SIZE = 200000, 64, 5000
idx = rng.integers(0, SIZE, N)
x32 = rng.standard_normal((N, F)).astype(np.float32)
x32[:, ::8] = np.round(x32[:, ::8])   # a column of every 8 with many ties
G = rng.standard_normal((SIZE, F))
DOT = rng.standard_normal((N, F))
DTYPES = {"float16": np.float16}
try:
    import ml_dtypes
    DTYPES["bfloat16"] = ml_dtypes.bfloat16
except ImportError:   # bfloat16 rows left out
    pass


def calls(x):
    out = {op: cs.scatter(x, idx, op, dim_size=SIZE) for op in ("max", "fmax", "nanmean", "mul", "nanprod", "nanlast")}
    dst = np.zeros(out["max"].shape, out["max"].dtype)
    into = cs.scatter_into(dst.copy(), x, idx, "max")
    ones = np.ones(out["max"].shape, out["max"].dtype)
    into_prod = cs.scatter_into(ones.copy(), x, idx, "nanprod")
    return {
        "vjp_src mul": lambda: cs.scatter_vjp_src("mul", G, x, idx, out["mul"]),
        "vjp_src nanprod": lambda: cs.scatter_vjp_src("nanprod", G, x, idx, out["nanprod"]),
        "vjp_dst nanprod": lambda: cs.scatter_vjp_dst("nanprod", G, ones, x, idx, into_prod),
        "jvp mul": lambda: cs.scatter_jvp("mul", x, idx, out["mul"], DOT),
        "vjp_src max": lambda: cs.scatter_vjp_src("max", G, x, idx, out["max"]),
        "vjp_src fmax": lambda: cs.scatter_vjp_src("fmax", G, x, idx, out["fmax"]),
        "vjp_dst max": lambda: cs.scatter_vjp_dst("max", G, dst, x, idx, into),
        "jvp max": lambda: cs.scatter_jvp("max", x, idx, out["max"], DOT),
        "jvp nanmean": lambda: cs.scatter_jvp("nanmean", x, idx, out["nanmean"], DOT),
        "vjp_src nanlast": lambda: cs.scatter_vjp_src("nanlast", G, x, idx, out["nanlast"]),
        "vjp_dst nanlast": lambda: cs.scatter_vjp_dst("nanlast", G, dst, x, idx, out["nanlast"]),
        "scan_vjp mul": lambda: cs.scatter_scan_vjp("mul", DOT, x, idx, dim_size=SIZE),
        "scan_vjp mul exclusive": lambda: cs.scatter_scan_vjp("mul", DOT, x, idx, dim_size=SIZE, exclusive=True),
        "scan_jvp mul": lambda: cs.scatter_scan_jvp("mul", x, idx, DOT, dim_size=SIZE),
        "scan_vjp max": lambda: cs.scatter_scan_vjp("max", DOT, x, idx, dim_size=SIZE),
        "scan_jvp min reverse": lambda: cs.scatter_scan_jvp("min", x, idx, DOT, dim_size=SIZE, reverse=True),
    }


NODES = rng.standard_normal((SIZE, F)).astype(np.float32)
GIDX = rng.integers(0, SIZE, N)


def edge_calls(w):
    calls = {f"gather_scatter {op}": (lambda op=op: cs.gather_scatter(NODES, GIDX, idx, op, weight=w, dim_size=SIZE))
             for op in ("add", "max", "nanmean")}
    # the linear ops' reverse functions: forward passes reading the half weight in place (no E x F copy)
    out = {op: cs.gather_scatter(NODES, GIDX, idx, op, weight=w, dim_size=SIZE) for op in ("add", "mean")}
    calls["gs_vjp_src add"] = lambda: cs.gather_scatter_vjp_src("add", G, NODES, GIDX, idx, out["add"], weight=w,
                                                                dim_size=SIZE)
    calls["gs_jvp mean"] = lambda: cs.gather_scatter_jvp("mean", NODES, GIDX, idx, out["mean"], NODES, weight=w,
                                                         dim_size=SIZE)
    calls["gs_vjp_weight add"] = lambda: cs.gather_scatter_vjp_weight("add", G, NODES, GIDX, idx, out["add"],
                                                                      weight=w, dim_size=SIZE)
    return calls


def _eager_weight(self, *args, **kwargs):
    """gather_scatter's reverse call as it was: the weight converted (`_Call.w2`) up front, read or not."""
    _CALL_INIT(self, *args, **kwargs)
    self.kernel_w2   # noqa: B018 (made for its cost)


_CALL_INIT = gsh._Call.__init__


def whole(f):
    """f run on the path that converts src (or the weight) whole first."""
    def run():
        saved, host.STAGE_MIN_ELEMENTS = host.STAGE_MIN_ELEMENTS, 1 << 62
        kinds, host.HALF_IN_PLACE = host.HALF_IN_PLACE, {}
        gsh._Call.__init__ = _eager_weight
        try:
            return f()
        finally:
            host.STAGE_MIN_ELEMENTS, host.HALF_IN_PLACE = saved, kinds
            gsh._Call.__init__ = _CALL_INIT
    return run


def peak(f):
    tracemalloc.start()
    f()
    top = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return top / 1e6


def main(rounds=9, only=""):
    print(f"{N} x {F} rows into {SIZE}, one thread, {rounds} interleaved rounds; median ms")
    print(f"{'call':32s} {'in place':>9s} {'whole':>9s} {'ratio':>6s} {'peak MB':>8s} {'whole MB':>8s}")
    for name, dtype in DTYPES.items():
        x = x32.astype(dtype)
        for label, f in {**calls(x), **edge_calls(x)}.items():
            if only not in label:
                continue
            g = whole(f)
            a, b = f(), g()
            assert np.array_equal(np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64)), label
            times = {f: [], g: []}
            for _ in range(rounds):
                for h in (f, g):
                    t0 = time.perf_counter()
                    h()
                    times[h].append(time.perf_counter() - t0)
            tf, tg = (np.median(times[h]) * 1e3 for h in (f, g))
            print(f"{name + ' ' + label:32s} {tf:9.1f} {tg:9.1f} {tf / tg:6.2f} {peak(f):8.1f} {peak(g):8.1f}")


if __name__ == "__main__":
    main(*(int(a) if a.isdigit() else a for a in sys.argv[1:]))
