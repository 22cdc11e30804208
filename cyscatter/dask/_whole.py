"""The empty index tuple (no indexed axes, NumPy's ``a[()]``) on Dask: one entry that addresses the whole
destination.

The graphs of this package are built around index chunks, and an index of no arrays has none. Its one entry is
the entry of a 0-d index ``0`` into a destination axis of size 1, which the graphs handle: each public function
is called that way and the size-1 axis is removed from its result (``scatter``-like, ``scatter_count``) or added
to `src` first (``gather``), so the numbers come from the same graphs and combine rules as every other index.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

import numpy as np

from cyscatter._plan.index import check_sizes
from cyscatter._plan.layout import normalize_axis
from cyscatter.dask._graph import known_shape

_F = TypeVar("_F", bound=Callable[..., Any])

# how each public function meets the size-1 axis: "result" drops it from the result (at `axis`, or at 0 for
# scatter_count, whose result is D alone), "src" adds it to src at `axis` (gather), "none": the result has
# src's shape (scatter_scan)
_SIDES = {"scatter": "result", "scatter_argmax": "result", "scatter_argmin": "result",
          "scatter_nanargmax": "result", "scatter_nanargmin": "result", "scatter_any": "result",
          "scatter_all": "result", "scatter_count": "result", "gather": "src", "scatter_scan": "none"}


# the functions added later: per index argument, the arguments of shape B + F that get the size-1 axis at `axis`
# when it is the empty tuple (those it addresses), the shape of the index put in its place and whether it sizes
# the destination (dim_size, dim_chunks); then the argument `axis` counts in, and the index whose empty tuple
# drops the axis from the result (None: the result keeps its shape). A shape argument (gather_vjp_src's
# src_shape) gets a 1 at `axis`.
_SRC, _DST = ("src", "src_dot"), ("grad_out", "out")
EXPANDS = {
    # (scatter_vjp_src's graph needs index dims: its src gets the axis too, for a 1-D index of one entry)
    "scatter_vjp_src": ((("index", ("src", "grad_out", "out", "dst"), (1,), True),), "src", "index"),
    "scatter_vjp_dst": ((("index", ("grad_out", "dst", "out"), (), True),), "src", "index"),
    "gather_vjp_src": ((("index", (), (), False),), "src_shape", "index"),
    "gather_scatter": ((("gather_index", _SRC, (), False), ("scatter_index", _DST, (), True)), "src",
                       "scatter_index"),
    "gather_scatter_vjp_src": ((("gather_index", _SRC, (), False), ("scatter_index", _DST, (), True)), "src",
                               "gather_index"),
    "gather_scatter_vjp_weight": ((("gather_index", _SRC, (), False), ("scatter_index", _DST, (), True)), "src",
                                  None),
    "gather_scatter_jvp": ((("gather_index", _SRC, (), False), ("scatter_index", _DST, (), True)), "src",
                           "scatter_index"),
    **{name: ((("index", (), (), True),), "src", None if name.endswith("softmax") else "index")
       for name in ("scatter_softmax", "scatter_log_softmax", "scatter_logsumexp", "scatter_var", "scatter_std",
                    "scatter_nanvar", "scatter_nanstd")},
}


def is_empty_tuple(index: object) -> bool:
    return type(index) is tuple and len(index) == 0


def _no_sizes(value: Any, arg: str) -> None:
    """ValueError unless `value` (dim_size, dim_chunks) gives the sizes of no axes: () (or None)."""
    if value is None:
        return
    if len(check_sizes(value, arg)) != 0:
        raise ValueError(f"{arg}={value!r} gives sizes but the empty index tuple addresses no axes: "
                         f"give {arg}=()")


def accept_empty_tuple(fn: _F) -> _F:
    """`fn` (a public function of `cyscatter.dask`) taking ``index=()`` as the 0-d index 0 into a size-1 axis."""
    if fn.__name__ in EXPANDS:
        return _expanding(fn)
    side = _SIDES[fn.__name__]
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def with_empty_tuple(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        if not is_empty_tuple(bound.arguments.get("index")):
            return fn(*args, **kwargs)
        given = bound.arguments
        given["index"] = np.zeros((), np.intp)
        if "dim_size" in signature.parameters:
            _no_sizes(given["dim_size"], "dim_size")
            given["dim_size"] = 1
        if "dim_chunks" in given:
            _no_sizes(given["dim_chunks"], "dim_chunks")
            given["dim_chunks"] = None
        if side == "src":
            import dask.array as da
            src = known_shape(da.asarray(given["src"]), "src")
            axis = normalize_axis(given.get("axis", 0), src.ndim, 0)
            given["src"], given["axis"] = da.expand_dims(src, axis), axis
            return fn(*bound.args, **bound.kwargs)
        result = fn(*bound.args, **bound.kwargs)
        if side == "none":
            return result
        # the size-1 axis sits at `axis` of the result (B + (1,) + F), at 0 for scatter_count's D
        axis = 0 if "src" not in given else normalize_axis(given.get("axis", 0), result.ndim - 1, 0)
        return result.squeeze(axis)

    return with_empty_tuple  # type: ignore[return-value]


def _expanding(fn: _F) -> _F:
    """`fn` taking empty index tuples: the arrays of shape B + F that such an index addresses get the size-1 axis
    at `axis` (B + (1,) + F), the index is the 0-d index 0 (of that axis), and the axis leaves the result."""
    indices, ref, squeeze_by = EXPANDS[fn.__name__]
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def with_empty_tuple(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind_partial(*args, **kwargs)
        given = bound.arguments
        empty = {arg for arg, *_ in indices if is_empty_tuple(given.get(arg))}
        if not empty:
            return fn(*args, **kwargs)
        import dask.array as da
        first = given.get(indices[0][0])   # the index of the axes of `ref` (gather_index: m of them, or one)
        m = 0 if indices[0][0] in empty else len(first) if isinstance(first, tuple) else 1
        if ref == "src_shape":
            shape = given[ref]
            shape = tuple(int(s) for s in (shape if np.ndim(shape) else (shape,)))
            axis = normalize_axis(given.get("axis", 0), len(shape), 0, array=ref)
            given[ref] = shape[:axis] + (1,) + shape[axis:]
        else:
            axis = normalize_axis(given.get("axis", 0), np.ndim(given[ref]), m, array=ref)
        for arg, expand, index_shape, sizes in indices:
            if arg not in empty:
                continue
            given[arg] = np.zeros(index_shape, np.intp)
            if sizes:
                for size_arg in ("dim_size", "dim_chunks"):
                    if size_arg in signature.parameters:
                        _no_sizes(given.get(size_arg), size_arg)
                if "dim_size" in signature.parameters:
                    given["dim_size"] = 1
                if "dim_chunks" in given:
                    given["dim_chunks"] = None
            for name in expand:
                if given.get(name) is not None:
                    given[name] = da.expand_dims(known_shape(da.asarray(given[name]), name), axis)
        given["axis"] = axis
        result = fn(*bound.args, **bound.kwargs)
        return result.squeeze(axis) if squeeze_by in empty else result

    return with_empty_tuple  # type: ignore[return-value]
