"""GCN training-epoch benchmark: cyscatter + autograd against torch, PyG, JAX and scipy.

    python benchmarks/bench_gcn.py                 # full run: writes benchmarks/GCN.md and benchmarks/gcn.png
    python benchmarks/bench_gcn.py --quick         # smoke run: digits and 1e4, 2 rounds of 2 epochs (temp folder)

One epoch is a full-batch training step (forward, backward, Adam update) of the same 2-layer GCN
(``propagate(X @ W1) + b1 -> relu -> propagate(H @ W2) + b2``, softmax cross-entropy on a fixed labelled subset,
L2 on the weights: the example's `make_loss`) from the same initial weights on the same data, for

- cyscatter + autograd: the example's model code (`gcn_logits`, `make_loss`, `init_params`) with message passing
  through ``csgrad.gather_scatter(h, op=aggr, weight=w, plan=plan)`` (the plan built once per graph), or through
  the example's ``csgrad.scatter(csgrad.gather(...))`` while cyscatter has no `gather_scatter`; plain Adam;
- torch eager (``index_select`` + ``index_add_`` / ``scatter_reduce``) with torch.optim.Adam;
- PyG (a `MessagePassing` subclass with ``aggr=``) with torch.optim.Adam;
- JAX (``segment_sum`` / ``segment_max``), value_and_grad and Adam under one ``jax.jit``;
- scipy.sparse CSR @ dense with the backward written by hand (add and mean only).

Graphs: the example's digits k-NN graph (k=10; 64 features, hidden 32 as the example, 10 classes) and seeded
random graphs of 1e4, 1e5, 1e6 nodes (10 random in-edges per node on average plus a self-loop; 64 features,
hidden 64, 16 classes). add weights each edge by 1 / sqrt(deg(src) deg(dst)) (Kipf & Welling); mean and max
have no edge weights.

Each thread count runs in its own process per graph, limited to that many cores (CPU affinity) and threads
(OMP/BLAS variables, threadpoolctl, ``cs.set_num_threads``, ``torch.set_num_threads``, XLA_FLAGS set before JAX
loads), so the setting reaches every library; the cpu/wall ratio of each contender's timed epochs is reported as
evidence. Inside a process every contender's loss and gradients at the initial weights are checked against the
others before anything is timed; then the contenders take turns, each round running `epochs` steps of each from
the initial weights, and the median over rounds is reported. The aggregation op alone (forward, add and mean) is
timed the same way against scipy CSR @ dense and torch.sparse.mm, results checked first. The peak memory of one
cyscatter training step (tracemalloc) and its largest single allocation are reported against E x F x itemsize.

Rounds x epochs scale with the graph (digits 7 x 10, 1e4 5 x 5, 1e5 3 x 2, 1e6 2 x 1), and after round 1 a
contender whose rounds would take more than --budget seconds runs fewer (marked), which keeps a full default run
near 20-25 minutes on 2 cores. Each worker caps its data segment (RLIMIT_DATA) below the memory available, so a
contender that runs out of memory raises and is reported as such; if the worker dies anyway, it is rerun without
the contender that was running.
"""
from __future__ import annotations

import os
import sys

# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (set on some machines here for old OpenBLAS builds) slow a current NumPy:
# drop them for this process and its workers, before NumPy is imported (as bench_cpu.py does).
if any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import importlib.metadata  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

