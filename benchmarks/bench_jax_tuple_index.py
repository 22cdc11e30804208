"""The cost of a tuple index in cyscatter.jax under jit: ``cj.scatter(x, (i, j), dim_size=(a, b))`` (the m
coordinates stacked into one operand, unstacked as views on the host) against the same scatter on the flat index
``i * b + j`` and against JAX's own ``.at[i, j].add``; and ``axis=1`` (batch dims moved after the features and back,
two transposes) against a batch already last.

    python benchmarks/bench_jax_tuple_index.py                  # E = 1e5 and 1e6 entries, 16 features
    python benchmarks/bench_jax_tuple_index.py --sizes 1e5 --rounds 5

The contenders alternate within each round (one call of each, `reps` times), on one process; the median time per
call over rounds is reported with each contender's ratio to the flat index. float32, add, mode "drop".
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import cyscatter.jax as cj

F, A, B = 16, 300, 200


def contenders(e):
    rng = np.random.default_rng(0)
    i, j = jnp.asarray(rng.integers(0, A, e)), jnp.asarray(rng.integers(0, B, e))
    x = jnp.asarray(rng.standard_normal((e, F)).astype(np.float32))
    xb = jnp.asarray(rng.standard_normal((2, e, F)).astype(np.float32))
    xl = jnp.moveaxis(xb, 0, -1)
    flat = i * B + j
    runs = {
        "flat index": (jax.jit(lambda x, k: cj.scatter(x, k, dim_size=A * B, mode="drop").reshape(A, B, F)),
                       (x, flat)),
        "tuple index": (jax.jit(lambda x, i, j: cj.scatter(x, (i, j), dim_size=(A, B), mode="drop")), (x, i, j)),
        "jax .at[i, j]": (jax.jit(lambda x, i, j: jnp.zeros((A, B, F), x.dtype).at[i, j].add(x)), (x, i, j)),
        "batch last": (jax.jit(lambda x, k: cj.scatter(x, k, dim_size=A * B, mode="drop")), (xl, flat)),
        "axis=1": (jax.jit(lambda x, k: cj.scatter(x, k, dim_size=A * B, axis=1, mode="drop")), (xb, flat)),
    }
    ref = runs["flat index"][0](*runs["flat index"][1])
    for name in ("tuple index", "jax .at[i, j]"):
        np.testing.assert_allclose(runs[name][0](*runs[name][1]), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(jnp.moveaxis(runs["batch last"][0](*runs["batch last"][1]), -1, 0),
                               runs["axis=1"][0](*runs["axis=1"][1]), rtol=1e-5, atol=1e-5)
    return runs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1e5,1e6")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    for size in args.sizes.split(","):
        runs = contenders(int(float(size)))
        times = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, (fn, operands) in runs.items():
                start = time.perf_counter()
                for _ in range(args.reps):
                    fn(*operands).block_until_ready()
                times[name].append((time.perf_counter() - start) / args.reps)
        base = statistics.median(times["flat index"])
        print(f"E = {size}, F = {F}, destination {A} x {B}")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"  {name:15s} {med * 1e3:8.2f} ms   {med / base:5.2f}x flat")


if __name__ == "__main__":
    main()
