"""Data of the GCN example: scikit-learn's bundled handwritten digits as a k-nearest-neighbour graph.

The 1,797 8x8 images ship inside scikit-learn, so nothing is downloaded.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neighbors import kneighbors_graph


@dataclass(frozen=True)
class Graph:
    """Node features and labels, and the edges as two index arrays: edge e carries a message src[e] -> dst[e]."""

    features: np.ndarray   # (n_nodes, 64) float64 pixel intensities in [0, 1]
    labels: np.ndarray     # (n_nodes,) int class 0..9
    src: np.ndarray        # (n_edges,) intp
    dst: np.ndarray        # (n_edges,) intp, sorted
    n_classes: int

    @property
    def n_nodes(self) -> int:
        return len(self.labels)

    @property
    def n_edges(self) -> int:
        return len(self.src)


def digits_graph(k: int) -> Graph:
    """The digits with an edge between two images when either is among the other's `k` nearest (Euclidean).

    Every node also gets a self-loop, so its own features take part in its aggregation (and no node has an
    empty neighbourhood, whatever the aggregation).
    """
    digits = load_digits()
    features = digits.data / 16.0
    directed = kneighbors_graph(features, n_neighbors=k, include_self=False)
    adjacency = (directed.maximum(directed.T) + scipy.sparse.identity(len(features), format="csr")).tocoo()
    # COO of a CSR matrix is row-major, so dst comes sorted: the scatter then writes each output row once
    return Graph(features=features, labels=digits.target, src=adjacency.col.astype(np.intp),
                 dst=adjacency.row.astype(np.intp), n_classes=len(digits.target_names))


def label_split(graph: Graph, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(labelled, unlabelled) node ids: a class-stratified random `fraction` of the nodes keeps its label.

    Raises
    ------
    ValueError
        When `fraction` leaves fewer labelled nodes than classes, or no unlabelled node.
    """
    n_labelled = round(fraction * graph.n_nodes)
    if not graph.n_classes <= n_labelled < graph.n_nodes:
        raise ValueError(f"label fraction {fraction} gives {n_labelled} labelled nodes of {graph.n_nodes}; "
                         f"need at least one per class ({graph.n_classes}) and at least one unlabelled node")
    labelled, unlabelled = train_test_split(np.arange(graph.n_nodes), train_size=n_labelled,
                                            stratify=graph.labels, random_state=seed)
    return np.sort(labelled), np.sort(unlabelled)


def symmetric_normalization(graph: Graph) -> np.ndarray:
    """Per-edge factor 1 / sqrt(deg(src) deg(dst)), shape (n_edges, 1) (Kipf & Welling's GCN normalization).

    Scaling the messages by it keeps a sum over a node's neighbours on the scale of a mean, however many
    neighbours the node has (degrees count the self-loop).
    """
    degree = np.bincount(graph.dst, minlength=graph.n_nodes).astype(np.float64)
    return (1.0 / np.sqrt(degree[graph.src] * degree[graph.dst]))[:, None]


def gather_scatter_plan(graph: Graph):
    """The graph's edges (source -> destination node) grouped once for `cyscatter.gather_scatter`."""
    import cyscatter as cs
    return cs.gather_scatter_plan(graph.src, graph.dst, src_size=graph.n_nodes, dim_size=graph.n_nodes)
