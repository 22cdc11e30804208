"""`scatter_into` as a JAX function: the reduction into a given array, returned as a new one (``dst.at[index].op``).

Differentiable in both `dst` and `src`: the tangent map of each is a linear primitive over the core's
``scatter_jvp(..., dst=, dst_dot=)``, transposed into ``scatter_vjp_src(..., dst=)`` and ``scatter_vjp_dst``.
"""
from __future__ import annotations

import numpy as np

import cyscatter as cs
from cyscatter.jax import _primitives as P
from cyscatter.jax._args import as_indices, as_values, batch_first, batch_last, check_mode, src_batch
from cyscatter.jax._scatter import locally_constant

into_p = P.host_primitive(
    "scatter_into",
    lambda dst, src, index, *, op, mode, sorted_: cs.scatter_into(np.array(dst), src, index, op, mode=mode,
                                                                  indices_are_sorted=sorted_),
    lambda dst, src, index, **params: (dst.shape, np.dtype(dst.dtype)), values=(0, 1), index=2)

# operands of the tangent maps: (tangent, dst, src, index, out)
src_lin_p = P.host_primitive(
    "scatter_into_jvp_src",
    lambda t, dst, src, index, out, *, op, mode: cs.scatter_jvp(op, src, index, out, t, dst=dst, mode=mode),
    lambda t, dst, src, index, out, **params: (out.shape, np.dtype(out.dtype)), values=(0, 1, 2, 4), index=3)
src_lin_t_p = P.host_primitive(
    "scatter_into_vjp_src",
    lambda ct, dst, src, index, out, *, op, mode: cs.scatter_vjp_src(op, ct, src, index, out, dst=dst, mode=mode),
    lambda ct, dst, src, index, out, **params: (src.shape, np.dtype(src.dtype)), values=(0, 1, 2, 4), index=3)
dst_lin_p = P.host_primitive(
    "scatter_into_jvp_dst",
    lambda t, dst, src, index, out, *, op, mode: cs.scatter_jvp(
        op, src, index, out, P.zeros_like_shape(src.shape, src.dtype), dst=dst, dst_dot=t, mode=mode),
    lambda t, dst, src, index, out, **params: (out.shape, np.dtype(out.dtype)), values=(0, 1, 2, 4), index=3)
dst_lin_t_p = P.host_primitive(
    "scatter_into_vjp_dst",
    lambda ct, dst, src, index, out, *, op, mode: cs.scatter_vjp_dst(op, ct, dst, src, index, out, mode=mode),
    lambda ct, dst, src, index, out, **params: (dst.shape, np.dtype(dst.dtype)), values=(0, 1, 2, 4), index=3)

for _lin, _t in ((src_lin_p, src_lin_t_p), (dst_lin_p, dst_lin_t_p)):
    P.def_linear(_lin, lambda ct, *rest, aval0, _t=_t, **params: _t.bind(ct, *rest, **params),
                 residuals_frozen=locally_constant, what="scatter_into")
    P.def_linear(_t, lambda ct, *rest, aval0, _lin=_lin, **params: _lin.bind(ct, *rest, **params),
                 residuals_frozen=locally_constant, what="scatter_into")


def _into_tangent(tangents, primals, out, *, op, mode, sorted_, coords):
    dst, src, index = primals
    terms = []
    if not P.is_zero(tangents[1]):
        terms.append(src_lin_p.bind(tangents[1], dst, src, index, out, op=op, mode=mode, coords=coords))
    if not P.is_zero(tangents[0]):
        terms.append(dst_lin_p.bind(tangents[0], dst, src, index, out, op=op, mode=mode, coords=coords))
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


P.def_nonlinear(into_p, _into_tangent)


def scatter_into(dst, src, index, op="add", *, axis=0, mode="raise", indices_are_sorted=False):
    """`cyscatter.scatter_into` as a JAX function: ``dst`` with ``dst[index[i]] op= src[i]``, as a new array
    (JAX's ``dst.at[index].add(src)``, ``.multiply``, ``.max``, ``.min``, ``.set``; a tuple index:
    ``dst.at[(*batch, *index)]``).

    Parameters
    ----------
    dst : jax.Array, shape B + D + F
        The initial values; not modified (JAX arrays are immutable). D = (n,) for an integer index, m dims for
        a tuple of m coordinates.
    src : jax.Array, shape B + I + F
        The values to combine in; cast to dst's dtype (NumPy's same-kind rule); B = ``src.shape[:axis]``.
    index : jax.Array of int, shape I, or a tuple of m of them
        The row of `dst` each entry goes to, or its m coordinates (one shape, as `cyscatter.scatter_into`).
    op : str
        Any name of `cyscatter.OPS`.
    axis : int
        Where the index dims start in `src` (and D in `dst`).
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}
        Out-of-range indices, as `cyscatter.scatter_into`.
    indices_are_sorted : bool
        A promise that `index` is sorted.

    Returns
    -------
    jax.Array, shape dst.shape
        The combined values, in dst's dtype.

    Raises
    ------
    ValueError
        An unknown `mode`; `src` without the index's shape at `axis`; `dst` not B + D + F (src's batch and
        feature shapes); the arrays of a tuple index of different shapes.
    TypeError
        A non-integer or list `index`, a non-integer `axis`.
    NotImplementedError
        A second derivative of mul, div or nanprod.

    Notes
    -----
    Differentiable in `dst` and `src` (`cyscatter.scatter_vjp_dst`, `cyscatter.scatter_vjp_src`): the initial value
    counts as a candidate of max/min, ties split evenly.
    """
    dst, src, (index, coords, ishape) = as_values(dst, "dst"), as_values(src), as_indices(index)
    batch = src_batch(src, ishape, axis)
    m = 1 if coords is None else coords
    features = tuple(src.shape[batch + len(ishape):])
    if (dst.ndim != batch + m + len(features) or tuple(dst.shape[:batch]) != tuple(src.shape[:batch])
            or tuple(dst.shape[batch + m:]) != features):
        raise ValueError(f"dst shape {tuple(dst.shape)} does not hold src's batch shape {tuple(src.shape[:batch])} "
                         f"and features {features} around the {m} addressed dim(s)")
    out = into_p.bind(batch_last(dst, batch), batch_last(src, batch), index, op=cs.get_op(op).name,
                      mode=check_mode(mode), sorted_=bool(indices_are_sorted), coords=coords)
    return batch_first(out, batch)
