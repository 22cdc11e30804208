"""Benchmark: cyscatter.dask.scatter_scan against the in-memory cyscatter.scatter_scan, and grad.scatter_scan's
mul gradient (now built from differentiable primitives) against the core's scatter_scan_vjp, side by side.

  dask.scatter_scan (threads)   the lazy scan computed on Dask's threaded scheduler, src cut in --chunks chunks
                                along the entries (per-chunk totals, a carry chain, each chunk's scan + carry)
  cyscatter.scatter_scan        the in-memory scan, one thread (the reference of the ratio)
  grad.scatter_scan mul VJP     autograd's gradient of sum(g * scatter_scan(x, "mul")) (one forward, the VJP)
  scatter_scan + _vjp           the core's forward scan plus its scatter_scan_vjp (what the old first-order
                                primitive ran; the reference of the ratio)
Times are the best of --repeat runs; ratios are each contender's time over its reference's in the same run.
The machine may be shared and noisy: rerun and compare ratios, not absolute times.

    python benchmarks/bench_scan_dask_grad.py                       # 1e6 entries x 4 features, 1e3 groups
    python benchmarks/bench_scan_dask_grad.py --n 100000 --chunks 1 4 16 --repeat 5
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import cyscatter as cs


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=4)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--ops", nargs="+", default=["add", "mul", "max"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import autograd
    import dask.array as da

    import cyscatter.dask as csd
    import grad as csgrad
    rng = np.random.default_rng(0)
    index = rng.integers(0, args.groups, args.n)
    src = rng.uniform(0.999, 1.001, (args.n, args.features))
    print(f"n={args.n} x {args.features} float64, {args.groups} groups, best of {args.repeat}; "
          "ratio = time / reference's")
    for op in args.ops:
        base = best(lambda: cs.scatter_scan(src, index, op, dim_size=args.groups), args.repeat)
        print(f"{op:4s} cyscatter.scatter_scan              {base * 1e3:9.1f} ms   1.00")
        for nchunks in args.chunks:
            lazy = csd.scatter_scan(da.from_array(src, chunks=(-(-args.n // nchunks), -1)), index, op,
                                    dim_size=args.groups)
            assert np.allclose(lazy.compute(scheduler="threads"), cs.scatter_scan(src, index, op), rtol=1e-9)
            t = best(lambda: lazy.compute(scheduler="threads"), args.repeat)
            print(f"{op:4s} dask.scatter_scan {nchunks:4d} chunks      {t * 1e3:9.1f} ms   {t / base:.2f}")
    g = rng.normal(size=src.shape)
    gradient = autograd.grad(lambda x: (g * csgrad.scatter_scan(x, index, "mul")).sum())
    assert np.allclose(gradient(src), cs.scatter_scan_vjp("mul", g, src, index), rtol=1e-12)
    ref = best(lambda: (cs.scatter_scan(src, index, "mul"), cs.scatter_scan_vjp("mul", g, src, index)), args.repeat)
    t = best(lambda: gradient(src), args.repeat)
    print(f"mul  scatter_scan + scatter_scan_vjp     {ref * 1e3:9.1f} ms   1.00")
    print(f"mul  grad.scatter_scan VJP (autograd)    {t * 1e3:9.1f} ms   {t / ref:.2f}")


if __name__ == "__main__":
    main()
