"""The two-layer graph convolutional network of the example, its graph-less baseline, and Adam training.

Written once in ``autograd.numpy`` against a `MessagePassing` aggregation, so the same model runs on cyscatter
(one fused ``gather_scatter`` per layer through the ``grad`` package's autograd primitives, the edges grouped once
per graph in a plan) and on plain NumPy indexing/``ufunc.at`` (gather the E x F messages, then scatter them).
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import autograd.numpy as anp
import numpy as np
from autograd import value_and_grad
from autograd.extend import defjvp, defvjp, primitive
from autograd.misc.optimizers import adam
from autograd.scipy.special import logsumexp
from tqdm.auto import tqdm

from cyscatter.examples._digits_graph import Graph


class MessagePassing(NamedTuple):
    """The aggregation of a message-passing layer, taken from one library: every node combines (op `aggr`) the
    rows of `h` of its neighbours, each scaled by its edge's weight when there is one."""

    name: str
    propagate: Callable   # (h (n_nodes, F), graph, aggr, edge_weight (n_edges, 1) or None) -> (n_nodes, F)


def fused_message_passing(name: str, gather_scatter: Callable, plan_of: Callable) -> MessagePassing:
    """A `MessagePassing` from a fused ``gather_scatter(h, op=, weight=, plan=)`` and a plan made once per graph
    by ``plan_of(graph)`` (cached here, keyed by the graph object)."""
    plans = {}

    def propagate(h, graph, aggr, edge_weight=None):
        if id(graph) not in plans:
            plans[id(graph)] = (graph, plan_of(graph))   # the graph is kept alive, so its id stays its own
        return gather_scatter(h, op=aggr, weight=edge_weight, plan=plans[id(graph)][1])
    return MessagePassing(name, propagate)


def unfused_message_passing(name: str, gather: Callable, scatter: Callable) -> MessagePassing:
    """A `MessagePassing` that materialises the messages: ``scatter(gather(h, src) * weight, dst)``."""
    def propagate(h, graph, aggr, edge_weight=None):
        messages = gather(h, graph.src)
        if edge_weight is not None:
            messages = messages * edge_weight
        return scatter(messages, graph.dst, aggr, dim_size=graph.n_nodes)
    return MessagePassing(name, propagate)


def init_params(sizes: list[int], seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Glorot-uniform weights and zero biases, one (W, b) per layer, from a seeded generator."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append((rng.uniform(-limit, limit, (fan_in, fan_out)), np.zeros(fan_out)))
    return params


@primitive
def relu(x):
    """``max(x, 0)`` with derivative 1 where x > 0 and 0 elsewhere (torch's and JAX's rule). autograd's own
    ``anp.maximum(x, 0.0)`` splits the derivative at ties and builds float64 temporaries of the whole layer for
    it, a large share of a training step on a large graph."""
    return np.maximum(x, 0)


defvjp(relu, lambda ans, x: lambda g: g * (x > 0))
defjvp(relu, lambda g, ans, x: g * (x > 0))


def gcn_logits(params, graph: Graph, mp: MessagePassing, aggr: str, edge_weight=None):
    """Two layers of: gather along the edges -> linear transform -> aggregate (scatter) into the nodes.

    Each layer transforms the node rows before gathering them: ``gather(h) @ W == gather(h @ W)`` row by
    row, so every edge carries the transformed message ``W h_src`` without a matmul per edge; the optional
    `edge_weight` then scales it.
    """
    (w1, b1), (w2, b2) = params
    hidden = relu(mp.propagate(anp.dot(graph.features, w1), graph, aggr, edge_weight) + b1)
    return mp.propagate(anp.dot(hidden, w2), graph, aggr, edge_weight) + b2


def mlp_logits(params, graph: Graph):
    """The graph-less baseline: the same two layers and parameters with no message passing."""
    (w1, b1), (w2, b2) = params
    hidden = relu(anp.dot(graph.features, w1) + b1)
    return anp.dot(hidden, w2) + b2


def cross_entropy(logits, labels: np.ndarray, nodes: np.ndarray):
    """Mean softmax cross-entropy over `nodes`."""
    picked = logits[nodes]
    return anp.mean(logsumexp(picked, axis=1) - picked[np.arange(len(nodes)), labels[nodes]])


def make_loss(logits_fn: Callable, graph: Graph, labelled: np.ndarray, weight_decay: float) -> Callable:
    """loss(params, step): cross-entropy on the labelled nodes plus L2 on the weights (the biases are free).

    `step` is the optimizer's iteration counter, which autograd's optimizers pass along; the loss ignores it.
    """
    def loss(params, step=None):
        l2 = sum(anp.sum(w * w) for w, _ in params)
        return cross_entropy(logits_fn(params), graph.labels, labelled) + weight_decay * l2
    return loss


def accuracy(logits: np.ndarray, labels: np.ndarray, nodes: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits[nodes], axis=1) == labels[nodes]))


@dataclass
class History:
    """Per epoch, at the parameters that epoch starts from: the training loss and the accuracy on the unlabelled
    nodes; then the accuracy of the trained parameters."""

    loss: list[float] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    final_test_accuracy: float = float("nan")


def _recording_gradient(loss: Callable, record: list) -> Callable:
    """gradient(params, step) of `loss` for autograd's optimizers; appends each loss value to `record`."""
    loss_and_grad = value_and_grad(loss)

    def gradient(params, step):
        value, g = loss_and_grad(params, step)
        record.append(float(value))
        return g
    return gradient


def train(loss: Callable, logits_fn: Callable, params, *, epochs: int, lr: float, labels: np.ndarray,
          test_nodes: np.ndarray, desc: str, progress: bool = True):
    """Full-batch Adam (autograd's own) for `epochs` steps; returns (trained params, History)."""
    history = History()
    with tqdm(total=epochs, desc=desc, unit="epoch", disable=not progress, leave=True) as bar:
        def log(p, step, _g):
            history.test_accuracy.append(accuracy(logits_fn(p), labels, test_nodes))
            bar.set_postfix(loss=f"{history.loss[-1]:.3f}", acc=f"{history.test_accuracy[-1]:.3f}",
                            refresh=False)
            bar.update()

        params = adam(_recording_gradient(loss, history.loss), params, callback=log, num_iters=epochs,
                      step_size=lr)
    history.final_test_accuracy = accuracy(logits_fn(params), labels, test_nodes)
    return params, history


def seconds_per_epoch(losses: dict[str, Callable], params, *, lr: float, rounds: int, epochs: int):
    """Median seconds of one training step (forward, backward, Adam update) for each loss, and their loss curves.

    The candidates take turns, `epochs` steps each from the same `params`, for `rounds` rounds, so load from
    other processes falls on all of them alike; each round's steps give one sample.
    """
    samples = {name: [] for name in losses}
    curves = {}
    for _ in range(rounds):
        for name, loss in losses.items():
            curves[name] = []
            gradient = _recording_gradient(loss, curves[name])
            start = time.perf_counter()
            adam(gradient, params, num_iters=epochs, step_size=lr)
            samples[name].append((time.perf_counter() - start) / epochs)
    return {name: float(np.median(s)) for name, s in samples.items()}, curves
