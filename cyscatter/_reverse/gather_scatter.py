"""Split reverse functions of `gather_scatter`: gradients with respect to `src` and `weight`, and the JVP.

Framework-free, like `scatter_vjp_src`. For add, sub and mean they are fused passes too: the `src` gradient is the
transposed product (the same kernel along the CSR by source row), the `weight` gradient one dot product per edge
(SDDMM); max/min find each output element's tied winning edges again (the forward's exact messages) and split the
cotangent evenly among them, as `scatter` does, and the same kernels serve the NaN-skipping fmax/fmin (a NaN
message never wins) and, on real values, nansum/nanmean (the non-NaN messages, nanmean's cotangent divided by
their count); none of them allocates an E x F array. mul and div, whose derivatives need the product of the other
members of a group, go through the materialised messages and the core `scatter` rules, and so do max/min on
integer messages (whose ties are those of the integers, compared, as `scatter_vjp_src` compares them, in float64:
exact up to 2**53), nanprod, and complex nansum/nanmean (`scatter_vjp_src`'s rules on the messages, a NaN message
passing nothing to its src row or weight).

The host implementation is `gather_scatter_host`, the CuPy one `gather_scatter_cuda`: each public function finds
its arrays' backend and calls the module named after it (`_implementation`).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._plan.edges import GatherScatterPlan
    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, OpLike


# backend name -> the module that runs these functions on that backend (at its first call: see `_implementation`)
_BY_BACKEND: dict = {}


def _implementation(be):
    """The module gather_scatter_<be.name> beside this one, which runs the reverse functions on backend `be`
    (`vjp_src`, `vjp_weight`, `jvp`): imported at the first call on that backend (the CUDA one imports the kernel
    builder and is never imported for host arrays)."""
    module = _BY_BACKEND[be.name] = importlib.import_module(f"{__name__}_{be.name}")
    return module


@fill_doc
def gather_scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike | None = None,
                           scatter_index: IndexLike | None = None, out: ArrayInput | None = None, *,
                           weight: ArrayInput | None = None, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                           mode: Mode | None = None, plan: GatherScatterPlan | None = None,
                           num_threads: SupportsIndex | None = None, **porting: object) -> Any:
    """Gradient of `gather_scatter` with respect to `src`: the VJP ``grad_out -> grad_src``.

    For add it is the transposed product ``grad_src[s] = sum over edges e from s of weight[e] * grad_out[d_e]``
    (``A.T @ grad_out``), run by the same fused kernel along the edges grouped by source row (a plan builds that
    grouping once, at its first reverse pass); sub negates it, mean divides each destination's cotangent by its
    edge count first (empty rows pass nothing). max/min send each output element's cotangent to the edges whose
    message equals it, split evenly among tied ones, as `scatter_vjp_src` does (NNlib gives every tied winner the
    whole cotangent; finite differences agree with the split). The NaN-skipping ops give a NaN message nothing:
    fmax/fmin split as max/min among the tied non-NaN winners, nansum passes the cotangent to every other message,
    nanmean divides it by their count, all fused as max/min (complex nansum/nanmean through the messages).
    mul/div and nanprod materialise the messages (E x F) and use `scatter_vjp_src`'s exact rules.

    Parameters
    ----------
    {gs_reverse}

    Returns
    -------
    grad_src : ndarray, shape of `src`
        The dtype of `src` when it is inexact (float16 and bfloat16 computed in float32, rounded back); for an
        integer `src` the derivative dtype: NumPy's promotion of `src`, `weight` and `grad_out`, float64 when
        all are integers (an int8 `src` with a float32 weight gives float32).

    Raises
    ------
    TypeError
        `src`, `grad_out` or (max, min, mul, div) `out` missing or not numeric; other errors as `gather_scatter`.
    ValueError
        `grad_out` or `out` of a shape other than the output's; other errors as `gather_scatter`.
    IndexError
        As `gather_scatter`.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x, gi, si = np.array([1., 5., 5.]), np.array([0, 1, 2]), np.array([0, 0, 0])
    >>> out = cs.gather_scatter(x, gi, si, "max")
    >>> cs.gather_scatter_vjp_src("max", np.array([1.]), x, gi, si, out)   # the tie splits the cotangent
    array([0. , 0.5, 0.5])
    """
    if porting:
        raise unexpected_keywords("gather_scatter_vjp_src", porting)
    if grad_out is None:
        raise TypeError("gather_scatter_vjp_src needs grad_out (the output's cotangent), got None")
    be = backend_of(grad_out=grad_out, src=src, gather_index=gather_index, scatter_index=scatter_index, out=out,
                    weight=weight)
    return (_BY_BACKEND.get(be.name) or _implementation(be)).vjp_src(
        op, grad_out, src, gather_index, scatter_index, out, weight=weight, dim_size=dim_size, axis=axis,
        mode=mode, plan=plan, num_threads=num_threads)


@fill_doc
def gather_scatter_vjp_weight(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike | None = None,
                              scatter_index: IndexLike | None = None, out: ArrayInput | None = None, *,
                              weight: ArrayInput | None = None, dim_size: DimSize | None = None,
                              axis: SupportsIndex = 0, mode: Mode | None = None, plan: GatherScatterPlan | None = None,
                              num_threads: SupportsIndex | None = None, **porting: object) -> Any:
    """Gradient of `gather_scatter` with respect to `weight`: the VJP ``grad_out -> grad_weight``.

    For add, per edge e the dot product of the cotangent row at its destination with its source row,
    ``sum_f grad_out[d_e, f] * src[s_e, f]`` (summed over batch dims, and per head for a per-head weight): the
    sampled dense-dense product (SDDMM), one pass over the edges in parallel, no E x F array. sub negates it,
    mean divides by the destination's edge count, max/min count only the features where the edge is a (tied)
    winner, with its share of the cotangent (fmax/fmin: a non-NaN winner; nansum/nanmean: a non-NaN message, with
    the cotangent or its share by their count). Dropped edges get 0.

    Parameters
    ----------
    {gs_reverse}

    Returns
    -------
    grad_weight : ndarray, shape of `weight` (I without one: the gradient of an all-ones weight)
        The dtype of `weight` when it is inexact (float16 and bfloat16 computed in float32, rounded back), else
        the derivative dtype (as `gather_scatter_vjp_src`'s; float64 when all are integers).

    Raises
    ------
    TypeError, ValueError, IndexError
        As `gather_scatter_vjp_src`.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x = np.array([[1., 2.], [3., 4.]])
    >>> gi, si, w = np.array([0, 1]), np.array([0, 0]), np.array([0.5, 2.])
    >>> g = np.ones((1, 2))
    >>> cs.gather_scatter_vjp_weight("add", g, x, gi, si, weight=w)   # row sums of the source rows
    array([3., 7.])
    """
    if porting:
        raise unexpected_keywords("gather_scatter_vjp_weight", porting)
    if grad_out is None:
        raise TypeError("gather_scatter_vjp_weight needs grad_out (the output's cotangent), got None")
    be = backend_of(grad_out=grad_out, src=src, gather_index=gather_index, scatter_index=scatter_index, out=out,
                    weight=weight)
    return (_BY_BACKEND.get(be.name) or _implementation(be)).vjp_weight(
        op, grad_out, src, gather_index, scatter_index, out, weight=weight, dim_size=dim_size, axis=axis,
        mode=mode, plan=plan, num_threads=num_threads)


@fill_doc
def gather_scatter_jvp(op: OpLike, src: ArrayInput, gather_index: IndexLike | None = None,
                       scatter_index: IndexLike | None = None, out: ArrayInput | None = None,
                       src_dot: ArrayInput | None = None, *, weight: ArrayInput | None = None,
                       weight_dot: ArrayInput | None = None, dim_size: DimSize | None = None, axis: SupportsIndex = 0,
                       mode: Mode | None = None, plan: GatherScatterPlan | None = None,
                       num_threads: SupportsIndex | None = None, **porting: object) -> Any:
    """Forward derivative of `gather_scatter`: the tangent of `out` given tangents of `src` and `weight`.

    add/sub/mean are bilinear in (src, weight): ``out_dot = gather_scatter(src_dot, weight) +
    gather_scatter(src, weight_dot)`` (mean divided by the counts), fused. max/min average the tangent messages
    ``weight * src_dot + weight_dot * src`` of each output element's tied winning edges (the directional
    derivative that matches the split cotangent of the VJPs); fmax/fmin the same over the non-NaN winners,
    nansum sums and nanmean averages the tangent messages of the non-NaN messages, fused. mul/div, nanprod and
    complex nansum/nanmean go through `scatter_jvp` on materialised messages.

    Parameters
    ----------
    op : {{"add", "sub", "mean", "sqrt_n", "max", "min", "mul", "div", "nansum", "nanprod", "nanmean", "fmax",
        "fmin"}}
        The op of the forward call.
    src : array_like, shape B + S + F
        The forward call's `src`.
    gather_index, scatter_index : int array or tuple of int arrays, shape I
        The forward call's indices (omit both with `plan`).
    out : array_like, shape B + D + F, optional
        The forward result; needed by max, min, mul, div and the NaN-skipping ops.
    src_dot : array_like, shape of `src`, optional
        Tangent of `src` (None: zero).
    weight : array_like, shape I + W, optional
        The forward call's weight.
    weight_dot : array_like, shape of `weight`, optional
        Tangent of `weight` (None: zero; without `weight` it raises ValueError).
    dim_size, axis, mode, plan, num_threads : optional
        As in `gather_scatter`.

    Returns
    -------
    out_dot : ndarray, shape B + D + F
        In the derivative dtype: NumPy's promotion of `src`, `weight` and the tangents, float64 when all are
        integers, float32 in place of float16 and bfloat16 (the dtype the kernels compute in; unlike the VJPs,
        a tangent is not rounded back to a half-precision input's dtype).

    Raises
    ------
    TypeError
        Missing `src`, `out` where needed, or both tangents; a non-numeric tangent.
    ValueError
        A tangent of the wrong shape, `weight_dot` without `weight`; other errors as `gather_scatter`.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x, gi, si = np.array([1., 2.]), np.array([0, 1]), np.array([0, 0])
    >>> cs.gather_scatter_jvp("add", x, gi, si, src_dot=np.array([1., 0.]), weight=np.array([3., 1.]),
    ...                       weight_dot=np.array([0., 1.]))
    array([5.])
    """
    if porting:
        raise unexpected_keywords("gather_scatter_jvp", porting)
    if src_dot is None and weight_dot is None:
        raise TypeError("gather_scatter_jvp needs src_dot or weight_dot (the tangents), got neither")
    if weight_dot is not None and weight is None:
        raise ValueError("weight_dot was given without weight")
    be = backend_of(src=src, gather_index=gather_index, scatter_index=scatter_index, out=out, src_dot=src_dot,
                    weight=weight, weight_dot=weight_dot)
    return (_BY_BACKEND.get(be.name) or _implementation(be)).jvp(
        op, src, gather_index, scatter_index, out, src_dot, weight=weight, weight_dot=weight_dot,
        dim_size=dim_size, axis=axis, mode=mode, plan=plan, num_threads=num_threads)
