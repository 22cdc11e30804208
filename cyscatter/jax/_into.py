"""`scatter_into` as a JAX function: the reduction into a given array, returned as a new one (``dst.at[index].op``).

Differentiable in both `dst` and `src`: the tangent map of each is a linear primitive over the core's
``scatter_jvp(..., dst=, dst_dot=)``, transposed into ``scatter_vjp_src(..., dst=)`` and ``scatter_vjp_dst``.
"""
from __future__ import annotations

import numpy as np

import cyscatter as cs
from cyscatter.jax import _primitives as P
from cyscatter.jax._scatter import as_index, as_values, check_leading, check_mode, locally_constant

into_p = P.host_primitive(
    "scatter_into",
    lambda dst, src, index, *, op, mode, sorted_: cs.scatter_into(np.array(dst), src, index, op, mode=mode,
                                                                  indices_are_sorted=sorted_),
    lambda dst, src, index, **params: (dst.shape, np.dtype(dst.dtype)), values=(0, 1))

# operands of the tangent maps: (tangent, dst, src, index, out)
src_lin_p = P.host_primitive(
    "scatter_into_jvp_src",
    lambda t, dst, src, index, out, *, op, mode: cs.scatter_jvp(op, src, index, out, t, dst=dst, mode=mode),
    lambda t, dst, src, index, out, **params: (out.shape, np.dtype(out.dtype)), values=(0, 1, 2, 4))
src_lin_t_p = P.host_primitive(
    "scatter_into_vjp_src",
    lambda ct, dst, src, index, out, *, op, mode: cs.scatter_vjp_src(op, ct, src, index, out, dst=dst, mode=mode),
    lambda ct, dst, src, index, out, **params: (src.shape, np.dtype(src.dtype)), values=(0, 1, 2, 4))
dst_lin_p = P.host_primitive(
    "scatter_into_jvp_dst",
    lambda t, dst, src, index, out, *, op, mode: cs.scatter_jvp(
        op, src, index, out, P.zeros_like_shape(src.shape, src.dtype), dst=dst, dst_dot=t, mode=mode),
    lambda t, dst, src, index, out, **params: (out.shape, np.dtype(out.dtype)), values=(0, 1, 2, 4))
dst_lin_t_p = P.host_primitive(
    "scatter_into_vjp_dst",
    lambda ct, dst, src, index, out, *, op, mode: cs.scatter_vjp_dst(op, ct, dst, src, index, out, mode=mode),
    lambda ct, dst, src, index, out, **params: (dst.shape, np.dtype(dst.dtype)), values=(0, 1, 2, 4))

for _lin, _t in ((src_lin_p, src_lin_t_p), (dst_lin_p, dst_lin_t_p)):
    P.def_linear(_lin, lambda ct, *rest, aval0, _t=_t, **params: _t.bind(ct, *rest, **params),
                 residuals_frozen=locally_constant, what="scatter_into")
    P.def_linear(_t, lambda ct, *rest, aval0, _lin=_lin, **params: _lin.bind(ct, *rest, **params),
                 residuals_frozen=locally_constant, what="scatter_into")


def _into_tangent(tangents, primals, out, *, op, mode, sorted_):
    dst, src, index = primals
    terms = []
    if not P.is_zero(tangents[1]):
        terms.append(src_lin_p.bind(tangents[1], dst, src, index, out, op=op, mode=mode))
    if not P.is_zero(tangents[0]):
        terms.append(dst_lin_p.bind(tangents[0], dst, src, index, out, op=op, mode=mode))
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


P.def_nonlinear(into_p, _into_tangent)


def scatter_into(dst, src, index, op="add", *, mode="raise", indices_are_sorted=False):
    """`cyscatter.scatter_into` as a JAX function: ``dst`` with ``dst[index[i]] op= src[i]``, as a new array
    (JAX's ``dst.at[index].add(src)``, ``.multiply``, ``.max``, ``.min``, ``.set``).

    Parameters
    ----------
    dst : jax.Array, shape (m,) + F
        The initial values; not modified (JAX arrays are immutable).
    src : jax.Array, shape index.shape + F
        The values to combine in; cast to dst's dtype (NumPy's same-kind rule).
    index : jax.Array of int, shape I
        The row of `dst` each entry goes to.
    op : str
        Any name of `cyscatter.OPS`.
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
        An unknown `mode`; `src` not starting with the index's shape, or not ending with dst's feature shape.
    TypeError
        A non-integer `index`.
    NotImplementedError
        A second derivative of mul, div or nanprod.

    Notes
    -----
    Differentiable in `dst` and `src` (`cyscatter.scatter_vjp_dst`, `cyscatter.scatter_vjp_src`): the initial value
    counts as a candidate of max/min, ties split evenly.
    """
    dst, src, index = as_values(dst, "dst"), as_values(src), as_index(index)
    check_leading(src, index)
    if dst.ndim < 1 or tuple(dst.shape[1:]) != tuple(src.shape[index.ndim:]):
        raise ValueError(f"dst shape {tuple(dst.shape)} does not hold src's features {tuple(src.shape[index.ndim:])}")
    return into_p.bind(dst, src, index, op=cs.get_op(op).name, mode=check_mode(mode),
                       sorted_=bool(indices_are_sorted))
