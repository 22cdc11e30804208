"""The graphs and the contenders of the GCN benchmark (`bench_gcn.py`): one 2-layer GCN, five implementations.

Every contender trains the same model from the same initial weights on the same data:

    logits = propagate(relu(propagate(X @ W1) + b1) @ W2) + b2
    loss   = mean softmax cross-entropy on a fixed labelled subset + weight_decay * (|W1|^2 + |W2|^2)

with ``propagate`` the aggregation of each node's in-neighbours (add with the Kipf-Welling weight
1 / sqrt(deg(src) deg(dst)) per edge, mean or max; every node has a self-loop), and one Adam step (lr 0.01,
betas 0.9 / 0.999, eps 1e-8, the bias-corrected form of autograd's and torch's Adam) per epoch.

A contender is built by ``build(graph, aggr, threads)`` and offers ``reset()`` (back to the initial weights and a
fresh Adam state) and ``step(with_grads=False)``: one training step, returning the loss (a Python float, so the
step has finished) and, when asked, the gradients at the weights the step started from, as NumPy arrays in the
order W1, b1, W2, b2. Imports of optional libraries happen in the builders, after the worker has fixed threads.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import numpy as np

LR, BETA1, BETA2, EPS = 0.01, 0.9, 0.999, 1e-8
WEIGHT_DECAY = 5e-3      # the example's default
LABEL_FRACTION = 0.05    # the example's default
SEED = 0


# ---- graphs --------------------------------------------------------------------------------------------------------

@dataclass
class BenchGraph:
    """The example's `Graph` (features, labels, src, dst sorted, n_classes) plus what the model needs."""

    name: str
    graph: object            # cyscatter.examples._digits_graph.Graph, features already in the benchmark dtype
    labelled: np.ndarray     # sorted node ids whose label the loss sees
    hidden: int
    init: list               # [(W1, b1), (W2, b2)] in the benchmark dtype
    counts: np.ndarray       # in-degree of every node (self-loop included), as the dtype

    @property
    def n_nodes(self) -> int:
        return self.graph.n_nodes

    @property
    def n_edges(self) -> int:
        return self.graph.n_edges

    def edge_weight(self, aggr: str):
        """(n_edges,) Kipf-Welling weights for add (the example's `symmetric_normalization`); None otherwise."""
        if aggr != "add":
            return None
        from cyscatter.examples._digits_graph import symmetric_normalization
        return symmetric_normalization(self.graph)[:, 0].astype(self.graph.features.dtype)


GRAPH_NAMES = ("digits", "1e4", "1e5", "1e6")


def make_graph(name: str, dtype) -> BenchGraph:
    """The example's digits graph (k=10, hidden 32 as the example), or a seeded random graph of `name` nodes:
    10 uniformly random in-edges per node on average plus a self-loop, 64 features, 16 classes, hidden 64."""
    from cyscatter.examples import _digits_graph, _gcn_model
    dtype = np.dtype(dtype)
    if name == "digits":
        # scikit-learn's k-NN search breaks distance ties (duplicate images) differently with more threads:
        # one thread, so every worker process gets the same graph
        from threadpoolctl import threadpool_limits
        with threadpool_limits(1):
            g = _digits_graph.digits_graph(10)
        g = _digits_graph.Graph(features=g.features.astype(dtype), labels=g.labels, src=g.src, dst=g.dst,
                                n_classes=g.n_classes)
        labelled, _ = _digits_graph.label_split(g, LABEL_FRACTION, SEED)
        hidden = 32
    else:
        n = int(float(name))
        rng = np.random.default_rng(SEED)
        src = np.concatenate([rng.integers(0, n, 10 * n), np.arange(n)])
        dst = np.concatenate([rng.integers(0, n, 10 * n), np.arange(n)])
        order = np.argsort(dst * n + src, kind="stable")   # by destination, then source: CSR order
        src, dst = src[order].astype(np.intp), dst[order].astype(np.intp)
        features = rng.standard_normal((n, 64), dtype=np.float32).astype(dtype)
        n_classes = 16
        labels = np.argmax(features @ rng.standard_normal((64, n_classes)).astype(dtype), axis=1)
        g = _digits_graph.Graph(features=features, labels=labels, src=src, dst=dst, n_classes=n_classes)
        labelled = np.sort(rng.choice(n, round(LABEL_FRACTION * n), replace=False))
        hidden = 64
    init = [(w.astype(dtype), b.astype(dtype))
            for w, b in _gcn_model.init_params([g.features.shape[1], hidden, g.n_classes], SEED)]
    counts = np.bincount(g.dst, minlength=g.n_nodes).astype(dtype)
    return BenchGraph(name, g, labelled, hidden, init, counts)


