"""Out-of-core scatter-add with cyscatter.dask: a src larger than the workers' memory limit, generated lazily.

Runs on a dask.distributed LocalCluster whose workers each get `--worker-memory`, then puts its throughput next
to the in-memory ``cyscatter.scatter`` (and ``cyscatter.dask`` on the threaded scheduler) on a size that fits.
The big run is checked by the column sums (scatter-add keeps them) and by the workers not having restarted;
the time to generate and sum the same src on the cluster is shown, since generation is part of the big run.

    python benchmarks/bench_dask.py                       # 3 GiB of float64 src, workers limited to 512 MB
    python benchmarks/bench_dask.py --src-gib 8 --worker-memory 2GB
"""
from __future__ import annotations

import argparse
import threading
import time

import dask
import dask.array as da
import numpy as np
import psutil
from dask.distributed import Client, LocalCluster

import cyscatter
import cyscatter.dask as csd


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src-gib", type=float, default=3.0, help="size of the lazily generated float64 src")
    p.add_argument("--features", type=int, default=8, help="feature columns of src")
    p.add_argument("--dim-size", type=int, default=100_000, help="destination rows")
    p.add_argument("--chunk-mib", type=float, default=64, help="src chunk size")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-memory", default="512MB", help="memory limit of each worker")
    p.add_argument("--fit-gib", type=float, default=0.5, help="src size of the in-memory comparison")
    p.add_argument("--repeat", type=int, default=3, help="best of this many calls on the size that fits")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def lazy_problem(gib, features, dim_size, chunk_mib, seed):
    rows = int(gib * 2**30 / (8 * features))
    chunk_rows = max(1, int(chunk_mib * 2**20 / (8 * features)))
    rng = da.random.default_rng(seed)
    src = rng.random((rows, features), chunks=(chunk_rows, features))
    index = rng.integers(0, dim_size, rows, chunks=chunk_rows)
    return src, index


class PeakWorkerMemory:
    """Polls the workers' resident memory once a second while the run lasts."""

    def __init__(self, client):
        self.client, self.peak, self._stop = client, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.wait(1.0):
            rss = self.client.run(lambda: psutil.Process().memory_info().rss)
            self.peak = max(self.peak, *rss.values())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def timed(fn, repeat=1):
    """(result, best wall time of `repeat` calls)."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def row(label, rows, features, seconds, note=""):
    gbps = rows * features * 8 / seconds / 1e9
    print(f"{label:<46} {rows:>12,} {seconds:>8.2f} {rows / seconds / 1e6:>10.1f} {gbps:>7.2f}  {note}")


def main():
    args = parse_args()
    print(f"cyscatter {cyscatter.__version__}, dask {dask.__version__}; {psutil.cpu_count()} CPUs; "
          f"features={args.features}, dim_size={args.dim_size:,}, chunks of {args.chunk_mib:g} MiB")
    print(f"fitting size: best of {args.repeat}; larger than memory: one run each")
    print(f"{'run':<46} {'src rows':>12} {'seconds':>8} {'Mrows/s':>10} {'GB/s':>7}")

    # A size that fits: in-memory call, and the same arrays through cyscatter.dask on threads.
    src, index = lazy_problem(args.fit_gib, args.features, args.dim_size, args.chunk_mib, args.seed + 1)
    src_np, index_np = dask.compute(src, index, scheduler="threads")
    expected, t_mem = timed(lambda: cyscatter.scatter(src_np, index_np, "add", dim_size=args.dim_size),
                            args.repeat)
    row("in-memory cyscatter.scatter", len(src_np), args.features, t_mem)
    lazy = csd.scatter(da.from_array(src_np, chunks=src.chunks), da.from_array(index_np, chunks=index.chunks),
                       "add", dim_size=args.dim_size)
    got, t_threads = timed(lambda: lazy.compute(scheduler="threads"), args.repeat)
    err = np.max(np.abs(got - expected)) / np.max(np.abs(expected))
    row("cyscatter.dask, threads, same arrays", len(src_np), args.features, t_threads,
        f"max rel. diff vs in-memory {err:.1e}")
    del src_np, index_np, expected, got

    # Larger than the workers' memory, generated lazily on the workers.
    src, index = lazy_problem(args.src_gib, args.features, args.dim_size, args.chunk_mib, args.seed)
    print(f"\nbig src: {src.nbytes / 2**30:.2f} GiB in {src.npartitions} chunks; "
          f"{args.workers} workers x {args.worker_memory}")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.worker_memory,
                      processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        warm_up = csd.scatter(da.ones(4, chunks=2), da.zeros(4, dtype=int, chunks=2), dim_size=1)
        warm_up.compute()      # workers import cyscatter and Dask's array code before the clock starts
        before = set(client.scheduler_info()["workers"])
        with PeakWorkerMemory(client) as memory:
            column_sums, t_gen = timed(lambda: src.sum(axis=0).compute())
            out = csd.scatter(src, index, "add", dim_size=args.dim_size)
            result, t_big = timed(lambda: out.compute())
        restarted = before != set(client.scheduler_info()["workers"])
    rows = src.shape[0]
    row("dask: generate src + column sums (baseline)", rows, args.features, t_gen)
    err = np.max(np.abs(result.sum(axis=0) - column_sums) / np.abs(column_sums))
    row("dask: generate src + cyscatter.dask scatter-add", rows, args.features, t_big,
        f"column sums rel. diff {err:.1e}")
    print(f"peak worker RSS {memory.peak / 2**20:.0f} MiB (limit {args.worker_memory}); "
          f"workers restarted: {restarted}")


if __name__ == "__main__":
    main()
