"""gather_scatter and its reverse functions on CuPy arrays: the fused kernels of `cyscatter._cuda_kernels`.

`cyscatter._gather_scatter` and `cyscatter._gather_scatter_reverse` call these when an array argument is a CUDA
array; the validation, the dtype rules and the plan are theirs. The plan (NumPy arrays, grouped on the host) is
uploaded once per device and cached on the plan object, so a plan reused across calls costs no transfer; without
one, each call copies the indices to the host to validate and group them.

What runs in one pass (no E x F array): the forward pass of every op (one thread per (batch, edge, feature) with
the op's atomic update, complex128 mul/div/nanprod one thread per destination element along the plan's CSR rows;
the NaN-skipping ops count each element's non-NaN messages as they go when they divide or fill by them); for
add/sub/mean the gradient with respect to src (the same kernel with the indices swapped), with respect to the
weight (one dot per edge) and the JVP; for max/min the tie counts per output element, then the per-edge shares
(src gradient, weight gradient) or tangents (JVP), and the same for the NaN-skipping fmax/fmin (a NaN message
never wins) and nansum/nanmean (the non-NaN messages, nanmean dividing by their count). mul, div and nanprod
reverse functions materialise the messages and use the core GPU `scatter_vjp_src` / `scatter_jvp`, and so do
max/min/fmax/fmin on integer messages.

As everywhere on the GPU, float add/sub/mean/mul/div sums depend on the order in which the atomics arrive (the
CPU's result to rounding); max/min, integer results and tie counts are exact.
"""
from __future__ import annotations

import numpy as np

from cyscatter._backend import backend_of, is_device_array, shape_of
from cyscatter._canonical import prod
from cyscatter._cuda_kernels import (EDGE_DOTS, build, edge_counts_spec, edge_dots_spec, gather_scatter_ordered_spec,
                                     gather_scatter_spec, shares_back_spec, tangents_spec)
from cyscatter._gather_scatter import check_weight, resolve, value_dtype, weight_rows
from cyscatter._gather_scatter_reverse import cast_like, derivative_policy, dims_like, rule_inputs, weight_shaped
from cyscatter._ops import get_op, holds_numbers
from cyscatter._reverse import scatter_jvp, scatter_vjp_src
from cyscatter._scatter import fill_for, finish_fresh, scatter, scatter_into

_ATOMIC_WORD = 8   # bytes of the widest atomicCAS: wider CAS updates (complex128 mul/div) take the CSR kernel
_LINEAR = ("add", "sub", "mean", "sqrt_n")


# ---- the plan on the device -------------------------------------------------------------------------------------

_HOST_ARRAYS = {   # what `_on_device` can upload, from the plan's NumPy arrays
    "gather": lambda plan: plan.gather,
    "scatter": lambda plan: plan.scatter,
    "counts": lambda plan: plan.counts,
    "indptr": lambda plan: plan.indptr,
    "cols": lambda plan: plan.cols,
    # an empty edge_ids means the CSR order is the edge order (and no edge is dropped)
    "edge_ids": lambda plan: plan.edge_ids if plan.edge_ids.shape[0] else np.arange(plan.cols.shape[0]),
    "kept": lambda plan: np.flatnonzero(plan.valid_edges()),
    "gather_kept": lambda plan: plan.gather[plan.valid_edges()],
    "scatter_kept": lambda plan: plan.scatter[plan.valid_edges()],
}


def _on_device(plan, xp, name: str):
    """The plan's array `name` on the current device, uploaded at its first use there and kept on the plan."""
    cache = plan._cache.setdefault("device_arrays", {})
    cuda = getattr(xp, "cuda", None)   # the emulated CuPy of the tests has no devices
    key = (id(xp), cuda.Device().id if cuda is not None else -1, name)
    arr = cache.get(key)
    if arr is None:
        arr = cache[key] = xp.asarray(_HOST_ARRAYS[name](plan))
    return arr


