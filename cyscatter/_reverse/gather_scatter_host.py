"""The split reverse functions of `gather_scatter` on host (NumPy) arrays: the fused kernels of
`cyscatter.fused_kernels` along the edge plan's CSR rows, or the materialised messages and the core rules (see
`cyscatter._reverse.gather_scatter`, which reaches this module through the host backend's name)."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from cyscatter import fused_kernels
from cyscatter._arrays.dtypes import holds_numbers, is_bfloat16, native
from cyscatter._arrays.integers import prod
from cyscatter._arrays.protocols import host_asarray
from cyscatter._backends import host
from cyscatter._backends.context import ADD
from cyscatter._backends.host import messages, node_rows, rows_view, run_forward, weight_rows
from cyscatter._plan.edges import cast_like, rule_inputs, weight_shaped
from cyscatter._plan.prepare import prepare
from cyscatter._reverse.scatter import scatter_jvp, scatter_vjp_src
from cyscatter._runtime.threads import check_threads, team


class _Call:
    """One reverse call's inputs on the canonical views: src3 (outer, S, inner), the edges' plan and weight,
    and the dtype the derivatives are computed in."""

    def __init__(self, fun, op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode, plan,
                 num_threads, cotangents: dict):
        call = prepare("gather_scatter", src, (gather_index, scatter_index), op, weight=weight, plan=plan,
                       dim_size=dim_size, axis=axis, mode=mode, out=out, cotangents=cotangents, fun=fun, be=host)
        self.threads = check_threads(num_threads)
        self.op, self.src, self.plan, self.axis, self.batch = call.op, call.src, call.plan, call.axis, call.batch
        self.feat, self.w, self.heads, self.w_shape = call.feat, call.w, call.heads, call.w_shape
        vdtype, self.dtype, self.materialise = call.vdtype, call.dtype, call.materialise
        self.vdtype = vdtype
        # the selecting ops on real derivatives run the fused kernels, except max/min/fmax/fmin on integer
        # messages (whose ties are the integers'); complex nansum/nanmean materialise the messages
        self.select = fused_kernels.SELECT_CODES.get(self.op.selection) if self.dtype in (np.float32, np.float64) and not (
            self.op.ordered and vdtype.kind in "iu") else None
        self.materialise = self.materialise and self.select is None
        self.outer, self.inner = prod(self.batch), prod(self.feat)
        self.out_shape = self.batch + self.plan.dims + self.feat
        self.src_rows = (self.outer, self.plan.src_size, self.inner)
        # the fused kernels' thread team
        self.parts = team(self.threads, self.plan.cols.shape[0] * self.outer * self.inner)
        self.out_raw = None if out is None else host_asarray(out)
        # The forward compared (or multiplied) its messages in the compute dtype and rounded only the result:
        # a half-precision forward is done again in float32, so that max/min find the winners it found and mul
        # and div's rules read its float32 product, not the rounded one. Weighted messages of a compute dtype
        # narrower than the derivatives' (float32 ones under a float64 cotangent or tangent) are formed again in
        # the derivative dtype, where w * x is exact: the kernels form them so and compare them with that out
        # (the float32 out holds rounded products no float64 message equals).
        compute = np.dtype(self.op.compute_dtype(vdtype))
        half = vdtype == np.float16 or is_bfloat16(vdtype)
        recompute = (self.op.ordered or self.materialise) and (
            half or (self.w is not None and compute.kind == "f" and compute != self.dtype))
        # (the linear ops' rules read no out: it is checked, not converted)
        read = not recompute and not (self.op.linear and not self.materialise)
        self.out3 = None if out is None else self.table(out, "out", convert=read)
        if out is not None and recompute:
            table = compute if compute == self.dtype or (half and self.w is None) else self.dtype
            out32 = host.fresh_table((self.outer, self.plan.size, self.inner), table, self.op.identity(vdtype))
            run_forward(self.op, self.src_view, self.plan, self.weight(out32.dtype),
                        self.heads, self.feat, out32, self.threads)
            self.out3 = out32.astype(self.dtype, copy=False)

    @cached_property
    def w2(self):
        """The weight as (E, heads or inner) rows of the derivative dtype (None without one), for the kernels
        that take real weights: made only when one of them runs (`run_forward` reads a float16/bfloat16 weight
        as it is, so the linear ops' VJP and JVP never convert it)."""
        return None if self.w is None else weight_rows(self.w, self.plan.index_shape, self.feat, self.heads,
                                                       self.dtype)

    @cached_property
    def kernel_w2(self):
        """The fused kernels' weight argument: `w2`, or an empty one without a weight."""
        return np.zeros((0, 1), self.dtype) if self.w2 is None else self.w2

    def weight(self, dtype):
        """The weight for `run_forward` computing in `dtype`: `w2` viewed in the weight's broadcast shape when it
        was made already and is of that dtype, so that a float16/bfloat16 weight of one value per feature (E x F)
        is not converted again beside it; else the weight as given (which `run_forward` reads in place when it
        is float16/bfloat16, each edge's weights widened exactly: the same messages)."""
        if "w2" not in self.__dict__ or self.w2 is None or self.w2.dtype != dtype:
            return self.w
        k = len(self.plan.index_shape)
        return self.w2.reshape(self.plan.index_shape + self.feat[:self.w.ndim - k])

    @cached_property
    def src_view(self):
        """src as (outer, S, inner) rows of adjacent elements, a view where it is one (strided or broadcast rows
        are not copied): for the kernels that take src's strides apart from their other operands' (the per-edge
        dots, the forward). A float16/bfloat16 src keeps its dtype (`host.node_rows`: the kernels widen its rows
        as they read them); `src3` where it was made already."""
        if "src3" in self.__dict__:
            return self.src3
        return node_rows(self.src, self.dtype, *self.src_rows)

    @cached_property
    def half_src(self):
        """(code, bits) of a float16/bfloat16 src that the kernels read as it is: its `src_view` as uint16 and the
        kernels' code for its dtype (1 float16, 2 bfloat16); None for any other src."""
        rows = self.src_view
        if rows.dtype == self.dtype:
            return None
        return host.HALF_IN_PLACE[rows.dtype.name], rows.view(np.uint16)

    @cached_property
    def half_w(self):
        """(code, bits) of a float16/bfloat16 weight that the selecting kernels read as it is: its (E, heads) rows
        as uint16 and the kernels' code for its dtype; None for any other weight (they read `w2`)."""
        w = self.w
        code = host.HALF_IN_PLACE.get(w.dtype.name) if type(w) is np.ndarray and w.dtype.isnative else None
        if code is None or self.dtype not in (np.float32, np.float64):
            return None
        return code, weight_rows(w, self.plan.index_shape, self.feat, self.heads, w.dtype).view(np.uint16)

    def select_weight(self) -> tuple:
        """The selecting kernels' (weight, weighted, keywords): `kernel_w2`, or for a float16/bfloat16 weight an
        empty stand-in with its bits as keywords (each weight widened exactly as it is read: no E x heads copy)."""
        if self.half_w is None:
            return self.kernel_w2, self.w is not None, {}
        code, bits = self.half_w
        return np.zeros((0, 1), self.dtype), True, {"half_weight": bits, "weight_code": code}

    def half_weight_args(self) -> dict:
        """The edge ids and weight rows of the `_half` reverse kernels (no weight: None)."""
        if self.half_w is not None:
            return {"edge_ids": self.plan.edge_ids, "half_weight": self.half_w[1], "weight_code": self.half_w[0]}
        return {"edge_ids": self.plan.edge_ids if self.w is not None else None, "weight": self.w2}

    @cached_property
    def src3(self):
        """src as a C-contiguous (outer, S, inner) array of the derivative dtype, for the materialised messages
        (mul, div, integer max/min); the fused kernels read `src_view`."""
        return np.ascontiguousarray(rows_view(self.src, self.dtype, *self.src_rows))

    def table(self, a, arg: str, convert: bool = True):
        """`a` (shape B + D + F) as a C-contiguous (outer, size, inner) array of the derivative dtype; without
        `convert` only checked (None)."""
        if type(a) is not np.ndarray:
            a = host_asarray(a)
        if not holds_numbers(a.dtype):
            raise TypeError(f"{arg} must hold numbers, got dtype {a.dtype}")
        if a.shape != self.out_shape:
            raise ValueError(f"{arg} shape {a.shape} differs from the output shape {self.out_shape}")
        if not convert:
            return None
        return np.ascontiguousarray(a.reshape(self.outer, self.plan.size, self.inner), dtype=self.dtype)

    def entries(self, a, arg: str):
        """`a` (shape of src) as (outer, S, inner) rows of adjacent elements, a view where it is one (the kernels
        take its row strides): of the derivative dtype, or for the fused forward passes of the linear ops a
        float16/bfloat16 `a` as it is (`host.node_rows`: its rows widened as they are read)."""
        a = host_asarray(a)
        if not holds_numbers(a.dtype):
            raise TypeError(f"{arg} must hold numbers, got dtype {a.dtype}")
        if a.shape != self.src.shape:
            raise ValueError(f"{arg} shape {a.shape} differs from the src shape {self.src.shape}")
        if self.op.linear and not self.materialise:
            return node_rows(a, self.dtype, *self.src_rows)
        return rows_view(a, self.dtype, *self.src_rows)

    def need_out(self, fun: str):
        if self.out3 is None and not self.op.linear:
            raise TypeError(f"{fun} with op {self.op.name!r} needs out (the forward result), got None")

    def per_destination(self, g3):
        """The cotangent each edge of a destination row receives, for the linear ops: g, -g, g / count (mean) or
        g / sqrt(count) (sqrt_n)."""
        if self.op.negates:
            return -g3
        if self.op.counts:
            return g3 / self.op.divisor(self.plan.counts, g3.dtype)
        return g3

    def share(self, g3):
        """The selecting ops: each output element's cotangent divided among its selected edges (max/min, fmax/fmin:
        the tied winners; nanmean: the non-NaN messages; 0 where none), or as it is (nansum)."""
        if not self.op.splits:
            return g3
        indptr, ids, cols = self.plan.indptr, self.plan.edge_ids, self.plan.cols
        result = np.empty_like(g3)
        if self.half_src is not None:
            code, bits = self.half_src
            fused_kernels.extreme_ties_half(code, bits, indptr, cols, self.out3, g3, self.out3, False, result,
                                            self.parts, select=self.select, **self.half_weight_args())
            return result
        w2, weighted, half = self.select_weight()
        fused_kernels.extreme_ties(self.op.larger_wins, self.src_view, indptr, cols, ids, w2, weighted, self.out3,
                                   g3, self.src_view, False, w2, False, result, self.parts, select=self.select,
                                   **half)
        return result

    def weight_shaped(self, rows2):
        return weight_shaped(rows2, self.plan.index_shape, self.feat, self.w, self.w_shape)

    # ---- materialised messages (mul, div, integer max/min) ---------------------------------------------------

    def forward_messages(self):
        """(kept edge positions, the forward's messages, the gathered src rows), in the derivative dtype; integer
        messages formed in their own dtype first (with its wrap-around), as the forward formed them."""
        if self.vdtype.kind in "iu":
            msgs, keep = messages(rows_view(self.src, self.vdtype, *self.src_rows), self.plan, self.w, self.heads,
                                  self.feat, self.vdtype)
            self._exact = msgs   # (for the winners of integer max/min: see `for_rules`)
            msgs = msgs.astype(self.dtype, copy=False)
        else:
            msgs, keep = messages(self.src3, self.plan, self.w, self.heads, self.feat, self.dtype)
        self._kept_out = None if self.out3 is None else self.out3[:, self.plan.scatter[keep], :]
        return keep, msgs, self.src3[:, self.plan.gather[keep], :]

    def for_rules(self, msgs):
        return rule_inputs(self, msgs)

    def absent(self, a, msgs):
        """`a` (per kept edge, broadcasting against `msgs`) with 0 where a NaN-skipping op left the message out
        (NaN), and for fmax/fmin also where the message lost (differs from its output element): the factors of
        the chain rule's products there, whose derivatives are 0 (not 0 * inf or 0 * NaN). A losing message of
        -inf (an inf weight) thus passes 0, as the max/min kernels pass only their tied winners' products."""
        if not self.op.skips_nan:
            return a
        present = msgs == self._kept_out if self.op.ordered else msgs == msgs
        return np.where(present, a, 0).astype(a.dtype, copy=False)

    def scale(self, rows2, keep):
        """Per-edge (n, heads) values of the kept edges, repeated over each head's features: (1, kept, inner)."""
        return np.repeat(rows2[keep], self.inner // max(self.heads, 1), axis=1)[None]   # (heads 0: no features)


def vjp_src(op, grad_out, src, gather_index, scatter_index, out, *, weight, dim_size, axis, mode, plan, num_threads):
    """`cyscatter.gather_scatter_vjp_src` on host arrays; see there."""
    call = _Call("gather_scatter_vjp_src", op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode,
                 plan, num_threads, {"grad_out": grad_out})
    call.need_out("gather_scatter_vjp_src")
    g3 = call.table(grad_out, "grad_out")
    result = np.zeros(call.src_rows, call.dtype)
    name = call.op.name
    if call.materialise:
        keep, msgs, _ = call.forward_messages()
        rule_msgs, rule_out = call.for_rules(msgs)
        d = scatter_vjp_src(name, g3, rule_msgs, call.plan.scatter[keep], rule_out, axis=1)
        if call.w2 is not None:
            d = d * call.absent(call.scale(call.w2, keep), msgs)
        np.add.at(result, (slice(None), call.plan.gather[keep]), d)
    elif call.op.linear:
        run_forward(ADD, call.per_destination(g3), call.plan, call.weight(call.dtype), call.heads, call.feat, result,
                    call.threads, transpose=True)
    elif call.inner and call.outer and call.half_src is not None:
        indptr, ids, cols = call.plan.transpose
        code, bits = call.half_src
        weights = call.half_weight_args()
        weights["edge_ids"] = ids if call.w is not None else None   # (the transposed CSR's)
        fused_kernels.extreme_back_half(code, bits, indptr, cols, call.out3, call.share(g3), result, call.parts,
                                        select=call.select, **weights)
    elif call.inner and call.outer:
        indptr, ids, cols = call.plan.transpose
        w2, weighted, half = call.select_weight()
        fused_kernels.extreme_back(call.src_view, indptr, cols, ids, w2, weighted, call.out3, call.share(g3), result,
                                   call.parts, select=call.select, **half)
    return _cast_like(result.reshape(call.src.shape), call.src)


def _cast_like(result, like):
    """`cast_like`, a float32 gradient of a float16 / bfloat16 value rounded by the host's loop (NumPy's and
    ml_dtypes' bits, NumPy's errors; `host.rounded`)."""
    dtype = like.dtype
    if result.dtype == np.float32 and (dtype == np.float16 or is_bfloat16(dtype)):
        return host.rounded(result, native(dtype))
    return cast_like(result, like)


def vjp_weight(op, grad_out, src, gather_index, scatter_index, out, *, weight, dim_size, axis, mode, plan,
               num_threads):
    """`cyscatter.gather_scatter_vjp_weight` on host arrays; see there."""
    call = _Call("gather_scatter_vjp_weight", op, src, gather_index, scatter_index, out, weight, dim_size, axis,
                 mode, plan, num_threads, {"grad_out": grad_out})
    call.need_out("gather_scatter_vjp_weight")
    g3 = call.table(grad_out, "grad_out")
    n, name = call.plan.n_edges, call.op.name
    result = np.zeros((n, call.heads), call.dtype)
    if call.materialise:
        keep, msgs, taken = call.forward_messages()
        rule_msgs, rule_out = call.for_rules(msgs)
        d = scatter_vjp_src(name, g3, rule_msgs, call.plan.scatter[keep], rule_out, axis=1)
        per_feature = (d * call.absent(taken, msgs)).sum(axis=0)               # (kept, inner)
        # (the features per head spelt out: with no kept edge, -1 could not be inferred from 0 elements)
        result[keep] = per_feature.reshape(len(keep), call.heads, call.inner // max(call.heads, 1)).sum(axis=2)
    elif call.inner and call.outer:
        select = call.select
        cot = call.per_destination(g3) if select is None else call.share(g3)
        # the linear ops' dots read no weight (d out / d w is the gathered src): a half weight is not converted
        w2, weighted, half = (np.zeros((0, 1), call.dtype), False, {}) if select is None else call.select_weight()
        ties = 0 if select is None else select + 1
        if call.half_src is not None:
            code, bits = call.half_src
            fused_kernels.dots_half(code, cot, bits, call.plan.gather, call.plan.scatter, result,
                                    cot if select is None else call.out3, ties, w2, weighted, call.parts, **half)
        else:
            fused_kernels.dots(cot, call.src_view, call.plan.gather, call.plan.scatter, result,
                               cot if select is None else call.out3, ties, w2, weighted, call.parts, **half)
    shaped = call.weight_shaped(result)
    return shaped if call.w is None else _cast_like(shaped, call.w)


def jvp(op, src, gather_index, scatter_index, out, src_dot, *, weight, weight_dot, dim_size, axis, mode, plan,
        num_threads):
    """`cyscatter.gather_scatter_jvp` on host arrays; see there."""
    call = _Call("gather_scatter_jvp", op, src, gather_index, scatter_index, out, weight, dim_size, axis, mode,
                 plan, num_threads, {"src_dot": src_dot, "weight_dot": weight_dot})
    call.need_out("gather_scatter_jvp")
    s_dot3 = None if src_dot is None else call.entries(src_dot, "src_dot")
    w_dot2 = None
    if weight_dot is not None:
        wd = host_asarray(weight_dot)
        if not holds_numbers(wd.dtype):
            raise TypeError(f"weight_dot must hold numbers, got dtype {wd.dtype}")
        if wd.shape != call.w_shape:
            raise ValueError(f"weight_dot shape {wd.shape} differs from the weight shape {call.w_shape}")
        wd = wd.reshape(call.w.shape)
        w_dot2 = weight_rows(wd, call.plan.index_shape, call.feat, call.heads, call.dtype)
    name = call.op.name
    size3 = (call.outer, call.plan.size, call.inner)
    if call.materialise:
        keep, msgs, taken = call.forward_messages()
        t_msgs = np.zeros_like(msgs)
        if s_dot3 is not None:
            t = s_dot3[:, call.plan.gather[keep], :]
            t_msgs += t if call.w2 is None else t * call.scale(call.w2, keep)
        if w_dot2 is not None:
            t_msgs += call.absent(taken, msgs) * call.scale(w_dot2, keep)
        rule_msgs, rule_out = call.for_rules(msgs)
        result = scatter_jvp(name, rule_msgs, call.plan.scatter[keep], rule_out, call.absent(t_msgs, msgs), axis=1)
    elif call.op.linear:
        result = np.zeros(size3, call.dtype)
        if s_dot3 is not None:
            run_forward(ADD, s_dot3, call.plan, call.weight(call.dtype), call.heads, call.feat, result, call.threads)
        if w_dot2 is not None:
            part = np.zeros(size3, call.dtype)
            run_forward(ADD, call.src_view, call.plan, wd, call.heads, call.feat, part, call.threads)
            result += part
        result = call.per_destination(result)
    else:
        result = np.zeros(size3, call.dtype)
        if call.inner and call.outer and call.half_src is not None:
            code, bits = call.half_src
            fused_kernels.extreme_ties_half(code, bits, call.plan.indptr, call.plan.cols, call.out3, call.out3,
                                            call.out3 if s_dot3 is None else s_dot3, s_dot3 is not None, result,
                                            call.parts, select=call.select, average=call.op.splits,
                                            tangent_w=w_dot2, **call.half_weight_args())
        elif call.inner and call.outer:
            w2, weighted, half = call.select_weight()
            fused_kernels.extreme_ties(call.op.larger_wins, call.src_view, call.plan.indptr, call.plan.cols,
                                       call.plan.edge_ids, w2, weighted, call.out3, call.out3,
                                       call.src_view if s_dot3 is None else s_dot3, s_dot3 is not None,
                                       np.zeros((0, 1), call.dtype) if w_dot2 is None else w_dot2,
                                       w_dot2 is not None, result, call.parts, select=call.select,
                                       average=call.op.splits, **half)
    return result.reshape(call.out_shape)
