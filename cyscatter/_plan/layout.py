"""Where the index dims sit in `src` and how `src` broadcasts: `axis`, the batch shape B and the feature shape
F around the index shape I, expansion of a broadcast src to B + I + F as stride-0 views, and the reverse
unbroadcast of a cotangent."""
from __future__ import annotations

import numpy as np

from cyscatter._arrays.integers import as_int, prod
from cyscatter._plan.index import index_shape


def normalize_axis(axis, ndim: int, span: int, arg: str = "axis", array: str = "src") -> int:
    """`axis` such that dims [axis, axis + span) of an ndim-array (the argument `array`) hold the index; negative
    counts from the end."""
    if type(axis) is not int:
        axis = as_int(axis, f"{arg} must be an integer, got {axis!r}")
    normalized = axis + ndim if axis < 0 else axis
    if not 0 <= normalized <= ndim - span:
        if ndim < span:   # no axis fits: a range of valid values would read "-1 .. -1"
            raise ValueError(f"{arg}={axis} does not fit: {array} has {ndim} dims but the index has {span}, and "
                             f"every index dim is a dim of {array} (index dims first, then feature dims): {array} "
                             f"needs at least {span} dims")
        raise ValueError(f"{arg}={axis} does not fit: {array} has {ndim} dims and the index needs {span} "
                         f"of them starting at {arg} (valid: {-ndim} .. {ndim - span})")
    return normalized


def split_src(src: np.ndarray, coords: tuple, axis, arg: str = "src",
              expanded_check: bool = True) -> tuple[int, tuple, tuple]:
    """(axis, batch shape B, feature shape F) of `src` around an index of shape I = index_shape(coords), for the
    functions whose `src` must have exactly the shape B + I + F (the softmax family, whose output has it).

    Refuses a torch-style expanded index (see `refuse_expanded_index`) unless `expanded_check` is False (an
    index whose values are not at hand, as Dask's)."""
    ishape = index_shape(coords)
    axis = normalize_axis(axis, src.ndim, len(ishape), array=arg)
    if src.shape[axis:axis + len(ishape)] != ishape:
        raise ValueError(f"{arg} shape {src.shape} does not hold the index shape {ishape} at axis {axis}")
    if expanded_check:
        refuse_expanded_index(coords, src.shape, axis, arg)
    return axis, src.shape[:axis], src.shape[axis + len(ishape):]


# ---- broadcasting src ------------------------------------------------------------------------------------------
# `src` broadcasts (NumPy's rules) against the shape B + I + F it stands for, as `b` in NumPy's
# ``ufunc.at(a, idx, b)``, JAX's ``x.at[idx].add(b)`` and CuPy's ``cupyx.scatter_add``. Where a destination is
# given (scatter_into, the reverse functions' `out`), B and F are its own and src broadcasts to B + I + F. Where
# src alone defines B and F (scatter and the other allocating functions), the dims of src at the index position
# must each equal the index's or be 1, and a src with fewer dims than the index gets leading 1s first (so a
# scalar is scattered at every entry, numpy_groupies' ``aggregate(idx, 1)``).

def src_layout(src_shape: tuple, coords: tuple, axis, arg: str = "src", table_shape: tuple | None = None,
               table_arg: str = "dst", expanded_check: bool = True) -> tuple[int, tuple, tuple, tuple]:
    """(axis, B, F, expected shape B + I + F) of a `src` of `src_shape` that broadcasts to the expected shape.

    `table_shape`: the shape B + D + F of the destination (`table_arg`) when one is given, else src defines B
    and F. ValueError naming src's shape and the expected one when src does not broadcast. Refuses a
    torch-style expanded index (see `refuse_expanded_index`) unless `expanded_check` is False."""
    src_shape = tuple(src_shape)
    ishape = index_shape(coords)
    k = len(ishape)
    if table_shape is None:
        shape = (1,) * (k - len(src_shape)) + src_shape if k > len(src_shape) else src_shape
        axis = normalize_axis(axis, len(shape), k, array=arg)
        held = shape[axis:axis + k]
        if held != ishape and any(s != i and s != 1 for s, i in zip(held, ishape)):
            raise ValueError(f"{arg} shape {src_shape} does not hold the index shape {ishape} at axis {axis} "
                             f"(nor broadcasts to it: each of those dims must equal the index's or be 1)")
        expected = shape[:axis] + ishape + shape[axis + k:]
    else:
        table_shape = tuple(table_shape)
        m = len(coords)
        if len(table_shape) < m:
            raise ValueError(f"{table_arg} shape {table_shape} has fewer dims than the {m} that an index of shape "
                             f"{ishape} addresses ({arg} shape {src_shape})")
        ndim = len(table_shape) - m + k   # the dims of a src of the expected shape: its axis counts from them
        axis = normalize_axis(axis, ndim, k, array=arg if len(src_shape) == ndim else f"{arg} (broadcast)")
        expected = table_shape[:axis] + ishape + table_shape[axis + m:]
        if not broadcasts(src_shape, expected):
            raise ValueError(f"{arg} shape {src_shape} does not broadcast to the shape {expected} that {table_arg} "
                             f"shape {table_shape} and an index of shape {ishape} addressing {m} axis(es) at "
                             f"axis {axis} expect")
    if expanded_check and len(coords) == 1 and coords[0].ndim >= 2:
        refuse_expanded_index(coords, expected, axis, arg)
    return axis, expected[:axis], expected[axis + k:], expected


