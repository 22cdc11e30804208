"""gather_scatter and its reverse functions on CuPy arrays: the fused kernels of `cyscatter._backends.cuda_kernels`.

`cyscatter._api.gather_scatter` and `cyscatter._reverse.gather_scatter` call these (through the GPU backend's name)
when an array argument is a CUDA array; the validation, the dtype rules and the plan are theirs. The plan (NumPy
arrays, grouped on the host) is uploaded once per device and cached on the plan object, so a plan reused across calls
costs no transfer; without one, each call copies the indices to the host to validate and group them.

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

from cyscatter._api.gather_scatter_cuda import _edge_weight, _forward, _on_device, _run_edges
from cyscatter._api.scatter import scatter_into
from cyscatter._arrays.dtypes import holds_numbers
from cyscatter._arrays.integers import prod
from cyscatter._backends.cuda_kernels import (
    EDGE_DOTS,
    build,
    edge_counts_spec,
    edge_dots_spec,
    shares_back_spec,
    tangents_spec,
)
from cyscatter._backends.host import weight_rows
from cyscatter._plan.edges import cast_like, rule_inputs, weight_shaped
from cyscatter._plan.prepare import prepare
from cyscatter._reverse.scatter import scatter_jvp, scatter_vjp_src


class _Call:
    """One reverse call on the device, as `cyscatter._reverse.gather_scatter_host._Call` on the host: canonical views
    src3 (outer, S, inner), the plan, the weight rows, and the dtype the derivatives are computed in."""

    def __init__(self, fun, op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode, plan,
                 tangents: dict):
        call = prepare("gather_scatter", src, (gather_index, scatter_index), op, weight=weight, plan=plan,
                       dim_size=dim_size, axis=axis, mode=mode, out=out, cotangents=tangents, fun=fun)
        self.be, self.op, self.src, self.plan, self.axis = call.be, call.op, call.src, call.plan, call.axis
        self.batch, self.feat, self.w, self.heads, self.w_shape = call.batch, call.feat, call.w, call.heads, call.w_shape
        xp, vdtype, self.dtype = self.be.xp, call.vdtype, call.dtype
        self.xp, self.vdtype = xp, vdtype
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
        if self.out3 is None and not self.op.sums:
            raise TypeError(f"{fun} with op {self.op.name!r} needs out (the forward result), got None")
        compute = np.dtype(self.op.compute_dtype(vdtype))
        if (self.op.ordered or (self.select is None and not self.op.linear)) and (
                vdtype == np.float16 or (self.w is not None and compute.kind == "f" and compute != self.dtype)):
            # the forward compared (or multiplied) its messages in the compute dtype and rounded only the result:
            # done again as the host's reverse calls do it (float32 for float16; weighted messages narrower than
            # the derivatives in the derivative dtype, where w * x is exact and the kernels form them so)
            table = compute if compute == self.dtype or (vdtype == np.float16 and self.w is None) else self.dtype
            out32 = self.be.fresh_table(self.out3.shape, table, self.op.identity(vdtype))
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
        if self.op.negates:
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


def vjp_src(op, grad_out, src, gather_index, scatter_index, out, *, weight, dim_size, axis, mode, plan,
            num_threads=None):
    """`cyscatter.gather_scatter_vjp_src` on CuPy arrays; see there (`num_threads` is the CPU kernels')."""
    call = _Call("gather_scatter_vjp_src", op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode,
                 plan, {"grad_out": grad_out})
    g3 = call.table(grad_out, "grad_out")
    result = call.zeros(call.src3.shape)
    if call.op.sums:   # the transposed product: the forward kernel from the output rows back to the source rows
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


def vjp_weight(op, grad_out, src, gather_index, scatter_index, out, *, weight, dim_size, axis, mode, plan,
               num_threads=None):
    """`cyscatter.gather_scatter_vjp_weight` on CuPy arrays; see there (`num_threads` is the CPU kernels')."""
    call = _Call("gather_scatter_vjp_weight", op, src, gather_index, scatter_index, out, weight, dim_size, axis,
                 mode, plan, {"grad_out": grad_out})
    g3 = call.table(grad_out, "grad_out")
    if call.op.sums:
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


def jvp(op, src, gather_index, scatter_index, out, src_dot, *, weight, weight_dot, dim_size, axis, mode, plan,
        num_threads=None):
    """`cyscatter.gather_scatter_jvp` on CuPy arrays; see there (`num_threads` is the CPU kernels')."""
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
    if call.op.sums:   # bilinear: both tangent products accumulate into one table
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
