"""gather_scatter's order statistics (ops median / nanmedian): the scatter of the gathered messages.

A median cannot be reduced edge by edge as the fused kernels reduce (it needs each destination row's messages
sorted), so ``gather_scatter(src, g, s, "median", weight=w)`` forms the E x F messages ``w * src[g]`` and sorts
them by destination with `scatter`'s order-statistic path: the documented composition, done literally.
"""
from __future__ import annotations

from typing import Any, cast

from cyscatter._api.gather import gather
from cyscatter._api.scatter import scatter
from cyscatter._backends.select import backend_of
from cyscatter._plan.edges import GatherScatterPlan, check_weight
from cyscatter._plan.index import check_mode, parse_coords, plan_index
from cyscatter._plan.layout import normalize_axis


def gather_scatter_order_stat(src: Any, gather_index: Any, scatter_index: Any, op: Any, weight: Any, dim_size: Any,
                              axis: Any, fill_value: Any, mode: Any, plan: Any) -> Any:
    """``scatter(weight * gather(src, gather_index), scatter_index, op)`` with gather_scatter's edge rules: an
    edge with either end out of range is dropped whole under the drop modes; a plan gives both indices."""
    if plan is not None:
        if not isinstance(plan, GatherScatterPlan):
            raise TypeError(f"plan must be a GatherScatterPlan, got {type(plan).__name__}")
        plan = cast(Any, plan)   # its fields are set by its constructor, unseen by a type checker
        if gather_index is not None or scatter_index is not None:
            raise ValueError("gather_index and scatter_index must be omitted when a plan is given")
        if mode is not None and mode != plan.mode:
            raise ValueError(f"mode={mode!r} differs from the plan's mode {plan.mode!r}")
        gather_index, scatter_index, mode = plan._gather_plan.coords, plan._scatter_plan.coords, plan.mode
        dim_size = plan.dims if dim_size is None else dim_size
    if gather_index is None or scatter_index is None:
        raise TypeError("gather_scatter needs gather_index and scatter_index (or a plan)")
    mode = check_mode("raise" if mode is None else mode)
    be = backend_of(src=src, gather_index=gather_index, scatter_index=scatter_index, weight=weight)
    src = be.asarray(src)
    xp = be.xp
    gcoords = parse_coords(gather_index, "gather_index", be)
    scoords = parse_coords(scatter_index, "scatter_index", be)
    if gcoords.shape != scoords.shape:
        raise ValueError(f"gather_index shape {gcoords.shape} != scatter_index shape {scoords.shape}")
    m = len(gcoords)
    axis = normalize_axis(axis, src.ndim, m)
    batch, src_dims, feat = src.shape[:axis], src.shape[axis:axis + m], src.shape[axis + m:]
    gplan = plan_index(None, src_dims, mode, arg="gather_index", coords=gcoords, dims_arg="src.shape")
    splan = plan_index(None, dim_size, mode, arg="scatter_index", coords=scoords)
    valid = gplan.valid() & splan.valid()
    rows = src.reshape(batch + (gplan.size,) + feat)
    messages = gather(rows, xp.where(valid, gplan.flat, 0), axis=axis)
    if weight is not None:
        w, _ = check_weight(weight, gplan.shape, feat, arg="weight", be=be)
        w = w.reshape((gplan.n,) + w.shape[len(gplan.shape):])
        messages = messages * w.reshape(w.shape + (1,) * (len(feat) - (w.ndim - 1)))
    out = scatter(messages, xp.where(valid, splan.flat, splan.size), op, dim_size=splan.size, axis=axis,
                  fill_value=fill_value, mode="drop")
    return out.reshape(batch + splan.dims + feat)

