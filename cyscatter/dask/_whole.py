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
