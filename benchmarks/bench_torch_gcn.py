"""GCN training epoch in PyTorch: cyscatter.torch against PyG's MessagePassing and torch eager, interleaved.

    python benchmarks/bench_torch_gcn.py                                # digits, 1e5, 1e6; 1 and 2 threads
    python benchmarks/bench_torch_gcn.py --graphs digits,1e5 --threads 1 --aggr add

The model, data, initial weights and Adam settings are the GCN benchmark's (`gcn_peers.py`: the main job's
2-layer GCN of `cyscatter/examples/_gcn_model.py`, the digits k-NN graph or a seeded random graph of 1e5 / 1e6
nodes, add with Kipf-Welling edge weights, mean, max). The contenders differ in ``propagate`` only:

- cyscatter.torch: ``native.gather_scatter(h, op=aggr, weight=w, plan=plan)``, one fused pass each way (the
  plan groups the edges once per graph), a torch custom op differentiated by the core's reverse functions;
- cyscatter.torch (torch_scatter API): ``scatter(h[src] * w, dst, dim=0, reduce=aggr)`` through the drop-in layer;
- PyG: a ``MessagePassing`` subclass with ``aggr=`` (its ``torch_geometric.utils.scatter``);
- torch eager: ``index_select`` then ``index_add_`` / ``scatter_reduce(amax)``.

Each thread count runs in its own process (OMP/BLAS variables, ``torch.set_num_threads``,
``cs.set_num_threads``). Losses and gradients at the initial weights are checked against torch eager before any
timing; then the contenders take turns for `--rounds` rounds of `--epochs` steps each, and the median seconds per
epoch are printed with each contender's ratio to PyG.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROUNDS = {"digits": 7, "1e4": 5, "1e5": 5, "1e6": 3}
EPOCHS = {"digits": 10, "1e4": 5, "1e5": 2, "1e6": 1}
CONTENDERS = ("cyscatter.torch", "cyscatter.torch (torch_scatter API)", "PyG", "torch eager")


def contenders(bg, aggr: str, names):
    import torch
    from gcn_peers import TorchGCN

    import cyscatter.torch as ts
    from cyscatter.torch import native

    class CyscatterTorchGCN(TorchGCN):
        def __init__(self, bg, aggr):
            super().__init__(bg, aggr)
            self.plan = native.gather_scatter_plan(self.src, self.dst, src_size=self.n, dim_size=self.n)
            self.w1d = None if self.w is None else self.w

        def propagate(self, h):
            return native.gather_scatter(h, op=self.aggr, weight=self.w1d, plan=self.plan)

    class CompatGCN(TorchGCN):
        def propagate(self, h):
            m = h.index_select(0, self.src)
            if self.w is not None:
                m = m * self.w
            return ts.scatter(m, self.dst, dim=0, dim_size=self.n, reduce="sum" if self.aggr == "add" else self.aggr)

    made = {}
    for name in names:
        if name == "cyscatter.torch":
            made[name] = CyscatterTorchGCN(bg, aggr)
        elif name == "cyscatter.torch (torch_scatter API)":
            made[name] = CompatGCN(bg, aggr)
        elif name == "PyG":
            try:
                made[name] = TorchGCN(bg, aggr, pyg=True)
            except ImportError:
                print("  PyG: not installed, skipped")
        else:
            made[name] = TorchGCN(bg, aggr)
    del torch
    return made


def worker(args):
    import torch

    import cyscatter as cs
    torch.set_num_threads(args.threads)
    cs.set_num_threads(args.threads)
    from gcn_peers import make_graph
    names = [n for n in CONTENDERS if n in args.contenders.split(",")] if args.contenders else CONTENDERS
    for gname in args.graphs.split(","):
        bg = make_graph(gname, args.dtype)
        rounds, epochs = args.rounds or ROUNDS[gname], args.epochs or EPOCHS[gname]
        print(f"[{gname}, {args.threads} thread{'s' * (args.threads > 1)}] {bg.n_nodes} nodes, {bg.n_edges} edges, "
              f"{args.dtype}, {rounds} rounds x {epochs} epochs", flush=True)
        for aggr in args.aggr.split(","):
            runs = contenders(bg, aggr, names)
            reference = runs.get("torch eager") or next(iter(runs.values()))
            reference.reset()
            want_loss, want_grads = reference.step(with_grads=True)
            rtol = 1e-4 if args.dtype == "float32" else 1e-9
            for name, run in runs.items():
                run.reset()
                loss, grads = run.step(with_grads=True)
                worst = max(float(np.max(np.abs(g - w)) / max(float(np.max(np.abs(w))), 1e-30))
                            for g, w in zip(grads, want_grads))
                if abs(loss - want_loss) > rtol * abs(want_loss) or worst > 10 * rtol:
                    raise AssertionError(f"{name} ({aggr}): loss {loss} vs {want_loss}, gradient rel. diff {worst}")
            times = {name: [] for name in runs}
            for _ in range(rounds):
                for name, run in runs.items():
                    run.reset()
                    start = time.perf_counter()
                    for _ in range(epochs):
                        run.step()
                    times[name].append((time.perf_counter() - start) / epochs)
            medians = {name: statistics.median(t) for name, t in times.items()}
            base = medians.get("PyG")
            for name, seconds in medians.items():
                ratio = f"  {seconds / base:5.2f}x PyG" if base else ""
                print(f"  {aggr:4s} {name:38s} {seconds * 1e3:10.2f} ms/epoch{ratio}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graphs", default="digits,1e5,1e6", help="comma-separated among digits,1e4,1e5,1e6")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts, one process each")
    p.add_argument("--aggr", default="add,mean,max")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--rounds", type=int, default=None, help="timed rounds (default per graph)")
    p.add_argument("--epochs", type=int, default=None, help="steps per contender and round (default per graph)")
    p.add_argument("--contenders", default=None, help="comma-separated subset of: " + ", ".join(CONTENDERS))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.threads = int(args.threads)
        return worker(args)
    for threads in (int(t) for t in args.threads.split(",")):
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)] + [v for v in [env.get("PYTHONPATH")] if v])
        cmd = [sys.executable, __file__, "--worker", "--threads", str(threads), "--graphs", args.graphs,
               "--aggr", args.aggr, "--dtype", args.dtype]
        for flag, value in (("--rounds", args.rounds), ("--epochs", args.epochs), ("--contenders", args.contenders)):
            if value:
                cmd += [flag, str(value)]
        done = subprocess.run(cmd, env=env, check=False)
        if done.returncode:   # at 1e6 nodes the peers' E x F messages can exhaust a small machine's memory
            print(f"  worker for {threads} thread(s) ended with status {done.returncode} "
                  f"({'killed, likely out of memory' if done.returncode < 0 else 'error'})", flush=True)


if __name__ == "__main__":
    main()
