"""cyscatter CPU benchmark: every workload of issue 5 against every installed peer, side by side in one run.

    python benchmarks/bench_cpu.py            # full sizes, writes benchmarks/RESULTS.md and results.png
    python benchmarks/bench_cpu.py --quick    # sizes / 10, fewer repeats (a smoke run)

Each implementation's result is checked against cyscatter's before it is timed; then calls are timed in
interleaved rounds (one call of each implementation per round, so drift hits all alike) and the median is
reported. GB/s counts src read + index read + output written once (1 GB = 1e9 B). The memory-bandwidth ceiling
is a single-thread ``np.copyto`` of a 256 MB array (read + write), measured in the same run.
"""
from __future__ import annotations

import os
import sys

# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (set on some machines here for old OpenBLAS builds) slow a current NumPy:
# drop them for this process alone, before NumPy is imported.
if any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from peers import ALLOCATES, IMPLEMENTATIONS, WORKER_ONLY, installed  # noqa: E402
from workloads import workloads  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="sizes / 10 and 3 rounds: a smoke run")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per workload (default 7, quick 3)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    p.add_argument("--impls", default="", help="comma-separated implementation names (default: all installed)")
    p.add_argument("--out", type=Path, default=HERE, help="folder for RESULTS.md and results.png")
    p.add_argument("--no-write", action="store_true", help="print the tables only")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)   # run one implementation, print JSON
    args = p.parse_args(argv)
    args.scale = 0.1 if args.quick else 1.0
    args.rounds = args.rounds or (3 if args.quick else 7)
    args.thread_counts = [int(t) for t in args.threads.split(",")]
    return args


def selected_workloads(args):
    names = {n for n in args.only.split(",") if n}
    return [w for w in workloads(args.scale) if not names or w.name in names]


def same_result(got, want, dtype) -> bool:
    got = np.asarray(got).reshape(np.shape(want))
    if np.dtype(dtype).kind != "f":
        return np.array_equal(got, want)
    rtol = 1e-4 if np.dtype(dtype) == np.float32 else 1e-10
    return np.allclose(got, want, rtol=rtol, atol=rtol * max(1.0, float(np.abs(want[np.isfinite(want)]).max(
        initial=0))), equal_nan=True)


def time_rounds(runs: dict, rounds: int, min_sample: float = 0.02) -> dict:
    """Median seconds per call of each run, timed in interleaved rounds; short calls are looped per sample."""
    loops = {}
    for key, run in runs.items():
        t0 = time.perf_counter()
        run()   # warm-up
        once = time.perf_counter() - t0
        loops[key] = max(1, int(min_sample / max(once, 1e-9)))
    samples = {key: [] for key in runs}
    for _ in range(rounds):
        for key, run in runs.items():
            t0 = time.perf_counter()
            for _ in range(loops[key]):
                run()
            samples[key].append((time.perf_counter() - t0) / loops[key])
    return {key: float(np.median(s)) for key, s in samples.items()}


def measure(workload, impl_names, thread_counts, rounds):
    """[(impl, threads, seconds or None, note)] for one workload, checked against cyscatter first."""
    import cyscatter as cs
    src, index = workload.make()
    want = (cs.gather(src, index) if workload.kind == "gather"
            else cs.scatter(src, index, workload.op, dim_size=workload.size))
    runs, notes, rows = {}, {}, []
    for name in impl_names:
        build = IMPLEMENTATIONS[name][0]
        for threads in thread_counts:
            run = build(workload, src, index, threads)
            if run is None:
                continue
            if not same_result(run(), want, src.dtype):
                rows.append((name, threads, None, "WRONG RESULT: not timed"))
                continue
            runs[(name, threads)] = run
    for (name, threads), seconds in time_rounds(runs, rounds).items():
        rows.append((name, threads, seconds, notes.get(name, "")))
    return rows


def run_worker(args):
    """Child process: one implementation (JAX) at one thread count, whose threads are fixed at import."""
    rows = []
    for w in selected_workloads(args):
        rows += [(w.name, *r) for r in measure(w, [args.worker], args.thread_counts, args.rounds)]
    print(json.dumps(rows))


