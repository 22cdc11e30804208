"""The layouts and dtypes users pass, against peers, one thread, side by side in one interleaved run.

    python benchmarks/bench_layouts.py                 # all cases, 15 rounds
    python benchmarks/bench_layouts.py --rounds 31 --only T,F

Cases (`xc` float32 (200000, 64), 5000 groups; mean: 1e6 x 64 into 1e5):

- C:   the C-ordered axis-0 scatter-add (the reference time of the layout targets)
- T:   features-first data, ``scatter(np.ascontiguousarray(xc.T), idx, axis=1)``; torch ``index_add_(1, ...)``,
       ``np.add.at`` on the transposed view, JAX ``segment_sum`` on the transposed data
- F:   a Fortran-ordered src, ``scatter(np.asfortranarray(xc), idx)``; torch ``index_add_(0, ...)`` of it
- h:   float16 / bfloat16 add and max against the float32 call
- into: float16 / bfloat16 ``scatter_into`` a float32 dst; sorted: float16 with ``indices_are_sorted=True``
- gs:  float16 / bfloat16 ``gather_scatter`` (50000 x 64 nodes, 500000 edges, a plan made once) add and max;
       torch ``index_add_`` of the gathered float16 rows
- seg: float16 / bfloat16 ``segment`` (CSR pointer, segments as large as the groups) against float32
- d:   ``dtype=np.float64`` on the float32 src against the plain float32 and float64 calls
- m:   scatter mean against scatter add, JAX segment_sum + count
- g:   gather along axis 1 of features-first data; np.take, torch index_select

Each round calls every implementation once (so drift and other load hit all alike); the table gives the median
and the minimum of wall time and of the process's CPU time (ms; all its threads: JAX's dispatch included) and
the ratio of medians to the case's reference. On a shared machine the CPU time is the steadier figure: it leaves
out the time other processes hold the core (cache and memory contention stay in it). cyscatter runs on one thread
(``cs.set_num_threads(1)``), torch with ``torch.set_num_threads(1)``, JAX with XLA's CPU client told to use one
thread where the flags allow (its dispatch still runs on other threads).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import cyscatter as cs


def _optional(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def cases(scale: float):
    rng = np.random.default_rng(0)
    n, groups = int(200_000 * scale), 5000
    xc = rng.standard_normal((n, 64)).astype(np.float32)
    idx = rng.integers(0, groups, n)
    xT, xF = np.ascontiguousarray(xc.T), np.asfortranarray(xc)
    torch, jax, ml_dtypes = _optional("torch"), _optional("jax"), _optional("ml_dtypes")
    out = {}

    def case(name, ref, impls):
        out[name] = (ref, {k: f for k, f in impls.items() if f is not None})

    x16 = xc.astype(np.float16)
    xG = np.ascontiguousarray(xT[:, :groups])
    ti = tT = tF = t16 = tG = None
    if torch is not None:
        torch.set_num_threads(1)
        ti = torch.from_numpy(idx)
        tT, tF, t16, tG = (torch.from_numpy(a) for a in (xT, xF, x16, xG))
    if jax is not None:
        import jax.numpy as jnp
        jidx = jnp.asarray(idx)

    def jax_call(f, *args):
        def run():
            return f(*args).block_until_ready()
        return run

    c_add = lambda: cs.scatter(xc, idx, "add", dim_size=groups)
    case("T add", "cyscatter C axis 0", {
        "cyscatter C axis 0": c_add,
        "cyscatter T axis 1": lambda: cs.scatter(xT, idx, "add", axis=1, dim_size=groups),
        "torch index_add_ dim 1": (lambda: torch.zeros(64, groups).index_add_(1, ti, tT))
        if torch else None,
        "np.add.at on .T": lambda: np.add.at(np.zeros((64, groups), np.float32).T, idx, xT.T),
        "jax segment_sum on .T": jax_call(jax.ops.segment_sum, jnp.asarray(xT).T, jidx, groups) if jax else None,
    })
    case("T max", "cyscatter C axis 0", {
        "cyscatter C axis 0": lambda: cs.scatter(xc, idx, "max", dim_size=groups),
        "cyscatter T axis 1": lambda: cs.scatter(xT, idx, "max", axis=1, dim_size=groups),
        "torch scatter_reduce amax dim 1": (
            lambda: torch.full((64, groups), -np.inf).scatter_reduce_(1, ti.expand(64, n), tT, "amax"))
        if torch else None,
    })
    case("F add", "cyscatter C axis 0", {
        "cyscatter C axis 0": c_add,
        "cyscatter F axis 0": lambda: cs.scatter(xF, idx, "add", dim_size=groups),
        "torch index_add_ dim 0 (F)": (lambda: torch.zeros(groups, 64).index_add_(0, ti, tF))
        if torch else None,
    })
    xb = xc.astype(ml_dtypes.bfloat16) if ml_dtypes else None
    for op in ("add", "max"):
        case(f"half {op}", "cyscatter float32", {
            "cyscatter float32": lambda op=op: cs.scatter(xc, idx, op, dim_size=groups),
            "cyscatter float16": lambda op=op: cs.scatter(x16, idx, op, dim_size=groups),
            "cyscatter bfloat16": (lambda op=op: cs.scatter(xb, idx, op, dim_size=groups)) if xb is not None else None,
            "torch index_add_ float16": (lambda: torch.zeros(groups, 64, dtype=torch.float16).index_add_(0, ti, t16))
            if torch and op == "add" else None,
        })
    ptr = np.searchsorted(np.sort(idx), np.arange(groups + 1))   # segments of the same sizes as the groups
    case("segment half", "cyscatter float32", {
        "cyscatter float32": lambda: cs.segment(xc, ptr, "add"),
        "cyscatter float16": lambda: cs.segment(x16, ptr, "add"),
        "cyscatter bfloat16": (lambda: cs.segment(xb, ptr, "add")) if xb is not None else None,
        "cyscatter float16 max": lambda: cs.segment(x16, ptr, "max"),
    })
    dst32 = np.zeros((groups, 64), np.float32)
    case("into half", "cyscatter float32", {   # scatter_into a float32 dst: NumPy's cast of src to dst's dtype
        "cyscatter float32": lambda: cs.scatter_into(dst32, xc, idx),
        "cyscatter float16": lambda: cs.scatter_into(dst32, x16, idx),
        "cyscatter bfloat16": (lambda: cs.scatter_into(dst32, xb, idx)) if xb is not None else None,
    })
    order = np.argsort(idx, kind="stable")
    xs, x16s, idx_s = xc[order], x16[order], idx[order]
    case("sorted half", "cyscatter float32", {
        "cyscatter float32": lambda: cs.scatter(xs, idx_s, dim_size=groups, indices_are_sorted=True),
        "cyscatter float16": lambda: cs.scatter(x16s, idx_s, dim_size=groups, indices_are_sorted=True),
    })
    nodes, edges = int(50_000 * scale), int(500_000 * scale)
    n32 = rng.standard_normal((nodes, 64)).astype(np.float32)
    n16, nb = n32.astype(np.float16), (n32.astype(ml_dtypes.bfloat16) if ml_dtypes else None)
    gi, si = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    plan = cs.gather_scatter_plan(gi, si, dim_size=nodes)
    tgi = tsi = tn16 = None
    if torch is not None:
        tgi, tsi, tn16 = torch.from_numpy(gi), torch.from_numpy(si), torch.from_numpy(n16)
    for op in ("add", "max"):
        case(f"gs half {op}", "cyscatter float32", {
            "cyscatter float32": lambda op=op: cs.gather_scatter(n32, op=op, plan=plan),
            "cyscatter float16": lambda op=op: cs.gather_scatter(n16, op=op, plan=plan),
            "cyscatter bfloat16": (lambda op=op: cs.gather_scatter(nb, op=op, plan=plan)) if nb is not None else None,
            "torch index_add_(x[g]) float16": (lambda: torch.zeros(nodes, 64, dtype=torch.float16).index_add_(
                0, tsi, tn16[tgi])) if torch and op == "add" else None,
        })
    x64 = xc.astype(np.float64)
    case("dtype=float64", "cyscatter float32", {
        "cyscatter float32": c_add,
        "cyscatter float64 src": lambda: cs.scatter(x64, idx, "add", dim_size=groups),
        "cyscatter dtype=float64": lambda: cs.scatter(xc, idx, "add", dim_size=groups, dtype=np.float64),
    })
    m = int(1_000_000 * scale)
    xm = rng.standard_normal((m, 64)).astype(np.float32)
    im = rng.integers(0, m // 10, m)
    jm = jnp.asarray(im) if jax else None

    def jax_mean():
        s = jax.ops.segment_sum(jxm, jm, m // 10)
        c = jax.ops.segment_sum(jnp.ones(m, jnp.float32), jm, m // 10)
        return (s / jnp.maximum(c, 1)[:, None]).block_until_ready()
    jxm = jnp.asarray(xm) if jax else None
    case("mean", "cyscatter add", {
        "cyscatter add": lambda: cs.scatter(xm, im, "add", dim_size=m // 10),
        "cyscatter mean": lambda: cs.scatter(xm, im, "mean", dim_size=m // 10),
        "jax segment_sum + count": jax_mean if jax else None,
    })
    case("gather T", "cyscatter C axis 0", {
        "cyscatter C axis 0": lambda: cs.gather(xc[:groups], idx),
        "cyscatter T axis 1": lambda: cs.gather(xG, idx, axis=1),
        "np.take axis 1": lambda: np.take(xG, idx, axis=1),
        "torch index_select dim 1": (lambda: torch.index_select(tG, 1, ti)) if torch else None,
    })
    return out


def run(args):
    cs.set_num_threads(1)
    table = cases(args.scale)
    names = [n for n in table if not args.only or any(n.startswith(p) for p in args.only.split(","))]
    for name in names:
        ref, impls = table[name]
        peak = {}
        for k, f in impls.items():   # warm up (JIT, page faults, caches of the Python layer)
            f()
            tracemalloc.start()
            f()
            peak[k] = tracemalloc.get_traced_memory()[1]   # NumPy's allocations (not torch's or JAX's)
            tracemalloc.stop()
        wall = {k: [] for k in impls}
        cpu = {k: [] for k in impls}
        for _ in range(args.rounds):
            for k, f in impls.items():
                c0, t0 = time.process_time(), time.perf_counter()
                f()
                wall[k].append(time.perf_counter() - t0)
                cpu[k].append(time.process_time() - c0)
        base, cbase = np.median(wall[ref]), np.median(cpu[ref])
        print(f"\n{name}  (ratios: median / median of {ref!r})")
        for k in impls:
            w, c = wall[k], cpu[k]
            print(f"  {k:34s} wall median {np.median(w) * 1e3:8.2f} min {min(w) * 1e3:8.2f} ratio "
                  f"{np.median(w) / base:5.2f} | CPU median {np.median(c) * 1e3:8.2f} min {min(c) * 1e3:8.2f} "
                  f"ratio {np.median(c) / cbase:5.2f} | traced peak {peak[k] / 2**20:7.1f} MiB")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--scale", type=float, default=1.0, help="entry counts times this (0.1: a smoke run)")
    p.add_argument("--only", default="", help="comma-separated case-name prefixes (T, F, half, into, sorted, gs, segment, dtype, mean, "
                   "gather)")
    run(p.parse_args())