def _host(index):
    """An index (array or tuple of arrays) on the host: the plan is validated and grouped there."""
    if isinstance(index, tuple):
        return tuple(_host(part) for part in index)
    return index.get() if is_device_array(index) else index


# ---- kernel launches ----------------------------------------------------------------------------------------

def _edge_weight(w2, xp, dtype):
    """(weight rows, weighted, heads) for the edge kernels: a dummy one-element array without a weight."""
    if w2 is None:
        return xp.zeros(1, dtype), False, 1
    return w2.reshape(-1), True, w2.shape[1]


def _run_edges(update: str, src3, gather, scatter, w2, out3, xp, counts=None) -> None:
    """out3[o, scatter[e], f] = update(out3[...], w2[e, head(f)] * src3[o, gather[e], f]) for every kept edge;
    with `counts` (out3's shape) also counts[o, scatter[e], f] += 1 for each non-NaN message."""
    outer, n_src, inner = src3.shape
    n_edges = gather.shape[0]
    if outer * n_edges * inner == 0:
        return
    weight, weighted, heads = _edge_weight(w2, xp, src3.dtype)
    extra = () if counts is None else (counts.reshape(-1),)
    build(gather_scatter_spec(update, counts is not None))(
        src3.reshape(-1), gather, scatter, weight, weighted, n_edges, inner, heads, n_src, out3.shape[1],
        out3.reshape(-1), *extra, size=outer * n_edges * inner)


def _forward(op, src3, plan, w2, out3, xp, counts=None) -> None:
    """The forward kernel from the identity-filled `out3`: atomics per edge, or CSR rows for wide CAS updates;
    `counts` (zeros of out3's shape) receives each output element's non-NaN messages when given."""
    if op.gpu_cas and out3.dtype.itemsize > _ATOMIC_WORD:
        outer, n_dst, inner = out3.shape
        if outer * n_dst * inner == 0:
            return
        weight, weighted, heads = _edge_weight(w2, xp, out3.dtype)
        extra = () if counts is None else (counts.reshape(-1),)
        build(gather_scatter_ordered_spec(op.gpu_update, counts is not None))(
            src3.reshape(-1), _on_device(plan, xp, "indptr"), _on_device(plan, xp, "cols"),
            _on_device(plan, xp, "edge_ids"), weight, weighted, n_dst, inner, heads, src3.shape[1],
            out3.reshape(-1), *extra, size=out3.size)
    else:
        gather, scatter = _on_device(plan, xp, "gather"), _on_device(plan, xp, "scatter")
        _run_edges(op.gpu_update, src3, gather, scatter, w2, out3, xp, counts)