def worker_rows(name, threads, args):
    """Run `name` in a child process limited to `threads` cores and XLA threads."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                        f"intra_op_parallelism_threads={threads}")
    env["JAX_ENABLE_X64"] = "1"
    env["JAX_PLATFORMS"] = "cpu"
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--threads", str(threads),
           "--rounds", str(args.rounds), "--only", ",".join(w.name for w in selected_workloads(args))]
    if args.quick:
        cmd.append("--quick")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    if proc.returncode:
        print(f"  {name} ({threads} threads) failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return []
    return json.loads(proc.stdout.strip().splitlines()[-1])


def copy_bandwidth(rounds: int, nbytes: int = 256 * 10**6) -> float:
    """GB/s of a single-thread np.copyto of `nbytes` (read + write counted)."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    seconds = time_rounds({"copy": lambda: np.copyto(dst, src)}, rounds)["copy"]
    return 2 * nbytes / seconds / 1e9


def latency(rounds: int) -> dict:
    """Per-call time (s) of a 100-element scatter-add into 50 rows: cyscatter against np.add.at."""
    import cyscatter as cs
    rng = np.random.default_rng(1)
    src, index = rng.standard_normal(100), rng.integers(0, 50, 100)
    out = np.zeros(50)

    def add_at():
        out.fill(0)
        np.add.at(out, index, src)
    runs = {"np.add.at (into zeroed out)": add_at,
            "cyscatter.scatter": lambda: cs.scatter(src, index, dim_size=50),
            "cyscatter.scatter_into": lambda: cs.scatter_into(out, src, index),
            "np.take": lambda: np.take(src, index),
            "cyscatter.gather": lambda: cs.gather(src, index)}
    return time_rounds(runs, max(rounds, 5), min_sample=0.05)


def peak_memory(w) -> dict:
    """Peak bytes NumPy allocates during an allocating cyscatter.scatter, next to the output's size."""
    import cyscatter as cs
    src, index = w.make()
    found = {}
    for op in ("add", "max", "mean"):
        tracemalloc.start()
        out = cs.scatter(src, index, op, dim_size=w.size)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        found[op] = (peak, out.nbytes)
        del out
    return found


# ---- report -------------------------------------------------------------------------------------------------------

def versions() -> str:
    mods = ["numpy", "numba", "numpy_groupies", "torch", "jax", "Cython"]
    found = []
    for m in mods:
        if installed(m):
            found.append(f"{m} {__import__(m).__version__}")
    return ", ".join(found)


def machine() -> str:
    """The CPU as the kernels' strategy rules see it (cyscatter._runtime.machine: vendor, model, caches, calibration),
    the cores this process may use, the OS, and the thresholds in force."""
    from cyscatter._runtime import machine as _machine
    return (f"{_machine.MACHINE.describe()}, {len(os.sched_getaffinity(0))} cores, {platform.system()} "
            f"{platform.release()}; rules: {_machine.ACTIVE.rules()}")