def flat(params):
    return [a for layer in params for a in layer]


# ---- NumPy Adam (cyscatter and scipy) ------------------------------------------------------------------------------

class NumpyAdam:
    """Adam on a list of arrays, updated in place array by array (no flattening into one vector)."""

    def __init__(self, arrays):
        self.m = [np.zeros_like(a) for a in arrays]
        self.v = [np.zeros_like(a) for a in arrays]
        self.t = 0

    def update(self, arrays, grads):
        self.t += 1
        step = LR / (1 - BETA1 ** self.t)
        scale = 1 / np.sqrt(1 - BETA2 ** self.t)
        for p, g, m, v in zip(arrays, grads, self.m, self.v):
            m *= BETA1
            m += (1 - BETA1) * g
            v *= BETA2
            v += (1 - BETA2) * (g * g)
            denom = np.sqrt(v)
            denom *= scale
            denom += EPS
            p -= step * (m / denom)


# ---- cyscatter + autograd ------------------------------------------------------------------------------------------

def cyscatter_plan(bg: BenchGraph):
    """The per-graph plan of the fused op: the edges grouped once, outside the timed steps."""
    from cyscatter.examples._digits_graph import gather_scatter_plan
    return gather_scatter_plan(bg.graph)


class CyscatterGCN:
    """The example's own model (`gcn_logits`, `make_loss`, `init_params`) differentiated by autograd, with the
    example's message passing ``csgrad.gather_scatter(h, op=aggr, weight=w, plan=plan)`` (gather, edge weight and
    scatter in one pass; the plan, built once per graph by the benchmark, holds the edges)."""

    def __init__(self, bg: BenchGraph, aggr: str, plan=None):
        from autograd import value_and_grad

        import grad as csgrad
        from cyscatter.examples import _gcn_model
        weight = bg.edge_weight(aggr)
        weight = None if weight is None else weight[:, None]   # (n_edges, 1), as the example passes it
        plan = cyscatter_plan(bg) if plan is None else plan
        mp = _gcn_model.fused_message_passing("cyscatter", csgrad.gather_scatter, lambda _graph: plan)
        logits = partial(_gcn_model.gcn_logits, graph=bg.graph, mp=mp, aggr=aggr, edge_weight=weight)
        self.path = "csgrad.gather_scatter (fused, plan built once per graph)"
        self.loss_and_grad = value_and_grad(_gcn_model.make_loss(logits, bg.graph, bg.labelled, WEIGHT_DECAY))
        self.init = bg.init

    def reset(self):
        self.params = [(w.copy(), b.copy()) for w, b in self.init]
        self.adam = NumpyAdam(flat(self.params))

    def step(self, with_grads=False):
        loss, grads = self.loss_and_grad(self.params)
        grads = flat(grads)
        copies = [g.copy() for g in grads] if with_grads else None
        self.adam.update(flat(self.params), grads)
        return float(loss), copies


# ---- scipy.sparse CSR @ dense, backward by hand ---------------------------------------------------------------------

def aggregation_matrix(bg: BenchGraph, aggr: str):
    """CSR (n, n) with A[dst, src] = edge weight (add) or 1 / in-degree (mean); duplicate edges summed."""
    import scipy.sparse
    g = bg.graph
    values = bg.edge_weight(aggr) if aggr == "add" else (1 / bg.counts)[g.dst]
    return scipy.sparse.csr_matrix((values, (g.dst, g.src)), shape=(g.n_nodes, g.n_nodes))


