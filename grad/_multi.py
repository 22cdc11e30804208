"""scatter_multi, segment_multi and gather_scatter_multi, differentiable: each op through its own primitive
(`grad.scatter`, `grad.scatter_var`, `grad.scatter_std`), the results side by side as `cyscatter.scatter_multi`
places them (its values: add, mean, max and min bit for bit, var and std to rounding)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import autograd.numpy as anp
import numpy as np
from autograd.tracer import Box, getval

import cyscatter as cs
from cyscatter._api.multi import feature_dims, parse_ops
from cyscatter._api.segment import check_indptr
from cyscatter._backends.select import backend_of
from cyscatter._plan.layout import normalize_axis
from grad._gather import gather
from grad._groups import scatter_std, scatter_var
from grad._scatter import scatter

if TYPE_CHECKING:
    from typing import Any, Sequence, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode

_DEFAULT = ("mean", "max", "min", "std")


def scatter_multi(src: ArrayInput, index: IndexLike, ops: Sequence[str] = _DEFAULT, *,
                  dim_size: DimSize | None = None, axis: SupportsIndex = 0, mode: Mode = "raise",
                  ddof: float = 0) -> Any:
    """Differentiable `cyscatter.scatter_multi` (same parameters and layout), to any order.

    Parameters
    ----------
    src : array_like, shape B + I + F
        Values (float to be differentiated).
    index : int array or tuple of int arrays, shape I
        Group of each entry, as in `cyscatter.scatter_multi`.
    ops : sequence of str, default ("mean", "max", "min", "std")
        As in `cyscatter.scatter_multi`.
    dim_size, axis, mode, ddof : optional
        As in `cyscatter.scatter_multi` (keyword-only).

    Returns
    -------
    out : ndarray
        The result of `cyscatter.scatter_multi`.
    """
    names = parse_ops(ops)
    feats = feature_dims(getval(src), index, axis)
    parts = []
    for name in names:
        if name in ("var", "std"):
            moment = scatter_var if name == "var" else scatter_std
            part = moment(src, index, ddof=ddof, dim_size=dim_size, axis=axis, mode=mode)
        else:
            part = scatter(src, index, name, dim_size=dim_size, axis=axis, mode=mode)
        parts.append(part if feats else anp.expand_dims(part, -1))
    return anp.concatenate(parts, axis=-1)


def segment_multi(src: ArrayInput, indptr: ArrayInput, ops: Sequence[str] = _DEFAULT, *, axis: SupportsIndex = 0,
                  ddof: float = 0) -> Any:
    """Differentiable `cyscatter.segment_multi`: `scatter_multi` with the index ``segment_ids(indptr)``.

    Parameters
    ----------
    src : array_like, shape B + (n,) + F
        Values (float to be differentiated).
    indptr : 1-D int array of length S + 1
        CSR pointer, as in `cyscatter.segment_multi`.
    ops : sequence of str, default ("mean", "max", "min", "std")
        As in `cyscatter.segment_multi`.
    axis, ddof : optional
        As in `cyscatter.segment_multi` (keyword-only).

    Returns
    -------
    out : ndarray
        The result of `cyscatter.segment_multi`.
    """
    k = normalize_axis(axis, np.ndim(getval(src)), 1)
    ptr = check_indptr(indptr, np.shape(getval(src))[k])
    return scatter_multi(src, cs.segment_ids(ptr), ops, dim_size=ptr.size - 1, axis=k, ddof=ddof)


def gather_scatter_multi(src: ArrayInput, gather_index: IndexLike, scatter_index: IndexLike,
                         ops: Sequence[str] = _DEFAULT, *, weight: ArrayInput | None = None,
                         dim_size: DimSize | None = None, ddof: float = 0) -> Any:
    """Differentiable `cyscatter.gather_scatter_multi`, in `src` and `weight`.

    Parameters
    ----------
    src : array_like, shape (N,) + F
        Node rows (float to be differentiated).
    gather_index, scatter_index : 1-D int arrays of length E
        As in `cyscatter.gather_scatter_multi`.
    ops : sequence of str, default ("mean", "max", "min", "std")
        As in `cyscatter.gather_scatter_multi`.
    weight, dim_size, ddof : optional
        As in `cyscatter.gather_scatter_multi` (keyword-only).

    Returns
    -------
    out : ndarray
        The result of `cyscatter.gather_scatter_multi`.
    """
    # other libraries' arrays (a torch tensor, a JAX array) as NumPy's, as the core reads them; a traced
    # (boxed) argument stays as it is
    src, weight = (a if a is None or isinstance(a, Box) else backend_of(arg=a).asarray(a) for a in (src, weight))
    messages = gather(src, gather_index)
    if weight is not None:
        if np.shape(getval(weight)) != np.shape(gather_index):
            raise ValueError(f"weight has shape {np.shape(getval(weight))}, but there are {np.shape(gather_index)} "
                             f"edges")
        messages = messages * anp.reshape(weight, np.shape(weight) + (1,) * (np.ndim(getval(messages)) - 1))
    return scatter_multi(messages, scatter_index, ops, dim_size=dim_size, ddof=ddof)