AGGRS = ("mean", "add", "max")
# rounds x epochs per graph: keep a full default run (4 graphs x 3 aggregations x 2 thread counts) near 20 min
ROUNDS = {"digits": 7, "1e4": 5, "1e5": 3, "1e6": 2}
EPOCHS = {"digits": 10, "1e4": 5, "1e5": 2, "1e6": 1}
AGG_ROUNDS = {"digits": 7, "1e4": 7, "1e5": 5, "1e6": 3}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", default=None,
                   help="comma-separated among digits,1e4,1e5,1e6 (default: all; --quick: digits,1e4)")
    p.add_argument("--aggr", default="mean,add,max", help="comma-separated aggregations among mean,add,max")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (each in its own process)")
    p.add_argument("--rounds", type=int, default=None,
                   help="timed rounds, all graphs (default per graph: digits 7, 1e4 5, 1e5 3, 1e6 2; quick 2)")
    p.add_argument("--epochs", type=int, default=None,
                   help="training steps per contender and round (default per graph: digits 10, 1e4 5, 1e5 2, "
                        "1e6 1; quick 2)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--contenders", default=",".join(("cyscatter", "torch", "PyG", "JAX", "scipy")),
                   help="comma-separated subset of cyscatter,torch,PyG,JAX,scipy")
    p.add_argument("--quick", action="store_true", help="smoke run: digits and 1e4, 2 rounds of 2 epochs")
    p.add_argument("--budget", type=float, default=30.0,
                   help="seconds of timed steps per contender, graph, aggregation and thread count: after round 1 "
                        "a slower contender runs fewer rounds (at least 1; reported)")
    p.add_argument("--blas-threads", choices=("same", "1"), default="same",
                   help="threads of NumPy's BLAS (cyscatter's and scipy's dense matmuls): as --threads, or 1 as the "
                        "example runs them (torch and XLA keep their own matmul threads at --threads)")
    p.add_argument("--memory-cap-gb", type=float, default=None,
                   help="cap each worker's data segment at this many GB (default: 90%% of the memory available "
                        "when it starts), so that running out of memory is an error reported per contender")
    p.add_argument("--no-aggop", action="store_true", help="skip the aggregation-op-alone section")
    p.add_argument("--out-md", type=Path, default=None,
                   help="markdown report (default benchmarks/GCN.md; --quick: GCN-quick.md in the temp folder, so a "
                        "smoke run leaves the committed results alone)")
    p.add_argument("--out-png", type=Path, default=None,
                   help="chart of ms per epoch (default benchmarks/gcn.png; --quick: gcn-quick.png in the temp folder)")
    p.add_argument("--no-write", action="store_true", help="print the report only")
    # worker (one graph at one thread count, in a child process)
    p.add_argument("--worker-graph", help=argparse.SUPPRESS)
    p.add_argument("--worker-threads", type=int, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    p.add_argument("--exclude", default="", help=argparse.SUPPRESS)   # name@aggr,...
    args = p.parse_args(argv)
    quick_dir = Path(tempfile.gettempdir())
    args.out_md = args.out_md or (quick_dir / "GCN-quick.md" if args.quick else HERE / "GCN.md")
    args.out_png = args.out_png or (quick_dir / "gcn-quick.png" if args.quick else HERE / "gcn.png")
    args.graph_list = [g for g in (args.graphs or ("digits,1e4" if args.quick else "digits,1e4,1e5,1e6"))
                       .split(",") if g]
    args.aggr_list = [a for a in args.aggr.split(",") if a]
    args.thread_list = [int(t) for t in args.threads.split(",") if t]
    args.contender_list = [c for c in args.contenders.split(",") if c]
    for name, values, allowed in (("--graphs", args.graph_list, ("digits", "1e4", "1e5", "1e6")),
                                  ("--aggr", args.aggr_list, AGGRS),
                                  ("--contenders", args.contender_list, ("cyscatter", "torch", "PyG", "JAX",
                                                                         "scipy"))):
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            p.error(f"{name}: {', '.join(bad) or 'nothing given'} not among {', '.join(allowed)}")
    if any(t < 1 for t in args.thread_list) or not args.thread_list:
        p.error("--threads: positive integers")
    for name in ("rounds", "epochs"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    return args


def rounds_epochs(args, graph: str) -> tuple[int, int, int]:
    """(timed rounds, epochs per round, aggregation-op rounds) for `graph`."""
    rounds = args.rounds or (min(2, ROUNDS[graph]) if args.quick else ROUNDS[graph])
    epochs = args.epochs or (min(2, EPOCHS[graph]) if args.quick else EPOCHS[graph])
    agg = args.rounds or (2 if args.quick else AGG_ROUNDS[graph])
    return rounds, epochs, agg


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def tolerances(dtype) -> tuple[float, float]:
    """(relative tolerance of the loss, of the gradients scaled by each array's largest entry)."""
    return (1e-4, 1e-3) if str(dtype) == "float32" else (1e-10, 1e-8)


def out_of_memory(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, MemoryError) or any(s in text for s in (
        "RESOURCE_EXHAUSTED", "can't allocate memory", "out of memory", "Out of memory", "Unable to allocate",
        "std::bad_alloc"))


def failure(exc: BaseException) -> tuple[str, str]:
    if out_of_memory(exc):
        return "OOM", f"out of memory: {type(exc).__name__}: {str(exc)[:200]}"
    return "error", f"{type(exc).__name__}: {str(exc)[:300]}"


# ==== worker: one graph, one thread count ===========================================================================

class Emitter:
    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")

    def __call__(self, kind, **record):
        self.file.write(json.dumps({"kind": kind, **record}) + "\n")
        self.file.flush()


def log(text):
    print(text, file=sys.stderr, flush=True)


def _status_kb(field: str) -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def reset_peak_rss() -> int:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0) and return the current RSS in bytes."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return _status_kb("VmRSS") * 1024


def peak_rss() -> int:
    return _status_kb("VmHWM") * 1024


def limit_memory(cap_gb: float | None = None) -> int | None:
    """Cap this process's data segment at 90% of the memory available now, so that running out of memory is an
    exception (MemoryError, torch's / XLA's allocation errors) the worker can report, not the OOM killer."""
    import resource
    try:
        avail = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return None
    cap = int(0.9 * avail) if cap_gb is None else int(cap_gb * 1e9)
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    return cap


class AllocationWatch:
    """A profile function (sys.setprofile) recording the largest growth of tracemalloc's traced memory between
    two consecutive profiler events (calls and returns of Python and C functions), and where it happened: an
    upper bound of any single allocation made there, unless memory was also freed in the same interval. With
    no growth of E x C x itemsize (C the narrowest message width), no edge-message matrix was allocated."""

    def __init__(self):
        self.last, self.largest, self.where = 0, 0, ""

    def __call__(self, frame, event, arg):
        current = tracemalloc.get_traced_memory()[0]
        if current - self.last > self.largest:
            self.largest = current - self.last
            name = getattr(arg, "__qualname__", "") if event.startswith("c_") else ""
            self.where = (f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} {frame.f_code.co_name}"
                          + (f" -> {name}" if name else ""))
        self.last = current


