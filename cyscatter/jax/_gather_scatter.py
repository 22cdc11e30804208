"""`gather_scatter` (message passing in one pass, with edge weights and plans) as JAX primitives.

The operands are ``(src, weight?, gather_index?, scatter_index?)``: a plan (a `cyscatter.GatherScatterPlan`, made
once per graph outside the traced function) replaces the two indices and travels as a static parameter, so the
edges are never sent through the callback. The derivative in src of add, sub, mean and sqrt_n is the transposed
product (`cyscatter.gather_scatter_vjp_src`, which reads src for its shape only); the other ops' derivatives read
src and the output as residuals; the weight's derivative is `cyscatter.gather_scatter_vjp_weight`.
"""
from __future__ import annotations

import numpy as np

import cyscatter as cs
from cyscatter._plan.edges import missing_index
from cyscatter._registry.ops import ORDER_STATS
from cyscatter.jax import _primitives as P
from cyscatter.jax._args import as_indices, as_values, check_mode, is_traced, static_scalar, static_size
from cyscatter.jax._scatter import _scatter_dtype, locally_constant


def _unpack(rest, has_weight, has_index):
    weight = rest[0] if has_weight else None
    gi, si = (rest[-2], rest[-1]) if has_index else (None, None)
    return weight, gi, si


def _plan(plan):
    return None if plan is None else plan.value


def _kw(rest, params):
    weight, gi, si = _unpack(rest, params["has_weight"], params["has_index"])
    return (gi, si), {"weight": weight, "plan": _plan(params["plan"]), "mode": params["mode"]}


def _feature_values(first):
    """The batch axis may become a feature axis unless a weight holds features of its own."""
    def values(args, params):
        if params["has_weight"]:
            w = args[first]
            if int(np.prod(w.shape)) != (w.shape[0] if w.ndim else 1):
                return ()
        return tuple(range(first))
    return values


def _stacked(params):
    """The tuple indices among the operands (`_primitives.host_primitive`): gather_index and scatter_index last."""
    if not params["has_index"]:
        return ()
    return (-2, params["gather_coords"]), (-1, params["scatter_coords"])


def _axes(coords) -> int:
    """The dims of src (gather_coords) or of the output (scatter_coords) that an index addresses."""
    return 1 if coords is None else coords


def _gs_host(src, *rest, op, plan, dim_size, fill_value, mode, has_weight, has_index, gather_coords,
             scatter_coords):
    (gi, si), kw = _kw(rest, locals())
    return cs.gather_scatter(src, gi, si, op, dim_size=dim_size, fill_value=fill_value, **kw)


def _gs_result(src, *rest, op, plan, dim_size, fill_value, mode, has_weight, has_index, gather_coords,
               scatter_coords):
    dtype = np.result_type(src.dtype, rest[0].dtype) if has_weight else np.dtype(src.dtype)
    return ((*P.sizes(dim_size), *src.shape[_axes(gather_coords):]),
            _scatter_dtype(op, np.dtype(dtype), fill_value))


gs_p = P.host_primitive("gather_scatter", _gs_host, _gs_result, values=_feature_values(1), index=_stacked)


def _src_like(ct, rows, scatter_coords):
    """The shape of src (its first dims `rows`) for an output (a cotangent) of the shape of `ct`."""
    return (*P.sizes(rows), *ct.shape[_axes(scatter_coords):])


def _t_host(ct, *rest, op, plan, rows, dim_size, mode, has_weight, has_index, gather_coords, scatter_coords):
    (gi, si), kw = _kw(rest, locals())
    return cs.gather_scatter_vjp_src(op, ct, P.zeros_like_shape(_src_like(ct, rows, scatter_coords), ct.dtype), gi,
                                     si, dim_size=dim_size, **kw)


gs_t_p = P.host_primitive("gather_scatter_transpose", _t_host,
                          lambda ct, *rest, rows, scatter_coords, **params: (
                              _src_like(ct, rows, scatter_coords), np.dtype(ct.dtype)),
                          values=_feature_values(1), index=_stacked)


def _lin_host(t, src, out, *rest, op, plan, dim_size, mode, has_weight, has_index, **coords):
    (gi, si), kw = _kw(rest, locals())
    return cs.gather_scatter_jvp(op, src, gi, si, out, t, dim_size=dim_size, **kw)


def _lin_t_host(ct, src, out, *rest, op, plan, dim_size, mode, has_weight, has_index, **coords):
    (gi, si), kw = _kw(rest, locals())
    return cs.gather_scatter_vjp_src(op, ct, src, gi, si, out, dim_size=dim_size, **kw)


def _w_host(wdot, src, out, *rest, op, plan, dim_size, mode, has_weight, has_index, **coords):
    (gi, si), kw = _kw(rest, locals())
    return cs.gather_scatter_jvp(op, src, gi, si, out, None, weight_dot=wdot, dim_size=dim_size, **kw)