def gather_scatter_gpu(src, gather_index, scatter_index, op, *, weight, dim_size, axis, fill_value, mode, plan):
    """`cyscatter.gather_scatter` on CuPy arrays (`op` an `Op`); see there."""
    be = backend_of(src=src, gather_index=gather_index, scatter_index=scatter_index, weight=weight)
    xp = be.xp
    src = be.asarray(src)
    plan, axis, batch, feat = resolve(src, _host(gather_index), _host(scatter_index), plan, axis, dim_size, mode)
    w, heads = check_weight(weight, plan.index_shape, feat, op, xp=xp)
    vdtype = value_dtype(src.dtype, w)
    result_dtype = op.result_dtype(vdtype)
    fill = fill_for(fill_value, result_dtype, xp)
    outer, inner = prod(batch), prod(feat)
    wide_ints = w is not None and vdtype.kind in "iu" and op.compute_dtype(result_dtype) != vdtype
    if wide_ints:
        # integer messages the kernel would compute wider than w * src wraps or rounds in its own dtype: formed
        # as NumPy forms them, then scattered (as on the CPU)
        msgs = be.rows_view(src, vdtype, outer, plan.src_size, inner)[:, _on_device(plan, xp, "gather_kept"), :]
        rows = weight_rows(w, plan.index_shape, feat, heads, vdtype, xp=xp)[_on_device(plan, xp, "kept")]
        msgs = msgs * xp.repeat(rows, inner // max(heads, 1), axis=1)[None]
        out = scatter(msgs, _on_device(plan, xp, "scatter_kept"), op, dim_size=plan.size, axis=1,
                      fill_value=fill_value)
        return out.astype(result_dtype, copy=False).reshape(batch + plan.dims + feat)
    out3 = op.fresh((outer, plan.size, inner), result_dtype, xp)
    src3 = be.rows_view(src, out3.dtype, outer, plan.src_size, inner)
    w2 = None if w is None else weight_rows(w, plan.index_shape, feat, heads, out3.dtype, xp=xp)
    counts = None
    if op.skips_nan and (op.counts or fill is not None) and vdtype.kind in "fc":
        # a NaN-skipping op that counts (nanmean, a fill_value) divides or fills by each element's non-NaN
        # messages, counted by the forward kernel (int32 below 2**31 - 1 edges, as the CPU kernel's)
        counts = xp.zeros(out3.shape, np.int32 if plan.n_edges < 2**31 - 1 else np.int64)
        _forward(op, src3, plan, w2, out3, xp, counts)
    else:
        _forward(op, src3, plan, w2, out3, xp)
        if op.counts or fill is not None:
            counts = _on_device(plan, xp, "counts")
    return finish_fresh(op, out3, counts, fill, result_dtype, xp).reshape(batch + plan.dims + feat)


# ---- reverse functions ------------------------------------------------------------------------------------------

class _Call:
    """One reverse call on the device, as `cyscatter._gather_scatter_reverse._Call` on the host: canonical views
    src3 (outer, S, inner), the plan, the weight rows, and the dtype the derivatives are computed in."""

    def __init__(self, fun, op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode, plan,
                 tangents: dict):
        self.be = backend_of(src=src, gather_index=gather_index, scatter_index=scatter_index, out=out,
                             weight=weight, **tangents)
        xp = self.xp = self.be.xp
        self.op = get_op(op)
        if src is None:
            raise TypeError(f"{fun} needs src (the forward call's src), got None")
        self.src = self.be.asarray(src)
        arrays = {name: self._numeric(a, name) for name, a in tangents.items() if a is not None}
        gather_index, scatter_index = _host(gather_index), _host(scatter_index)
        if out is not None and "grad_out" in arrays and shape_of(out) != arrays["grad_out"].shape:
            # (as the other reverse functions: neither is taken for the right one, which sizes D below)
            raise ValueError(f"grad_out shape {arrays['grad_out'].shape} != out shape {shape_of(out)}")
        if plan is None and dim_size is None:
            dim_size = dims_like(out if out is not None else arrays.get("grad_out"), self.src, gather_index,
                                 scatter_index, axis)
        self.plan, self.axis, self.batch, self.feat = resolve(self.src, gather_index, scatter_index, plan, axis,
                                                              dim_size, mode)
        self.w, self.heads = check_weight(weight, self.plan.index_shape, self.feat, self.op, xp=xp)
        self.w_shape = None if weight is None else self.be.asarray(weight).shape   # before trailing 1s are dropped
        vdtype = self.vdtype = value_dtype(self.src.dtype, self.w)
        self.dtype, _ = derivative_policy(self.op, vdtype, arrays)
        # the selecting ops run the edge kernels, except max/min/fmax/fmin on integer messages (whose ties are
        # those of the integers); the others (mul, div, nanprod) materialise the messages
        self.select = None if self.op.ordered and vdtype.kind in "iu" else (self.op.selection or None)
        self.outer, self.inner = prod(self.batch), prod(self.feat)
        self.out_shape = self.batch + self.plan.dims + self.feat
        self.src3 = self.be.rows_view(self.src, self.dtype, self.outer, self.plan.src_size, self.inner)
        self.w2 = None if self.w is None else \
            weight_rows(self.w, self.plan.index_shape, self.feat, self.heads, self.dtype, xp=xp)
        self.out_raw = None if out is None else self.be.asarray(out)
        self.out3 = None if out is None else self.table(out, "out")
        if self.out3 is None and self.op.name not in _LINEAR:
            raise TypeError(f"{fun} with op {self.op.name!r} needs out (the forward result), got None")
        if self.op.ordered and vdtype == np.float16:
            # the forward compared float32 messages and rounded only the winner: find the winners as it did
            out32 = self.op.fresh(self.out3.shape, vdtype, xp)
            _forward(self.op, self.be.rows_view(self.src, out32.dtype, *self.src3.shape), self.plan,
                     None if self.w is None else weight_rows(self.w, self.plan.index_shape, self.feat, self.heads,
                                                             out32.dtype, xp=xp), out32, xp)
            self.out3 = out32.astype(self.dtype)

    def device(self, name: str):
        return _on_device(self.plan, self.xp, name)

    def _numeric(self, a, arg: str):
        a = self.be.asarray(a)
        if not holds_numbers(a.dtype):
            raise TypeError(f"{arg} must hold numbers, got dtype {a.dtype}")
        return a

    def table(self, a, arg: str):
        """`a` (shape B + D + F) as a C-contiguous (outer, size, inner) array of the derivative dtype."""
        a = self._numeric(a, arg)
        if a.shape != self.out_shape:
            raise ValueError(f"{arg} shape {a.shape} differs from the output shape {self.out_shape}")
        return self.xp.ascontiguousarray(a.reshape(self.outer, self.plan.size, self.inner), dtype=self.dtype)

    def entries(self, a, arg: str):
        """`a` (shape of src) as a C-contiguous (outer, S, inner) array of the derivative dtype."""
        a = self._numeric(a, arg)
        if a.shape != self.src.shape:
            raise ValueError(f"{arg} shape {a.shape} differs from the src shape {self.src.shape}")
        return self.xp.ascontiguousarray(a.reshape(self.src3.shape), dtype=self.dtype)

    def zeros(self, shape):
        return self.xp.zeros(shape, self.dtype)

    def per_destination(self, g3):
        """The cotangent each edge of a destination row receives, for the linear ops: g, -g or g / count."""
        if self.op.name == "sub":
            return -g3
        if self.op.counts:   # mean: g / count; sqrt_n: g / sqrt(count)
            return g3 / self.op.divisor(self.device("counts"), g3.dtype, self.xp)
        return g3

    # ---- the selecting ops (max/min, fmax/fmin: the tied winning edges of each output element; nansum/nanmean:
    # its non-NaN messages)

    def _edge_args(self):
        """The leading arguments of the edge kernels, from the forward's side (src rows to output rows)."""
        weight, weighted, heads = _edge_weight(self.w2, self.xp, self.dtype)
        return (self.src3.reshape(-1), self.device("gather"), self.device("scatter"), weight, weighted,
                self.plan.n_edges, self.inner, heads, self.plan.src_size, self.plan.size)

    def _edge_size(self) -> int:
        return self.outer * self.plan.n_edges * self.inner

    def selected_counts(self):
        """The edges each output element selects (int64, out's shape)."""
        ties = self.xp.zeros((self.outer, self.plan.size, self.inner), np.int64)
        if self._edge_size():
            build(edge_counts_spec(self.select))(*self._edge_args(), self.out3.reshape(-1), ties.reshape(-1),
                                                 size=self._edge_size())
        return ties

    def share(self, total):
        """`total` (an output element's cotangent, or its tangent sum) divided among its selected edges: by their
        count for the averaging ops (max/min, fmax/fmin, nanmean), as it is for nansum. Where no edge is
        selected (an output element no edge reaches) it is left as it is: no edge reads a share there, and a
        tangent total there is 0."""
        if not self.op.splits:
            return total
        return total / self.xp.maximum(self.selected_counts(), 1).astype(self.dtype)

    # ---- weight gradients

    def dots(self, cot3, selected: bool):
        """(n_edges, heads): per edge and head the dot of `cot3` at its destination with its source row (the
        selecting ops: only the features where the edge's message is selected)."""
        result = self.zeros((self.plan.n_edges, self.heads))
        if result.size == 0:
            return result
        args = (cot3.reshape(-1), self.src3.reshape(-1), self.device("gather"), self.device("scatter"),
                self.plan.n_edges, self.outer, self.inner, self.heads, self.plan.src_size, self.plan.size)
        if selected:
            weight, weighted, _ = _edge_weight(self.w2, self.xp, self.dtype)
            build(edge_dots_spec(self.select))(*args, self.out3.reshape(-1), weight, weighted, result.reshape(-1),
                                               size=result.size)
        else:
            build(EDGE_DOTS)(*args, result.reshape(-1), size=result.size)
        return result

    def weight_shaped(self, rows2):
        return weight_shaped(rows2, self.plan.index_shape, self.feat, self.w, self.w_shape)

    # ---- materialised messages (mul, div)

    def scale(self, w2):
        """The kept edges' weight per feature, (1, kept, inner)."""
        return self.xp.repeat(w2[self.device("kept")], self.inner // max(self.heads, 1), axis=1)[None]

    def messages(self, src3):
        """(messages (outer, kept, inner), gathered src rows) of the kept edges; integer messages formed in their
        own dtype first (with its wrap-around), as the forward formed them."""
        taken = src3[:, self.device("gather_kept"), :]
        if self.vdtype.kind in "iu" and src3 is self.src3:
            own = self.be.rows_view(self.src, self.vdtype, *self.src3.shape)[:, self.device("gather_kept"), :]
            if self.w is not None:
                own = own * self.scale(weight_rows(self.w, self.plan.index_shape, self.feat, self.heads,
                                                   self.vdtype, xp=self.xp))
            self._exact = own   # (for the winners of integer max/min: see `for_rules`)
            return own.astype(self.dtype), taken
        if self.w2 is None:
            return taken, taken
        return taken * self.scale(self.w2), taken

    def for_rules(self, msgs):
        return rule_inputs(self, msgs)

    def core_vjp(self, g3):
        """d out / d message times the cotangent, per kept edge (outer, kept, inner), by the core rules."""
        msgs, taken = self.messages(self.src3)
        self._msgs = msgs
        rule_msgs, rule_out = self.for_rules(msgs)
        return scatter_vjp_src(self.op.name, g3, rule_msgs, self.device("scatter_kept"), rule_out, axis=1), taken

    def absent(self, a, msgs=None):
        """`a` (per kept edge, broadcasting against the messages) with 0 where a NaN-skipping op left the message
        out (NaN), and for fmax/fmin also where the message lost (differs from its output element): the factors
        of the chain rule's products there, whose derivatives are 0 (not 0 * inf), as in the max/min kernels."""
        if not self.op.skips_nan:
            return a
        msgs = self._msgs if msgs is None else msgs
        present = msgs == msgs
        if self.op.ordered and self.out3 is not None:   # (out3 is there: fmax/fmin need out)
            present = msgs == self.out3[:, self.device("scatter_kept"), :]
        return self.xp.where(present, a, 0).astype(a.dtype, copy=False)


def gather_scatter_vjp_src_gpu(op, grad_out, src, gather_index, scatter_index, out, *, weight, dim_size, axis, mode,
                               plan):
    """`cyscatter.gather_scatter_vjp_src` on CuPy arrays; see there."""
    call = _Call("gather_scatter_vjp_src", op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode,
                 plan, {"grad_out": grad_out})
    g3 = call.table(grad_out, "grad_out")
    result = call.zeros(call.src3.shape)
    name = call.op.name
    if name in _LINEAR:   # the transposed product: the forward kernel from the output rows back to the source rows
        _run_edges("add", call.per_destination(g3), call.device("scatter"), call.device("gather"), call.w2, result,
                   call.xp)
    elif call.select:
        size = call._edge_size()
        if size:
            build(shares_back_spec(call.select))(*call._edge_args(), call.out3.reshape(-1), call.share(g3).reshape(-1),
                                                 result.reshape(-1), size=size)
    else:
        d, _ = call.core_vjp(g3)
        if call.w2 is not None:
            d = d * call.absent(call.scale(call.w2))
        scatter_into(result, d, call.device("gather_kept"), "add", axis=1)
    return cast_like(result.reshape(call.src.shape), call.src)


def gather_scatter_vjp_weight_gpu(op, grad_out, src, gather_index, scatter_index, out, *, weight, dim_size, axis,
                                  mode, plan):
    """`cyscatter.gather_scatter_vjp_weight` on CuPy arrays; see there."""
    call = _Call("gather_scatter_vjp_weight", op, src, gather_index, scatter_index, out, weight, dim_size, axis,
                 mode, plan, {"grad_out": grad_out})
    g3 = call.table(grad_out, "grad_out")
    name = call.op.name
    if name in _LINEAR:
        result = call.dots(call.per_destination(g3), selected=False)
    elif call.select:
        result = call.dots(call.share(g3), selected=True)
    else:
        d, taken = call.core_vjp(g3)
        per_feature = (d * call.absent(taken)).sum(axis=0)                     # (kept, inner)
        result = call.zeros((call.plan.n_edges, call.heads))
        kept = call.device("kept")
        result[kept] = per_feature.reshape(kept.shape[0], call.heads, call.inner // max(call.heads, 1)).sum(axis=2)
    shaped = call.weight_shaped(result)
    return shaped if call.w is None else cast_like(shaped, call.w)


def gather_scatter_jvp_gpu(op, src, gather_index, scatter_index, out, src_dot, *, weight, weight_dot, dim_size, axis,
                           mode, plan):
    """`cyscatter.gather_scatter_jvp` on CuPy arrays; see there."""
    call = _Call("gather_scatter_jvp", op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode, plan,
                 {"src_dot": src_dot, "weight_dot": weight_dot})
    s_dot3 = None if src_dot is None else call.entries(src_dot, "src_dot")
    w_dot2 = None
    if weight_dot is not None:
        wd = call._numeric(weight_dot, "weight_dot")
        if wd.shape != call.w_shape:
            raise ValueError(f"weight_dot shape {wd.shape} differs from the weight shape {call.w_shape}")
        w_dot2 = weight_rows(wd.reshape(call.w.shape), call.plan.index_shape, call.feat, call.heads, call.dtype, xp=call.xp)
    name = call.op.name
    size3 = (call.outer, call.plan.size, call.inner)
    if name in _LINEAR:   # bilinear: both tangent products accumulate into one table
        result = call.zeros(size3)
        gather, scatter = call.device("gather"), call.device("scatter")
        if s_dot3 is not None:
            _run_edges("add", s_dot3, gather, scatter, call.w2, result, call.xp)
        if w_dot2 is not None:
            _run_edges("add", call.src3, gather, scatter, w_dot2, result, call.xp)
        result = call.per_destination(result)
    elif call.select:
        total = call.zeros(size3)
        if call._edge_size():
            dummy = call.zeros(1)
            build(tangents_spec(call.select))(*call._edge_args(), call.out3.reshape(-1),
                                              dummy if s_dot3 is None else s_dot3.reshape(-1), s_dot3 is not None,
                                              dummy if w_dot2 is None else w_dot2.reshape(-1), w_dot2 is not None,
                                              total.reshape(-1), size=call._edge_size())
        result = call.share(total)
    else:
        msgs, taken = call.messages(call.src3)
        t_msgs = call.xp.zeros_like(msgs)
        if s_dot3 is not None:
            t_msgs += call.messages(s_dot3)[0]
        if w_dot2 is not None:
            t_msgs += call.absent(taken, msgs) * call.scale(w_dot2)
        rule_msgs, rule_out = call.for_rules(msgs)
        result = scatter_jvp(name, rule_msgs, call.device("scatter_kept"), rule_out, call.absent(t_msgs, msgs),
                             axis=1)
    return result.reshape(call.out_shape)
