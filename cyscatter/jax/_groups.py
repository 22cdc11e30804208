"""The group statistics as JAX primitives: softmax, log_softmax, logsumexp, var and std (and the NaN-skipping
var/std), each differentiated by its split reverse functions (first order; their partial derivatives depend on the
values, so a second derivative raises NotImplementedError)."""
from __future__ import annotations

import functools

import numpy as np

import cyscatter as cs
from cyscatter.jax import _primitives as P
from cyscatter.jax._args import as_indices, as_values, batch_first, batch_last, check_mode, src_batch, static_size
from cyscatter.jax._scatter import locally_constant

# ---- softmax and log_softmax: shaped like src, their rules read the output ------------------------------------------

softmax_p = P.host_primitive(
    "softmax",
    lambda src, index, *, fun, dim_size, mode: getattr(cs, fun)(src, index, dim_size=dim_size, mode=mode),
    lambda src, index, *, fun, dim_size, mode: (src.shape, _group_dtype(fun, np.dtype(src.dtype))),
    index=1)

softmax_lin_p = P.host_primitive(
    "softmax_jvp",
    lambda t, out, index, *, fun, dim_size, mode: getattr(cs, fun + "_jvp")(out, index, t, dim_size=dim_size,
                                                                             mode=mode),
    lambda t, out, index, *, fun, dim_size, mode: (out.shape, np.dtype(out.dtype)), values=(0, 1), index=2)

softmax_lin_t_p = P.host_primitive(
    "softmax_vjp",
    lambda ct, out, index, *, fun, dim_size, mode: getattr(cs, fun + "_vjp")(ct, out, index, dim_size=dim_size,
                                                                              mode=mode),
    lambda ct, out, index, *, fun, dim_size, mode: (out.shape, np.dtype(out.dtype)), values=(0, 1), index=2)


def _values_dependent(params, slots) -> bool:
    return False


P.def_nonlinear(softmax_p, lambda tangents, primals, out, **params: softmax_lin_p.bind(
    P.instantiate(tangents[0], out), out, primals[1], **params))
P.def_linear(softmax_lin_p, lambda ct, out, index, *, aval0, **params: softmax_lin_t_p.bind(ct, out, index, **params),
             residuals_frozen=_values_dependent, what="scatter_softmax")
P.def_linear(softmax_lin_t_p, lambda ct, out, index, *, aval0, **params: softmax_lin_p.bind(ct, out, index, **params),
             residuals_frozen=_values_dependent, what="scatter_softmax")

# ---- logsumexp, var, std: one row per group, their rules read src and the output ------------------------------------


@functools.cache
def _group_dtype_raw(fun, dtype):
    return getattr(cs, fun)(np.zeros((1, 1), dtype), np.zeros(1, np.intp), dim_size=1).dtype


def _group_dtype(*args):
    """The cached probe's dtype as JAX gives it now (x64 may be switched between calls)."""
    return P.canonical(_group_dtype_raw(*args))


def _extra(fun, ddof):
    return {} if ddof is None else {"ddof": ddof}


group_p = P.host_primitive(
    "group_statistic",
    lambda src, index, *, fun, ddof, dim_size, mode: getattr(cs, fun)(src, index, dim_size=dim_size, mode=mode,
                                                                      **_extra(fun, ddof)),
    lambda src, index, *, fun, ddof, dim_size, mode: ((*P.sizes(dim_size), *src.shape[len(P.index_shape(index)):]),
                                                      _group_dtype(fun, np.dtype(src.dtype))), index=1)

group_lin_p = P.host_primitive(
    "group_statistic_jvp",
    lambda t, src, index, out, *, fun, ddof, mode: getattr(cs, fun + "_jvp")(src, index, out, t, mode=mode,
                                                                             **_extra(fun, ddof)),
    lambda t, src, index, out, *, fun, ddof, mode: (out.shape, np.dtype(out.dtype)), values=(0, 1, 3), index=2)

group_lin_t_p = P.host_primitive(
    "group_statistic_vjp",
    lambda ct, src, index, out, *, fun, ddof, mode: getattr(cs, fun + "_vjp")(ct, src, index, out, mode=mode,
                                                                              **_extra(fun, ddof)),
    lambda ct, src, index, out, *, fun, ddof, mode: (src.shape, np.dtype(out.dtype)), values=(0, 1, 3), index=2)


