"""Benchmark: the assignment op scatter(..., "set") against NumPy's ``a[idx] = v`` and against scatter "add".

Contenders, on the same src, index (with duplicates) and output size, taking turns in one run:
  cyscatter set          cs.scatter(src, index, "set", dim_size=D)   (winner pass + gather)
  cyscatter first        cs.scatter(src, index, "first", dim_size=D)
  cyscatter add          cs.scatter(src, index, "add", dim_size=D)   (the existing reduction, same sizes)
  numpy a[idx] = v       out = np.zeros(...); out[index] = src       (last wins on a 1-d index)
  jax .at[].set          jnp.zeros(...).at[index].set(src), if jax is installed (CPU, after a warm-up call)
Times are the best of --repeat rounds (the round least disturbed by other processes on a shared machine);
ratios are each contender's time over "cyscatter set"'s, from the same run.

    python benchmarks/bench_assign.py                          # n = 1e6 entries, D = 1e5 rows, features 1, 16
    python benchmarks/bench_assign.py --n 200000 --rows 1000 --features 1 --repeat 5 --threads 1
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import cyscatter as cs


def contenders(src, index, rows, threads, jnp):
    shape = (rows,) + src.shape[1:]
    yield "cyscatter set", lambda: cs.scatter(src, index, "set", dim_size=rows, num_threads=threads)
    yield "cyscatter first", lambda: cs.scatter(src, index, "first", dim_size=rows, num_threads=threads)
    yield "cyscatter add", lambda: cs.scatter(src, index, "add", dim_size=rows, num_threads=threads)

    def numpy_set():
        out = np.zeros(shape, src.dtype)
        out[index] = src
        return out
    yield "numpy a[idx] = v", numpy_set
    if jnp is not None:
        jsrc, jindex = jnp.asarray(src), jnp.asarray(index)
        yield "jax .at[].set", lambda: jnp.zeros(shape, jsrc.dtype).at[jindex].set(jsrc).block_until_ready()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="index entries")
    parser.add_argument("--rows", type=int, default=100_000, help="destination rows D")
    parser.add_argument("--features", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="cyscatter threads (default: the default)")
    parser.add_argument("--no-jax", action="store_true")
    args = parser.parse_args(argv)
    jnp = None
    if not args.no_jax:
        try:
            import jax
            jax.config.update("jax_enable_x64", True)   # float64, as the others
            import jax.numpy as jnp
        except Exception:
            jnp = None
    rng = np.random.default_rng(0)
    index = rng.integers(0, args.rows, args.n)
    print(f"n = {args.n}, D = {args.rows}, float64, threads = {args.threads or 'default'}; best of {args.repeat}")
    for f in args.features:
        src = rng.standard_normal((args.n, f) if f > 1 else args.n)
        cands = list(contenders(src, index, args.rows, args.threads, jnp))
        reference = cands[3][1]()
        for name, fn in cands:   # every result checked first (add excepted: another op)
            if name != "cyscatter add" and name != "cyscatter first":
                np.testing.assert_array_equal(np.asarray(fn()), reference, err_msg=name)
        best = {name: float("inf") for name, _ in cands}
        for _ in range(args.repeat):   # contenders take turns, so a disturbance hits all alike
            for name, fn in cands:
                t0 = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - t0)
        base = best["cyscatter set"]
        print(f"features = {f}")
        for name, t in best.items():
            print(f"  {name:20s} {t * 1e3:9.3f} ms   {t / base:6.2f}x set's time")


if __name__ == "__main__":
    main()