def run_worker(args):
    threads, gname = args.worker_threads, args.worker_graph
    cap = limit_memory(args.memory_cap_gb)
    import numpy as np
    from threadpoolctl import threadpool_limits
    threadpool_limits(threads)   # BLAS (NumPy's and others') and OpenMP pools
    if args.blas_threads == "1":
        threadpool_limits(1, user_api="blas")
    sys.path[:0] = [str(ROOT), str(HERE)]
    import cyscatter as cs
    import gcn_peers as gp
    cs.set_num_threads(threads)
    if installed("torch"):
        import torch
        torch.set_num_threads(threads)
    emit = Emitter(args.worker_out)
    excluded = {tuple(e.split("@")) for e in args.exclude.split(",") if e}
    rounds, epochs, agg_rounds = rounds_epochs(args, gname)
    tol_loss, tol_grad = tolerances(args.dtype)

    t0 = time.perf_counter()
    bg = gp.make_graph(gname, args.dtype)
    graph_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = gp.cyscatter_plan(bg) if "cyscatter" in args.contender_list else None
    plan_s = time.perf_counter() - t0
    g = bg.graph
    fused_train = plan is not None
    emit("graph", graph=gname, threads=threads, n_nodes=g.n_nodes, n_edges=g.n_edges, in_features=g.features.shape[1],
         hidden=bg.hidden, classes=g.n_classes, labelled=len(bg.labelled), build_s=graph_s,
         plan_s=plan_s if plan is not None else None, fused_op=plan is not None, fused_train=fused_train,
         rounds=rounds, epochs=epochs, agg_rounds=agg_rounds, itemsize=g.features.dtype.itemsize, memory_cap=cap)
    log(f"[{gname}, {threads} thread{'s' * (threads > 1)}] {g.n_nodes} nodes, {g.n_edges} edges; cyscatter "
        f"training: {'csgrad.gather_scatter with a plan' if fused_train else 'csgrad.gather + csgrad.scatter'}, "
        f"op alone: {'cs.gather_scatter with a plan' if plan is not None else 'cs.gather + cs.scatter'}; "
        f"up to {rounds} rounds x {epochs} epochs")

    # ---- the aggregation op alone, forward, add and mean: first, in a fresh process, before the training steps
    # of five libraries have fragmented its memory (timed after them, at 1e6 nodes, cyscatter's random row reads
    # took 1.6x as long as in a fresh process, scipy's 0.9x) ----
    for aggr in [a for a in args.aggr_list if a in ("add", "mean")] if not args.no_aggop else []:
        if ("aggop", aggr) in excluded:
            continue
        emit("begin", aggr=aggr, contender="aggop", phase="aggregation op")
        x = np.random.default_rng(1).standard_normal((g.n_nodes, bg.hidden), dtype=np.float32).astype(args.dtype)
        ops = gp.aggregation_ops(bg, aggr, x, plan)
        rows = {}
        want = None
        for name, op in list(ops.items()):
            try:
                got = np.asarray(op())
            except Exception as exc:   # noqa: BLE001
                rows[name] = dict(zip(("status", "note"), failure(exc)))
                del ops[name]
                continue
            want = got.astype(np.float64) if want is None else want
            diff = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
            rows[name] = {"status": "ok", "diff": diff, "checked": diff <= tol_loss}
            if diff > tol_loss:
                log(f"  CHECK FAILED: {name} ({aggr}) differs from {next(iter(ops))} by {diff:.1e} (still timed)")
            del got
        try:
            timing = time_calls(ops, agg_rounds)
        except Exception as exc:   # noqa: BLE001
            timing = {}
            for row in rows.values():
                row.setdefault("note", failure(exc)[1])
        for name, (median, cpu_wall) in timing.items():
            rows[name].update(median_s=median, cpu_per_wall=cpu_wall)
        emit("agg", aggr=aggr, rows=rows, features=bg.hidden)
        log(f"[{gname}, {threads}t, {aggr} op alone] " + ", ".join(
            f"{n} {r['median_s'] * 1e3:.4g} ms" for n, r in rows.items() if "median_s" in r))
        del ops, x, want
        gc.collect()

    for aggr in args.aggr_list:
        if ("all", aggr) in excluded:
            continue
        block_start = time.perf_counter()
        rows = {}
        contenders = {}
        for name in args.contender_list:
            row = rows[name] = {"status": "ok", "note": ""}
            if (name, aggr) in excluded:
                row.update(status="killed", note="the worker process died while it ran (killed: out of memory?); "
                                                 "the rest reran without it")
                continue
            if not installed(gp.MODULES[name]):
                row.update(status="missing", note=f"{gp.MODULES[name]} is not installed")
                continue
            emit("begin", aggr=aggr, contender=name, phase="build")
            try:
                contenders[name], row["build_s"] = gp.build(name, bg, aggr, plan)
                if name == "cyscatter":
                    row["note"] = contenders[name].path
            except NotImplementedError as exc:
                row.update(status="n/a", note=str(exc))
            except Exception as exc:   # noqa: BLE001 - reported, the others go on
                row["status"], row["note"] = failure(exc)

        # ---- check: loss and gradients at the initial weights (the first step; JAX compiles here) ----
        found = {}
        for name, c in list(contenders.items()):
            emit("begin", aggr=aggr, contender=name, phase="check")
            rss0 = reset_peak_rss()
            growth = AllocationWatch() if name == "cyscatter" else None
            try:
                c.reset()
                if growth:
                    tracemalloc.start()
                    sys.setprofile(growth)
                t0 = time.perf_counter()
                found[name] = c.step(with_grads=True)
                rows[name]["first_step_s"] = time.perf_counter() - t0
                if growth:
                    sys.setprofile(None)
                    rows[name]["peak_bytes"] = tracemalloc.get_traced_memory()[1]
                    rows[name]["largest_growth"], rows[name]["largest_growth_at"] = growth.largest, growth.where
            except Exception as exc:   # noqa: BLE001
                rows[name]["status"], rows[name]["note"] = failure(exc)
                del contenders[name]
            finally:
                if growth:
                    sys.setprofile(None)
                    if tracemalloc.is_tracing():
                        tracemalloc.stop()
            rows[name]["peak_rss_growth"] = peak_rss() - rss0
            gc.collect()
        ref = "cyscatter" if "cyscatter" in found else next(iter(found), None)

        def grad_diff(grads, want):
            return max(float(np.max(np.abs(a.astype(np.float64) - b)) / max(float(np.max(np.abs(b))), 1e-30))
                       for a, b in zip(grads, want))
        for name, (loss, grads) in found.items():
            rl, rg = found[ref]
            rows[name]["loss"] = loss
            rows[name]["loss_diff"] = abs(loss - rl) / abs(rl)
            rows[name]["grad_diff"] = grad_diff(grads, rg)
            rows[name]["checked"] = bool(np.isfinite(loss) and rows[name]["loss_diff"] <= tol_loss
                                         and rows[name]["grad_diff"] <= tol_grad)
        pair_loss = max((abs(a[0] - b[0]) / abs(b[0]) for a in found.values() for b in found.values()), default=0.0)
        pair_grad = max((grad_diff(a[1], b[1]) for a in found.values() for b in found.values()), default=0.0)
        for name in found:
            if not rows[name]["checked"]:
                log(f"  CHECK FAILED: {name} ({aggr}) loss {rows[name]['loss']:.7g} vs {ref} "
                    f"{found[ref][0]:.7g}, gradients differ by {rows[name]['grad_diff']:.1e} (still timed, marked)")
        del found

        # ---- timing: interleaved rounds, each from the initial weights; after round 1, a contender whose
        #      rounds would take more than --budget seconds runs fewer (at least one) ----
        samples = {name: [] for name in contenders}
        cpu = {name: [0.0, 0.0] for name in contenders}
        allowed = {name: rounds for name in contenders}
        curves = {}
        for r in range(rounds):
            for name, c in list(contenders.items()):
                if r >= allowed[name]:
                    continue
                emit("begin", aggr=aggr, contender=name, phase=f"round {r + 1}")
                rss0 = reset_peak_rss()
                try:
                    c.reset()
                    losses = []
                    w0, c0 = time.perf_counter(), time.process_time()
                    for _ in range(epochs):
                        losses.append(c.step()[0])
                    w1, c1 = time.perf_counter(), time.process_time()
                except Exception as exc:   # noqa: BLE001
                    rows[name]["status"], rows[name]["note"] = failure(exc)
                    del contenders[name]
                    gc.collect()
                    continue
                rows[name]["peak_rss_growth"] = max(rows[name]["peak_rss_growth"], peak_rss() - rss0)
                samples[name].append((w1 - w0) / epochs)
                cpu[name][0] += c1 - c0
                cpu[name][1] += w1 - w0
                curves.setdefault(name, losses)
                if r == 0:
                    allowed[name] = max(1, min(rounds, int(args.budget / (w1 - w0))))
        for name in contenders:
            rows[name]["samples_s"] = samples[name]
            rows[name]["median_s"] = float(np.median(samples[name]))
            rows[name]["cpu_per_wall"] = cpu[name][0] / cpu[name][1]
        if ref in curves:
            for name, losses in curves.items():
                rows[name]["curve_diff"] = max(abs(a - b) / abs(b) for a, b in zip(losses, curves[ref]))
        emit("gcn", aggr=aggr, rows=rows, reference=ref, pair_loss=pair_loss, pair_grad=pair_grad)
        log(f"[{gname}, {threads}t, {aggr}] " + ", ".join(
            f"{n} {r['median_s'] * 1e3:.4g} ms" + (f" ({len(r['samples_s'])} rounds)"
                                                   if len(r["samples_s"]) < rounds else "")
            if "median_s" in r else f"{n} {r['status']}" + (f" ({r['note'][:100]})" if r["status"] not in
                                                             ("n/a", "ok") else "")
            for n, r in rows.items()) + f"; max diff loss {pair_loss:.1e}, grads {pair_grad:.1e}; "
            f"{time.perf_counter() - block_start:.0f} s")
        contenders.clear()
        gc.collect()

    emit("done")


