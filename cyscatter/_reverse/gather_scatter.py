"""Split reverse functions of `gather_scatter`: gradients with respect to `src` and `weight`, and the JVP.

Framework-free, like `scatter_vjp_src`. For add, sub and mean they are fused passes too: the `src` gradient is the
transposed product (the same kernel along the CSR by source row), the `weight` gradient one dot product per edge
(SDDMM); max/min find each output element's tied winning edges again (the forward's exact messages) and split the
cotangent evenly among them, as `scatter` does, and the same kernels serve the NaN-skipping fmax/fmin (a NaN
message never wins) and, on real values, nansum/nanmean (the non-NaN messages, nanmean's cotangent divided by
their count); none of them allocates an E x F array. mul and div, whose derivatives need the product of the other
members of a group, go through the materialised messages and the core `scatter` rules, and so do max/min on
integer messages (whose ties are those of the integers, compared, as `scatter_vjp_src` compares them, in float64:
exact up to 2**53), nanprod, and complex nansum/nanmean (`scatter_vjp_src`'s rules on the messages, a NaN message
passing nothing to its src row or weight).
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from cyscatter import fused_kernels
from cyscatter._arrays.dtypes import holds_numbers, is_bfloat16
from cyscatter._arrays.integers import prod
from cyscatter._arrays.protocols import host_asarray
from cyscatter._backends import host
from cyscatter._backends.context import ADD
from cyscatter._backends.host import messages, rows_view, run_forward, weight_rows
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.edges import cast_like, rule_inputs, weight_shaped
from cyscatter._plan.prepare import prepare
from cyscatter._reverse.scatter import scatter_jvp, scatter_vjp_src
from cyscatter._runtime.threads import check_threads, team

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._plan.edges import GatherScatterPlan
    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, OpLike


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
        self.w2 = None if self.w is None else \
            weight_rows(self.w, self.plan.index_shape, self.feat, self.heads, self.dtype)
        # the fused kernels' weight argument (an empty one without a weight) and their thread team
        self.kernel_w2 = np.zeros((0, 1), self.dtype) if self.w2 is None else self.w2
        self.parts = team(self.threads, self.plan.cols.shape[0] * self.outer * self.inner)
        self.out_raw = None if out is None else host_asarray(out)
        self.out3 = None if out is None else self.table(out, "out")
        if self.out3 is not None and self.op.ordered and (vdtype == np.float16 or is_bfloat16(vdtype)):
            # the forward compared float32 messages and rounded only the winner: find the winners as it did
            out32 = host.fresh_table(self.out3.shape, self.op.compute_dtype(vdtype), self.op.identity(vdtype))
            run_forward(self.op, rows_view(self.src, out32.dtype, *self.src_rows), self.plan, self.w,
                        self.heads, self.feat, out32, self.threads)
            self.out3 = out32.astype(self.dtype, copy=False)

    @cached_property
    def src3(self):
        """src as a C-contiguous (outer, S, inner) array (the reverse kernels walk it and their results with one
        set of strides); made only when read: the add/sub/mean src gradient needs src's shape alone."""
        return np.ascontiguousarray(rows_view(self.src, self.dtype, *self.src_rows))

    def table(self, a, arg: str):
        """`a` (shape B + D + F) as a C-contiguous (outer, size, inner) array of the derivative dtype."""
        if type(a) is not np.ndarray:
            a = host_asarray(a)
        if not holds_numbers(a.dtype):
            raise TypeError(f"{arg} must hold numbers, got dtype {a.dtype}")
        if a.shape != self.out_shape:
            raise ValueError(f"{arg} shape {a.shape} differs from the output shape {self.out_shape}")
        return np.ascontiguousarray(a.reshape(self.outer, self.plan.size, self.inner), dtype=self.dtype)

    def entries(self, a, arg: str):
        """`a` (shape of src) as a C-contiguous (outer, S, inner) array of the derivative dtype."""
        a = host_asarray(a)
        if not holds_numbers(a.dtype):
            raise TypeError(f"{arg} must hold numbers, got dtype {a.dtype}")
        if a.shape != self.src.shape:
            raise ValueError(f"{arg} shape {a.shape} differs from the src shape {self.src.shape}")
        return np.ascontiguousarray(a.reshape(self.src_rows), dtype=self.dtype)

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
        fused_kernels.extreme_ties(self.op.larger_wins, self.src3, indptr, cols, ids, self.kernel_w2, self.w is not None,
                                   self.out3, g3, self.src3, False, self.kernel_w2, False, result, self.parts,
                                   select=self.select)
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




