"""gather_scatter's forward pass on CuPy arrays: the fused kernels of `cyscatter._backends.cuda_kernels`, with
the edge plan uploaded once per device and cached on the plan object."""
from __future__ import annotations

import numpy as np

from cyscatter._api.scatter import scatter
from cyscatter._backends.cuda_kernels import build, gather_scatter_ordered_spec, gather_scatter_spec
from cyscatter._backends.host import weight_rows
from cyscatter._backends.reduce import finish_fresh

_ATOMIC_WORD = 8   # bytes of the widest atomicCAS: wider CAS updates (complex128 mul/div) take the CSR kernel


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


def forward(call, threads: int = 0, num_threads=None):
    """`cyscatter.gather_scatter` on CuPy arrays, of a prepared call (an `EdgeCall`); see there. The thread counts
    are the CPU kernels', meaningless here."""
    be, xp, op, src, plan, w, heads = call.be, call.be.xp, call.op, call.src, call.plan, call.w, call.heads
    batch, feat, vdtype, result_dtype, fill = call.batch, call.feat, call.vdtype, call.result_dtype, call.fill
    outer, inner = call.outer, call.inner
    wide_ints = w is not None and vdtype.kind in "iu" and op.compute_dtype(result_dtype) != vdtype
    if wide_ints:
        # integer messages the kernel would compute wider than w * src wraps or rounds in its own dtype: formed
        # as NumPy forms them, then scattered (as on the CPU)
        msgs = be.rows_view(src, vdtype, outer, plan.src_size, inner)[:, _on_device(plan, xp, "gather_kept"), :]
        rows = weight_rows(w, plan.index_shape, feat, heads, vdtype, xp=xp)[_on_device(plan, xp, "kept")]
        msgs = msgs * xp.repeat(rows, inner // max(heads, 1), axis=1)[None]
        out = scatter(msgs, _on_device(plan, xp, "scatter_kept"), op, dim_size=plan.size, axis=1,
                      fill_value=None if fill is None else fill.item())
        return out.astype(result_dtype, copy=False).reshape(batch + plan.dims + feat)
    out3 = be.fresh_table((outer, plan.size, inner), call.compute, call.identity)
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
    return finish_fresh(op, out3, counts, fill, result_dtype, be).reshape(batch + plan.dims + feat)
