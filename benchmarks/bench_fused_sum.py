"""The fused gather-scatter sums (`gather_scatter` add/mean and the add VJP w.r.t. src) with each destination row
held in AVX2 registers, against the scalar row loop they replace (the same build, switched by
`kernels._tune_registers`), torch's ``index_select`` + ``index_add_`` and NumPy's ``np.add.at``, side by
side in one interleaved run.

    python benchmarks/bench_fused_sum.py                  # the digits graph of the main job and a 1e5-node graph
    python benchmarks/bench_fused_sum.py --threads 2      # the kernels on 2 threads (torch too)

Graphs: the main job's digits k-NN graph (1797 nodes, 26477 edges) and a random graph of 1e5 nodes with 10
in-edges each; float64 rows of 10, 32 and 64 features (the job's widths and a wider one), weighted per edge (add,
as Kipf & Welling's normalisation) or not (mean). Each contender's result is checked against the scalar loop's
(bitwise) or NumPy's (to rounding) first; the figure is the best of `--repeat` interleaved rounds, in
microseconds per call.
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import cyscatter as cs
from cyscatter import kernels
from cyscatter.examples import _digits_graph


def graphs(seed: int = 0):
    digits = _digits_graph.digits_graph(10)
    yield "digits", digits.n_nodes, digits.src, digits.dst
    rng = np.random.default_rng(seed)
    n = 100_000
    yield "1e5 nodes", n, rng.integers(0, n, 10 * n), np.repeat(np.arange(n), 10)


def contenders(x, src, dst, n, weight, op, threads):
    plan = cs.gather_scatter_plan(src, dst, src_size=n, dim_size=n)
    w2 = None if weight is None else weight[:, None]
    g = np.ones((n, x.shape[1]))

    def ours():
        return cs.gather_scatter(x, op=op, weight=w2, plan=plan, num_threads=threads)

    def ours_vjp():
        return cs.gather_scatter_vjp_src(op, g, x, weight=w2, plan=plan, num_threads=threads)

    def numpy_at():
        msgs = x[src] if weight is None else x[src] * w2
        out = np.zeros((n, x.shape[1]))
        np.add.at(out, dst, msgs)
        if op == "mean":
            out /= np.maximum(np.bincount(dst, minlength=n), 1)[:, None]
        return out

    found = {"cyscatter": ours, "cyscatter vjp_src": ours_vjp, "np.add.at": numpy_at}
    try:
        import torch
    except ImportError:
        return found
    torch.set_num_threads(threads)
    xt, st, dt = torch.from_numpy(x), torch.from_numpy(src), torch.from_numpy(dst)
    wt = None if weight is None else torch.from_numpy(weight)[:, None]
    counts = torch.bincount(dt, minlength=n).clamp_(min=1).to(xt.dtype)[:, None]

    def torch_index_add():
        msgs = xt.index_select(0, st)
        if wt is not None:
            msgs = msgs * wt
        out = torch.zeros((n, x.shape[1]), dtype=xt.dtype).index_add_(0, dt, msgs)
        return out / counts if op == "mean" else out

    found["torch index_add_"] = torch_index_add
    return found


def best_us(fn, repeat: int) -> float:
    fn()
    number = max(1, int(0.05 / max(1e-6, min(timeit.repeat(fn, number=1, repeat=3)))))
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="threads of the kernels (and torch's)")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds; the best is reported")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(1)
    print(f"threads {args.threads}; us per call, best of {args.repeat} interleaved rounds")
    print(f"{'graph':10s} {'F':>3s} {'op':5s} {'registers':>10s} {'scalar':>9s} {'ratio':>6s} "
          f"{'vjp reg':>9s} {'vjp scal':>9s} {'ratio':>6s} {'add.at':>9s} {'torch':>9s}")
    for name, n, src, dst in graphs():
        for width in (10, 32, 64):
            x = rng.standard_normal((n, width))
            for op, weight in (("add", rng.random(len(src))), ("mean", None)):
                fns = contenders(x, src, dst, n, weight, op, args.threads)
                results = {}
                for registers in (True, False):
                    kernels._tune_registers(registers)
                    results[registers] = (fns["cyscatter"](), fns["cyscatter vjp_src"]())
                kernels._tune_registers(True)
                for a, b in zip(results[True], results[False]):
                    assert np.array_equal(a, b), "the register sums differ from the scalar loop's"
                np.testing.assert_allclose(results[True][0], fns["np.add.at"](), rtol=1e-12, atol=1e-12)
                times: dict[str, list[float]] = {}
                for _ in range(args.repeat):
                    for registers in (True, False):
                        kernels._tune_registers(registers)
                        tag = "reg" if registers else "scalar"
                        times.setdefault(f"fwd {tag}", []).append(best_us(fns["cyscatter"], 1))
                        times.setdefault(f"vjp {tag}", []).append(best_us(fns["cyscatter vjp_src"], 1))
                    kernels._tune_registers(True)
                    for peer in ("np.add.at", "torch index_add_"):
                        if peer in fns:
                            times.setdefault(peer, []).append(best_us(fns[peer], 1))
                t = {k: min(v) for k, v in times.items()}
                print(f"{name:10s} {width:3d} {op:5s} {t['fwd reg']:10.1f} {t['fwd scalar']:9.1f} "
                      f"{t['fwd scalar'] / t['fwd reg']:6.2f} {t['vjp reg']:9.1f} {t['vjp scalar']:9.1f} "
                      f"{t['vjp scalar'] / t['vjp reg']:6.2f} {t['np.add.at']:9.1f} "
                      f"{t.get('torch index_add_', float('nan')):9.1f}", flush=True)


if __name__ == "__main__":
    main()