def time_calls(runs: dict, rounds: int, min_sample: float = 0.05) -> dict:
    """{name: (median seconds per call, cpu/wall)}, interleaved rounds; short calls looped within a sample."""
    import numpy as np
    loops = {}
    for name, run in runs.items():
        t0 = time.perf_counter()
        run()
        loops[name] = max(1, int(min_sample / max(time.perf_counter() - t0, 1e-9)))
    samples = {name: [] for name in runs}
    cpu = {name: [0.0, 0.0] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(loops[name]):
                run()
            w1, c1 = time.perf_counter(), time.process_time()
            samples[name].append((w1 - w0) / loops[name])
            cpu[name][0] += c1 - c0
            cpu[name][1] += w1 - w0
    return {name: (float(np.median(s)), cpu[name][0] / cpu[name][1]) for name, s in samples.items()}


# ==== parent: one worker process per graph and thread count ========================================================

def compact_memory() -> None:
    """Ask Linux to compact free memory before a worker starts (root only; otherwise nothing happens). After a
    worker of the large graphs has used ~20 GiB, free memory is fragmented and the next worker's arrays get few
    transparent huge pages: random row reads then miss the TLB too, and a 1e6-node aggregation took 0.9 s instead
    of 0.5 s (scipy's 0.95 s either way), depending only on which worker ran before."""
    try:
        with open("/proc/sys/vm/compact_memory", "w") as f:
            f.write("1")
    except OSError:
        pass


def worker_env(threads: int, dtype: str) -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = str(threads)
    env["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                        f"intra_op_parallelism_threads={threads}")
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_ENABLE_X64"] = "1" if dtype == "float64" else "0"
    env["PYTHONWARNINGS"] = "ignore"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def run_graph(args, graph: str, threads: int) -> dict:
    """Run the worker for one graph at `threads`; if its process dies (the OOM killer), rerun it without the
    contender that was running, for what was not finished. Returns {"graph": info, "gcn": {aggr: record},
    "agg": {aggr: record}, "error": text or None}."""
    result = {"graph": None, "gcn": {}, "agg": {}, "error": None}
    excluded, died = [], {}
    attempts = 2 + len(args.contender_list) * len(args.aggr_list)
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    while attempts:
        attempts -= 1
        todo = [a for a in args.aggr_list if a not in result["gcn"]]
        agg_todo = [] if args.no_aggop else [a for a in args.aggr_list if a in ("add", "mean")
                                             and a not in result["agg"]]
        if not todo and not agg_todo:
            break
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            out = f.name
        done_aggrs = [a for a in args.aggr_list if a not in todo]
        aggrs = [a for a in args.aggr_list if a in todo or a in agg_todo]
        skip = excluded + [f"all@{a}" for a in aggrs if a not in todo] + [f"aggop@{a}" for a in aggrs
                                                                         if a not in agg_todo]
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker-graph", graph, "--worker-threads",
               str(threads), "--worker-out", out, "--aggr", ",".join(aggrs), "--dtype", args.dtype,
               "--contenders", ",".join(args.contender_list), "--exclude", ",".join(skip)]
        cmd += ["--rounds", str(args.rounds)] if args.rounds else []
        cmd += ["--epochs", str(args.epochs)] if args.epochs else []
        cmd += ["--quick"] if args.quick else []
        cmd += ["--budget", str(args.budget), "--blas-threads", args.blas_threads]
        cmd += ["--memory-cap-gb", str(args.memory_cap_gb)] if args.memory_cap_gb else []
        cmd += ["--no-aggop"] if args.no_aggop else []
        compact_memory()
        proc = subprocess.run(cmd, env=worker_env(threads, args.dtype),
                              preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        records = [json.loads(line) for line in Path(out).read_text().splitlines() if line.strip()]
        os.unlink(out)
        last_begin = None
        for rec in records:
            if rec["kind"] == "graph":
                result["graph"] = rec
            elif rec["kind"] == "gcn" and rec["aggr"] not in done_aggrs:
                result["gcn"][rec["aggr"]] = rec
            elif rec["kind"] == "agg":
                result["agg"][rec["aggr"]] = rec
            elif rec["kind"] == "begin":
                last_begin = rec
        if proc.returncode == 0:
            break
        if last_begin is None:
            result["error"] = f"worker exited with {proc.returncode} before any contender ran"
            break
        name, aggr = last_begin["contender"], last_begin["aggr"]
        why = (f"killed by signal {-proc.returncode} (out of memory?)" if proc.returncode < 0 else
               f"exited with status {proc.returncode} (its traceback is in the run's output)")
        died[(name, aggr)] = f"the worker process {why} while it ran ({last_begin['phase']}); the rest reran without it"
        print(f"  worker for {graph} at {threads} thread(s) exited with {proc.returncode} while running {name} "
              f"({aggr}, {last_begin['phase']}): rerunning without it", file=sys.stderr, flush=True)
        if name == "aggop":
            result["agg"][aggr] = {"kind": "agg", "aggr": aggr, "rows": {}, "note": died[(name, aggr)]}
        else:
            excluded.append(f"{name}@{aggr}")
    for (name, aggr), note in died.items():
        row = result["gcn"].get(aggr, {}).get("rows", {}).get(name)
        if row is not None:
            row.update(status="killed", note=note)
    return result


# ==== report ========================================================================================================

def machine() -> str:
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(line for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB memory"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{model}, {len(os.sched_getaffinity(0))} cores{mem}, {platform.system()} {platform.release()}"


def versions() -> str:
    found = [f"Python {platform.python_version()}"]
    for dist in ("numpy", "scipy", "autograd", "torch", "torch_geometric", "jax", "jaxlib", "threadpoolctl",
                 "matplotlib"):
        try:
            found.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{dist} not installed")
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        found.append(f"cyscatter {rev}{' + uncommitted changes' if dirty else ''}")
    except OSError:
        pass
    return ", ".join(found)


def fmt_ms(seconds) -> str:
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 1000 else f"{ms:,.0f}"


def cell(row, rounds=None) -> str:
    if row is None:
        return "-"
    if "median_s" in row:
        fewer = rounds is not None and len(row.get("samples_s", ())) < rounds
        return (fmt_ms(row["median_s"]) + (f" ({len(row['samples_s'])} r)" if fewer else "")
                + ("" if row.get("checked", True) else " ✗"))
    return {"n/a": "n/a", "OOM": "OOM", "killed": "killed", "missing": "not installed"}.get(
        row["status"], row["status"])


def graph_title(info) -> str:
    return (f"{info['n_nodes']:,} nodes, {info['n_edges']:,} edges (self-loops included), "
            f"{info['in_features']} → {info['hidden']} → {info['classes']} features, {info['labelled']:,} labelled "
            f"nodes; {info['rounds']} rounds × {info['epochs']} epochs")


def report(args, results, command, started, elapsed):
    from gcn_peers import LABELS
    names = args.contender_list
    fused = any(r["graph"] and r["graph"]["fused_train"] for r in results.values())
    fused_op = any(r["graph"] and r["graph"]["fused_op"] for r in results.values())
    caps = sorted({r["graph"]["memory_cap"] for r in results.values() if r["graph"] and r["graph"]["memory_cap"]})
    tol_loss, tol_grad = tolerances(args.dtype)
    lines = ["# GCN training epoch: cyscatter + autograd against torch, PyG, JAX and scipy", "",
             f"- date: {started:%Y-%m-%d %H:%M} (run took {elapsed / 60:.1f} min)", f"- machine: {machine()}",
             f"- command: `{command}`", f"- versions: {versions()}", f"- dtype: {args.dtype}; NumPy's BLAS threads: "
             f"{'as the thread count' if args.blas_threads == 'same' else '1 (as the example)'}",
             f"- cyscatter message passing: " + (
                 "`csgrad.gather_scatter(h, op=aggr, weight=w, plan=plan)`, the plan built once per graph "
                 "(`cs.gather_scatter_plan`)" if fused else
                 "**fallback** `csgrad.scatter(csgrad.gather(h, src) * w, dst, aggr)` (this cyscatter has no "
                 f"`{'csgrad' if fused_op else 'cs'}.gather_scatter`)"),
             f"- worker memory cap (RLIMIT_DATA; default 90% of the memory available at its start): "
             + (", ".join(f"{c / 2**30:.1f} GiB" for c in caps) or "none"),
             f"- time budget: after round 1, a contender whose remaining rounds would take more than "
             f"{args.budget:g} s of timed steps in a block runs fewer rounds (cells marked \"(n r)\")",
             *(["- if the 2-thread rows of cyscatter and scipy are far slower than their 1-thread rows, compare "
                "`--blas-threads 1`: OpenBLAS's threads (NumPy's dense matmuls) slow down badly when other "
                "processes share the cores"] if args.blas_threads == "same" and max(args.thread_list) > 1 else []),
             "",
             "One epoch = forward, backward and Adam update of the same 2-layer GCN "
             "(`propagate(X @ W1) + b1 → relu → propagate(H @ W2) + b2`, softmax cross-entropy on 5% labelled "
             "nodes + 5e-3 · L2 on the weights), same initial weights and data for all. add weights each edge by "
             "1/sqrt(deg(src)·deg(dst)); mean and max have none. Cells: median ms per epoch over interleaved "
             "rounds (each round runs every contender's epochs from the initial weights in turn). Each thread "
             "count ran in its own process pinned to that many cores, with every library limited to that many "
             "threads. Contenders: " + "; ".join(f"{LABELS[n]}" for n in names) + ". "
             f"✗: loss or gradients at the initial weights differ from cyscatter's by more than {tol_loss:g} / "
             f"{tol_grad:g} (relative; gradients relative to each array's largest entry); every other row was "
             "checked. \"best peer ÷ cyscatter\" > 1 means cyscatter is faster.", ""]
    graphs = [g for g in args.graph_list if any(k[0] == g for k in results)]

    def gcn_row(g, t, a, n):
        res = results.get((g, t))
        rec = res and res["gcn"].get(a)
        return rec and rec["rows"].get(n)

    def agg_rows(g, t, a):
        res = results.get((g, t))
        rec = res and res["agg"].get(a)
        return rec["rows"] if rec else {}

    # ---- targets ----
    target_lines = ["| target | figure | met |", "|---|---|:---:|"]

    def target(label, ours, theirs, factor, what):
        if ours and theirs and "median_s" in ours and "median_s" in theirs:
            ratio = theirs["median_s"] / ours["median_s"]
            target_lines.append(f"| {label} | {fmt_ms(ours['median_s'])} vs {fmt_ms(theirs['median_s'])} ms "
                                f"({what} ÷ cyscatter = {ratio:.2f}) | {'yes' if ratio >= factor else 'NO'} |")
    for a in args.aggr_list:
        target(f"digits, {a}, 1 thread: cyscatter ≤ PyG", gcn_row("digits", 1, a, "cyscatter"),
               gcn_row("digits", 1, a, "PyG"), 1.0, "PyG")
    for g in ("1e5", "1e6"):
        for a in args.aggr_list:
            factor = 1.0 if a != "max" else 1 / 1.5
            label = "cyscatter ≤ JAX jit" if a != "max" else "cyscatter within 1.5× JAX jit"
            target(f"{g}, {a}, 1 thread: {label}", gcn_row(g, 1, a, "cyscatter"), gcn_row(g, 1, a, "JAX"),
                   factor, "JAX")
    own = "cyscatter gather_scatter (plan)" if fused_op else "cyscatter scatter(gather) (unfused)"
    for g in ("1e5", "1e6"):
        for a in ("mean", "add"):
            target(f"aggregation op alone, {g}, {a}, 1 thread: ≥ 1.2× scipy CSR @ dense",
                   agg_rows(g, 1, a).get(own), agg_rows(g, 1, a).get("scipy CSR @ dense"), 1.2, "scipy")
    for a in ("mean", "add"):
        one, two = agg_rows("1e6", 1, a).get(own), agg_rows("1e6", 2, a).get(own)
        if one and two and "median_s" in one and "median_s" in two:
            r = one["median_s"] / two["median_s"]
            target_lines.append(f"| fused op, 1e6, {a}: 2 threads ≥ 1.5× own 1 thread | {fmt_ms(one['median_s'])} "
                                f"vs {fmt_ms(two['median_s'])} ms = {r:.2f}× | {'yes' if r >= 1.5 else 'NO'} |")
    for g in graphs:
        for a in args.aggr_list:
            row, res = gcn_row(g, min(args.thread_list), a, "cyscatter"), results.get((g, min(args.thread_list)))
            if row and "peak_bytes" in row and res["graph"]:
                info = res["graph"]
                ec = info["n_edges"] * info["classes"] * info["itemsize"]
                target_lines.append(f"| memory, {g}, {a}: no E × F allocation in a training step | largest "
                                    f"single growth {row['largest_growth'] / 1e6:.1f} MB vs E × C × itemsize "
                                    f"{ec / 1e6:.1f} MB (peak {row['peak_bytes'] / 1e6:.1f} MB) | "
                                    f"{'yes' if row['largest_growth'] < ec else 'NO'} |")
    lines += ["## Targets (issue 21)", "", *target_lines, ""]

    # ---- GCN epoch tables ----
    lines += ["## GCN training epoch, ms (median)", ""]
    for g in graphs:
        info = next((results[(g, t)]["graph"] for t in args.thread_list
                     if (g, t) in results and results[(g, t)]["graph"]), None)
        lines += [f"### {g}" + (f": {graph_title(info)}" if info else ""), ""]
        lines += ["| aggr | threads | " + " | ".join(LABELS[n] for n in names) + " | best peer ÷ cyscatter |",
                  "|---|---:|" + "---:|" * len(names) + "---:|"]
        for a in args.aggr_list:
            for t in args.thread_list:
                res = results.get((g, t))
                if res and res["error"] and a not in res["gcn"]:
                    lines.append(f"| {a} | {t} | worker failed: {res['error']} |")
                    continue
                rows = {n: gcn_row(g, t, n=n, a=a) for n in names}
                planned = res["graph"]["rounds"] if res and res["graph"] else None
                ours = rows.get("cyscatter")
                peers = [r["median_s"] for n, r in rows.items() if n != "cyscatter" and r and "median_s" in r]
                vs = (f"{min(peers) / ours['median_s']:.2f}" if peers and ours and "median_s" in ours else "-")
                lines.append(f"| {a} | {t} | " + " | ".join(cell(rows[n], planned) for n in names) + f" | {vs} |")
        lines.append("")
        notes = {}
        for t in args.thread_list:
            for a in args.aggr_list:
                for n in names:
                    row = gcn_row(g, t, a, n)
                    if row and row["status"] not in ("ok",) and row.get("note"):
                        notes.setdefault(f"{LABELS[n]}: {row['note']}", []).append(f"{a}/{t}t")
        lines += [f"- {note} ({', '.join(where)})" for note, where in notes.items()] + ([""] if notes else [])

    # ---- checks ----
    lines += ["## Checks before timing, thread use and setup", "",
              "Loss and gradients at the initial weights, each contender against cyscatter (relative; gradients "
              "relative to each array's largest entry), the largest difference between any two contenders, the "
              "largest relative difference of the loss curves of the first timed round (after the Adam steps), "
              "cpu time / wall time of each contender's timed epochs (≈ threads when they are used; less when "
              "other processes share the cores), setup not timed (build: graph-specific structures; first step: "
              "the checked step, including JAX's compilation), and the largest growth of the process's resident "
              "memory over a step (peak RSS minus RSS before; the cyscatter check step runs under tracemalloc).",
              "",
              "| graph | aggr | threads | loss at init | max loss diff | max grad diff | loss-curve diff | "
              "cpu/wall " + "/".join(names) + " | build + first step ms " + "/".join(names) + " | peak RSS "
              "growth GB " + "/".join(names) + " |",
              "|---|---|---:|---:|---:|---:|---:|---|---|---|"]
    for g in graphs:
        for a in args.aggr_list:
            for t in args.thread_list:
                res = results.get((g, t))
                rec = res and res["gcn"].get(a)
                if not rec:
                    continue
                rows = rec["rows"]
                ref = rows.get(rec["reference"] or "", {})
                curve = max((r.get("curve_diff", 0.0) for r in rows.values()), default=0.0)
                cw = "/".join(f"{rows[n]['cpu_per_wall']:.2f}" if "cpu_per_wall" in rows.get(n, {}) else "-"
                              for n in names)
                setup = "/".join(f"{(rows[n].get('build_s') or 0) * 1e3:.0f}+{rows[n]['first_step_s'] * 1e3:.0f}"
                                 if "first_step_s" in rows.get(n, {}) else "-" for n in names)
                rss = "/".join(f"{rows[n]['peak_rss_growth'] / 1e9:.2f}" if "peak_rss_growth" in rows.get(n, {})
                               else "-" for n in names)
                bad = [n for n in names if rows.get(n, {}).get("checked") is False]
                lines.append(f"| {g} | {a} | {t} | {ref.get('loss', float('nan')):.6f} | {rec['pair_loss']:.1e} | "
                             f"{rec['pair_grad']:.1e}{' ✗ ' + ', '.join(bad) if bad else ''} | {curve:.1e} | {cw} | "
                             f"{setup} | {rss} |")
    plans = [(g, t, results[(g, t)]["graph"]["plan_s"]) for g in graphs for t in args.thread_list
             if (g, t) in results and results[(g, t)]["graph"] and results[(g, t)]["graph"]["plan_s"] is not None]
    if plans:
        lines += ["", "cyscatter plan build (once per graph, not timed): " + ", ".join(
            f"{g} {t}t {s * 1e3:.1f} ms" for g, t, s in plans)]
    lines.append("")

    # ---- aggregation op alone ----
    if not args.no_aggop:
        lines += ["## Aggregation op alone (forward), ms (median)", "",
                  "`out = aggregate(x)` over the graph's edges, x of (nodes, hidden) random values; add with the "
                  "Kipf-Welling weights, mean with 1/in-degree as the matrix values for the sparse products. "
                  "Results checked against the first row's before timing (✗: differ by more than "
                  f"{tol_loss:g} of the largest entry). cpu/wall in brackets.", ""]
        ops = []
        for res in results.values():
            for rec in res["agg"].values():
                ops += [n for n in rec["rows"] if n not in ops]
        lines += ["| graph | aggr | threads | " + " | ".join(ops) + " | scipy ÷ cyscatter |",
                  "|---|---|---:|" + "---:|" * len(ops) + "---:|"]
        for g in graphs:
            for a in [a for a in args.aggr_list if a in ("add", "mean")]:
                for t in args.thread_list:
                    res = results.get((g, t))
                    rec = res and res["agg"].get(a)
                    if not rec:
                        continue
                    rows = rec["rows"]
                    if not rows:
                        lines.append(f"| {g} | {a} | {t} | {rec.get('note', 'not run')} |")
                        continue
                    cells = []
                    for n in ops:
                        r = rows.get(n)
                        cells.append("-" if r is None else (
                            f"{fmt_ms(r['median_s'])} ({r['cpu_per_wall']:.1f})" + ("" if r["checked"] else " ✗")
                            if "median_s" in r else r["status"]))
                    ours, sp = rows.get(own, {}), rows.get("scipy CSR @ dense", {})
                    vs = f"{sp['median_s'] / ours['median_s']:.2f}" if "median_s" in ours and "median_s" in sp else "-"
                    lines.append(f"| {g} | {a} | {t} | " + " | ".join(cells) + f" | {vs} |")
        lines.append("")

    # ---- memory ----
    lines += ["## Memory of one cyscatter training step", "",
              "tracemalloc over one training step (forward, backward, Adam update; NumPy's array allocations, not "
              "memory the C kernels take with plain malloc, nor the graph and plan built before): its peak, and the "
              "largest growth of traced memory between two consecutive profiler events (Python and C calls and "
              "returns), an upper bound of the largest single allocation there, with the call it happened in. "
              "E × F × itemsize is the hidden layer's edge-message matrix (F = hidden width) that gather + scatter "
              "materialise, E × C × itemsize the output layer's (C classes), the narrowest; n × F × itemsize one "
              "node-feature array, for scale (autograd keeps several alive for the backward pass).", "",
              "| graph | aggr | threads | peak MB | largest single growth MB (where) | E × F MB | E × C MB | "
              "n × F MB | edge-message-sized allocation? |",
              "|---|---|---:|---:|---|---:|---:|---:|:---:|"]
    for g in graphs:
        for a in args.aggr_list:
            for t in args.thread_list:
                row, res = gcn_row(g, t, a, "cyscatter"), results.get((g, t))
                if not row or "peak_bytes" not in row:
                    continue
                info = res["graph"]
                ef, ec, nf = (x * info["itemsize"] for x in (info["n_edges"] * info["hidden"],
                                                             info["n_edges"] * info["classes"],
                                                             info["n_nodes"] * info["hidden"]))
                lines.append(f"| {g} | {a} | {t} | {row['peak_bytes'] / 1e6:.2f} | "
                             f"{row['largest_growth'] / 1e6:.2f} (`{row['largest_growth_at']}`) | {ef / 1e6:.2f} | "
                             f"{ec / 1e6:.2f} | {nf / 1e6:.2f} | {'YES' if row['largest_growth'] >= ec else 'no'} |")
    lines.append("")
    return lines


def chart(args, results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from gcn_peers import LABELS
    names = args.contender_list
    graphs = [g for g in args.graph_list if any(k[0] == g for k in results)]
    colors = {"cyscatter": "tab:red", "torch": "tab:orange", "PyG": "tab:purple", "JAX": "tab:blue",
              "scipy": "tab:gray"}
    rows_n, cols_n = len(args.aggr_list), len(args.thread_list)
    fig, axes = plt.subplots(rows_n, cols_n, squeeze=False,
                             figsize=(max(8.0, 1.0 + 1.9 * len(graphs) * cols_n), 0.9 + 3.0 * rows_n))
    width = 0.8 / len(names)
    for i, a in enumerate(args.aggr_list):
        for j, t in enumerate(args.thread_list):
            ax = axes[i, j]
            found, missing = [], []
            for k, n in enumerate(names):
                for gi, g in enumerate(graphs):
                    res = results.get((g, t))
                    row = res and res["gcn"].get(a, {}).get("rows", {}).get(n)
                    x = gi + (k - (len(names) - 1) / 2) * width
                    if row and "median_s" in row:
                        found.append((x, row["median_s"] * 1e3, n))
                    elif row:
                        missing.append((x, cell(row), n))
            if found:
                low = min(v for _, v, _ in found) / 3
                for n in names:
                    pts = [(x, v) for x, v, m in found if m == n]
                    if pts:
                        xs, vs = zip(*pts)
                        ax.bar(xs, [v - low for v in vs], width, bottom=low, color=colors[n],
                               label=LABELS[n] if (i, j) == (0, 0) else None)
                for x, v, _ in found:
                    ax.text(x, v * 1.08, f"{v:.3g}" if v < 1000 else f"{v / 1e3:.3g}s", ha="center",
                            va="bottom", fontsize=5.5, rotation=90)
                for x, text, _ in missing:
                    ax.text(x, low * 1.1, text, ha="center", va="bottom", fontsize=5.5, rotation=90,
                            color="0.4")
                ax.set_yscale("log")
                ax.set_ylim(low, max(v for _, v, _ in found) * 4)
            ax.set_xticks(np.arange(len(graphs)), graphs)
            ax.set_xlim(-0.5, len(graphs) - 0.5)
            ax.set_title(f"{a}, {t} thread{'s' * (t > 1)}", fontsize=9)
            ax.set_ylabel("ms per epoch (log)", fontsize=8)
            ax.tick_params(labelsize=8)
            ax.grid(axis="y", which="major", alpha=0.3)
    fig.suptitle(f"GCN training epoch (forward + backward + Adam), {args.dtype}, median; lower is better",
                 fontsize=10)
    fig.legend(loc="lower center", ncol=min(5, len(names)), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    if args.worker_graph:
        return run_worker(args)
    sys.path.insert(0, str(HERE))
    command = "python benchmarks/bench_gcn.py " + " ".join(shlex.quote(a) for a in (
        sys.argv[1:] if argv is None else argv))
    started = datetime.datetime.now()
    t_start = time.perf_counter()
    for name in args.contender_list:
        module = {"cyscatter": "autograd", "torch": "torch", "PyG": "torch_geometric", "JAX": "jax",
                  "scipy": "scipy"}[name]
        if not installed(module):
            print(f"{name}: {module} is not installed; reported as such")
    results = {}
    for graph in args.graph_list:
        for threads in args.thread_list:
            results[(graph, threads)] = run_graph(args, graph, threads)
    elapsed = time.perf_counter() - t_start
    lines = report(args, results, command.strip(), started, elapsed)
    print("\n".join(lines))
    if not args.no_write:
        args.out_md.parent.mkdir(parents=True, exist_ok=True)
        args.out_md.write_text("\n".join(lines))
        args.out_png.parent.mkdir(parents=True, exist_ok=True)
        chart(args, results, args.out_png)
        print(f"wrote {args.out_md} and {args.out_png} ({elapsed / 60:.1f} min)")


if __name__ == "__main__":
    main()