def out_layout(src_shape: tuple, coords: tuple, axis, out) -> tuple[int, tuple, tuple, tuple]:
    """`src_layout` of an allocating call given `out=`: B and F from `out` when `src` broadcasts to the shape
    B + I + F it implies (as `scatter_into` takes them from `dst`, and NumPy's ``ufunc.at(out, idx, src)``), else
    from `src` alone (a wrong `out` is then reported as such, naming `out`)."""
    if out is None or np.ndim(out) < len(coords):
        return src_layout(src_shape, coords, axis)
    try:
        return src_layout(src_shape, coords, axis, table_shape=np.shape(out), table_arg="out")
    except ValueError as by_out:
        try:
            return src_layout(src_shape, coords, axis)
        except ValueError:
            raise by_out from None   # neither reading fits: the one of the documented rule (B, F from out)


def broadcasts(shape: tuple, to: tuple) -> bool:
    """`shape` broadcasts to exactly `to` (NumPy's rules, one way)."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], to[::-1]))


def expand_src(src, expected: tuple, nfeat: int, xp=np):
    """`src` as a read-only view of shape `expected` (B + I + F) with stride 0 along its broadcast dims, or
    `src` itself when it has that shape.

    The kernels read rows through strides, so entries repeated by broadcasting cost no memory; only a row's
    features must be adjacent, so when F itself is broadcast (a scalar, a (n, 1) src against F) the features are
    materialised once per distinct row of src, never the n entries. A cast belongs before this call (a cast of
    the view would materialise it)."""
    expected = tuple(expected)
    if tuple(src.shape) == expected:
        return src
    src = src.reshape((1,) * (len(expected) - src.ndim) + tuple(src.shape))
    if nfeat and src.shape[len(expected) - nfeat:] != expected[len(expected) - nfeat:] \
            and prod(expected[len(expected) - nfeat:]) > 1:
        src = xp.ascontiguousarray(xp.broadcast_to(src, src.shape[:len(expected) - nfeat]
                                                   + expected[len(expected) - nfeat:]))
    return xp.broadcast_to(src, expected)


def unbroadcast(grad, shape: tuple, xp=np):
    """`grad` (of a src broadcast to grad's shape) summed over the broadcast dims, back to `shape` (autograd's
    ``unbroadcast``): the cotangent of a broadcast src."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(shape) if s == 1 and grad.shape[lead + d] != 1)
    return grad.sum(axis=axes).reshape(shape) if axes else grad.reshape(shape)


def expand_cast(src, expected: tuple, nfeat: int, dtype, xp=np):
    """`src` cast to `dtype` and then expanded (`expand_src`); a `src` of the expected shape is returned as it is
    (its cast is left to `rows_view`, which may fuse it with a layout copy)."""
    if tuple(src.shape) == tuple(expected):
        return src
    return expand_src(src.astype(dtype, copy=False), expected, nfeat, xp)


def refuse_expanded_index(coords: tuple, src_shape: tuple, axis: int, arg: str = "src") -> None:
    """ValueError for an index shaped like all of `src` and expanded along its last axis (stride 0): the
    ``index.view(-1, 1).expand_as(src)`` of PyTorch's ``scatter_reduce`` / pytorch_scatter, or its
    ``np.broadcast_to`` twin.

    There each index entry addresses one element (``out[index[i, j], j]``); here (NNlib, NumPy) every index
    dim is an entry dim, so the same index would reduce each row's features into one number: a silent
    difference in shape and numbers, refused with the call that means what PyTorch means. The rule looks at
    the layout, not the values: an index that merely holds equal values along a row is an NNlib index like any
    other (a copy of an expanded index, too, is read with NNlib's meaning).
    """
    if len(coords) != 1:
        return
    index = coords[0]
    if (index.ndim < 2 or axis + index.ndim != len(src_shape) or index.shape[-1] < 2
            or index.size == 0 or index.strides[-1] != 0):
        return
    one = "index[" + ", ".join([":"] * (index.ndim - 1)) + ", 0]"
    where = f"the shape of {arg} {tuple(src_shape)}" if axis == 0 else \
        f"the shape {index.shape} of {arg} {tuple(src_shape)} after axis={axis}"
    raise ValueError(
        f"index has {where} and is expanded along its last axis (stride 0), as a "
        f"torch-style expanded index (index.view(-1, 1).expand_as({arg})). Here every index dim is an entry dim "
        f"(NNlib, NumPy), so this call would reduce each row of {arg} to one number. To reduce rows as PyTorch "
        f"does, pass the index without its expanded axis: {one} (shape {index.shape[:-1]}). To scatter each "
        f"element on its own, pass {arg}.ravel() and np.ascontiguousarray(index).ravel()")
