"""Semi-supervised node classification with a graph convolutional network, trained through cyscatter.

Run ``python -m cyscatter.examples.gcn`` (``--help`` lists the options). It builds the k-nearest-neighbour
graph of scikit-learn's bundled handwritten digits (1,797 images, no download), hides all labels but a small
class-stratified fraction, and trains with HIPS autograd:

- a 2-layer GCN whose message passing is cyscatter's fused ``gather_scatter`` (mean, max or add over the
  neighbours, one pass over the edges with no E x F message matrix, the edges grouped once in a plan),
  differentiated through the ``grad`` package;
- the same network without message passing (a graph-less MLP) on the same labels, as the baseline;

then reports the accuracy of both on the unlabelled nodes, times the GCN's training epoch with cyscatter and
with the same model on NumPy fancy indexing / ``ufunc.at``, and writes a plot of loss and accuracy per epoch.
The label split and the initial weights derive from ``--seed``, so a run is reproducible.
"""
from __future__ import annotations

import argparse
import math
import os
from functools import partial
from pathlib import Path

AGGREGATIONS = ("mean", "max", "add")
EXTRA_HINT = 'this example needs the "examples" extra: pip install "cyscatter[examples]"'


def _bounded(kind, low, high=None, *, low_open=False):
    """argparse type: a `kind` value in [low, high], (low, high] when `low_open`; `high` None: no upper bound."""
    def parse(text):
        value = kind(text)
        # NaN compares False with every bound, and inf lies outside "(low, inf)": both refused here
        if (not math.isfinite(value) or (value <= low if low_open else value < low)
                or (high is not None and value > high)):
            interval = f"{'(' if low_open else '['}{low}, {'inf)' if high is None else f'{high}]'}"
            raise argparse.ArgumentTypeError(f"must be in {interval}, got {text}")
        return value
    parse.__name__ = kind.__name__   # argparse names the type in its "invalid int value" message
    return parse


def _plot_path(text):
    """argparse type of --out: a file path in an existing, writable folder (checked before hours of training,
    not when the plot is written at the end)."""
    path = Path(text).expanduser()
    folder = path.parent
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file path such as {path / 'gcn.png'}")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} of {text} does not exist")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} of {text} is not writable")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cyscatter.examples.gcn",
        description="Train a 2-layer graph convolutional network on the k-nearest-neighbour graph of "
                    "scikit-learn's handwritten digits with a few labels, through cyscatter's differentiable "
                    "scatter/gather; compare with the graph-less baseline and time cyscatter against NumPy.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--aggr", choices=AGGREGATIONS, default="mean",
                        help="how a node combines its neighbours' messages: the scatter op (add scales each "
                             "message by 1/sqrt(deg(src) deg(dst)) first, as Kipf & Welling's GCN)")
    parser.add_argument("--k", type=_bounded(int, 1, 100), default=10,
                        help="neighbours per image in the k-nearest-neighbour graph (made undirected)")
    parser.add_argument("--label-fraction", type=_bounded(float, 0.0, 0.99, low_open=True), default=0.05,
                        help="fraction of the nodes whose label the training sees (class-stratified)")
    parser.add_argument("--epochs", type=_bounded(int, 1), default=100, help="full-batch Adam steps")
    parser.add_argument("--hidden", type=_bounded(int, 1), default=32, help="width of the hidden layer")
    parser.add_argument("--lr", type=_bounded(float, 0.0, low_open=True), default=0.01, help="Adam step size")
    parser.add_argument("--weight-decay", type=_bounded(float, 0.0), default=5e-3,
                        help="L2 penalty on the weights")
    parser.add_argument("--seed", type=int, default=0, help="seed of the label split and the initial weights")
    parser.add_argument("--timing-rounds", type=_bounded(int, 1), default=5,
                        help="rounds of the cyscatter vs NumPy timing (each times --timing-epochs steps of each)")
    parser.add_argument("--timing-epochs", type=_bounded(int, 1), default=5,
                        help="training steps per implementation and round of the timing")
    parser.add_argument("--out", type=_plot_path, default="gcn_digits.png", help="path of the plot (PNG) written at the end")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return parser