def _group_tangent(tangents, primals, out, *, fun, ddof, dim_size, mode, coords):
    src, index = primals
    return group_lin_p.bind(P.instantiate(tangents[0], src).astype(out.dtype), src, index, out, fun=fun, ddof=ddof,
                            mode=mode, coords=coords)


P.def_nonlinear(group_p, _group_tangent)
P.def_linear(group_lin_p, lambda ct, src, index, out, *, aval0, **params: group_lin_t_p.bind(
    ct, src, index, out, **params), residuals_frozen=_values_dependent, what="the group statistic")
P.def_linear(group_lin_t_p, lambda ct, src, index, out, *, aval0, **params: group_lin_p.bind(
    ct, src, index, out, **params), residuals_frozen=_values_dependent, what="the group statistic")


def _args(src, index, dim_size, axis, mode, fun):
    """(src with its batch dims last, index operand, its static parameters, batch dims)."""
    import jax.numpy as jnp
    src, (index, coords, ishape) = as_values(src), as_indices(index)
    if not jnp.issubdtype(src.dtype, jnp.inexact):
        src = src.astype(jnp.result_type(float))
    batch = src_batch(src, ishape, axis)
    mode = check_mode(mode)
    size = static_size(dim_size, index, "dim_size", mode, fun, coords)
    return batch_last(src, batch), index, {"dim_size": size, "mode": mode, "coords": coords}, batch


_DOC = """`cyscatter.{fun}` as a JAX function, differentiable (first order) under jit, grad, jvp and vmap.

    Parameters
    ----------
    src : jax.Array, shape B + I + F
        Integer values are cast to JAX's default float first; B = ``src.shape[:axis]``, batch dims.
    index : jax.Array of int, shape I, or a tuple of m of them
        The group of each entry, or its m coordinates (one shape, as `cyscatter.{fun}`).
    {ddof}dim_size : int or tuple of m ints, optional
        The destination shape D (the groups); required when `index` is traced.
    axis : int
        Where the index dims start in `src`.
    mode : {{"raise", "drop", "wrap", "clip", "normalize_drop"}}
        Out-of-range indices, as `cyscatter.{fun}`.

    Returns
    -------
    jax.Array, shape {shape}
        A float dtype.

    Raises
    ------
    ValueError
        `dim_size` missing for a traced index (or not m sizes), an unknown `mode`, `src` without the index shape
        at `axis`.
    TypeError
        A non-integer or list `index`, a non-integer `dim_size` or `axis`.
    NotImplementedError
        A second derivative.

    Notes
    -----
    The derivatives are `cyscatter.{fun}_vjp` / `cyscatter.{fun}_jvp`.
    """
_DDOF = "ddof : float\n        Delta degrees of freedom (NumPy's).\n    "


def _softmax(fun):
    def softmax(src, index, *, dim_size=None, axis=0, mode="raise"):
        src, index, params, batch = _args(src, index, dim_size, axis, mode, fun)
        return batch_first(softmax_p.bind(src, index, fun=fun, **params), batch)
    softmax.__name__ = softmax.__qualname__ = fun
    softmax.__doc__ = _DOC.format(fun=fun, ddof="", shape="src.shape (B + I + F)")
    return softmax


def _statistic(fun, takes_ddof):
    def with_ddof(src, index, *, ddof=0, dim_size=None, axis=0, mode="raise"):
        src, index, params, batch = _args(src, index, dim_size, axis, mode, fun)
        return batch_first(group_p.bind(src, index, fun=fun, ddof=float(ddof), **params), batch)

    def without(src, index, *, dim_size=None, axis=0, mode="raise"):
        src, index, params, batch = _args(src, index, dim_size, axis, mode, fun)
        return batch_first(group_p.bind(src, index, fun=fun, ddof=None, **params), batch)
    statistic = with_ddof if takes_ddof else without
    statistic.__name__ = statistic.__qualname__ = fun
    statistic.__doc__ = _DOC.format(fun=fun, ddof=_DDOF if takes_ddof else "", shape="B + D + F")
    return statistic


scatter_softmax = _softmax("scatter_softmax")
scatter_log_softmax = _softmax("scatter_log_softmax")
scatter_logsumexp = _statistic("scatter_logsumexp", False)
scatter_var = _statistic("scatter_var", True)
scatter_std = _statistic("scatter_std", True)
scatter_nanvar = _statistic("scatter_nanvar", True)
scatter_nanstd = _statistic("scatter_nanstd", True)