def _w_t_host(ct, src, out, *rest, op, plan, dim_size, mode, has_weight, has_index, **coords):
    (gi, si), kw = _kw(rest, locals())
    return cs.gather_scatter_vjp_weight(op, ct, src, gi, si, out, dim_size=dim_size, **kw)


def _like_out(first, src, out, *rest, **params):
    return out.shape, np.dtype(out.dtype)


def _like_src(first, src, out, *rest, **params):
    return src.shape, np.dtype(src.dtype)


def _like_weight(first, src, out, *rest, **params):
    return rest[0].shape, np.dtype(rest[0].dtype)


gs_lin_p = P.host_primitive("gather_scatter_jvp", _lin_host, _like_out, values=_feature_values(3), index=_stacked)
gs_lin_t_p = P.host_primitive("gather_scatter_vjp", _lin_t_host, _like_src, values=_feature_values(3),
                              index=_stacked)
# a weight's cotangent sums over the features: never batched as one
gs_w_p = P.host_primitive("gather_scatter_jvp_weight", _w_host, _like_out, values=(), index=_stacked)
gs_w_t_p = P.host_primitive("gather_scatter_vjp_weight", _w_t_host, _like_weight, values=(), index=_stacked)


def _frozen_unweighted(params, slots) -> bool:
    """src and out residuals of an op with locally constant partials, and no weight being differentiated."""
    return locally_constant(params, slots) and not (params["has_weight"] and 3 in slots)


def _always_dependent(params, slots) -> bool:
    return False


def _linear_params(params):
    return {k: v for k, v in params.items() if k != "fill_value"}


def _gs_tangent(tangents, primals, out, **params):
    src, rest = primals[0], primals[1:]
    lin = _linear_params(params)
    result = None
    if not P.is_zero(tangents[0]):
        t = tangents[0]
        if cs.get_op(params["op"]).linear:
            result = gs_p.bind(t, *rest, **{**params, "fill_value": None})
        else:
            result = gs_lin_p.bind(t, src, out, *rest, **lin)
    if params["has_weight"] and not P.is_zero(tangents[1]):
        term = gs_w_p.bind(tangents[1], src, out, *rest, **lin)
        result = term if result is None else result + term
    return result if result is not None else P.zero_tangent(out)


def _linear_transpose(ct, *rest, aval0, fill_value, gather_coords, **params):
    return gs_t_p.bind(ct, *rest, rows=P.leading(aval0.shape, gather_coords), gather_coords=gather_coords, **params)


def _t_transpose(ct, *rest, aval0, rows, **params):
    return gs_p.bind(ct, *rest, fill_value=None, **params)


P.def_nonlinear(gs_p, _gs_tangent)
P.def_transpose(gs_p, _linear_transpose)
P.def_linear(gs_t_p, _t_transpose, residuals_frozen=lambda params, slots: not params["has_weight"] or 1 not in slots,
             what="gather_scatter with a weight")
P.def_linear(gs_lin_p, lambda ct, *rest, aval0, **params: gs_lin_t_p.bind(ct, *rest, **params),
             residuals_frozen=_frozen_unweighted, what="gather_scatter")
P.def_linear(gs_lin_t_p, lambda ct, *rest, aval0, **params: gs_lin_p.bind(ct, *rest, **params),
             residuals_frozen=_frozen_unweighted, what="gather_scatter")
P.def_linear(gs_w_p, lambda ct, *rest, aval0, **params: gs_w_t_p.bind(ct, *rest, **params),
             residuals_frozen=_always_dependent, what="gather_scatter in its weight")
P.def_linear(gs_w_t_p, lambda ct, *rest, aval0, **params: gs_w_p.bind(ct, *rest, **params),
             residuals_frozen=_always_dependent, what="gather_scatter in its weight")