def main(argv=None):
    """Run the example with command-line arguments `argv` (default ``sys.argv[1:]``) and print its report.

    Returns
    -------
    dict
        ``gcn``, ``baseline``: their training `History` (loss and test accuracy per epoch, final accuracy);
        ``seconds_per_epoch``: {implementation: median seconds of a GCN training step}; ``loss_curves``:
        {implementation: losses of its timed steps}; ``plot``: absolute path of the plot; ``args``: the options.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits

        import grad as csgrad
        from cyscatter.examples import _digits_graph, _gcn_model, _numpy_scatter, _plot
    except ImportError as exc:
        raise SystemExit(f"{exc}\n{EXTRA_HINT}") from exc

    graph = _digits_graph.digits_graph(args.k)
    try:
        labelled, unlabelled = _digits_graph.label_split(graph, args.label_fraction, args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"digits k-NN graph: {graph.n_nodes} nodes, {graph.n_edges} edges with self-loops (k={args.k}); "
          f"{len(labelled)} labelled nodes ({len(labelled) / graph.n_nodes:.1%}); aggregation: {args.aggr}",
          flush=True)   # before the progress bars, which write to stderr
    implementations = (
        _gcn_model.fused_message_passing("cyscatter", csgrad.gather_scatter, _digits_graph.gather_scatter_plan),
        _gcn_model.unfused_message_passing("NumPy fancy indexing + ufunc.at", _numpy_scatter.numpy_gather,
                                           _numpy_scatter.numpy_scatter))
    init = _gcn_model.init_params([graph.features.shape[1], args.hidden, graph.n_classes], args.seed)
    # a plain sum grows with the degree (11 to 36 with k=10), which makes training unstable
    edge_weight = _digits_graph.symmetric_normalization(graph) if args.aggr == "add" else None
    gcn_on = {mp.name: partial(_gcn_model.gcn_logits, graph=graph, mp=mp, aggr=args.aggr,
                               edge_weight=edge_weight) for mp in implementations}
    baseline = partial(_gcn_model.mlp_logits, graph=graph)

    def loss_of(logits_fn):
        return _gcn_model.make_loss(logits_fn, graph, labelled, args.weight_decay)

    fit = {"epochs": args.epochs, "lr": args.lr, "labels": graph.labels, "test_nodes": unlabelled,
           "progress": not args.no_progress}
    # the matrices are small: BLAS threads would only fight the kernels (and other processes) for the cores
    with threadpool_limits(limits=1, user_api="blas"):
        ours = gcn_on["cyscatter"]
        _, gcn = _gcn_model.train(loss_of(ours), ours, init, desc=f"GCN ({args.aggr}, cyscatter)", **fit)
        _, mlp = _gcn_model.train(loss_of(baseline), baseline, init, desc="graph-less baseline", **fit)
        timing, curves = _gcn_model.seconds_per_epoch(
            {name: loss_of(logits) for name, logits in gcn_on.items()}, init, lr=args.lr,
            rounds=args.timing_rounds, epochs=args.timing_epochs)
    plot = _plot.plot_history(gcn, mlp, args.out, title=f"GCN ({args.aggr}) vs graph-less baseline, digits "
                              f"k-NN graph (k={args.k}), {len(labelled)} labels", seconds_per_epoch=timing)
    results = {"gcn": gcn, "baseline": mlp, "seconds_per_epoch": timing, "loss_curves": curves, "plot": plot,
               "args": args}
    _report(results, n_test=len(unlabelled))
    return results


def _report(results: dict, n_test: int) -> None:
    args, timing, curves = results["args"], results["seconds_per_epoch"], results["loss_curves"]
    (ours, ours_s), (theirs, theirs_s) = timing.items()
    gaps = [abs(a - b) for a, b in zip(*curves.values())]
    if not all(math.isfinite(gap) for gap in gaps):   # NaN would pass any "differ by at most" comparison
        raise SystemExit(f"the training diverged: the losses are not all finite ({curves}); try a smaller --lr")
    agree = max(gaps)
    rows = [
        f"accuracy on the {n_test} unlabelled nodes after {args.epochs} epochs:",
        (f"GCN ({args.aggr} aggregation)", f"{results['gcn'].final_test_accuracy:.1%}"),
        ("graph-less baseline (no message passing)", f"{results['baseline'].final_test_accuracy:.1%}"),
        (f"GCN time per training epoch (forward, backward, Adam step; median of {args.timing_rounds} rounds "
         f"of {args.timing_epochs} epochs each):"),
        (ours, f"{ours_s * 1e3:.2f} ms"),
        (theirs, f"{theirs_s * 1e3:.2f} ms"),
        ("speed-up with cyscatter", f"{theirs_s / ours_s:.2f}x"),
        f"(the losses of the two implementations differ by at most {agree:.1e})",
        f"plot of loss and accuracy per epoch: {results['plot']}",
    ]
    for row in rows:
        print(row if isinstance(row, str) else f"  {row[0]:<42}{row[1]:>10}")


if __name__ == "__main__":
    main()
