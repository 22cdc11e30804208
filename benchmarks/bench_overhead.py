"""Python overhead per call: the default scatter against its `dim_size` form and ``np.add.at``, Python-level call
counts of the general paths, and the digits GCN epoch (Python-overhead bound), optionally against another
checkout of cyscatter timed in the same run.

    python benchmarks/bench_overhead.py                          # this checkout
    python benchmarks/bench_overhead.py --against /path/to/tree  # and another tree (built in place), interleaved

Each tree runs in its own subprocess (``PYTHONPATH=tree``); with ``--against`` the two take turns for
``--rounds`` rounds and each figure is the median over the rounds. Call counts are exact: the Python functions
entered during one call (``sys.setprofile`` 'call' events; C functions are not counted), all of them (NumPy's and
autograd's Python functions included), then those of cyscatter and grad alone, and how many of their modules.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ---- the measurements, run inside one tree's subprocess -----------------------------------------------------------

def _python_calls(fn) -> tuple[int, int, int]:
    """(Python functions entered, those of cyscatter and grad, distinct cyscatter/grad modules among them) during
    one call of `fn`, after a first one."""
    fn()   # once first: one-time work (imports, per-op and per-dtype caches) is not what a call costs
    calls, ours, modules = [0], [0], set()

    def profile(frame, event, arg):
        if event == "call":
            calls[0] += 1
            name = frame.f_globals.get("__name__") or ""
            if name.partition(".")[0] in ("cyscatter", "grad"):
                ours[0] += 1
                modules.add(name)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls[0] - 1, ours[0], len(modules)   # less the lambda that makes the call


def _best_us(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def measure(gcn_epochs: int) -> dict:
    import numpy as np

    import cyscatter as cs

    rng = np.random.default_rng(0)
    src = rng.standard_normal((100, 4))
    idx = rng.integers(0, 10, 100)
    idx[0] = 9   # the inferred size is 10
    src2 = rng.standard_normal((1000, 16))
    idx2 = rng.integers(0, 50, 1000)
    rows, cols = rng.integers(0, 20, 1000), rng.integers(0, 20, 1000)
    wide = np.ascontiguousarray(src2.T)
    out = {
        "default_us": _best_us(lambda: cs.scatter(src, idx, "add"), 2000),
        "dim_size_us": _best_us(lambda: cs.scatter(src, idx, "add", dim_size=10), 2000),
        "np_add_at_us": _best_us(lambda: np.add.at(np.zeros((10, 4)), idx, src), 2000),
        "calls_default": _python_calls(lambda: cs.scatter(src2, idx2, "max")),
        "calls_tuple_index": _python_calls(lambda: cs.scatter(src2[:, 0], (rows, cols), "max")),
        "calls_axis1": _python_calls(lambda: cs.scatter(wide, idx2, "max", axis=1)),
        "calls_gather": _python_calls(lambda: cs.gather(src2, (idx2,))),
    }
    try:
        import autograd

        import grad as csgrad
    except ImportError:
        return out
    x = rng.standard_normal((200, 16))
    g, s = rng.integers(0, 200, 1000), rng.integers(0, 200, 1000)

    def forward_backward():
        autograd.grad(lambda v: csgrad.gather_scatter(v, g, s, "max", dim_size=200).sum())(x)

    forward_backward()
    out["calls_grad_gather_scatter"] = _python_calls(forward_backward)
    out["gcn_epoch_ms"] = _gcn_epoch_ms(gcn_epochs)
    return out


def _gcn_epoch_ms(epochs: int) -> float:
    """Median ms of a training step of the main job's GCN (digits graph, mean aggregation, cyscatter)."""
    from functools import partial

    from threadpoolctl import threadpool_limits

    import grad as csgrad
    from cyscatter.examples import _digits_graph, _gcn_model

    graph = _digits_graph.digits_graph(10)
    labelled, _ = _digits_graph.label_split(graph, 0.05, 0)
    mp = _gcn_model.fused_message_passing("cyscatter", csgrad.gather_scatter, _digits_graph.gather_scatter_plan)
    init = _gcn_model.init_params([graph.features.shape[1], 32, graph.n_classes], 0)
    loss = _gcn_model.make_loss(partial(_gcn_model.gcn_logits, graph=graph, mp=mp, aggr="mean"), graph,
                                labelled, 5e-3)
    with threadpool_limits(limits=1, user_api="blas"):
        timing, _ = _gcn_model.seconds_per_epoch({"gcn": loss}, init, lr=0.01, rounds=3, epochs=epochs)
    return timing["gcn"] * 1e3


# ---- the driver ---------------------------------------------------------------------------------------------------

def run_tree(tree: str, gcn_epochs: int) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    code = f"import sys; sys.path.insert(0, {HERE!r}); import bench_overhead as b, json; " \
           f"print(json.dumps(b.measure({gcn_epochs})))"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="another cyscatter checkout (kernels built in place) to time alongside")
    parser.add_argument("--rounds", type=int, default=3, help="turns each tree takes")
    parser.add_argument("--gcn-epochs", type=int, default=10, help="training steps per GCN timing sample")
    args = parser.parse_args(argv)
    trees = {"this": ROOT} | ({"against": os.path.abspath(args.against)} if args.against else {})
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(run_tree(tree, args.gcn_epochs))
    keys = list(runs["this"][0])
    print(f"{'measure':28s}" + "".join(f"{name:>22s}" for name in trees))
    for key in keys:
        cells = []
        for name in trees:
            values = [r[key] for r in runs[name] if key in r]
            if not values:
                cells.append("-")
            elif isinstance(values[0], list):   # call counts: exact, the same every round
                cells.append(f"{values[0][0]} ({values[0][1]} ours, {values[0][2]} mods)")
            else:
                cells.append(f"{statistics.median(values):.2f}")
        print(f"{key:28s}" + "".join(f"{c:>22s}" for c in cells))
    if args.against:
        for key in ("default_us", "gcn_epoch_ms"):
            if key in runs["this"][0] and key in runs["against"][0]:
                ratio = statistics.median(r[key] for r in runs["against"]) / statistics.median(
                    r[key] for r in runs["this"])
                print(f"{key}: this checkout is {ratio:.2f}x faster than the other")


if __name__ == "__main__":
    main()
