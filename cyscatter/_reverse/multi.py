"""VJPs and JVPs of scatter_multi, segment_multi and gather_scatter_multi: each op's block of the output differentiated by that op's
own reverse function (`scatter_vjp_src`, `scatter_var_vjp`, ...), the cotangents of src summed, the tangents
placed side by side as the forward placed the results."""
from __future__ import annotations

from typing import TYPE_CHECKING

from cyscatter._api.gather import gather
from cyscatter._api.multi import feature_dims, parse_ops, split_results, stack_results
from cyscatter._api.segment import check_indptr, segment_ids
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._backends.select import backend_of
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import check_given
from cyscatter._reverse.moments import scatter_std_jvp, scatter_std_vjp, scatter_var_jvp, scatter_var_vjp
from cyscatter._reverse.scatter import gather_vjp_src, scatter_jvp, scatter_vjp_src

if TYPE_CHECKING:
    from typing import Any, Sequence, SupportsIndex

    from cyscatter._typing import ArrayInput, IndexLike, Mode

_MOMENT_VJP = {"var": scatter_var_vjp, "std": scatter_std_vjp}
_MOMENT_JVP = {"var": scatter_var_jvp, "std": scatter_std_jvp}


def _blocks(name, ops, src, index, axis, **stacked):
    """(op names, backend, {key: the k blocks of the stacked array}) with each stacked array checked to split into
    len(ops) equal blocks along its last axis."""
    names = parse_ops(ops)
    for key, value in stacked.items():
        check_given(key, value)
    be = backend_of(src=src, index=index, **stacked)
    feats = feature_dims(src, index, axis)
    blocks = {}
    for key, value in stacked.items():
        arr = be.asarray(value)
        if arr.ndim == 0 or arr.shape[-1] % len(names):
            raise ValueError(f"{name}: {key} has shape {arr.shape}, whose last axis does not hold the "
                             f"{len(names)} blocks of ops {names}")
        blocks[key] = split_results(arr, len(names), feats, be.xp)
    return names, be, blocks


def scatter_multi_vjp_src(ops: Sequence[str], grad_out: ArrayInput, src: ArrayInput, index: IndexLike,
                          out: ArrayInput, *, axis: SupportsIndex = 0, mode: Mode = "raise", ddof: float = 0, **porting: object) -> Any:
    """Gradient of `scatter_multi` w.r.t. `src`: the sum over its ops of each op's gradient of its block.

    Parameters
    ----------
    ops : sequence of str
        The ops given to `scatter_multi`.
    grad_out : array_like, shape of `out`
        Cotangent of the output.
    src : array_like
        The `src` given to `scatter_multi`.
    index : int array or tuple of int arrays
        The index given to `scatter_multi`.
    out : array_like
        The result of `scatter_multi`.
    axis, mode, ddof : optional
        As given to `scatter_multi`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype (float64 for integer inputs).

    Raises
    ------
    TypeError, ValueError, IndexError
        As `scatter_multi` and the ops' own reverse functions; a `grad_out` or `out` whose last axis does not
        split into ``len(ops)`` blocks (ValueError).
    """
    if porting:
        raise unexpected_keywords("scatter_multi_vjp_src", porting)
    names, _, blocks = _blocks("scatter_multi_vjp_src", ops, src, index, axis, grad_out=grad_out, out=out)
    total = None
    for name, g, o in zip(names, blocks["grad_out"], blocks["out"]):
        if name in _MOMENT_VJP:
            part = _MOMENT_VJP[name](g, src, index, o, ddof=ddof, axis=axis, mode=mode)
        else:
            part = scatter_vjp_src(name, g, src, index, o, axis=axis, mode=mode)
        total = part if total is None else total + part
    return total


def scatter_multi_jvp(ops: Sequence[str], src: ArrayInput, index: IndexLike, out: ArrayInput, src_dot: ArrayInput,
                      *, axis: SupportsIndex = 0, mode: Mode = "raise", ddof: float = 0, **porting: object) -> Any:
    """Forward derivative of `scatter_multi`: each op's tangent of its block, side by side as the output's.

    Parameters
    ----------
    ops : sequence of str
        The ops given to `scatter_multi`.
    src : array_like
        The `src` given to `scatter_multi`.
    index : int array or tuple of int arrays
        The index given to `scatter_multi`.
    out : array_like
        The result of `scatter_multi`.
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    axis, mode, ddof : optional
        As given to `scatter_multi`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Float dtype.

    Raises
    ------
    TypeError, ValueError, IndexError
        As `scatter_multi_vjp_src` (a `src_dot` of another shape than `src`).
    """
    if porting:
        raise unexpected_keywords("scatter_multi_jvp", porting)
    names, be, blocks = _blocks("scatter_multi_jvp", ops, src, index, axis, out=out)
    feats = feature_dims(src, index, axis)
    parts = []
    for name, o in zip(names, blocks["out"]):
        if name in _MOMENT_JVP:
            part = _MOMENT_JVP[name](src, index, o, src_dot, ddof=ddof, axis=axis, mode=mode)
        else:
            part = scatter_jvp(name, src, index, o, src_dot, axis=axis, mode=mode)
        parts.append(part if feats else part[..., None])
    return stack_results(parts, be.xp)


