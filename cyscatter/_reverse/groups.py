"""VJPs and JVPs of the group ops beyond the core (softmax family, moments, CSR segments), free of any autodiff
framework, in the style of `cyscatter._reverse.scatter`. Each is built from scatter-add and gather, so an AD system that
registers those as primitives gets every higher derivative too.

The Jacobians, per group with softmax y (p for logsumexp) and deviations d = x - mean:
logsumexp ``p^T``; softmax ``diag(y) - y y^T`` (symmetric: the VJP and JVP are one map); log-softmax
``I - 1 y^T``; var ``2 d^T / (count - ddof)``; std ``d^T / ((count - ddof) std)``.
"""
from __future__ import annotations

import numpy as np

from cyscatter._backends.select import backend_of
from cyscatter._plan.groups import group_view
from cyscatter._plan.index import parse_coords
from cyscatter._plan.layout import expand_cast, src_layout
from cyscatter._plan.values import _float_dtype, check_given, check_numeric


def _grad_dtype(name: str, *arrays) -> np.dtype:
    dtype = _float_dtype(*arrays)
    if dtype.kind == "c":
        raise TypeError(f"{name} differentiates real inputs only, got dtype {dtype}")
    return dtype


def _check_shape(name: str, arr, like: str, shape: tuple):
    if arr.shape != shape:
        raise ValueError(f"{name} shape {arr.shape} != {like} shape {shape}")
    return arr


def _dst_view(name, src, index, out, axis, mode, **given):
    """Context for an op whose output has shape B + D + F (groups read off `out`), on the arrays' backend, the
    canonical rows of `out` and of the one array in `given`: `grad_out` (shaped like out) or `src_dot` (shaped
    like src), and the shape B + I + F that src broadcasts to (`src_layout`; `unbroadcast` takes a cotangent
    back to src's own shape)."""
    (arg, value), = given.items()
    for arg, value in (("src", src), ("out", out), (arg, value)):
        check_given(arg, value)
    grad_out, src_dot = given.get("grad_out"), given.get("src_dot")
    be = backend_of(src=src, index=index, out=out, grad_out=grad_out, src_dot=src_dot)
    src, out = check_numeric(be.asarray(src), "src"), check_numeric(be.asarray(out), "out")
    coords = parse_coords(index, be=be)
    axis, batch, feat, expected = src_layout(src.shape, coords, axis, table_shape=out.shape, table_arg="out")
    m = len(coords)
    dims = out.shape[axis:axis + m]
    given = {k: _check_shape(k, check_numeric(be.asarray(v), k), *(("out", out.shape) if k != "src_dot" else
                                                                    ("src", src.shape)))
             for k, v in (("grad_out", grad_out), ("src_dot", src_dot)) if v is not None}
    dtype = _grad_dtype(name, src, out, *given.values())
    if "src_dot" in given:   # the tangent of a broadcast src is broadcast as src is
        given["src_dot"] = expand_cast(given["src_dot"], expected, len(feat), dtype, be.xp)
    src = expand_cast(src, expected, len(feat), dtype, be.xp)
    ctx = group_view(name, src, index, dims, axis, mode, compute=dtype)[0]
    outer, _, inner = ctx.shape3
    rows = {k: be.rows_view(v, dtype, outer, ctx.plan.n if k == "src_dot" else ctx.plan.size, inner)
            for k, v in (("out", out), *given.items())}
    return ctx, rows, expected


def _src_view(name, out, index, dim_size, axis, mode, other_name, other):
    """Context for an op whose output has the shape of src (softmax): `out` as the rows, and `other` alike."""
    check_given("out", out)
    check_given(other_name, other)
    be = backend_of(out=out, index=index, **{other_name: other})
    out = check_numeric(be.asarray(out), "out")
    other = _check_shape(other_name, check_numeric(be.asarray(other), other_name), "out", out.shape)
    dtype = _grad_dtype(name, out, other)
    ctx = group_view(name, out, index, dim_size, axis, mode, compute=dtype, src_arg="out", broadcast=False)[0]
    return ctx, be.rows_view(other, dtype, *ctx.shape3)
