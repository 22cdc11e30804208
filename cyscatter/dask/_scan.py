"""scatter_scan on Dask arrays: each chunk's group totals, an exclusive running total of them across chunks (the
carry), then each chunk's grouped scan started from its groups' carry."""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import dask.array as da
import numpy as np
from dask.base import tokenize

from cyscatter._api.scan import FLAGS_DOC, scan_op
from cyscatter._arrays.integers import prod
from cyscatter._docs import fill_doc
from cyscatter._plan.layout import split_src
from cyscatter._plan.values import flag
from cyscatter.dask import _blocks
from cyscatter.dask._graph import as_coords, known_shape, new_array, positions, stand_in
from cyscatter.dask._scatter import in_index_order, prepare, refuse_out

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import DTypeLike

    from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode, _FuncT
    from cyscatter._typing import ScanOpLike as OpLike


def _doc(func: _FuncT) -> _FuncT:
    func.__doc__ = str(func.__doc__).replace("{flags}", FLAGS_DOC.replace("{", "{{").replace("}", "}}"))
    return fill_doc(func)


@_doc
def scatter_scan(src: ArrayInput, index: IndexLike, op: OpLike = "add", *, dim_size: DimSize,
                 axis: SupportsIndex = 0, mode: Mode = "raise", exclusive: bool = False, reverse: bool = False,
                 dtype: DTypeLike | None = None, out: Any = None) -> da.Array:
    """Lazy grouped scan of Dask arrays: ``cyscatter.scatter_scan`` computed chunk by chunk.

    A scan is sequential along the entries, so the chunk k along the index dims needs, per group, the running
    value of all the entries before it (after it with `reverse`): each chunk's group totals are reduced by the
    core kernel (as ``cyscatter.dask.scatter``'s partials), a chain of small tasks merges them in scan order
    (chunk k's carry is the merge of chunks 0..k-1, with the op's combine rule), and each chunk is scanned by
    the core kernel (``exclusive`` and ``reverse`` as given) from its groups' carry: the carry enters as one
    extra leading entry per group (trailing with `reverse`) whose output is left out, so the kernel's own rules
    combine it. Chunks along the batch and feature dims are independent.

    Parameters
    ----------
    src : dask.array.Array or array_like, shape B + I + F
        Values (integers, floats, complex but not for max/min), chunked in any way; the index is rechunked
        to match src along I. A NumPy `src` is cut like the index. No broadcasting: the result has src's shape.
    index : Dask or NumPy int array of shape I, or tuple of m of them
        Group of each entry, as for ``cyscatter.scatter_scan``: any integer dtype; known chunk sizes.
    op : {{"add", "mul", "max", "min", "nansum", "nanprod", "fmax", "fmin"}}, default "add"
        The running op, as for ``cyscatter.scatter_scan`` (aliases too); the NaN-skipping twins treat a NaN
        entry as the identity in every chunk and carry. Others raise ValueError.
    dim_size : int or tuple of m ints
        Destination shape D (the groups). Required: inferring it would compute the whole index.
    {axis}
    {mode}
    {flags}
    dtype : dtype, optional
        As for ``cyscatter.dask.scatter``: `src` is cast (lazily, block by block) to `dtype` under NumPy's
        ``same_kind`` rule first. Default: the dtype of `src`.
    out : None
        Not supported (Dask arrays are immutable): any value but None raises TypeError.

    Returns
    -------
    out : dask.array.Array, shape and chunks of `src`
        The dtype of ``cyscatter.scatter_scan``'s result (that of `src`, or `dtype`). With an index of more than
        one dim, the chunks of src along its dims after the first are merged for the scan (the index order runs
        across them) and the result is rechunked to src's chunks.

    Raises
    ------
    TypeError
        Missing `dim_size`, a non-integer index, a dtype the op refuses (bool, object; complex for max/min),
        `exclusive` / `reverse` not bools, a `dtype` `src` cannot be cast to, an `out` that is not None.
    ValueError
        An op without a running form (see `op`); unknown mode, a src not shaped B + I + F around the index,
        unknown chunk sizes, a `dim_size` whose table could not exist.
    IndexError
        An out-of-range entry under ``mode="raise"``: when computed for a Dask index (the message names the
        position within its index chunk and that chunk's location), when the graph is built for a NumPy one.

    Notes
    -----
    Memory: a total or carry task holds one table of ``outer_block * prod(D) * inner_block`` elements in the
    compute dtype (as a ``cyscatter.dask.scatter`` partial with one destination block); a scan task holds
    one src block, its index block, one carry and their concatenation (the kernel's input). The carries form
    a chain (one task per chunk along I, each merging two tables), so the chunks' scans run in parallel once
    it is done.

    Results equal ``cyscatter.scatter_scan``'s exactly for integers and max/min (NaN wins, -0.0 < +0.0) and to
    rounding for float sums and products: within a chunk they run entry by entry from the carry, as in memory,
    but the carry adds up whole chunks' totals (a different grouping).

    Examples
    --------
    >>> import dask.array as da, numpy as np, cyscatter.dask as csd
    >>> src = da.from_array(np.array([1, 2, 3, 4, 5]), chunks=2)
    >>> csd.scatter_scan(src, np.array([0, 1, 0, 1, 0]), dim_size=2).compute()
    array([1, 2, 4, 6, 9])
    >>> csd.scatter_scan(src, np.array([0, 1, 0, 1, 0]), "max", dim_size=2, reverse=True).compute()
    array([5, 4, 5, 4, 5])
    """
    entry = scan_op(op)
    refuse_out(out, "scatter_scan")
    exclusive, reverse = flag("exclusive", exclusive), flag("reverse", reverse)
    if dim_size is not None:   # (a missing one: prepare's TypeError) the core's shape check: no broadcasting
        shape = known_shape(src, "src").shape if isinstance(src, da.Array) else np.shape(src)
        split_src(np.broadcast_to(np.empty((), "u1"), shape), (stand_in(as_coords(index)[0]),), axis,
                  expanded_check=False)
    setup = prepare(src, index, entry, dim_size, axis, mode, None, 2, dtype)
    entry.check_dtype(setup.src.dtype)   # the core's TypeError (bool, complex max/min) now, not at compute
    chunks = setup.src.chunks
    setup = in_index_order(setup)
    src, flat, nb, ni = setup.src, setup.flat, setup.nb, setup.ni
    size = prod(setup.dims)
    name = f"cyscatter-scatter-scan-{entry.name}-" + tokenize(src, flat, entry.name, setup.dims, exclusive,
                                                              reverse, nb)
    total = partial(_blocks.scan_total, op=entry.name, result_dtype=setup.result_dtype, nb=nb, size=size,
                    dim_size=dim_size)
    carry_task = partial(_blocks.scan_carry, op=entry.name)
    scan_task = partial(_blocks.scan_block, op=entry.name, nb=nb, size=size, dim_size=dim_size, exclusive=exclusive,
                        reverse=reverse)
    grid = src.numblocks
    layer: dict[tuple[object, ...], object] = {}
    for b in positions(grid[:nb]):
        for f in positions(grid[nb + ni:]):
            order = positions(grid[nb:nb + ni])
            carry = None
            for step, i in enumerate(order[::-1] if reverse else order):
                src_key, flat_key = (src.name, *b, *i, *f), (flat.name, *i)
                layer[(name, *b, *i, *f)] = (scan_task, src_key, flat_key, carry)
                if step == len(order) - 1:
                    break
                total_key = (name + "-total", *b, *i, *f)
                layer[total_key] = (total, src_key, flat_key)
                if carry is None:
                    carry = total_key
                else:
                    layer[(name + "-carry", *b, *i, *f)] = (carry_task, [carry, total_key])
                    carry = (name + "-carry", *b, *i, *f)
    result = new_array(name, layer, [src, flat], src.chunks, setup.result_dtype)
    return result.rechunk(chunks) if result.chunks != chunks else result
