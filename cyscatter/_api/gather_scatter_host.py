"""gather_scatter's forward pass on host (NumPy) arrays: the fused kernels of `cyscatter.fused_kernels`, along the
CSR by destination of the edge plan (`cyscatter._api.gather_scatter` reaches it through the host backend's name, as
it reaches `gather_scatter_cuda` through the GPU backend's)."""
from __future__ import annotations

import numpy as np

from cyscatter._api.scatter import scatter
from cyscatter._backends import host
from cyscatter._backends.host import messages, node_rows, rows_view, run_forward
from cyscatter._backends.reduce import finish_fresh


def forward(call, threads: int, num_threads):
    """`cyscatter.gather_scatter` on host arrays, of a prepared call (an `EdgeCall`; `threads` the checked
    `num_threads`); see there."""
    op, src, plan, w, heads, feat, batch = call.op, call.src, call.plan, call.w, call.heads, call.feat, call.batch
    vdtype, result_dtype, fill, outer, inner = call.vdtype, call.result_dtype, call.fill, call.outer, call.inner
    if w is not None and vdtype.kind in "iu" and call.compute != vdtype:
        # integer messages the kernel would compute wider (small integers in int64, div and mean in float64)
        # than w * src wraps or rounds in its own dtype: the messages are formed as NumPy forms them
        msgs3, keep = messages(rows_view(src, vdtype, outer, plan.src_size, inner), plan, w, heads, feat, vdtype)
        out = scatter(msgs3, plan.scatter[keep], op, dim_size=plan.size, axis=1,
                      fill_value=None if fill is None else fill.item(), num_threads=num_threads)
        return out.reshape(batch + plan.dims + feat)
    out3 = host.fresh_table((outer, plan.size, inner), call.compute, call.identity)
    src3 = node_rows(src, out3.dtype, outer, plan.src_size, inner)
    counts = plan.counts if op.counts or fill is not None else None
    if counts is not None and op.skips_nan and out3.dtype.kind in "fc":
        # non-NaN messages per output element, counted by the kernel as it reduces (int32 below 2**31 edges, as
        # scatter's element counts): an element whose messages are all NaN is an empty group
        counts = np.zeros(out3.shape, np.int32 if plan.n_edges < 2**31 - 1 else np.int64)
        run_forward(op, src3, plan, w, heads, feat, out3, threads, counts=counts)
    else:
        run_forward(op, src3, plan, w, heads, feat, out3, threads)
    if counts is None:   # nothing to divide or fill: the table is the result
        return host.rounded(out3, result_dtype).reshape(call.out_shape)
    return finish_fresh(op, out3, counts, fill, result_dtype, threads=threads).reshape(call.out_shape)
