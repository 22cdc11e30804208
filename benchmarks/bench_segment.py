"""Benchmark: sorted-segment (CSR) reductions against NumPy's reduceat and PyTorch's segment reductions.

Contenders per op, on the same rows and the same CSR pointer (some segments empty):
  cyscatter.segment                 CSR kernel (rows combined in order: equal to scatter bit for bit)
  cyscatter.scatter(sorted=True)    scatter with the sorted segment ids and indices_are_sorted=True
  cyscatter.scatter                 the core scatter with the same ids (no hint)
  numpy reduceat                    np.<ufunc>.reduceat(src, indptr[:-1]) (wrong on empty segments; timed anyway)
  torch.segment_reduce              PyTorch's own (offsets=indptr), if torch is installed
  torch_scatter.segment_csr         pytorch_scatter, if installed
Times are the best of --repeat runs (the run least disturbed by other processes, as timeit advises); ratios are
each contender's time over cyscatter.segment's, in one run.

    python benchmarks/bench_segment.py                 # defaults: 1e6 rows, 1e4 segments, features 1 and 16
    python benchmarks/bench_segment.py --rows 200000 --features 1 --ops sum max --repeat 5
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import cyscatter as cs

UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}
TORCH_REDUCE = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "prod": "prod"}


def _optional(name):
    try:
        return __import__(name)
    except Exception:   # not installed, or a binary built against another torch
        return None


def contenders(op, src, indptr, torch, torch_scatter):
    nseg = indptr.size - 1
    ids = cs.segment_ids(indptr)
    yield "cyscatter.segment", lambda: cs.segment(src, indptr, op)
    # segment's kernel runs on one thread: scatter is held to one too, so that the rows compare kernels
    yield "cyscatter.scatter(sorted=True)", lambda: cs.scatter(src, ids, op, dim_size=nseg, indices_are_sorted=True,
                                                               num_threads=1)
    yield "cyscatter.scatter", lambda: cs.scatter(src, ids, op, dim_size=nseg, num_threads=1)
    if op in UFUNCS:
        yield "numpy reduceat", lambda: UFUNCS[op].reduceat(src, indptr[:-1], axis=0)
    if torch is not None:
        data, offsets = torch.from_numpy(src), torch.from_numpy(indptr)
        yield "torch.segment_reduce", lambda: torch.segment_reduce(data, TORCH_REDUCE[op], offsets=offsets,
                                                                   axis=0, unsafe=True)
        if torch_scatter is not None:
            reduce = {"sum": "sum", "mean": "mean", "max": "max", "min": "min"}.get(op)
            if reduce:
                yield "torch_scatter.segment_csr", lambda: torch_scatter.segment_csr(data, offsets, reduce=reduce)


def best_time(func, repeat: int) -> float:
    func()   # warm up (and first-touch the output allocator)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--segments", type=int, default=10_000)
    parser.add_argument("--features", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--ops", nargs="+", default=["sum", "max", "mean"], choices=sorted(TORCH_REDUCE))
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="threads PyTorch may use (every cyscatter contender uses one)")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch contenders")
    args = parser.parse_args(argv)

    torch = None if args.no_torch else _optional("torch")
    torch_scatter = None if torch is None else _optional("torch_scatter")
    if torch is not None:
        torch.set_num_threads(args.torch_threads)
    print(f"numpy {np.__version__}, cyscatter {cs.__version__}, torch {getattr(torch, '__version__', 'absent')}, "
          f"torch_scatter {getattr(torch_scatter, '__version__', 'absent')}; {args.dtype}, rows={args.rows}, "
          f"segments={args.segments}, best of {args.repeat}")
    rng = np.random.default_rng(0)
    for features in args.features:
        shape = (args.rows,) if features == 1 else (args.rows, features)
        src = rng.standard_normal(shape).astype(args.dtype)
        cuts = np.sort(rng.integers(0, args.rows + 1, args.segments - 1))
        indptr = np.concatenate(([0], cuts, [args.rows])).astype(np.int64)
        print(f"\nfeatures={features} ({int(np.sum(np.diff(indptr) == 0))} empty segments)")
        print(f"{'op':6} {'contender':32} {'ms':>9} {'x segment':>10}")
        for op in args.ops:
            base = None
            for name, func in contenders(op, src, indptr, torch, torch_scatter):
                seconds = best_time(func, args.repeat)
                base = base or seconds
                print(f"{op:6} {name:32} {seconds * 1e3:9.3f} {seconds / base:10.2f}")


if __name__ == "__main__":
    main()
