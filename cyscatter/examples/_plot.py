"""The GCN example's figure: training loss and test accuracy per epoch of the GCN and its baseline."""
from __future__ import annotations

import os

from matplotlib.figure import Figure


def plot_history(gcn, baseline, path: str, title: str) -> str:
    """Write the two-panel figure to `path` (format from its extension) and return the absolute path.

    Uses a bare `Figure` (Agg rendering), never pyplot: no display, no global backend switched for the caller.
    """
    fig = Figure(figsize=(10, 4), layout="constrained")
    loss_ax, acc_ax = fig.subplots(1, 2)
    for history, label in ((gcn, "GCN"), (baseline, "graph-less baseline")):
        epochs = range(1, len(history.loss) + 1)
        loss_ax.plot(epochs, history.loss, label=label)
        acc_ax.plot(epochs, history.test_accuracy, label=label)
    loss_ax.set(xlabel="epoch", ylabel="training loss (labelled nodes)", yscale="log")
    acc_ax.set(xlabel="epoch", ylabel="accuracy on the unlabelled nodes", ylim=(0, 1))
    acc_ax.legend(loc="lower right")
    fig.suptitle(title)
    fig.savefig(path, dpi=120)
    return os.path.abspath(path)
