"""The GCN example's figure: training loss and test accuracy per epoch of the GCN and its baseline, with the
measured time of a training epoch of each implementation written on it."""
from __future__ import annotations

import os

from matplotlib.figure import Figure


def history_figure(gcn, baseline, title: str, seconds_per_epoch: dict[str, float] | None = None) -> Figure:
    """The two-panel figure, each panel with its legend; `seconds_per_epoch` ({implementation: seconds}), when
    given, is written in the accuracy panel, with the speed-up of the first implementation over the others.

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
    loss_ax.legend(loc="upper right")
    acc_ax.legend(loc="lower right")
    if seconds_per_epoch:
        # above the legend, where the accuracy curves (which rise early and stay high) leave the panel empty
        acc_ax.text(0.97, 0.24, timing_text(seconds_per_epoch), transform=acc_ax.transAxes, fontsize=8,
                    va="bottom", ha="right", multialignment="left", family="monospace",
                    bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85})
    fig.suptitle(title)
    return fig


def timing_text(seconds_per_epoch: dict[str, float]) -> str:
    """The measured GCN epoch times, one line per implementation, then the first one's speed-up."""
    width = max(map(len, seconds_per_epoch))
    lines = ["GCN training epoch (median):"]
    lines += [f"{name:<{width}}  {seconds * 1e3:8.2f} ms" for name, seconds in seconds_per_epoch.items()]
    (first, first_s), *others = seconds_per_epoch.items()
    lines += [f"speed-up with {first}: {other_s / first_s:.2f}x" for _, other_s in others]
    return "\n".join(lines)


def plot_history(gcn, baseline, path: str, title: str, seconds_per_epoch: dict[str, float] | None = None) -> str:
    """Write the figure of `history_figure` to `path` (format from its extension) and return the absolute path."""
    history_figure(gcn, baseline, title, seconds_per_epoch).savefig(path, dpi=120)
    return os.path.abspath(path)
