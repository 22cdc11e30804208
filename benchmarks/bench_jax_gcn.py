"""GCN training epoch in JAX under jit: ``cyscatter.jax.gather_scatter`` against JAX's own segment_sum/segment_max.

    python benchmarks/bench_jax_gcn.py                              # digits, 1e5; 1 and 2 threads; mean, add, max
    python benchmarks/bench_jax_gcn.py --graphs digits,1e5,1e6 --threads 1,2
    python benchmarks/bench_jax_gcn.py --quick                      # digits only, 2 rounds

The model is the main job's two-layer GCN (`cyscatter.examples._gcn_model`, the same as ``bench_gcn.py``'s JAX
contender): ``propagate(X @ W1) + b1 -> relu -> propagate(H @ W2) + b2``, softmax cross-entropy on the labelled
nodes, L2 on the weights, one Adam step; value_and_grad and the update in one ``jax.jit``, float32. The graphs
are `gcn_peers.make_graph`'s: the digits k-NN graph as the example builds it, and seeded random graphs of 1e5 / 1e6
nodes (10 in-edges per node plus a self-loop). ``propagate`` is

- JAX native: ``jnp.take(h, src)`` (times the Kipf-Welling edge weight for add), then ``jax.ops.segment_sum``
  (mean: divided by the in-degree) or ``segment_max``, ``indices_are_sorted=True``;
- cyscatter.jax: ``cyscatter.jax.gather_scatter(h, op=aggr, weight=w, plan=plan)``, the plan made once per graph
  outside jit, so no E x F message array exists and the edges never cross the callback; jitted, it calls the
  kernels through the XLA FFI bridge (`cyscatter.jax._ffi`, the operands as NumPy views of XLA's buffers);
- cyscatter.jax callback: the same through ``jax.pure_callback`` (the fallback where the bridge is not built),
  which copies every operand.

Each thread count runs in its own process, pinned to that many cores, with XLA's and OpenMP's thread counts set
before JAX loads. Inside it the contenders' losses and gradients are checked against each other first, then
they alternate: each round runs `epochs` steps of one, then of the other; the median epoch over rounds is
reported, with the bare callback overhead (a jitted identity through ``jax.pure_callback`` on an n x 64 array).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ROUNDS = {"digits": 9, "1e4": 5, "1e5": 5, "1e6": 3}
EPOCHS = {"digits": 10, "1e4": 5, "1e5": 2, "1e6": 1}


def make_step(bg, aggr: str, propagate_of):
    """(jitted step(params, m, v, t, data), data) for one way of propagating."""
    from gcn_peers import jax_data, jax_train_step
    return jax_train_step(propagate_of(bg, aggr)), jax_data(bg, aggr)


def native(bg, aggr):
    from gcn_peers import jax_native_propagation
    return jax_native_propagation(bg, aggr)


def with_cyscatter(bg, aggr):
    import cyscatter as cs
    import cyscatter.jax as cj
    g = bg.graph
    plan = cs.gather_scatter_plan(g.src, g.dst, src_size=g.n_nodes, dim_size=g.n_nodes)

    def propagate(h, d):
        return cj.gather_scatter(h, op=aggr, weight=d.get("w"), plan=plan)
    return propagate


CONTENDERS = {"JAX native": native, "cyscatter.jax": with_cyscatter, "cyscatter.jax callback": with_cyscatter}
HOST_CALL = {"cyscatter.jax": "ffi", "cyscatter.jax callback": "callback"}   # how each compiles its host calls


def compile_first(name, step, data, init):
    """The first step (it compiles), with the host-call mode of contender `name` in force while it lowers."""
    from cyscatter.jax import _primitives
    if name in HOST_CALL:
        got = _primitives.set_host_call(HOST_CALL[name])
        if got != HOST_CALL[name]:
            print(f"# {name}: the FFI bridge is not built, compiled with {got}", file=sys.stderr)
    return run_steps(step, data, init, 1)


def run_steps(step, data, init, epochs):
    import jax.numpy as jnp
    params = [jnp.asarray(a) for layer in init for a in layer]
    m = [jnp.zeros_like(p) for p in params]
    v = [jnp.zeros_like(p) for p in params]
    t = jnp.asarray(0, jnp.int32)
    t0 = time.perf_counter()
    for _ in range(epochs):
        params, m, v, t, value, grads = step(params, m, v, t, data)
    value.block_until_ready()
    for p in params:
        p.block_until_ready()
    return (time.perf_counter() - t0) / epochs, float(value), grads


def callback_overhead(n: int, features: int = 64, repeats: int = 50) -> float:
    """Seconds of one jitted ``pure_callback`` identity on an (n, features) float32 array."""
    import jax
    import numpy as np
    x = jax.numpy.ones((n, features), np.float32)
    f = jax.jit(lambda a: jax.pure_callback(lambda b: np.asarray(b), jax.ShapeDtypeStruct(a.shape, a.dtype), a,
                                            vmap_method="sequential"))
    f(x).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(repeats):
        f(x).block_until_ready()
    return (time.perf_counter() - t0) / repeats


def worker(args):
    import numpy as np
    from gcn_peers import make_graph

    import cyscatter as cs
    cs.set_num_threads(args.threads)
    records = []
    for name in args.graphs.split(","):
        bg = make_graph(name, np.float32)
        rounds, epochs = args.rounds or ROUNDS[name], args.epochs or EPOCHS[name]
        overhead = callback_overhead(bg.n_nodes)
        for aggr in args.aggr.split(","):
            steps = {c: make_step(bg, aggr, f) for c, f in CONTENDERS.items()}
            # compile, and check the two agree at the initial weights
            first = {c: compile_first(c, s, d, bg.init) for c, (s, d) in steps.items()}
            (_, la, ga), *others = first.values()
            for _, lb, gb in others:
                assert abs(la - lb) <= 1e-4 * max(1.0, abs(la)), (name, aggr, la, lb)
                for a, b in zip(ga, gb):
                    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-5)
            times = {c: [] for c in steps}
            for r in range(rounds):
                order = list(steps)[r % len(steps):] + list(steps)[:r % len(steps)]
                order = order if r % 2 == 0 else order[::-1]
                for c in order:
                    times[c].append(run_steps(*steps[c], bg.init, epochs)[0])
            rec = {"graph": name, "nodes": bg.n_nodes, "edges": bg.n_edges, "aggr": aggr, "threads": args.threads,
                   "callback_ms": overhead * 1e3, **{c: statistics.median(ts) * 1e3 for c, ts in times.items()}}
            records.append(rec)
            print(json.dumps(rec), flush=True)
    return records


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", default="digits,1e5", help="comma-separated among digits,1e4,1e5,1e6")
    p.add_argument("--aggr", default="mean,add,max")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts, each in its own process")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--quick", action="store_true", help="digits only, 2 rounds")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.graphs, args.rounds = "digits", 2
    if args.worker:
        args.threads = int(args.threads)
        worker(args)
        return
    rows = []
    for threads in (int(t) for t in args.threads.split(",")):
        env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="0",
                   XLA_FLAGS=(f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                              f"intra_op_parallelism_threads={threads}"),
                   **{v: str(threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        cmd = [sys.executable, __file__, "--worker", "--graphs", args.graphs, "--aggr", args.aggr,
               "--threads", str(threads)]
        cmd += ["--rounds", str(args.rounds)] if args.rounds else []
        cmd += ["--epochs", str(args.epochs)] if args.epochs else []
        out = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True,
                             preexec_fn=lambda cpus=cpus: os.sched_setaffinity(0, cpus))
        if out.returncode:
            sys.stderr.write(out.stderr)
            raise SystemExit(out.returncode)
        rows += [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    text = markdown(rows, " ".join(["python", "benchmarks/bench_jax_gcn.py", *(argv or sys.argv[1:])]))
    print(text)
    if not args.quick:
        (HERE / "JAX_GCN.md").write_text(text)


def markdown(rows, command: str) -> str:
    """The table of median epochs (ms), with the run's date, machine and command."""
    import datetime
    import platform

    import jax
    lines = [(f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, jax {jax.__version__}: "
             f"`{command}`"), "",
             ("| graph | nodes | edges | aggr | threads | JAX native (ms) | cyscatter.jax (ms) | ratio | "
              "pure_callback path (ms) | its ratio | callback (ms) |"),
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['nodes']} | {r['edges']} | {r['aggr']} | {r['threads']} | "
                     f"{r['JAX native']:.2f} | {r['cyscatter.jax']:.2f} | "
                     f"{r['cyscatter.jax'] / r['JAX native']:.2f} | {r['cyscatter.jax callback']:.2f} | "
                     f"{r['cyscatter.jax callback'] / r['JAX native']:.2f} | {r['callback_ms']:.2f} |")
    lines += ["", ("ratio: cyscatter.jax / JAX native (below 1: cyscatter.jax is faster); cyscatter.jax calls the "
              "kernels through its XLA FFI bridge (no copies), the pure_callback path is the fallback where that "
              "extension is not built (`CYSCATTER_JAX_FFI=0`); callback: one jitted `pure_callback` identity on an "
              "n x 64 float32 array."), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
