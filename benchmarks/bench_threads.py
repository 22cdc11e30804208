"""Do scatters from two Python threads overlap? The kernels release the GIL, so two concurrent calls should take
about the time of one (ratio ~1 on 2 free cores), not of two (ratio ~2, as if serialised).

Each call runs its kernel on one OpenMP thread (``--num-threads 1``, the default here): a call left to its own
default already uses every core, and two of those cannot overlap on a 2-core machine however the GIL is handled.

    python benchmarks/bench_threads.py                  # scatter-add, 1M entries x 16 float64 features
    python benchmarks/bench_threads.py --op max --entries 4000000 --features 4

Each round times one call alone, then two calls started together from two threads (a barrier), then the same two
calls one after the other; the medians over the rounds are printed with the load average, since other work on
the machine takes cores away from the second thread. The "cores busy" column shows what the threads got: about
twice the single call's when both run at once, if the machine has them free. A check that does not depend on the
load follows: the longest stall of a main thread that wakes up every 0.5 ms while a scatter runs in another
thread, next to the same for a call of the same length that holds the GIL (builtin sum over a range).

Two calls share the memory bandwidth and the last-level cache whatever runs them, so "about one call" is judged
against the same two calls run at once by two forked processes (no shared GIL or allocator): threads should
match processes. Figures on a shared VM vary by +-30% from run to run; use many rounds.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cyscatter as cs  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", default="add", choices=cs.OP_NAMES)
    p.add_argument("--entries", type=int, default=1_000_000, help="index entries (src rows)")
    p.add_argument("--features", type=int, default=16, help="features per row")
    p.add_argument("--rows", type=int, default=10_000, help="destination rows")
    p.add_argument("--dtype", default="float64")
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--num-threads", type=int, default=1, help="OpenMP threads of each call (0: the default)")
    return p.parse_args(argv)


def concurrently(call, threads: int = 2) -> tuple[float, float]:
    """(wall, CPU) seconds from the moment `threads` threads are released together until the last one finished."""
    start = threading.Barrier(threads + 1)

    def worker():
        start.wait()
        call()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    for t in pool:
        t.join()
    return time.perf_counter() - t0, time.process_time() - c0


class TwoProcesses:
    """Two forked worker processes that each run `call` once per `run()`, released together by a barrier."""

    def __init__(self, call):
        ctx = multiprocessing.get_context("fork")   # the children share src's pages with the parent
        self.start, self.results = ctx.Barrier(3), ctx.Queue()
        self.pool = [ctx.Process(target=self._worker, args=(call,), daemon=True) for _ in range(2)]
        for p in self.pool:
            p.start()

    def _worker(self, call):
        while True:
            self.start.wait()
            t0, c0 = time.perf_counter(), time.process_time()
            call()
            self.results.put((t0, time.perf_counter(), time.process_time() - c0))

    def run(self) -> tuple[float, float]:
        """(wall, CPU) seconds from the first process starting its call to the last one finishing."""
        self.start.wait()
        done = [self.results.get() for _ in self.pool]
        return max(d[1] for d in done) - min(d[0] for d in done), sum(d[2] for d in done)

    def close(self):
        for p in self.pool:
            p.kill()


def longest_stall(call) -> tuple[float, float]:
    """(longest stall, duration) in seconds of a main thread that wakes every 0.5 ms while `call` runs in another.

    Each wake-up needs the GIL: a call that holds it stalls the main thread for its whole length, one that
    releases it only for a scheduler time slice (a few ms), however loaded the machine is.
    """
    worker = threading.Thread(target=call)
    t0 = last = time.perf_counter()
    worker.start()
    stall = 0.0
    while worker.is_alive():
        time.sleep(0.0005)
        now = time.perf_counter()
        stall, last = max(stall, now - last), now
    return stall, last - t0


def timed(call) -> tuple[float, float]:
    """(wall, CPU) seconds of `call`; CPU time is the process's, all threads together."""
    t0, c0 = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - t0, time.process_time() - c0


def main(argv=None):
    args = parse_args(argv)
    rng = np.random.default_rng(0)
    src = rng.standard_normal((args.entries, args.features)).astype(args.dtype)
    index = rng.integers(0, args.rows, args.entries)

    def call():
        return cs.scatter(src, index, args.op, dim_size=args.rows, num_threads=args.num_threads or None)

    call()   # warm up
    # the control: a C loop of similar length that keeps the GIL (builtin sum over a range)
    terms = int(3e6 * timed(call)[0] / timed(lambda: sum(range(3_000_000)))[0])

    def hold_gil():
        return sum(range(terms))

    processes = TwoProcesses(call)
    one, two, forked, serial, stalls, control = [], [], [], [], [], []
    for _ in range(args.rounds):
        one.append(timed(call))
        two.append(concurrently(call))
        forked.append(processes.run())
        serial.append(timed(lambda: (call(), call())))
        stalls.append(longest_stall(call))
        control.append(longest_stall(hold_gil))
    processes.close()
    (t1, c1), (t2, c2), (tp, cp), (ts, cs_) = ([statistics.median(v) for v in zip(*x)]
                                               for x in (one, two, forked, serial))
    (stall, during), (stall_c, during_c) = ([statistics.median(v) for v in zip(*x)] for x in (stalls, control))
    load = os.getloadavg()
    print(f"scatter {args.op}: {args.entries:,} entries x {args.features} {args.dtype} -> {args.rows:,} rows; "
          f"{args.num_threads or 'default'} kernel thread(s) per call; {args.rounds} rounds, medians; {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f}")
    print("| calls | wall time (ms) | vs one call | cores busy (CPU time / wall time) |")
    print("|---|---:|---:|---:|")
    print(f"| one call | {t1 * 1e3:.1f} | 1.00 | {c1 / t1:.2f} |")
    print(f"| two calls, two threads at once | {t2 * 1e3:.1f} | {t2 / t1:.2f} | {c2 / t2:.2f} |")
    print(f"| two calls, two processes at once (reference) | {tp * 1e3:.1f} | {tp / t1:.2f} | {cp / tp:.2f} |")
    print(f"| two calls, one after the other | {ts * 1e3:.1f} | {ts / t1:.2f} | {cs_ / ts:.2f} |")
    print(f"\nTwo threads at once took {t2 / tp:.2f}x the time of two processes at once.")
    print(f"\nWhile a scatter ran in another thread ({during * 1e3:.1f} ms), the main thread, waking every 0.5 ms, "
          f"stalled at most {stall * 1e3:.1f} ms; during a call that holds the GIL ({during_c * 1e3:.1f} ms) it "
          f"stalled {stall_c * 1e3:.1f} ms.")


if __name__ == "__main__":
    main()
