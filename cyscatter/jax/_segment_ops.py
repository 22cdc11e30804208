"""``jax.ops.segment_sum`` / ``segment_max`` / ``segment_min`` / ``segment_prod`` with JAX's signatures and
conventions, run by cyscatter's kernels (`cyscatter.jax.scatter`).

JAX's conventions, where they differ from `cyscatter.scatter`'s defaults (docs/jax.rst has the table): ids
outside ``[0, num_segments)`` are dropped (JAX's default ``mode``; cyscatter raises), an empty segment holds the
op's identity (max: -inf, or the integer's minimum; min: +inf or the maximum; prod: 1; sum: 0: the same as
cyscatter's for floats), and ``num_segments`` defaults to ``max(segment_ids) + 1``.
"""
from __future__ import annotations

import numpy as np

from cyscatter.jax._args import as_index, as_values, is_traced, static_size
from cyscatter.jax._scatter import scatter

# JAX's GatherScatterMode names -> cyscatter's modes
_MODES = {None: "drop", "fill": "drop", "drop": "drop", "fill_or_drop": "drop", "clip": "clip",
          "promise_in_bounds": "drop"}


def _mode(mode) -> str:
    key = getattr(mode, "name", mode)
    key = key.lower() if isinstance(key, str) else key
    if key not in _MODES:
        raise ValueError(f"mode must be None, 'fill', 'drop', 'clip' or 'promise_in_bounds', got {mode!r}")
    return _MODES[key]


def _identity(op: str, dtype):
    dtype = np.dtype(dtype)
    if op in ("add", "mul"):
        return None   # cyscatter's: 0 and 1
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min if op == "max" else info.max)
    return -np.inf if op == "max" else np.inf


def _segment(op: str, data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode):
    data, segment_ids = as_values(data, "data"), as_index(segment_ids, "segment_ids")
    if segment_ids.ndim != 1 or data.ndim < 1 or data.shape[0] != segment_ids.shape[0]:
        raise ValueError(f"segment_ids must be one-dimensional and as long as data's first axis, got shapes "
                         f"{tuple(segment_ids.shape)} and {tuple(data.shape)}")
    if num_segments is not None:
        num_segments = static_size(num_segments, segment_ids, "num_segments", "drop", f"segment_{op}")
    else:
        if is_traced(segment_ids):
            raise ValueError(f"cyscatter.jax.segment_{op}: pass num_segments= (an int) when segment_ids is traced "
                             "(under jax.jit or jax.vmap), as jax.ops.segment_* needs it there")
        ids = np.asarray(segment_ids)
        num_segments = int(ids.max()) + 1 if ids.size else 0
    try:
        if data.dtype == bool and op in ("max", "min"):   # JAX's bool max/min are any/all
            from cyscatter.jax._scatter import scatter_all, scatter_any
            return (scatter_any if op == "max" else scatter_all)(data, segment_ids, dim_size=num_segments,
                                                                  mode=_mode(mode))
        return scatter(data, segment_ids, op, dim_size=num_segments, fill_value=_identity(op, data.dtype),
                       mode=_mode(mode), indices_are_sorted=indices_are_sorted)
    except MemoryError as err:   # the core names its dim_size, which is this function's num_segments
        raise MemoryError(f"num_segments={num_segments} asks for more memory than can be allocated") from err


_DOC = """``jax.ops.segment_{name}`` run by cyscatter: the {what} of the rows of `data` with equal `segment_ids`.

    Parameters
    ----------
    data : jax.Array, shape (n,) + F
        The values.
    segment_ids : jax.Array of int, shape (n,)
        The segment of each row of `data`.
    num_segments : int, optional
        Required under ``jax.jit``/``jax.vmap``; else ``max(segment_ids) + 1``.
    indices_are_sorted : bool
        A promise that `segment_ids` is sorted.
    unique_indices : bool
        Accepted for JAX's signature; not used (the kernels need no such promise).
    bucket_size : int, optional
        Accepted for JAX's signature; not used (the kernels accumulate in one pass).
    mode : None, "fill", "drop", "clip" or "promise_in_bounds", or a ``jax.lax.GatherScatterMode``
        Out-of-range ids: dropped (the default, JAX's), or clipped.

    Returns
    -------
    jax.Array, shape (num_segments,) + F
        In data's dtype; an empty segment holds {identity}.

    Raises
    ------
    ValueError
        `num_segments` missing for traced ids or negative; mismatched shapes; an unknown `mode`.
    TypeError
        A non-integer `num_segments` (a float or a bool, as ``jax.ops.segment_*``).
    MemoryError
        An output of `num_segments` rows too large to allocate.
    """


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    return _segment("add", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                 bucket_size=None, mode=None):
    return _segment("mul", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    return _segment("max", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
    return _segment("min", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


segment_sum.__doc__ = _DOC.format(name="sum", what="sum", identity="0")
segment_prod.__doc__ = _DOC.format(name="prod", what="product", identity="1")
segment_max.__doc__ = _DOC.format(name="max", what="maximum",
                                  identity="-inf (integers: their minimum, bool: False), JAX's identity")
segment_min.__doc__ = _DOC.format(name="min", what="minimum",
                                  identity="+inf (integers: their maximum, bool: True), JAX's identity")