class ScipyGCN:
    """Forward with ``A @ H`` (CSR), backward written out with ``A.T @ G`` (the transpose kept as CSR too)."""

    def __init__(self, bg: BenchGraph, aggr: str):
        if aggr not in ("add", "mean"):
            raise NotImplementedError("max aggregation is not a sparse-dense product")
        self.a = aggregation_matrix(bg, aggr)
        self.at = self.a.T.tocsr()
        g = bg.graph
        self.x, self.init, self.nodes = g.features, bg.init, bg.labelled
        self.labels = g.labels[bg.labelled]
        self.onehot = np.zeros((len(self.nodes), g.n_classes), g.features.dtype)
        self.onehot[np.arange(len(self.nodes)), self.labels] = 1

    def reset(self):
        self.arrays = [a.copy() for layer in self.init for a in layer]
        self.adam = NumpyAdam(self.arrays)

    def loss_and_grads(self):
        w1, b1, w2, b2 = self.arrays
        pre = self.a @ (self.x @ w1)
        pre += b1
        hidden = np.maximum(pre, 0)
        logits = self.a @ (hidden @ w2)
        logits += b2
        picked = logits[self.nodes]
        shifted = picked - picked.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        total = e.sum(axis=1, keepdims=True)
        ce = np.mean(np.log(total[:, 0]) - shifted[np.arange(len(self.nodes)), self.labels])
        loss = ce + WEIGHT_DECAY * (np.sum(w1 * w1) + np.sum(w2 * w2))
        d_logits = np.zeros_like(logits)
        d_logits[self.nodes] = (e / total - self.onehot) / len(self.nodes)
        d_b2 = d_logits.sum(axis=0)
        d_z2 = self.at @ d_logits
        d_w2 = hidden.T @ d_z2 + (2 * WEIGHT_DECAY) * w2
        d_pre = d_z2 @ w2.T
        d_pre *= pre > 0
        d_b1 = d_pre.sum(axis=0)
        d_w1 = self.x.T @ (self.at @ d_pre) + (2 * WEIGHT_DECAY) * w1
        return loss, [d_w1, d_b1, d_w2, d_b2]

    def step(self, with_grads=False):
        loss, grads = self.loss_and_grads()
        copies = [g.copy() for g in grads] if with_grads else None
        self.adam.update(self.arrays, grads)
        return float(loss), copies


# ---- torch eager and PyG -------------------------------------------------------------------------------------------

class TorchGCN:
    """torch eager: ``index_select`` along the edges, then ``index_add_`` (add; mean divides by the in-degree)
    or ``scatter_reduce(amax)`` (max); torch.optim.Adam. `pyg`: PyG's `MessagePassing` does the propagation."""

    def __init__(self, bg: BenchGraph, aggr: str, pyg: bool = False):
        import torch
        import torch.nn.functional as F
        self.torch, self.F = torch, F
        g = bg.graph
        self.x = torch.from_numpy(g.features)
        self.src, self.dst = torch.from_numpy(g.src.astype(np.int64)), torch.from_numpy(g.dst.astype(np.int64))
        w = bg.edge_weight(aggr)
        self.w = None if w is None else torch.from_numpy(w)[:, None]
        self.counts = torch.from_numpy(bg.counts)[:, None]
        self.nodes = torch.from_numpy(bg.labelled.astype(np.int64))
        self.labels = torch.from_numpy(g.labels[bg.labelled].astype(np.int64))
        self.n, self.aggr, self.init = g.n_nodes, aggr, bg.init
        if pyg:
            self.propagate = _pyg_propagation(aggr, torch.stack([self.src, self.dst]), self.w)

    def propagate(self, h):
        m = h.index_select(0, self.src)
        if self.w is not None:
            m = m * self.w
        if self.aggr == "max":
            index = self.dst[:, None].expand(-1, h.shape[1])
            return h.new_zeros((self.n, h.shape[1])).scatter_reduce(0, index, m, "amax", include_self=False)
        out = h.new_zeros((self.n, h.shape[1])).index_add_(0, self.dst, m)
        return out / self.counts if self.aggr == "mean" else out

    def reset(self):
        torch = self.torch
        self.params = [torch.tensor(a, requires_grad=True) for layer in self.init for a in layer]
        self.opt = torch.optim.Adam(self.params, lr=LR, betas=(BETA1, BETA2), eps=EPS)

    def step(self, with_grads=False):
        w1, b1, w2, b2 = self.params
        self.opt.zero_grad(set_to_none=True)
        hidden = self.torch.relu(self.propagate(self.x @ w1) + b1)
        logits = self.propagate(hidden @ w2) + b2
        loss = self.F.cross_entropy(logits[self.nodes], self.labels) + WEIGHT_DECAY * (
            w1.square().sum() + w2.square().sum())
        loss.backward()
        grads = [p.grad.numpy().copy() for p in self.params] if with_grads else None
        self.opt.step()
        return loss.item(), grads