def _on_gpu(fun: str, **arrays):
    """The CuPy implementation of `fun` when the arrays live on the GPU (TypeError when mixed), else None."""
    if backend_of(**arrays).xp is np:
        return None
    from cyscatter._reverse import gather_scatter_cuda as _gather_scatter_gpu
    return getattr(_gather_scatter_gpu, fun + "_gpu")


@fill_doc
def gather_scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike | None = None,
                           scatter_index: IndexLike | None = None, out: ArrayInput | None = None, *,
                           weight: ArrayInput | None = None, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                           mode: Mode | None = None, plan: GatherScatterPlan | None = None,
                           num_threads: SupportsIndex | None = None) -> Any:
    """Gradient of `gather_scatter` with respect to `src`: the VJP ``grad_out -> grad_src``.

    For add it is the transposed product ``grad_src[s] = sum over edges e from s of weight[e] * grad_out[d_e]``
    (``A.T @ grad_out``), run by the same fused kernel along the edges grouped by source row (a plan builds that
    grouping once, at its first reverse pass); sub negates it, mean divides each destination's cotangent by its
    edge count first (empty rows pass nothing). max/min send each output element's cotangent to the edges whose
    message equals it, split evenly among tied ones, as `scatter_vjp_src` does (NNlib gives every tied winner the
    whole cotangent; finite differences agree with the split). The NaN-skipping ops give a NaN message nothing:
    fmax/fmin split as max/min among the tied non-NaN winners, nansum passes the cotangent to every other message,
    nanmean divides it by their count, all fused as max/min (complex nansum/nanmean through the messages).
    mul/div and nanprod materialise the messages (E x F) and use `scatter_vjp_src`'s exact rules.

    Parameters
    ----------
    {gs_reverse}

    Returns
    -------
    grad_src : ndarray, shape of `src`
        The dtype of `src` when it is inexact (float16 and bfloat16 computed in float32, rounded back); for an
        integer `src` the derivative dtype: NumPy's promotion of `src`, `weight` and `grad_out`, float64 when
        all are integers (an int8 `src` with a float32 weight gives float32).

    Raises
    ------
    TypeError
        `src`, `grad_out` or (max, min, mul, div) `out` missing or not numeric; other errors as `gather_scatter`.
    ValueError
        `grad_out` or `out` of a shape other than the output's; other errors as `gather_scatter`.
    IndexError
        As `gather_scatter`.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x, gi, si = np.array([1., 5., 5.]), np.array([0, 1, 2]), np.array([0, 0, 0])
    >>> out = cs.gather_scatter(x, gi, si, "max")
    >>> cs.gather_scatter_vjp_src("max", np.array([1.]), x, gi, si, out)   # the tie splits the cotangent
    array([0. , 0.5, 0.5])
    """
    if grad_out is None:
        raise TypeError("gather_scatter_vjp_src needs grad_out (the output's cotangent), got None")
    gpu = _on_gpu("gather_scatter_vjp_src", grad_out=grad_out, src=src, gather_index=gather_index,
                  scatter_index=scatter_index, out=out, weight=weight)
    if gpu:
        return gpu(op, grad_out, src, gather_index, scatter_index, out, weight=weight, dim_size=dim_size, axis=axis,
                   mode=mode, plan=plan)
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
        run_forward(ADD, call.per_destination(g3), call.plan, call.w, call.heads, call.feat, result,
                    call.threads, transpose=True)
    elif call.inner and call.outer:
        indptr, ids, cols = call.plan.transpose
        fused_kernels.extreme_back(call.src3, indptr, cols, ids, call.kernel_w2, call.w is not None, call.out3,
                                   call.share(g3), result, call.parts, select=call.select)
    return cast_like(result.reshape(call.src.shape), call.src)


