"""Plumbing shared by the group ops built from the core kernels (softmax family, moments): float dtype rules and
the validated index on the canonical (outer, rows, inner) view, on the backend the arrays live on."""
from __future__ import annotations

import numpy as np

from cyscatter._arrays.dtypes import float_kind, native
from cyscatter._arrays.integers import prod
from cyscatter._backends.context import Reverse
from cyscatter._backends.select import backend_of
from cyscatter._plan.index import check_table_bytes, parse_coords, plan_index
from cyscatter._plan.layout import expand_cast, split_src, src_layout
from cyscatter._plan.values import size_arg


def float_dtypes(dtype, name: str, *, complex_ok: bool = False, arg: str = "src") -> tuple[np.dtype, np.dtype]:
    """(result dtype, compute dtype) of a float-valued group op: integers give float64, float16 computes in
    float32; complex only where `complex_ok`; TypeError naming the op and dtype otherwise. The dtypes are native
    (the kernels have no loops for swapped bytes; NumPy's ufuncs give native results too)."""
    dtype = native(dtype)
    if dtype.kind in "iu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if float_kind(dtype) == "f":   # float16 and bfloat16 compute in float32
        return dtype, np.dtype(np.float32) if dtype.itemsize == 2 else dtype
    if dtype.kind == "c" and complex_ok:
        return dtype, dtype
    allowed = "integers, float16/32/64, bfloat16" + (", complex64/128" if complex_ok else "")
    raise TypeError(f"{name} does not support {arg} dtype {dtype} (supported: {allowed})")


def group_view(name, src, index, dim_size, axis, mode, *, compute=None, complex_ok=False, src_arg="src",
               broadcast=True):
    """(context, result dtype, batch shape B, feature shape F) of a group op on `src` (NumPy or CuPy).

    The context holds the validated index plan, `src` as (outer, n, inner) in the compute dtype (`compute`, or
    the `float_dtypes` rule), and the core's take (gather) and put (scatter) helpers on the arrays' backend.
    `src_arg` is the argument that holds `src`, for the errors. `broadcast`: `src` may broadcast against the
    shape B + I + F it stands for (see `cyscatter._api.scatter.src_layout`); False where it must have that shape.
    """
    be = backend_of(src=src, index=index)
    src = be.asarray(src)
    result, rule_compute = float_dtypes(src.dtype, name, complex_ok=complex_ok, arg=src_arg)
    coords = parse_coords(index, xp=be.xp)
    compute = compute or rule_compute
    if broadcast:
        axis, batch, feat, expected = src_layout(src.shape, coords, axis, src_arg)
        src = expand_cast(src, expected, len(feat), compute, be.xp)
    else:
        axis, batch, feat = split_src(src, coords, axis, src_arg)
    plan = plan_index(None, dim_size, mode, coords=coords)
    check_table_bytes((prod(batch), plan.size, prod(feat)), compute, *size_arg(dim_size, plan))
    src3 = be.rows_view(src, compute, prod(batch), plan.n, prod(feat))
    return Reverse(be, plan, src3, None, None), result, batch, feat


def dst_shape(ctx: Reverse, batch: tuple, feat: tuple) -> tuple:
    return batch + ctx.plan.dims + feat


def src_shape(ctx: Reverse, batch: tuple, feat: tuple) -> tuple:
    return batch + ctx.plan.shape + feat
