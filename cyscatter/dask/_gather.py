"""gather on Dask arrays: output blocks follow the index blocks; src may be cut along its first gathered axis."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import dask.array as da
import numpy as np
from dask.base import tokenize

from cyscatter._arrays.integers import prod
from cyscatter._docs import fill_doc
from cyscatter._plan.index import DROPPING, check_mode
from cyscatter._plan.layout import normalize_axis
from cyscatter._plan.values import check_dtype_arg, fill_for
from cyscatter.dask import _blocks
from cyscatter.dask._graph import (
    as_coords,
    block_shape,
    check_in_memory_index,
    flat_rows,
    known_shape,
    new_array,
    partitions,
    positions,
)
from cyscatter.dask._scatter import refuse_out

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import ArrayInput, FillValue, IndexLike, Mode


@fill_doc
def gather(src: ArrayInput, index: IndexLike, *, axis: SupportsIndex = 0, mode: Mode = "raise",
           fill_value: FillValue | None = None, dtype: DTypeLike | None = None, out: Any = None) -> da.Array:
    """Lazy gather of Dask arrays: ``cyscatter.gather`` computed block by block.

    Parameters
    ----------
    src : dask.array.Array or array_like, shape B + D + F
        Values, chunked in any way along B, F and the first gathered axis (the other gathered axes of a tuple
        index are put in one chunk).
    index : Dask or NumPy int array of shape I, or tuple of m of them
        As for ``cyscatter.gather``: any integer dtype; known chunk sizes.
    {axis}
    {mode}
    fill_value : scalar, optional
        Value of the output rows whose entry is dropped under ``mode="drop"`` or ``"normalize_drop"``; default
        all-zero bytes (0, False, ''). Checked and cast as ``cyscatter.gather`` does: NumPy's ``same_kind``
        rule (2.5 or NaN into an integer array: TypeError), a Python scalar the dtype holds exactly (2.0 into
        integers), and a value out of the dtype's range (-1 for uint8) ValueError.
    dtype : dtype, optional
        The result dtype, as for ``cyscatter.gather``: as if ``src.astype(dtype)`` were gathered (NumPy's
        ``same_kind`` rule, a TypeError naming `dtype` otherwise); `fill_value` is cast to it. `src` is cast
        lazily, block by block, before the gather. Default: the dtype of `src`.
    out : None
        Not supported (Dask arrays are immutable): any value but None raises TypeError; use
        ``dask.array.store(result, out)``.

    Returns
    -------
    out : dask.array.Array, shape B + I + F, dtype of `src` (or `dtype`)
        Chunked as `src` along B and F and as `index` along I.

    Raises
    ------
    TypeError
        A non-integer index, an object `src`, a `fill_value` the dtype of `src` cannot take, a `dtype` `src`
        cannot be cast to under ``same_kind``, an `out` that is not None.
    ValueError
        Unknown mode, mismatched shapes, unknown chunk sizes, an `axis` that does not fit, a `fill_value` out of
        the range of the dtype of `src`.
    IndexError
        An out-of-range entry under ``mode="raise"``: when computed for a Dask index (the message names the
        position within its index chunk and that chunk's location), when the graph is built for a NumPy one.

    Notes
    -----
    With `src` in one chunk along the gathered axis, each output block is one task holding one src block
    and one index block. With `src` cut into k blocks along it, every index block is matched against each
    of them (k times the index work): a task holds one src block, one index block and the entries that
    src block serves, and a final task per output block puts those together.

    Examples
    --------
    >>> import dask.array as da, numpy as np, cyscatter.dask as csd
    >>> src = da.from_array(np.array([1, 20, 300, 4000]), chunks=2)
    >>> csd.gather(src, da.from_array(np.array([1, 3, 1, 0]), chunks=3)).compute()
    array([  20, 4000,   20,    1])
    """
    refuse_out(out, "gather")
    coords = as_coords(index)
    m, ni = len(coords), coords[0].ndim
    if not isinstance(src, da.Array):
        src = np.asarray(src)
    if src.dtype.hasobject:   # before Dask's own chunking, which cannot size object blocks
        raise TypeError(f"gather does not support src dtype {src.dtype}")
    cast = check_dtype_arg(dtype, src.dtype, numbers=False)
    src = known_shape(da.asarray(src), "src")
    if cast is None and not src.dtype.isnative:   # native results, as the in-memory gather's
        cast = src.dtype.newbyteorder("=")
    if cast is not None and cast != src.dtype:
        src = src.astype(cast)   # lazily, block by block, as the core casts src whole first
    axis = normalize_axis(axis, src.ndim, m)
    check_mode(mode)
    fill = None
    if mode in DROPPING:   # the in-memory gather's rule, so that both refuse and cast the same values
        fill = fill_for(fill_value, src.dtype)
        fill = (np.zeros((), src.dtype) if fill is None else fill)[()]
    dims = src.shape[axis:axis + m]
    if m > 1:
        src = src.rechunk({axis + k: -1 for k in range(1, m)})
    check_in_memory_index(index, dims, mode, dims_arg="src")
    flat = flat_rows(coords, coords[0].chunks, dims, mode)

    nb, nf = axis, src.ndim - axis - m
    name = "cyscatter-gather-" + tokenize(src, flat, fill, nb)
    out_chunks = src.chunks[:nb] + flat.chunks + src.chunks[nb + m:]
    spans = partitions(src.chunks[nb], prod(dims[1:]))
    whole = partial(_blocks.gather_block, nb=nb, m=m, fill=fill)
    layer = {}
    for b in positions(src.numblocks[:nb]):
        for i in positions(flat.numblocks):
            for f in positions(src.numblocks[nb + m:]):
                out_where = b + i + f
                src_keys = [(src.name, *b, r, *(0,) * (m - 1), *f) for r in range(len(spans))]
                if len(spans) == 1:
                    layer[(name, *out_where)] = (whole, src_keys[0], (flat.name, *i))
                    continue
                parts = []
                for r, (lo, _) in enumerate(spans):
                    key = (name + "-partial", *out_where, r)
                    layer[key] = (partial(_blocks.gather_partial, nb=nb, m=m, lo=lo), src_keys[r], (flat.name, *i))
                    parts.append(key)
                layer[(name, *out_where)] = (
                    partial(_blocks.gather_assemble, shape=block_shape(out_chunks, out_where), nb=nb, ni=ni,
                            dtype=src.dtype, fill=fill), parts)
    return new_array(name, layer, [src, flat], out_chunks, src.dtype)
