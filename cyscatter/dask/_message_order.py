"""gather_scatter's order statistics (median, nanmedian) on Dask arrays: the messages gathered, then reduced by
whole groups (`cyscatter.dask.scatter`'s median), since a median cannot be merged from the per-block-pair
partials of the other ops."""
from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

from cyscatter.dask._gather import gather
from cyscatter.dask._graph import as_dask
from cyscatter.dask._quantile import scatter_or_median


def _kept(coords: tuple[Any, ...], dims: tuple[int, ...], mode: str) -> Any:
    """Where every coordinate of an edge's gather index is in range (under the dropping modes): a lazy bool."""
    kept = None
    for c, n in zip(coords, dims, strict=True):
        c = as_dask(c)
        ok = (c >= (-n if mode == "normalize_drop" else 0)) & (c < n)
        kept = ok if kept is None else kept & ok
    return kept


def order_stat_gather_scatter(graph: Any, gather_index: Any, scatter_index: Any, op: str, fill_value: Any,
                              dim_chunks: Any, split_every: int) -> da.Array:
    """`graph` (an `EdgeGraph`, the arguments checked) reduced by `op` over whole groups: gather, weight, then
    `cyscatter.dask.scatter(..., op)`. An edge whose gather index is dropped is dropped from the scatter too."""
    plan, mode = graph.plan, graph.plan.mode
    messages = gather(graph.src, gather_index, axis=graph.nb, mode=mode)
    if graph.weight is not None:
        w = graph.weight   # I + W, its dims W padded to broadcast against the feature dims
        messages = messages * w.reshape(w.shape + (1,) * (len(graph.feat) - graph.w_dims))
    if mode in ("drop", "normalize_drop"):
        g = gather_index if isinstance(gather_index, tuple) else (gather_index,)
        t = scatter_index if isinstance(scatter_index, tuple) else (scatter_index,)
        kept = _kept(g, plan.src_dims, mode)
        first = da.where(kept, as_dask(t[0]), np.int64(plan.dims[0]))   # past the end: dropped
        scatter_index = (first,) + tuple(t[1:]) if isinstance(scatter_index, tuple) else first
    result: da.Array = scatter_or_median(messages, scatter_index, op, dim_size=plan.dims, axis=graph.nb,
                                         fill_value=fill_value, mode=mode, dim_chunks=dim_chunks,
                                         split_every=split_every)
    return result