def _pyg_propagation(aggr: str, edge_index, weight):
    from torch_geometric.nn import MessagePassing

    class Propagate(MessagePassing):
        def __init__(self):
            super().__init__(aggr=aggr, flow="source_to_target")

        def forward(self, x):
            return self.propagate(edge_index, x=x, edge_weight=weight)

        def message(self, x_j, edge_weight):
            return x_j if edge_weight is None else x_j * edge_weight

    return Propagate()


# ---- JAX, the whole step under jit ---------------------------------------------------------------------------------

def jax_data(bg: BenchGraph, aggr: str) -> dict:
    """The step's inputs as JAX arrays: features, int32 edges, in-degrees, labelled nodes, labels, edge weights."""
    import jax.numpy as jnp
    g = bg.graph
    data = {"x": jnp.asarray(g.features), "src": jnp.asarray(g.src.astype(np.int32)),
            "dst": jnp.asarray(g.dst.astype(np.int32)), "counts": jnp.asarray(bg.counts[:, None]),
            "nodes": jnp.asarray(bg.labelled.astype(np.int32)),
            "labels": jnp.asarray(g.labels[bg.labelled].astype(np.int32))}
    w = bg.edge_weight(aggr)
    if w is not None:
        data["w"] = jnp.asarray(w[:, None])
    return data


def jax_native_propagation(bg: BenchGraph, aggr: str):
    """``propagate(h, data)``: ``h[src]`` (times the edge weight), then ``jax.ops.segment_sum`` (mean: divided by
    the in-degree) or ``segment_max``, with ``indices_are_sorted=True``."""
    import jax
    n = bg.n_nodes

    def propagate(h, d):
        m = jax.numpy.take(h, d["src"], axis=0)
        if "w" in d:
            m = m * d["w"]
        if aggr == "max":
            return jax.ops.segment_max(m, d["dst"], num_segments=n, indices_are_sorted=True)
        out = jax.ops.segment_sum(m, d["dst"], num_segments=n, indices_are_sorted=True)
        return out / d["counts"] if aggr == "mean" else out
    return propagate


def jax_train_step(propagate):
    """``jit(step)(params, m, v, t, data) -> (params, m, v, t, loss, grads)``: the 2-layer model over `propagate`,
    value_and_grad and the same Adam as the other contenders, all in one ``jax.jit``."""
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    def loss(params, d):
        w1, b1, w2, b2 = params
        hidden = jax.nn.relu(propagate(d["x"] @ w1, d) + b1)
        picked = (propagate(hidden @ w2, d) + b2)[d["nodes"]]
        ce = jnp.mean(logsumexp(picked, axis=1) - jnp.take_along_axis(picked, d["labels"][:, None], 1)[:, 0])
        return ce + WEIGHT_DECAY * (jnp.sum(w1 * w1) + jnp.sum(w2 * w2))

    def step(params, m, v, t, d):
        value, grads = jax.value_and_grad(loss)(params, d)
        t = t + 1
        m = [BETA1 * a + (1 - BETA1) * g for a, g in zip(m, grads)]
        v = [BETA2 * a + (1 - BETA2) * g * g for a, g in zip(v, grads)]
        c1, c2 = 1 - BETA1 ** t, 1 - BETA2 ** t
        params = [p - LR * (a / c1) / (jnp.sqrt(b / c2) + EPS) for p, a, b in zip(params, m, v)]
        return params, m, v, t, value, grads

    return jax.jit(step)