@fill_doc
def gather_scatter_vjp_weight(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike | None = None,
                              scatter_index: IndexLike | None = None, out: ArrayInput | None = None, *,
                              weight: ArrayInput | None = None, dim_size: DimSize | None = None,
                              axis: SupportsIndex = 0, mode: Mode | None = None, plan: GatherScatterPlan | None = None,
                              num_threads: SupportsIndex | None = None) -> Any:
    """Gradient of `gather_scatter` with respect to `weight`: the VJP ``grad_out -> grad_weight``.

    For add, per edge e the dot product of the cotangent row at its destination with its source row,
    ``sum_f grad_out[d_e, f] * src[s_e, f]`` (summed over batch dims, and per head for a per-head weight): the
    sampled dense-dense product (SDDMM), one pass over the edges in parallel, no E x F array. sub negates it,
    mean divides by the destination's edge count, max/min count only the features where the edge is a (tied)
    winner, with its share of the cotangent (fmax/fmin: a non-NaN winner; nansum/nanmean: a non-NaN message, with
    the cotangent or its share by their count). Dropped edges get 0.

    Parameters
    ----------
    {gs_reverse}

    Returns
    -------
    grad_weight : ndarray, shape of `weight` (I without one: the gradient of an all-ones weight)
        The dtype of `weight` when it is inexact (float16 and bfloat16 computed in float32, rounded back), else
        the derivative dtype (as `gather_scatter_vjp_src`'s; float64 when all are integers).

    Raises
    ------
    TypeError, ValueError, IndexError
        As `gather_scatter_vjp_src`.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x = np.array([[1., 2.], [3., 4.]])
    >>> gi, si, w = np.array([0, 1]), np.array([0, 0]), np.array([0.5, 2.])
    >>> g = np.ones((1, 2))
    >>> cs.gather_scatter_vjp_weight("add", g, x, gi, si, weight=w)   # row sums of the source rows
    array([3., 7.])
    """
    if grad_out is None:
        raise TypeError("gather_scatter_vjp_weight needs grad_out (the output's cotangent), got None")
    gpu = _on_gpu("gather_scatter_vjp_weight", grad_out=grad_out, src=src, gather_index=gather_index,
                  scatter_index=scatter_index, out=out, weight=weight)
    if gpu:
        return gpu(op, grad_out, src, gather_index, scatter_index, out, weight=weight, dim_size=dim_size, axis=axis,
                   mode=mode, plan=plan)
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
        fused_kernels.dots(cot, call.src3, call.plan.gather, call.plan.scatter, result,
                           cot if select is None else call.out3, 0 if select is None else select + 1, call.kernel_w2,
                           call.w is not None, call.parts)
    shaped = call.weight_shaped(result)
    return shaped if call.w is None else cast_like(shaped, call.w)


