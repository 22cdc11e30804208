"""Plumbing shared by the group ops built from the core kernels (softmax family, moments, arg-extremes):
float dtype rules and the validated index on the canonical (outer, rows, inner) view."""
from __future__ import annotations

import numpy as np

from cyscatter._canonical import prod, rows_view
from cyscatter._index import parse_coords, plan_index
from cyscatter._rules import Reverse
from cyscatter._scatter import split_src


def float_dtypes(dtype, name: str, *, complex_ok: bool = False) -> tuple[np.dtype, np.dtype]:
    """(result dtype, compute dtype) of a float-valued group op: integers give float64, float16 computes in
    float32; complex only where `complex_ok`; TypeError naming the op and dtype otherwise."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if dtype.kind == "f":
        return dtype, np.dtype(np.float32) if dtype == np.float16 else dtype
    if dtype.kind == "c" and complex_ok:
        return dtype, dtype
    allowed = "integers, float16/32/64" + (", complex64/128" if complex_ok else "")
    raise TypeError(f"{name} does not support src dtype {dtype} (supported: {allowed})")


def group_view(src, index, dim_size, axis, mode, compute) -> tuple[Reverse, tuple, tuple]:
    """(context, batch shape B, feature shape F): the validated index plan and `src` as (outer, n, inner) in
    `compute`, with the core's take (gather) and put (scatter) helpers."""
    src = np.asarray(src)
    coords = parse_coords(index)
    axis, batch, feat = split_src(src, coords, axis)
    plan = plan_index(index, dim_size, mode, coords=coords)
    src3 = rows_view(src, compute, prod(batch), plan.n, prod(feat))
    return Reverse(plan, src3, None, None), batch, feat


def dst_shape(ctx: Reverse, batch: tuple, feat: tuple) -> tuple:
    return batch + ctx.plan.dims + feat


def src_shape(ctx: Reverse, batch: tuple, feat: tuple) -> tuple:
    return batch + ctx.plan.shape + feat
