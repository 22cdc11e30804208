"""Threads: the kernels release the GIL, so calls from several Python threads overlap; every result must still be
the reference's. 8 threads start together (a barrier) and each runs, many times over, one problem shared by all
threads and one of its own (a different op, dtype, axis or function)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import cyscatter as cs
from compare import assert_same
from reference import ref_gather, ref_scatter

THREADS = 8
ROUNDS = 15


def _problems():
    """(call, expected) pairs: a call makes fresh outputs, so threads never share a destination."""
    rng = np.random.default_rng(7)
    n, rows = 3000, 50
    index = rng.integers(0, rows, n)
    f64 = rng.standard_normal((2, n, 6))
    f32 = rng.standard_normal((n, 3)).astype(np.float32)
    i64 = rng.integers(-1000, 1000, (n, 4))
    table = rng.standard_normal((rows, 5))
    dst = rng.standard_normal((2, rows, 6))
    tuple_index = (index % 5, index // 5 % 10)
    problems = [
        (lambda: cs.scatter(f64, index, "add", axis=1, dim_size=rows),
         ref_scatter(f64, index, "add", axis=1, dim_size=rows)),
        (lambda: cs.scatter(f32, index, "max", dim_size=rows), ref_scatter(f32, index, "max", dim_size=rows)),
        (lambda: cs.scatter(i64, index, "min"), ref_scatter(i64, index, "min")),
        (lambda: cs.scatter(f64, index, "mean", axis=-2, fill_value=np.nan),
         ref_scatter(f64, index, "mean", axis=1, fill_value=np.nan)),
        (lambda: cs.scatter_into(dst.copy(), f64, index, "mul", axis=1),
         ref_scatter(f64, index, "mul", axis=1, dst=dst)),
        (lambda: cs.scatter(f32, tuple_index, "sub"), ref_scatter(f32, tuple_index, "sub")),
        (lambda: cs.gather(table, index), ref_gather(table, index)),
        (lambda: cs.gather_vjp_src(f64, index, (2, rows, 6), axis=1),
         ref_scatter(f64, index, "add", axis=1, dst=np.zeros((2, rows, 6)))),
    ]
    assert len(problems) == THREADS
    return problems


def test_concurrent_calls_match_the_reference():
    problems = _problems()
    start = threading.Barrier(THREADS)

    def worker(t):
        start.wait()
        results = []
        for _ in range(ROUNDS):
            results.append((0, problems[0][0]()))   # the same scatter in every thread
            results.append((t, problems[t][0]()))   # and this thread's own
        return results

    with ThreadPoolExecutor(THREADS) as pool:
        per_thread = list(pool.map(worker, range(THREADS)))
    for results in per_thread:
        assert len(results) == 2 * ROUNDS
        for which, got in results:
            assert_same(got, problems[which][1])