@fill_doc
def gather_scatter_jvp(op: OpLike, src: ArrayInput, gather_index: IndexLike | None = None,
                       scatter_index: IndexLike | None = None, out: ArrayInput | None = None,
                       src_dot: ArrayInput | None = None, *, weight: ArrayInput | None = None,
                       weight_dot: ArrayInput | None = None, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                       mode: Mode | None = None, plan: GatherScatterPlan | None = None,
                       num_threads: SupportsIndex | None = None) -> Any:
    """Forward derivative of `gather_scatter`: the tangent of `out` given tangents of `src` and `weight`.

    add/sub/mean are bilinear in (src, weight): ``out_dot = gather_scatter(src_dot, weight) +
    gather_scatter(src, weight_dot)`` (mean divided by the counts), fused. max/min average the tangent messages
    ``weight * src_dot + weight_dot * src`` of each output element's tied winning edges (the directional
    derivative that matches the split cotangent of the VJPs); fmax/fmin the same over the non-NaN winners,
    nansum sums and nanmean averages the tangent messages of the non-NaN messages, fused. mul/div, nanprod and
    complex nansum/nanmean go through `scatter_jvp` on materialised messages.

    Parameters
    ----------
    op : {{"add", "sub", "mean", "sqrt_n", "max", "min", "mul", "div", "nansum", "nanprod", "nanmean", "fmax",
        "fmin"}}
        The op of the forward call.
    src : array_like, shape B + S + F
        The forward call's `src`.
    gather_index, scatter_index : int array or tuple of int arrays, shape I
        The forward call's indices (omit both with `plan`).
    out : array_like, shape B + D + F, optional
        The forward result; needed by max, min, mul, div and the NaN-skipping ops.
    src_dot : array_like, shape of `src`, optional
        Tangent of `src` (None: zero).
    weight : array_like, shape I + W, optional
        The forward call's weight.
    weight_dot : array_like, shape of `weight`, optional
        Tangent of `weight` (None: zero; without `weight` it raises ValueError).
    dim_size, axis, mode, plan, num_threads : optional
        As in `gather_scatter`.

    Returns
    -------
    out_dot : ndarray, shape B + D + F
        In the derivative dtype: NumPy's promotion of `src`, `weight` and the tangents, float64 when all are
        integers, float32 in place of float16 and bfloat16 (the dtype the kernels compute in; unlike the VJPs,
        a tangent is not rounded back to a half-precision input's dtype).

    Raises
    ------
    TypeError
        Missing `src`, `out` where needed, or both tangents; a non-numeric tangent.
    ValueError
        A tangent of the wrong shape, `weight_dot` without `weight`; other errors as `gather_scatter`.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x, gi, si = np.array([1., 2.]), np.array([0, 1]), np.array([0, 0])
    >>> cs.gather_scatter_jvp("add", x, gi, si, src_dot=np.array([1., 0.]), weight=np.array([3., 1.]),
    ...                       weight_dot=np.array([0., 1.]))
    array([5.])
    """
    if src_dot is None and weight_dot is None:
        raise TypeError("gather_scatter_jvp needs src_dot or weight_dot (the tangents), got neither")
    if weight_dot is not None and weight is None:
        raise ValueError("weight_dot was given without weight")
    gpu = _on_gpu("gather_scatter_jvp", src=src, gather_index=gather_index, scatter_index=scatter_index, out=out,
                  src_dot=src_dot, weight=weight, weight_dot=weight_dot)
    if gpu:
        return gpu(op, src, gather_index, scatter_index, out, src_dot, weight=weight, weight_dot=weight_dot,
                   dim_size=dim_size, axis=axis, mode=mode, plan=plan)
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
            run_forward(ADD, s_dot3, call.plan, call.w, call.heads, call.feat, result, call.threads)
        if w_dot2 is not None:
            part = np.zeros(size3, call.dtype)
            run_forward(ADD, call.src3, call.plan, wd, call.heads, call.feat, part, call.threads)
            result += part
        result = call.per_destination(result)
    else:
        result = np.zeros(size3, call.dtype)
        if call.inner and call.outer:
            fused_kernels.extreme_ties(call.op.larger_wins, call.src3, call.plan.indptr, call.plan.cols,
                                       call.plan.edge_ids, call.kernel_w2, call.w is not None, call.out3, call.out3,
                                       call.src3 if s_dot3 is None else s_dot3, s_dot3 is not None,
                                       np.zeros((0, 1), call.dtype) if w_dot2 is None else w_dot2,
                                       w_dot2 is not None, result, call.parts, select=call.select,
                                       average=call.op.splits)
    return result.reshape(call.out_shape)
