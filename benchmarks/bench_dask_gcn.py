"""The main job's GCN training step (forward and backward) on Dask arrays against the same step in memory.

The model is `cyscatter.examples._gcn_model`'s two-layer GCN (add aggregation, each edge weighted by
1 / sqrt(deg(src) deg(dst)) as Kipf & Welling; a self-loop per node), written out with the split reverse
functions: the in-memory step calls ``cyscatter.gather_scatter`` / ``gather_scatter_vjp_src`` with one plan, the
Dask step ``cyscatter.dask.gather_scatter`` / ``gather_scatter_vjp_src`` with one persisted Dask plan, on node
features chunked by rows. Both give the loss and the four parameter gradients, compared at the end.

Three parts, each interleaved (in memory, Dask, in memory, Dask, ...) and reported as medians with their ratio:
1. the GCN step at `--nodes` (default 1e6, 10 random in-edges per node) on Dask's threaded scheduler with
   `--threads` threads against the in-memory step with as many kernel/BLAS threads;
2. a plain scatter-add (2e6 x 8 float64 into 1e4 rows) through ``cyscatter.dask.scatter`` against
   ``cyscatter.scatter``;
3. the step on a dask.distributed LocalCluster of 2 worker processes whose per-worker memory limit is below the
   node-feature array (generated lazily on the workers): it must complete (the loss is checked against the
   in-memory step on the same graph).

    python benchmarks/bench_dask_gcn.py                     # all three parts, default sizes
    python benchmarks/bench_dask_gcn.py --nodes 200000 --repeat 3 --skip-cluster
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time

import dask
import dask.array as da
import numpy as np
from threadpoolctl import threadpool_limits

import cyscatter as cs
import cyscatter.dask as csd


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--degree", type=int, default=10, help="random in-edges per node (plus a self-loop)")
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--src-chunks", type=int, default=2, help="row chunks of the node arrays (source partitions)")
    p.add_argument("--dst-chunks", type=int, default=2, help="destination partitions")
    p.add_argument("--edge-chunks", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5, help="interleaved rounds")
    p.add_argument("--skip-cluster", action="store_true")
    p.add_argument("--cluster-only", action="store_true")
    p.add_argument("--cluster-nodes", type=int, default=1_000_000)
    p.add_argument("--cluster-features", type=int, default=128)
    p.add_argument("--cluster-degree", type=int, default=10)
    p.add_argument("--cluster-hidden", type=int, default=16)
    p.add_argument("--cluster-dst-chunks", type=int, default=4)
    p.add_argument("--cluster-memory", default="400MB", help="memory limit of each of the 2 workers")
    p.add_argument("--cluster-chunks", type=int, default=16, help="row chunks on the cluster")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


# ---- the graph and the step ----------------------------------------------------------------------------------

def random_graph(n, degree, seed):
    """(senders, receivers, edge weights (E, 1) float32): `degree` random in-edges per node and a self-loop."""
    rng = np.random.default_rng(seed)
    receivers = np.concatenate([np.repeat(np.arange(n), degree), np.arange(n)])
    senders = np.concatenate([rng.integers(0, n, n * degree), np.arange(n)])
    deg_in = np.bincount(receivers, minlength=n).astype(np.float32)
    deg_out = np.bincount(senders, minlength=n).astype(np.float32)
    weight = (1.0 / np.sqrt(deg_out[senders] * deg_in[receivers])).astype(np.float32)[:, None]
    return senders, receivers, weight


def init_params(features, hidden, classes, seed):
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in ((features, hidden), (hidden, classes)):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append((rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32),
                       np.zeros(fan_out, np.float32)))
    return params


def gcn_step(xp, propagate, propagate_vjp, params, x, labels, mask, n_labelled, weight_decay=5e-4):
    """Loss and gradients of the GCN (`xp`: numpy or dask.array; `propagate(h)`: the weighted add aggregation,
    `propagate_vjp(g)` its transpose). Returns (loss, [(dW1, db1), (dW2, db2)]), lazy on Dask."""
    (w1, b1), (w2, b2) = params
    a1 = propagate(x @ w1)
    z1 = a1 + b1
    r = xp.maximum(z1, 0)
    logits = propagate(r @ w2) + b2
    peak = logits.max(axis=1, keepdims=True)
    shifted = logits - peak
    lse = xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
    onehot = labels[:, None] == np.arange(logits.shape[1])[None, :]
    picked = (shifted * onehot).sum(axis=1, keepdims=True)
    loss = ((lse - picked) * mask[:, None]).sum() / n_labelled + weight_decay * ((w1 * w1).sum() + (w2 * w2).sum())
    dlogits = (xp.exp(shifted - lse) - onehot) * (mask[:, None] / np.float32(n_labelled))
    dh2 = propagate_vjp(dlogits)
    dw2 = r.T @ dh2 + 2 * weight_decay * w2
    dz1 = (dh2 @ w2.T) * (z1 > 0)
    dh1 = propagate_vjp(dz1)
    dw1 = x.T @ dh1 + 2 * weight_decay * w1
    return loss, [(dw1, dz1.sum(axis=0)), (dw2, dlogits.sum(axis=0))]


def in_memory_step(params, x, labels, mask, n_lab, plan, weight, threads, blas_threads=None):
    def propagate(h):
        return cs.gather_scatter(h, op="add", weight=weight, plan=plan, num_threads=threads)

    def propagate_vjp(g):
        return cs.gather_scatter_vjp_src("add", g, g, weight=weight, plan=plan, num_threads=threads)
    with threadpool_limits(threads if blas_threads is None else blas_threads):
        return gcn_step(np, propagate, propagate_vjp, params, x, labels, mask, n_lab)


def dask_step(params, x, labels, mask, n_lab, plan, weight):
    def propagate(h):
        return csd.gather_scatter(h, op="add", weight=weight, plan=plan)

    def propagate_vjp(g):
        return csd.gather_scatter_vjp_src("add", g, g, weight=weight, plan=plan)
    loss, grads = gcn_step(da, propagate, propagate_vjp, params, x, labels, mask, n_lab)
    return loss, grads


def compute_dask(loss, grads, **kwargs):
    flat = [loss] + [g for pair in grads for g in pair]
    with threadpool_limits(1):   # each task's BLAS on one thread: Dask runs the tasks in parallel
        values = dask.compute(*flat, **kwargs)
    return values[0], [(values[1], values[2]), (values[3], values[4])]


def max_rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def compare(got, expected):
    loss_d, grads_d = got
    loss_m, grads_m = expected
    diffs = [max_rel_diff(loss_d, loss_m)] + [max_rel_diff(gd, gm) for pd, pm in zip(grads_d, grads_m)
                                              for gd, gm in zip(pd, pm)]
    return max(diffs)


def interleaved(runs: dict, repeat: int) -> dict:
    """{name: [seconds]} of `repeat` rounds, each running every contender once in turn."""
    times = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def report(title, times, base, other):
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{title}")
    for k, v in times.items():
        print(f"  {k:<34} median {med[k]:.3f} s   runs: {' '.join(f'{t:.3f}' for t in v)}")
    print(f"  ratio {other} / {base}: {med[other] / med[base]:.2f}x (median); "
          f"best-of: {min(times[other]) / min(times[base]):.2f}x")


# ---- the three parts -----------------------------------------------------------------------------------------

def part_gcn(args):
    n = args.nodes
    senders, receivers, weight = random_graph(n, args.degree, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    x = rng.standard_normal((n, args.features), dtype=np.float32)
    labels = rng.integers(0, args.classes, n)
    mask = (rng.random(n) < 0.1).astype(np.float32)
    n_lab = float(mask.sum())
    params = init_params(args.features, args.hidden, args.classes, args.seed)
    print(f"GCN: {n:,} nodes, {len(senders):,} edges, {args.features} -> {args.hidden} -> {args.classes}, "
          f"float32; {args.threads} threads")

    start = time.perf_counter()
    plan = cs.gather_scatter_plan(senders, receivers, src_size=n, dim_size=n)
    in_memory_step(params, x, labels, mask, n_lab, plan, weight, args.threads)   # warm-up, transposed CSR made
    t_plan_mem = time.perf_counter() - start

    rows = -(-n // args.src_chunks)
    xd = da.from_array(x, chunks=(rows, -1))
    labels_d, mask_d = da.from_array(labels, chunks=rows), da.from_array(mask, chunks=rows)
    edges = -(-len(senders) // args.edge_chunks)
    senders_d, receivers_d = da.from_array(senders, chunks=edges), da.from_array(receivers, chunks=edges)
    weight_d = da.from_array(weight, chunks=(edges, 1))
    start = time.perf_counter()
    with dask.config.set(scheduler="threads", num_workers=args.threads):
        plan_d = csd.gather_scatter_plan(senders_d, receivers_d, src_size=n, dim_size=n,
                                         src_chunks=rows, dim_chunks=-(-n // args.dst_chunks)).persist()
        weight_d = weight_d.persist()
        compute_dask(*dask_step(params, xd, labels_d, mask_d, n_lab, plan_d, weight_d))   # warm-up: transposes
    t_plan_dask = time.perf_counter() - start
    print(f"  plan + first step: in memory {t_plan_mem:.2f} s, Dask {t_plan_dask:.2f} s (one-off, not timed below)")

    expected = in_memory_step(params, x, labels, mask, n_lab, plan, weight, args.threads)
    with dask.config.set(scheduler="threads", num_workers=args.threads):
        got = compute_dask(*dask_step(params, xd, labels_d, mask_d, n_lab, plan_d, weight_d))
        print(f"  max relative difference of loss and gradients, Dask vs in memory: {compare(got, expected):.1e}")
        times = interleaved({
            "in memory, BLAS on all threads": lambda: in_memory_step(params, x, labels, mask, n_lab, plan, weight,
                                                                     args.threads),
            "in memory, BLAS on 1 thread": lambda: in_memory_step(params, x, labels, mask, n_lab, plan, weight,
                                                                  args.threads, blas_threads=1),
            "Dask threads (cyscatter.dask)": lambda: compute_dask(*dask_step(params, xd, labels_d, mask_d, n_lab,
                                                                             plan_d, weight_d)),
        }, args.repeat)
    # the baseline is the faster in-memory configuration (OpenBLAS's threaded tall-skinny products can be slower
    # than one thread on a shared machine)
    base = min(("in memory, BLAS on all threads", "in memory, BLAS on 1 thread"),
               key=lambda k: statistics.median(times[k]))
    report("  GCN step (forward + backward):", times, base, "Dask threads (cyscatter.dask)")


def part_scatter(args):
    rng = np.random.default_rng(args.seed + 2)
    src = rng.random((2_000_000, 8))
    index = rng.integers(0, 10_000, 2_000_000)
    chunk = 250_000
    lazy = csd.scatter(da.from_array(src, chunks=(chunk, 8)), da.from_array(index, chunks=chunk), "add",
                       dim_size=10_000)
    expected = cs.scatter(src, index, "add", dim_size=10_000, num_threads=args.threads)
    with dask.config.set(scheduler="threads", num_workers=args.threads):
        print(f"scatter-add 2e6 x 8 float64 into 1e4 rows (Dask chunks of {chunk:,} rows): max relative "
              f"difference {max_rel_diff(lazy.compute(), expected):.1e}")
        times = interleaved({
            "in memory (cyscatter.scatter)": lambda: cs.scatter(src, index, "add", dim_size=10_000,
                                                                num_threads=args.threads),
            "Dask threads (cyscatter.dask)": lambda: lazy.compute(),
        }, max(args.repeat, 7))
    report("  scatter-add:", times, "in memory (cyscatter.scatter)", "Dask threads (cyscatter.dask)")


def lazy_graph(n, degree, seed, chunks):
    """`random_graph` as lazy Dask arrays, generated where they are computed (the workers): `chunks` edge chunks;
    the degrees by ``da.bincount``, each edge's two degrees by ``cyscatter.dask.gather``."""
    rng = da.random.default_rng(seed)
    n_edges = n * (degree + 1)
    step = -(-n_edges // chunks)
    senders = da.concatenate([rng.integers(0, n, n * degree), da.arange(n)]).rechunk(step)
    receivers = da.concatenate([da.arange(n * degree) // degree, da.arange(n)]).rechunk(step)
    deg_in = da.bincount(receivers, minlength=n).astype(np.float32)
    deg_out = da.bincount(senders, minlength=n).astype(np.float32)
    weight = 1.0 / da.sqrt(csd.gather(deg_out, senders) * csd.gather(deg_in, receivers))
    return senders, receivers, weight.astype(np.float32)[:, None]


class PeakMemory:
    """The largest process memory (RSS, as the workers' heartbeats report it to the scheduler) of any worker and
    the worker addresses seen (a restarted worker comes back at a new one), polled every half second while the
    `with` block runs."""

    def __init__(self, cluster):
        self.cluster, self.peak, self.stop = cluster, 0, threading.Event()
        self.seen = set(cluster.scheduler.workers)

    def poll(self):
        while not self.stop.wait(0.5):
            for address, ws in list(self.cluster.scheduler.workers.items()):
                self.peak = max(self.peak, ws.memory.process)
                self.seen.add(address)

    def __enter__(self):
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def spilled(dask_worker):
    """(bytes written to, bytes read from) this worker's spill directory so far (pickled sizes, each time)."""
    metrics = getattr(dask_worker.data, "cumulative_metrics", {})
    return tuple(sum(v for (label, unit), v in metrics.items() if label == f"disk-{way}" and unit == "bytes")
                 for way in ("write", "read"))


def part_cluster(args):
    from dask.distributed import Client, LocalCluster

    n, f = args.cluster_nodes, args.cluster_features
    rows = -(-n // args.cluster_chunks)
    x_lazy = da.random.default_rng(args.seed + 4).standard_normal((n, f), chunks=(rows, -1)).astype(np.float32)
    labels = da.random.default_rng(args.seed + 5).integers(0, args.classes, n, chunks=rows)
    mask = (da.random.default_rng(args.seed + 6).random(n, chunks=rows) < 0.1).astype(np.float32)
    print(f"LocalCluster: 2 worker processes x {args.cluster_memory}; node features {n:,} x {f} float32 = "
          f"{x_lazy.nbytes / 2**20:.0f} MiB, generated on the workers in {args.cluster_chunks} chunks, as is the "
          f"graph ({n * (args.cluster_degree + 1):,} edges)")
    params = init_params(f, args.cluster_hidden, args.classes, args.seed)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=args.cluster_memory,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        peak = PeakMemory(cluster).__enter__()
        start = time.perf_counter()
        senders, receivers, weight = client.persist(list(lazy_graph(n, args.cluster_degree, args.seed + 3,
                                                                     args.cluster_chunks)))
        n_lab = float(mask.sum().compute())
        plan_d = csd.gather_scatter_plan(senders, receivers, src_size=n, dim_size=n, src_chunks=rows,
                                         dim_chunks=-(-n // args.cluster_dst_chunks))
        loss, grads = dask_step(params, x_lazy, labels, mask, n_lab, plan_d, weight)
        got = compute_dask(loss, grads)
        elapsed = time.perf_counter() - start
        peak.__exit__()
        workers = client.scheduler_info()["workers"]
        disk = np.sum(list(client.run(spilled).values()), axis=0) / 2**20
        print(f"  completed in {elapsed:.1f} s (graph, plan, feature generation and the step), loss "
              f"{float(got[0]):.6f}; {len(workers)} workers alive, {len(peak.seen) - 2} restarts; peak worker process memory "
              f"{peak.peak / 2**20:.0f} MiB; spill directories: {disk[0]:.0f} MiB written, {disk[1]:.0f} MiB read")
        # chunk by chunk to this process: a worker would hold the chunks and their concatenation at once
        senders, receivers, weight = (np.concatenate(client.gather(client.compute(list(a.to_delayed().ravel()))))
                                      for a in (senders, receivers, weight))
    x, labels, mask = dask.compute(x_lazy, labels, mask, scheduler="threads")
    plan = cs.gather_scatter_plan(senders, receivers, src_size=n, dim_size=n)
    expected = in_memory_step(params, x, labels, mask, n_lab, plan, weight, args.threads, blas_threads=1)
    print(f"  max relative difference vs the in-memory step on the same arrays: {compare(got, expected):.1e}")


def main():
    args = parse_args()
    print(f"cyscatter {cs.__version__}, dask {dask.__version__}")
    if not args.cluster_only:
        part_gcn(args)
        part_scatter(args)
    if not args.skip_cluster:
        part_cluster(args)


if __name__ == "__main__":
    main()