def _segment_ids(src, indptr, axis):
    check_given("src", src)
    be = backend_of(src=src, indptr=indptr)
    k = normalize_axis(axis, len(shape_of(src)), 1)
    return segment_ids(check_indptr(indptr, shape_of(src)[k], be=be)), k


def segment_multi_vjp_src(ops: Sequence[str], grad_out: ArrayInput, src: ArrayInput, indptr: ArrayInput,
                          out: ArrayInput, *, axis: SupportsIndex = 0, ddof: float = 0, **porting: object) -> Any:
    """Gradient of `segment_multi` w.r.t. `src`: `scatter_multi_vjp_src` with the index ``segment_ids(indptr)``.

    Parameters
    ----------
    ops : sequence of str
        The ops given to `segment_multi`.
    grad_out : array_like, shape of `out`
        Cotangent of the output.
    src : array_like, shape B + (n,) + F
        The `src` given to `segment_multi`.
    indptr : 1-D int array of length S + 1
        The CSR pointer given to `segment_multi`.
    out : array_like
        The result of `segment_multi`.
    axis, ddof : optional
        As given to `segment_multi`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype.

    Raises
    ------
    TypeError, ValueError
        As `segment_multi` and `scatter_multi_vjp_src`.
    """
    if porting:
        raise unexpected_keywords("segment_multi_vjp_src", porting)
    ids, k = _segment_ids(src, indptr, axis)
    return scatter_multi_vjp_src(ops, grad_out, src, ids, out, axis=k, ddof=ddof)


def segment_multi_jvp(ops: Sequence[str], src: ArrayInput, indptr: ArrayInput, out: ArrayInput,
                      src_dot: ArrayInput, *, axis: SupportsIndex = 0, ddof: float = 0, **porting: object) -> Any:
    """Forward derivative of `segment_multi`: `scatter_multi_jvp` with the index ``segment_ids(indptr)``.

    Parameters
    ----------
    ops : sequence of str
        The ops given to `segment_multi`.
    src : array_like, shape B + (n,) + F
        The `src` given to `segment_multi`.
    indptr : 1-D int array of length S + 1
        The CSR pointer given to `segment_multi`.
    out : array_like
        The result of `segment_multi`.
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    axis, ddof : optional
        As given to `segment_multi`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Float dtype.

    Raises
    ------
    TypeError, ValueError
        As `segment_multi` and `scatter_multi_jvp`.
    """
    if porting:
        raise unexpected_keywords("segment_multi_jvp", porting)
    ids, k = _segment_ids(src, indptr, axis)
    return scatter_multi_jvp(ops, src, ids, out, src_dot, axis=k, ddof=ddof)


def _messages(src, gather_index, weight):
    """(messages, the gathered rows, the weight shaped against them) of `gather_scatter_multi`."""
    rows = gather(src, gather_index)
    if weight is None:
        return rows, rows, None
    be = backend_of(src=rows, weight=weight)
    w = be.asarray(weight)
    if w.shape != tuple(shape_of(gather_index)):
        raise ValueError(f"weight has shape {w.shape}, but there are {shape_of(gather_index)} edges")
    w = w.reshape(w.shape + (1,) * (rows.ndim - w.ndim))
    return rows * w, rows, w


def gather_scatter_multi_vjp_src(ops: Sequence[str], grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike,
                                 scatter_index: IndexLike, out: ArrayInput, *, weight: ArrayInput | None = None,
                                 ddof: float = 0, **porting: object) -> Any:
    """Gradient of `gather_scatter_multi` w.r.t. `src`: the messages' `scatter_multi_vjp_src`, times the weight,
    summed back onto the rows they were gathered from.

    Parameters
    ----------
    ops : sequence of str
        The ops given to `gather_scatter_multi`.
    grad_out : array_like, shape of `out`
        Cotangent of the output.
    src : array_like, shape (N,) + F
        The node rows given to `gather_scatter_multi`.
    gather_index, scatter_index : 1-D int arrays of length E
        The edges given to `gather_scatter_multi`.
    out : array_like
        The result of `gather_scatter_multi`.
    weight, ddof : optional
        As given to `gather_scatter_multi`.

    Returns
    -------
    grad_src : ndarray, shape of `src`
        Float dtype.

    Raises
    ------
    TypeError, ValueError, IndexError
        As `gather_scatter_multi` and `scatter_multi_vjp_src`.
    """
    if porting:
        raise unexpected_keywords("gather_scatter_multi_vjp_src", porting)
    messages, _, w = _messages(src, gather_index, weight)
    g = scatter_multi_vjp_src(ops, grad_out, messages, scatter_index, out, ddof=ddof)
    return gather_vjp_src(g if w is None else g * w, gather_index, shape_of(src))