def gather_scatter(src, gather_index=None, scatter_index=None, op="add", *, weight=None, dim_size=None,
                   fill_value=None, mode=None, plan=None):
    """`cyscatter.gather_scatter` as a JAX function: ``out[scatter_index[e]] op= weight[e] * src[gather_index[e]]``
    over the edges e, in one pass (no E x F messages).

    Parameters
    ----------
    src : jax.Array, shape Dg + F
        The node rows; Dg = (n,) for an integer `gather_index`, m dims for a tuple of m coordinate arrays.
    gather_index, scatter_index : jax.Array of int, shape E, or a tuple of them, optional
        The edges (either index may be a tuple of per-axis coordinates of one shape E, NumPy advanced indexing, as
        `cyscatter.gather_scatter`); leave both out and pass `plan` instead (faster: the edges stay on the host).
    op : str
        Any name of `cyscatter.OPS`.
    weight : jax.Array, shape (E,) or (E, 1, ...), optional
        A factor per edge; differentiable too.
    dim_size : int or tuple of ints, optional
        The output's shape Ds (one size per coordinate of a tuple `scatter_index`); required when `scatter_index`
        is traced and there is no plan.
    fill_value : scalar, optional
        The value of a row no edge reaches (default: the op's).
    mode : str, optional
        As `cyscatter.gather_scatter`.
    plan : cyscatter.GatherScatterPlan, optional
        ``cyscatter.gather_scatter_plan(gather_index, scatter_index, src_size=n, dim_size=m)``, made once outside
        the traced function.

    Returns
    -------
    jax.Array, shape Ds + F
        The aggregated rows.

    Raises
    ------
    ValueError
        Neither a plan nor both indices; `dim_size` missing for a traced index, or not one size per coordinate;
        the two indices (or a tuple's arrays) of different shapes; op "median" / "nanmedian" (not taken here:
        scatter the gathered rows).
    TypeError
        A string in the `scatter_index` position (an op name: it goes after both indices; a (2, E) `gather_index`
        is PyG's edge_index, to split); a non-integer or list index; a non-integer `dim_size`.
    NotImplementedError
        A second derivative through a weight or of an op whose partials depend on the values (mul, div).

    Notes
    -----
    Derivatives: `cyscatter.gather_scatter_vjp_src`, `gather_scatter_vjp_weight` and `gather_scatter_jvp`; second
    order in src for add, sub, mean, sqrt_n, max and min (their partials are locally constant).
    """
    src = as_values(src)
    if src.ndim < 1:
        raise ValueError(f"src must have at least one dimension, got shape {tuple(src.shape)}")
    if isinstance(scatter_index, str):   # an op where the index goes; gather_index maybe PyG's edge_index whole
        raise TypeError(missing_index(gather_index, scatter_index))
    if isinstance(op, str) and op in ORDER_STATS:
        raise ValueError(f"cyscatter.jax.gather_scatter does not take op {op!r} (cyscatter.gather_scatter does): "
                         f"use cyscatter.jax.scatter(cyscatter.jax.gather(src, gather_index), scatter_index, {op!r})")
    op = cs.get_op(op).name
    if mode is not None:
        check_mode(mode)
    operands = [src]
    if weight is not None:
        operands.append(as_values(weight, "weight"))
    has_index = gather_index is not None or scatter_index is not None
    gather_coords = scatter_coords = None
    if has_index:
        if gather_index is None or scatter_index is None:
            raise ValueError(missing_index(gather_index, scatter_index))
        gi, gather_coords, gshape = as_indices(gather_index, "gather_index")
        si, scatter_coords, sshape = as_indices(scatter_index, "scatter_index")
        if gshape != sshape:   # one entry per edge in each
            raise ValueError(f"gather_index has shape {gshape} but scatter_index has shape {sshape}: one entry per "
                             "edge in each")
        operands += [gi, si]
    if plan is not None:
        if not isinstance(plan, cs.GatherScatterPlan):
            raise TypeError(f"plan must be a cyscatter.GatherScatterPlan, got {type(plan).__name__}")
        if not has_index:   # the plan's destination and source shapes say how many dims each side addresses
            gather_coords = len(plan.src_dims) if len(plan.src_dims) != 1 else None
            scatter_coords = len(plan.dims) if len(plan.dims) != 1 else None
        size = (plan.dims[0] if scatter_coords is None else tuple(plan.dims)) if dim_size is None else \
            static_size(dim_size, None, "dim_size", mode or "raise", "gather_scatter", scatter_coords)
    elif not has_index:
        raise ValueError("gather_scatter needs gather_index and scatter_index, or a plan")
    elif dim_size is None and is_traced(operands[-1]):
        raise ValueError("cyscatter.jax.gather_scatter: pass dim_size= (an int, or a tuple of ints for a tuple "
                         "scatter_index) or a plan when scatter_index is traced (under jax.jit or jax.vmap): JAX "
                         "needs the output's shape first")
    else:
        size = static_size(dim_size, operands[-1], "dim_size", mode or "raise", "gather_scatter", scatter_coords)
    if src.ndim < _axes(gather_coords):
        raise ValueError(f"src must have at least {_axes(gather_coords)} dimension(s), one per axis gather_index "
                         f"addresses, got shape {tuple(src.shape)}")
    fill = static_scalar(fill_value)
    return gs_p.bind(*operands, op=op, plan=None if plan is None else P.Static(plan), dim_size=size, fill_value=fill,
                     mode=mode, has_weight=weight is not None, has_index=has_index, gather_coords=gather_coords,
                     scatter_coords=scatter_coords)
