"""The NaN-skipping ops against their twins, side by side in one run (issue 18 item 3).

On the W1 sizes of `workloads.py` (1e6 entries x 64 features -> 1e5 rows, uniform index): nansum vs add, fmax vs
max, scatter_nanvar vs scatter_var, nanmean vs mean (nanmean's divisor is a count per element: the row counts less
the NaN entries, counted by a second pass over src when the tables are larger than the cache,
`cyscatter/nan_kernels.pyx`), and numpy_groupies' nansum as the peer (on the flattened problem it can take: one
feature column, scaled to the same bytes). Then nansum vs add on narrow rows (1, 4, 16 float32 features, 4e6
elements, into 1e3 and 1e5 rows), where the element rule's cost shows, and nanmean vs mean into 1e3-1e5 rows of 64
(its NaN counts taken in the sum pass while the tables stay in cache, else by a second pass over src). The calls
alternate round by round, so a noisy shared machine slows both sides alike; the figure is the median time of each,
and the ratio of the medians.

    python benchmarks/bench_nan.py [--rounds 7] [--nan 0.1] [--threads N] [--quick]
                                   [--segment | --gather-scatter | --gather-scatter-reverse |
                                    --count-passes]

--segment times `segment` instead (CSR, the W1 sizes: 1e6 rows x 64 float32 into 1e5 segments of random length):
every NaN-skipping op against its twin, and nanmean / nansum with a fill_value, whose kernel also counts the
non-NaN entries of each element (the twins count nothing: mean divides by the segment lengths).
--gather-scatter times `gather_scatter` with a plan (1e5 nodes x 64 float32, 1e6 random edges, with and without an
edge weight): nansum, fmax and nanmean against add, max and mean (nanmean's kernel counts each element's non-NaN
messages as it reduces).
--gather-scatter-reverse times `gather_scatter_vjp_src`, `gather_scatter_vjp_weight` and `gather_scatter_jvp` on
those sizes (a per-edge weight): nansum, fmax and nanmean against add, max and mean (their fused reverse kernels),
and the src gradient of each NaN-skipping op against the composition over materialised messages (gather, multiply
by the weight, `scatter_vjp_src`, scatter back: what the library did before these kernels).
--count-passes times nanmean with its NaN counts taken in the sum pass and by a second pass over src, by table
size (1e3..1e5 rows of 64, float32 and float64), forcing `cyscatter/_machine.py`'s rule either way.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import cyscatter as cs  # noqa: E402
from workloads import workloads  # noqa: E402

PAIRS = (("nansum", "add"), ("fmax", "max"), ("nanmean", "mean"))


def _pair(name, src, index, size, nan_op, twin, args, call=None):
    """Median times of `call(op)` (default: `cs.scatter` with op) for the two ops, alternating, and their ratio."""
    call = call or (lambda op: cs.scatter(src, index, op, dim_size=size, num_threads=args.threads))
    times = {nan_op: [], twin: []}
    for _ in range(args.rounds):
        for op in (twin, nan_op):
            t = time.perf_counter()
            call(op)
            times[op].append(time.perf_counter() - t)
    a, b = statistics.median(times[nan_op]), statistics.median(times[twin])
    print(f"{name:20s} {nan_op:8s} {a * 1e3:8.2f} ms   {twin:5s} {b * 1e3:8.2f} ms   ratio {a / b:5.2f}x")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--nan", type=float, default=0.1, help="share of NaN entries in src")
    parser.add_argument("--threads", type=int, default=None, help="default: the library's")
    parser.add_argument("--quick", action="store_true", help="a tenth of the W1 sizes")
    parser.add_argument("--segment", action="store_true", help="time segment (CSR) instead of scatter")
    parser.add_argument("--gather-scatter", action="store_true", help="time gather_scatter instead of scatter")
    parser.add_argument("--gather-scatter-reverse", action="store_true",
                        help="time gather_scatter's reverse functions")
    parser.add_argument("--count-passes", action="store_true",
                        help="nanmean with its NaN counts in the sum pass against a second pass, by table size")
    args = parser.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    if args.count_passes:
        return count_passes(args, scale)
    if args.segment:
        return segment_pairs(args, scale)
    if args.gather_scatter:
        return gather_scatter_pairs(args, scale)
    if args.gather_scatter_reverse:
        return gather_scatter_reverse_pairs(args, scale)
    print(f"cyscatter {cs.__version__}, numpy {np.__version__}, {os.cpu_count()} cpus, threads="
          f"{args.threads or cs.get_num_threads()}, NaN share {args.nan}, rounds {args.rounds}; shared machine: "
          "figures are noisy, compare the ratios")
    for w in workloads(scale):
        if w.name not in ("W1-f32", "W1-f64"):
            continue
        src, index = w.make()
        rng = np.random.default_rng(1)
        src[rng.random(src.shape) < args.nan] = np.nan
        for nan_op, twin in PAIRS:
            _pair(w.name, src, index, w.size, nan_op, twin, args)
        # scatter_nanvar against scatter_var (no num_threads argument: the library's default)
        _pair(w.name, src, index, w.size, "nanvar", "var", args,
              call=lambda name, src=src, index=index, size=w.size: getattr(cs, f"scatter_{name}")(
                  src, index, dim_size=size))
    rng = np.random.default_rng(2)
    for features in (1, 4, 16):
        n = int(4e6 * scale) // features
        src = rng.standard_normal((n, features), dtype=np.float32)
        src[rng.random(src.shape) < args.nan] = np.nan
        for size in (1000, 100000):
            index = rng.integers(0, size, n)
            _pair(f"F={features:<2d} {n}->{size}", src, index, size, "nansum", "add", args)
    # nanmean into tables that stay in cache (its NaN counts taken in the sum pass, cyscatter/_machine.py) and
    # one that does not (a second pass over src), float32 rows of 64 as W1's
    n = int(1e6 * scale)
    src = rng.standard_normal((n, 64), dtype=np.float32)
    src[rng.random(src.shape) < args.nan] = np.nan
    for size in (1000, 10000, 30000, 100000):
        index = rng.integers(0, size, n)
        _pair(f"F=64 {n}->{size}", src, index, size, "nanmean", "mean", args)
    try:
        import numpy_groupies as npg
    except ImportError:
        return
    src, index = workloads(scale)[0].make()
    flat_src = src[:, 0].copy()
    flat_src[np.random.default_rng(1).random(flat_src.shape) < args.nan] = np.nan
    times = {"cyscatter nansum": [], "numpy_groupies nansum": []}
    for _ in range(args.rounds):
        t = time.perf_counter()
        cs.scatter(flat_src, index, "nansum", dim_size=workloads(scale)[0].size, num_threads=args.threads)
        times["cyscatter nansum"].append(time.perf_counter() - t)
        t = time.perf_counter()
        npg.aggregate(index, flat_src, func="nansum", size=workloads(scale)[0].size)
        times["numpy_groupies nansum"].append(time.perf_counter() - t)
    a, b = (statistics.median(v) for v in times.values())
    print(f"vector (W1 entries, one column): cyscatter nansum {a * 1e3:.2f} ms, numpy_groupies nansum "
          f"{b * 1e3:.2f} ms: {b / a:.1f}x faster")


def count_passes(args, scale: float) -> None:
    """nanmean into 1e3..1e5 rows of 64 (float32 and float64) with its NaN counts taken in the sum pass and by a
    second pass over src (the `cyscatter/_machine.py` rule forced either way), mean beside them; the fastest
    wall-clock time of the rounds, alternating."""
    from cyscatter._runtime import machine as _machine
    rules = {"one pass": _machine.Machine("AMD", "forced", 1 << 20, 1 << 50),
             "two passes": _machine.Machine("AMD", "forced", 1 << 20, 2)}
    n = int(1e6 * scale)
    print(f"cyscatter {cs.__version__}, {os.cpu_count()} cpus, threads={args.threads or cs.get_num_threads()}, "
          f"{n} x 64 entries, NaN share {args.nan}, rounds {args.rounds}, machine rule now: "
          f"{_machine.ACTIVE.fused_count_bytes >> 20} MB")
    rng = np.random.default_rng(4)
    saved = _machine.ACTIVE
    try:
        for dtype in (np.float32, np.float64):
            src = rng.standard_normal((n, 64)).astype(dtype)
            src_nan = src.copy()
            src_nan[rng.random(src.shape) < args.nan] = np.nan
            for size in (1000, 10000, 30000, 60000, 100000):
                index = rng.integers(0, size, n)
                times = {"mean": [], **{name: [] for name in rules}}
                for _ in range(args.rounds):
                    for name in times:
                        _machine.ACTIVE = rules.get(name, saved)
                        t = time.perf_counter()
                        cs.scatter(src if name == "mean" else src_nan, index, "nanmean" if name in rules else "mean",
                                   dim_size=size, num_threads=args.threads)
                        times[name].append(time.perf_counter() - t)
                best = {name: min(v) * 1e3 for name, v in times.items()}
                tables = size * 64 * (np.dtype(dtype).itemsize + 1) / 2**20
                print(f"{np.dtype(dtype).name:8s} {size:6d} rows ({tables:5.1f} MB of tables)  mean "
                      f"{best['mean']:6.1f} ms  " + "  ".join(
                          f"{name} {best[name]:6.1f} ms ({best[name] / best['mean']:.2f}x)" for name in rules))
    finally:
        _machine.ACTIVE = saved


SEGMENT_PAIRS = (("nansum", "add", None), ("nanprod", "mul", None), ("fmax", "max", None), ("fmin", "min", None),
                 ("nanmean", "mean", None), ("nansum", "add", 0.0), ("fmax", "max", 0.0))


def segment_pairs(args, scale: float) -> None:
    """segment of each NaN-skipping op against its twin, alternating, medians and their ratio."""
    rows, segs, feat = int(1e6 * scale), int(1e5 * scale), 64
    print(f"cyscatter {cs.__version__}, numpy {np.__version__}, {os.cpu_count()} cpus, segment (one thread: the CSR "
          f"kernel is serial), {rows} x {feat} float32 into {segs} segments, NaN share {args.nan}, rounds "
          f"{args.rounds}; shared machine: figures are noisy, compare the ratios")
    rng = np.random.default_rng(1)
    src = rng.uniform(0.99, 1.01, (rows, feat)).astype(np.float32)   # products stay finite
    src[rng.random(src.shape) < args.nan] = np.nan
    indptr = np.concatenate([[0], np.sort(rng.integers(0, rows + 1, segs - 1)), [rows]])
    for nan_op, twin, fill in SEGMENT_PAIRS:
        times = {nan_op: [], twin: []}
        for _ in range(args.rounds):
            for op in (twin, nan_op):
                t = time.perf_counter()
                cs.segment(src, indptr, op, fill_value=fill)
                times[op].append(time.perf_counter() - t)
        a, b = statistics.median(times[nan_op]), statistics.median(times[twin])
        label = "" if fill is None else f" fill={fill}"
        print(f"segment{label:9s} {nan_op:8s} {a * 1e3:8.1f} ms   {twin:5s} {b * 1e3:8.1f} ms   ratio {a / b:5.2f}x")


def _graph(args, scale: float, what: str):
    """(x with NaN, gather index, scatter index, plan, edge weight, rng) of the gather_scatter sizes, after a
    header line naming `what` is timed."""
    nodes, edges, feat = int(1e5 * scale), int(1e6 * scale), 64
    print(f"cyscatter {cs.__version__}, numpy {np.__version__}, {os.cpu_count()} cpus, threads="
          f"{args.threads or cs.get_num_threads()}, {what} with a plan, {nodes} nodes x {feat} float32, "
          f"{edges} edges, NaN share {args.nan}, rounds {args.rounds}; shared machine: figures are noisy, compare "
          "the ratios")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((nodes, feat)).astype(np.float32)
    x[rng.random(x.shape) < args.nan] = np.nan
    gi, si = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    plan = cs.gather_scatter_plan(gi, si, src_size=nodes, dim_size=nodes)
    return x, gi, si, plan, rng.uniform(0.5, 2.0, edges).astype(np.float32), rng


def gather_scatter_pairs(args, scale: float) -> None:
    """gather_scatter of nansum / fmax / nanmean against add / max / mean, alternating, medians and ratios."""
    x, _, _, plan, weight, _ = _graph(args, scale, "gather_scatter")
    for nan_op, twin in (("nansum", "add"), ("fmax", "max"), ("nanmean", "mean")):
        for w in (None, weight):
            times = {nan_op: [], twin: []}
            for _ in range(args.rounds):
                for op in (twin, nan_op):
                    t = time.perf_counter()
                    cs.gather_scatter(x, op=op, weight=w, plan=plan, num_threads=args.threads)
                    times[op].append(time.perf_counter() - t)
            a, b = statistics.median(times[nan_op]), statistics.median(times[twin])
            kind = "weighted" if w is not None else "unweighted"
            print(f"gather_scatter {kind:10s} {nan_op:8s} {a * 1e3:8.1f} ms   {twin:5s} {b * 1e3:8.1f} ms   "
                  f"ratio {a / b:5.2f}x")


def gather_scatter_reverse_pairs(args, scale: float) -> None:
    """The reverse functions of gather_scatter for nansum / fmax / nanmean against add / max / mean, and the src
    gradient against the composition over materialised messages; alternating, medians and ratios."""
    x, gi, si, plan, w, rng = _graph(args, scale, "gather_scatter reverse (a weight)")
    nodes = x.shape[0]
    g = rng.standard_normal(x.shape).astype(np.float32)
    x_dot = rng.standard_normal(x.shape).astype(np.float32)
    kw = dict(weight=w, plan=plan, num_threads=args.threads)
    outs = {op: cs.gather_scatter(x, op=op, **kw) for op in ("nansum", "add", "fmax", "max", "nanmean", "mean")}
    calls = {
        "vjp_src": lambda op: cs.gather_scatter_vjp_src(op, g, x, out=outs[op], **kw),
        "vjp_weight": lambda op: cs.gather_scatter_vjp_weight(op, g, x, out=outs[op], **kw),
        "jvp": lambda op: cs.gather_scatter_jvp(op, x, out=outs[op], src_dot=x_dot, **kw),
    }

    def composed(op):   # the src gradient through the E x F messages
        msgs = cs.gather(x, gi) * w[:, None]
        d = cs.scatter_vjp_src(op, g, msgs, si, outs[op])
        return cs.scatter(np.where(msgs == msgs, d * w[:, None], 0), gi, "add", dim_size=nodes)
    for nan_op, twin in (("nansum", "add"), ("fmax", "max"), ("nanmean", "mean")):
        for name, call in calls.items():
            _pair(f"gs {name}", None, None, None, nan_op, twin, args, call=call)
        _pair("gs vjp_src / messages", None, None, None, nan_op, "composed", args,
              call=lambda op, nan_op=nan_op: calls["vjp_src"](op) if op == nan_op else composed(nan_op))


if __name__ == "__main__":
    main()