# ---- grouped scans: shaped like src; the running max/min select a winner, so their second derivative is zero -----

def _scan_kw(dim_size, mode, exclusive, reverse):
    return {"dim_size": dim_size, "mode": mode, "exclusive": exclusive, "reverse": reverse}


scan_p = P.host_primitive(
    "scan",
    lambda src, index, *, op, dim_size, mode, exclusive, reverse: cs.scatter_scan(
        src, index, op, **_scan_kw(dim_size, mode, exclusive, reverse)),
    lambda src, index, **params: (src.shape, _group_dtype("scatter_scan", np.dtype(src.dtype))), index=1)

scan_lin_p = P.host_primitive(
    "scan_jvp",
    lambda t, src, index, *, op, dim_size, mode, exclusive, reverse: cs.scatter_scan_jvp(
        op, src, index, t, **_scan_kw(dim_size, mode, exclusive, reverse)),
    lambda t, src, index, **params: (src.shape, np.dtype(src.dtype)), values=(0, 1), index=2)

scan_lin_t_p = P.host_primitive(
    "scan_vjp",
    lambda ct, src, index, *, op, dim_size, mode, exclusive, reverse: cs.scatter_scan_vjp(
        op, ct, src, index, **_scan_kw(dim_size, mode, exclusive, reverse)),
    lambda ct, src, index, **params: (src.shape, np.dtype(src.dtype)), values=(0, 1), index=2)

P.def_nonlinear(scan_p, lambda tangents, primals, out, **params: scan_lin_p.bind(
    P.instantiate(tangents[0], primals[0]), *primals, **params))
P.def_linear(scan_lin_p, lambda ct, src, index, *, aval0, **params: scan_lin_t_p.bind(ct, src, index, **params),
             residuals_frozen=locally_constant, what="scatter_scan")
P.def_linear(scan_lin_t_p, lambda ct, src, index, *, aval0, **params: scan_lin_p.bind(ct, src, index, **params),
             residuals_frozen=locally_constant, what="scatter_scan")


def scatter_scan(src, index, op="add", *, dim_size=None, axis=0, mode="raise", exclusive=False, reverse=False):
    """`cyscatter.scatter_scan` as a JAX function: the running reduction of each group, in index order.

    Parameters
    ----------
    src : jax.Array, shape B + I + F
        The values; B = ``src.shape[:axis]``, batch dims.
    index : jax.Array of int, shape I, or a tuple of m of them
        The group of each entry, or its m coordinates (one shape, as `cyscatter.scatter_scan`).
    op : {"add", "mul", "max", "min"}
        The running reduction.
    dim_size : int or tuple of m ints, optional
        The destination shape D (as `cyscatter.scatter_scan`; never needed for the output's shape).
    axis : int
        Where the index dims start in `src`.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}
        Out-of-range indices, as `cyscatter.scatter_scan`.
    exclusive : bool
        Each entry's result leaves the entry itself out (starts from the op's identity).
    reverse : bool
        Run from the last entry to the first.

    Returns
    -------
    jax.Array, shape src.shape
        The running values, in src's dtype.

    Raises
    ------
    ValueError
        An op without a running form, an unknown `mode`, `src` without the index shape at `axis`, `dim_size` not
        m sizes.
    TypeError
        A non-integer or list `index`, a non-integer `dim_size` or `axis`.
    NotImplementedError
        A second derivative of mul (first order only; add, max and min have every order).

    Notes
    -----
    The derivatives are `cyscatter.scatter_scan_vjp` / `cyscatter.scatter_scan_jvp` (mul exact with zeros, ties
    of max/min split as the core splits them).
    """
    src, (index, coords, ishape) = as_values(src), as_indices(index)
    batch = src_batch(src, ishape, axis)
    op = cs.get_op(op)
    if not op.scans:
        raise ValueError(f"op {op.name!r} has no running form; scatter_scan takes add, mul, max or min")
    mode = check_mode(mode)
    if dim_size is not None:   # checked as the output's sizes are (it is never inferred: the shape is src's)
        dim_size = static_size(dim_size, index, "dim_size", mode, "scatter_scan", coords)
    out = scan_p.bind(batch_last(src, batch), index, op=op.name, dim_size=dim_size, mode=mode,
                      exclusive=bool(exclusive), reverse=bool(reverse), coords=coords)
    return batch_first(out, batch)