class JaxGCN:
    """The JAX contender: `jax_native_propagation` inside `jax_train_step`."""

    def __init__(self, bg: BenchGraph, aggr: str):
        import jax
        self.jax = jax
        self.data = jax_data(bg, aggr)
        self.init = bg.init
        self.jit_step = jax_train_step(jax_native_propagation(bg, aggr))

    def reset(self):
        jnp = self.jax.numpy
        self.params = [jnp.asarray(a) for layer in self.init for a in layer]
        self.m = [jnp.zeros_like(p) for p in self.params]
        self.v = [jnp.zeros_like(p) for p in self.params]
        self.t = jnp.asarray(0, jnp.int32)

    def step(self, with_grads=False):
        self.params, self.m, self.v, self.t, value, grads = self.jit_step(self.params, self.m, self.v, self.t,
                                                                          self.data)
        value = float(value)   # waits for the step
        return value, ([np.asarray(g) for g in grads] if with_grads else None)


# ---- registry ------------------------------------------------------------------------------------------------------

CONTENDERS = ("cyscatter", "torch", "PyG", "JAX", "scipy")
LABELS = {"cyscatter": "cyscatter + autograd", "torch": "torch eager", "PyG": "PyG MessagePassing",
          "JAX": "JAX jit", "scipy": "scipy CSR @ dense (hand-written backward)"}
MODULES = {"cyscatter": "grad", "torch": "torch", "PyG": "torch_geometric", "JAX": "jax", "scipy": "scipy"}


def build(name: str, bg: BenchGraph, aggr: str, plan=None):
    """(contender, seconds of its per-graph setup); raises NotImplementedError where it cannot express `aggr`."""
    t0 = time.perf_counter()
    if name == "cyscatter":
        c = CyscatterGCN(bg, aggr, plan)
    elif name == "torch":
        c = TorchGCN(bg, aggr)
    elif name == "PyG":
        c = TorchGCN(bg, aggr, pyg=True)
    elif name == "JAX":
        c = JaxGCN(bg, aggr)
    elif name == "scipy":
        c = ScipyGCN(bg, aggr)
    else:
        raise KeyError(name)
    return c, time.perf_counter() - t0


# ---- the aggregation op alone (forward) ----------------------------------------------------------------------------

def aggregation_ops(bg: BenchGraph, aggr: str, x: np.ndarray, plan=None) -> dict:
    """{name: call()} computing ``aggregate(x)`` over the graph's edges, each returning a NumPy array."""
    import cyscatter as cs
    g = bg.graph
    n = g.n_nodes
    w = bg.edge_weight(aggr)
    ops = {}
    if plan is not None:
        ops["cyscatter gather_scatter (plan)"] = lambda: cs.gather_scatter(x, op=aggr, weight=w, plan=plan)
    if w is None:
        ops["cyscatter scatter(gather) (unfused)"] = lambda: cs.scatter(cs.gather(x, g.src), g.dst, aggr,
                                                                        dim_size=n)
    else:
        wcol = w[:, None]
        ops["cyscatter scatter(gather) (unfused)"] = lambda: cs.scatter(cs.gather(x, g.src) * wcol, g.dst, aggr,
                                                                        dim_size=n)
    a = aggregation_matrix(bg, aggr)
    ops["scipy CSR @ dense"] = lambda: a @ x
    try:
        import torch
        ta = torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)),
                                     torch.from_numpy(a.indices.astype(np.int64)),
                                     torch.from_numpy(a.data), size=a.shape)
        tx = torch.from_numpy(x)
        ops["torch.sparse.mm (CSR)"] = lambda: torch.sparse.mm(ta, tx).numpy()
    except ImportError:
        pass
    return ops