def gather_scatter_multi_vjp_weight(ops: Sequence[str], grad_out: ArrayInput, src: ArrayInput,
                                    gather_index: IndexLike, scatter_index: IndexLike, out: ArrayInput, *,
                                    weight: ArrayInput, ddof: float = 0, **porting: object) -> Any:
    """Gradient of `gather_scatter_multi` w.r.t. `weight`: per edge, its message's cotangent dotted with the
    gathered row.

    Parameters
    ----------
    ops : sequence of str
        The ops given to `gather_scatter_multi`.
    grad_out : array_like, shape of `out`
        Cotangent of the output.
    src : array_like, shape (N,) + F
        The node rows given to `gather_scatter_multi`.
    gather_index, scatter_index : 1-D int arrays of length E
        The edges given to `gather_scatter_multi`.
    out : array_like
        The result of `gather_scatter_multi`.
    weight : array_like, shape (E,)
        The weight given to `gather_scatter_multi`.
    ddof : float, default 0
        As given to `gather_scatter_multi`.

    Returns
    -------
    grad_weight : ndarray, shape (E,)
        Float dtype.

    Raises
    ------
    TypeError, ValueError, IndexError
        As `gather_scatter_multi_vjp_src`.
    """
    if porting:
        raise unexpected_keywords("gather_scatter_multi_vjp_weight", porting)
    messages, rows, _ = _messages(src, gather_index, weight)
    g = scatter_multi_vjp_src(ops, grad_out, messages, scatter_index, out, ddof=ddof)
    return (g * rows).reshape(g.shape[0], -1).sum(axis=1)


def gather_scatter_multi_jvp(ops: Sequence[str], src: ArrayInput, gather_index: IndexLike, scatter_index: IndexLike,
                             out: ArrayInput, src_dot: ArrayInput, *, weight: ArrayInput | None = None,
                             weight_dot: ArrayInput | None = None, ddof: float = 0, **porting: object) -> Any:
    """Forward derivative of `gather_scatter_multi`: `scatter_multi_jvp` of the messages' tangent
    ``gather(src_dot) * weight + gather(src) * weight_dot``.

    Parameters
    ----------
    ops : sequence of str
        The ops given to `gather_scatter_multi`.
    src : array_like, shape (N,) + F
        The node rows given to `gather_scatter_multi`.
    gather_index, scatter_index : 1-D int arrays of length E
        The edges given to `gather_scatter_multi`.
    out : array_like
        The result of `gather_scatter_multi`.
    src_dot : array_like, shape of `src`
        Tangent of `src`.
    weight : array_like, shape (E,), optional
        The weight given to `gather_scatter_multi`.
    weight_dot : array_like, shape (E,), optional
        Tangent of `weight` (None: 0).
    ddof : float, default 0
        As given to `gather_scatter_multi`.

    Returns
    -------
    out_dot : ndarray, shape of `out`
        Float dtype.

    Raises
    ------
    TypeError, ValueError, IndexError
        As `gather_scatter_multi` and `scatter_multi_jvp`; a `weight_dot` without `weight` (ValueError).
    """
    if porting:
        raise unexpected_keywords("gather_scatter_multi_jvp", porting)
    messages, rows, w = _messages(src, gather_index, weight)
    check_given("src_dot", src_dot)
    be = backend_of(src=rows, src_dot=src_dot)
    dot = be.asarray(src_dot)
    if dot.shape != tuple(shape_of(src)):
        raise ValueError(f"gather_scatter_multi_jvp: src_dot shape {dot.shape} != src shape {shape_of(src)}")
    messages_dot = gather(dot, gather_index)
    if w is not None:
        messages_dot = messages_dot * w
    if weight_dot is not None:
        if w is None:
            raise ValueError("weight_dot was given without weight")
        wd = be.asarray(weight_dot)
        if wd.shape != tuple(shape_of(gather_index)):
            raise ValueError(f"weight_dot has shape {wd.shape}, but there are {shape_of(gather_index)} edges")
        messages_dot = messages_dot + rows * wd.reshape(w.shape)
    return scatter_multi_jvp(ops, messages, scatter_index, out, messages_dot, ddof=ddof)