def table(w, rows, copy_gbs, src_bytes):
    """Markdown lines for one workload, plus {(impl, threads): GB/s} for the targets and the chart."""
    timed = [r for r in rows if r[2] is not None]
    peers = {name for name, (_, _, peer) in IMPLEMENTATIONS.items() if peer}
    own1 = next((r[2] for r in timed if r[0] == "cyscatter" and r[1] == 1), None)
    scale = 1e6 if w.name == "S" else 1e3
    unit = "µs" if w.name == "S" else "ms"
    lines = [f"### {w.name}: {w.title}", "",
             f"| implementation | threads | median {unit} | GB/s | % copy | vs best peer | vs own 1 thread |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    gbs = {}
    for name, threads, seconds, note in sorted(rows, key=lambda r: (r[1], r[2] if r[2] is not None else 1e9)):
        if seconds is None:
            lines.append(f"| {name} | {threads} | - | - | - | - | {note} |")
            continue
        best = min((r[2] for r in timed if r[0] in peers and r[1] <= threads), default=None)
        rate = src_bytes / seconds / 1e9
        gbs[(name, threads)] = rate
        mark = " ¹" if name in ALLOCATES and not (name == "cyscatter" and w.kind == "gather") else ""
        vs_own = f"{own1 / seconds:.2f}×" if name == "cyscatter" and own1 else ""
        lines.append(f"| {name}{mark} | {threads} | {seconds * scale:.3g} | {rate:.2f} | {100 * rate / copy_gbs:.0f}% "
                     f"| {best / seconds:.2f}× | {vs_own} |" if best else
                     f"| {name}{mark} | {threads} | {seconds * scale:.3g} | {rate:.2f} | "
                     f"{100 * rate / copy_gbs:.0f}% | - | {vs_own} |")
    return lines + [""], gbs


def targets(all_gbs, copy_gbs, lat):
    """The issue's targets, each with its measured figure."""
    peers = {name for name, (_, _, peer) in IMPLEMENTATIONS.items() if peer}
    lines = ["| target | figure | met |", "|---|---|:---:|"]

    def add(label, figure, ok):
        lines.append(f"| {label} | {figure} | {'yes' if ok else 'NO'} |")
    for wname, gbs in all_gbs.items():   # S (small) included: "every workload" in the issue
        own = gbs.get(("cyscatter", 1))
        best = max((v for (n, t), v in gbs.items() if n in peers and t == 1), default=None)
        if own and best:
            add(f"{wname}: 1 thread ≥ 1.3× best 1-thread peer", f"{own:.2f} vs {best:.2f} GB/s = "
                f"{own / best:.2f}×", own >= 1.3 * best)
        if own and best and wname in ("W1-f32", "W3-max", "W3-mean"):   # on any machine
            add(f"{wname}: 1 thread ≥ 1.2× best 1-thread peer", f"{own / best:.2f}×", own >= 1.2 * best)
        if own and wname == "W4":
            for peer in ("numpy take", "numba loop"):
                if (peer, 1) in gbs:
                    r = own / gbs[(peer, 1)]
                    add(f"W4: 1 thread ≥ 1.1× {peer}", f"{r:.2f}×", r >= 1.1)
            best2 = max((v for (n, t), v in gbs.items() if n in peers and t == 2), default=None)
            two = gbs.get(("cyscatter", 2))
            if two and best2:
                add("W4: 2 threads ≥ best 2-thread peer", f"{two:.2f} vs {best2:.2f} GB/s = "
                    f"{two / best2:.2f}×", two >= best2)
        if wname == "W1-f32" and ("numpy ufunc.at", 1) in gbs:
            r = own / gbs[("numpy ufunc.at", 1)]
            add("W1-f32: ≥ 20× np.add.at", f"{r:.1f}×", r >= 20)
        two = gbs.get(("cyscatter", 2))
        if two and own and wname.split("-")[0] in ("W1", "W3", "W4"):
            add(f"{wname}: 2 threads ≥ 1.7× own 1 thread", f"{two / own:.2f}×", two >= 1.7 * own)
        if two and wname in ("W1-f32", "W4"):
            add(f"{wname}: 2 threads ≥ 50% of copy bandwidth", f"{two:.1f} of {copy_gbs:.1f} GB/s = "
                f"{100 * two / copy_gbs:.0f}%", two >= 0.5 * copy_gbs)
    base = lat["np.add.at (into zeroed out)"]
    for name in ("cyscatter.scatter", "cyscatter.scatter_into"):
        add(f"100-element {name} ≤ 2× np.add.at per call", f"{lat[name] * 1e6:.2f} vs {base * 1e6:.2f} µs = "
            f"{lat[name] / base:.2f}×", lat[name] <= 2 * base)
    return lines


def chart(all_gbs, copy_gbs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(all_gbs)
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 2.2 * len(names)), squeeze=False)
    for ax, wname in zip(axes[:, 0], names):
        items = sorted(all_gbs[wname].items(), key=lambda kv: kv[1])
        labels = [f"{n} ×{t}" for (n, t), _ in items]
        colors = ["tab:red" if n.startswith("cyscatter") else "tab:gray" for (n, _), _ in items]
        ax.barh(labels, [v for _, v in items], color=colors)
        ax.axvline(copy_gbs, color="k", ls="--", lw=1)
        ax.set_title(f"{wname} (GB/s; dashed: single-thread copy)", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(args)
    wanted = {n for n in args.impls.split(",") if n}
    impls, skipped = [], []
    for name, (_, module, _) in IMPLEMENTATIONS.items():
        if wanted and name not in wanted:
            continue
        (impls if installed(module) else skipped).append(name)
    for name in skipped:
        print(f"skipped {name}: {IMPLEMENTATIONS[name][1]} is not installed")
    command = "python benchmarks/bench_cpu.py " + " ".join(sys.argv[1:] if argv is None else argv)
    started = datetime.datetime.now()
    copy_gbs = copy_bandwidth(args.rounds)
    print(f"machine: {machine()}\nsingle-thread copy bandwidth: {copy_gbs:.1f} GB/s")
    lat = latency(args.rounds)
    worker_results = {}
    for name in impls:
        if name in WORKER_ONLY:
            for t in args.thread_counts:
                for wname, *row in worker_rows(name, t, args):
                    worker_results.setdefault(wname, []).append(tuple(row))
    lines, all_gbs = [], {}
    for w in selected_workloads(args):
        rows = measure(w, [n for n in impls if n not in WORKER_ONLY], args.thread_counts, args.rounds)
        rows += worker_results.get(w.name, [])
        src, index = w.make()
        block, all_gbs[w.name] = table(w, rows, copy_gbs, w.nbytes(src, index))
        print("\n".join(block), flush=True)
        lines += block
    memory = peak_memory(next(w for w in selected_workloads(args) + workloads(args.scale) if w.kind == "scatter"))
    report = [f"# cyscatter CPU benchmark", "",
              f"- date: {started:%Y-%m-%d %H:%M}", f"- machine: {machine()}",
              f"- command: `{command.strip()}`", f"- versions: {versions()}",
              f"- single-thread copy bandwidth (np.copyto, 256 MB, read + write): **{copy_gbs:.1f} GB/s**",
              f"- not installed (skipped): {', '.join(skipped) or 'none'}", "",
              "GB/s = (src + index + output bytes) / median time. \"vs best peer\" divides the fastest peer "
              "time at ≤ that many threads by the row's time. Outputs are NumPy arrays allocated once and "
              "re-initialised inside each timed call, except rows marked ¹, which allocate their own output "
              "in every call (cyscatter's row is its allocating `scatter`, whose bounds check is folded into "
              "the kernel; `scatter_into` checks the whole index first, as it must leave `dst` untouched on "
              "error). Every result was checked against cyscatter's before timing.", "",
              "## Targets", "", *targets(all_gbs, copy_gbs, lat), "", "## Workloads", "", *lines,
              "## Per-call overhead (100-element scatter-add into 50 rows)", "",
              "| call | µs |", "|---|---:|", *[f"| {k} | {v * 1e6:.2f} |" for k, v in lat.items()], "",
              "## Peak memory of an allocating scatter (tracemalloc, NumPy allocations)", "",
              "| op | peak MB | output MB | extra MB |", "|---|---:|---:|---:|",
              *[f"| {op} | {p / 1e6:.1f} | {o / 1e6:.1f} | {(p - o) / 1e6:.2f} |" for op, (p, o) in memory.items()],
              ""]
    print("\n".join(report[report.index("## Targets"):report.index("## Workloads")]))
    if not args.no_write:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "RESULTS.md").write_text("\n".join(report))
        chart(all_gbs, copy_gbs, args.out / "results.png")
        print(f"wrote {args.out / 'RESULTS.md'} and {args.out / 'results.png'}")


if __name__ == "__main__":
    main()
