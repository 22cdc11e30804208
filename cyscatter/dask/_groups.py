"""Segments, the softmax family and the moments on Dask arrays, composed from the Dask scatter and gather.

Each follows its in-memory function's formula step for step (``cyscatter._api.softmax``, ``cyscatter._api.moments``):
a group statistic by a Dask scatter (max, sums, counts), taken back to the entries by a Dask gather, elementwise
Dask arithmetic between; the in-memory function itself, called on one entry of the same dtypes at graph time,
checks the arguments and gives the result dtype.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import dask.array as da
import numpy as np

from cyscatter._api.moments import check_ddof
from cyscatter._api.moments import scatter_nanstd as _nanstd
from cyscatter._api.moments import scatter_nanvar as _nanvar
from cyscatter._api.moments import scatter_std as _std
from cyscatter._api.moments import scatter_var as _var
from cyscatter._api.segment import batched_indptr, check_indptr, segment_axis
from cyscatter._api.segment import gather_segment as _gather_segment
from cyscatter._api.segment import segment as _segment
from cyscatter._api.softmax import scatter_log_softmax as _log_softmax
from cyscatter._api.softmax import scatter_logsumexp as _logsumexp
from cyscatter._api.softmax import scatter_softmax as _softmax
from cyscatter._arrays.integers import prod
from cyscatter._plan.index import _dims_from, check_table_bytes
from cyscatter._plan.layout import normalize_axis, src_layout
from cyscatter.dask import _blocks
from cyscatter.dask._docs import mirror
from cyscatter.dask._gather import gather
from cyscatter.dask._graph import as_coords, as_dask, flat_rows, known_shape
from cyscatter.dask._quantile import scatter_or_median
from cyscatter.dask._scatter import check_out_chunks, scatter

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike


def _dask(arr, arg):
    return known_shape(arr, arg) if isinstance(arr, da.Array) else as_dask(arr)


def broadcast_src(src, expected: tuple, axis: int, coords: tuple):
    """`src` (Dask) broadcast lazily to `expected` (B + I + F, `src_layout`'s): the index dims chunked as the
    index (one chunk for an in-memory one), so no block is larger than the index's chunks make it."""
    lead = len(expected) - src.ndim
    chunks = []
    for j, n in enumerate(expected):
        own = j - lead
        if own >= 0 and src.shape[own] == n:
            chunks.append(src.chunks[own])
        elif axis <= j < axis + coords[0].ndim and isinstance(coords[0], da.Array):
            chunks.append(coords[0].chunks[j - axis])
        else:
            chunks.append((n,))
    return da.broadcast_to(src, expected, chunks=tuple(chunks))


class _Groups:
    """A checked group call: src (B + I + F) in the compute dtype, the index, D, and the in-memory result dtype."""

    def __init__(self, fun, src, index, dim_size, axis, mode, broadcasts=True, **kwargs):
        if dim_size is None:
            raise TypeError("dim_size is required for Dask inputs (inferring it would compute the whole index)")
        src = _dask(src, "src")
        coords = as_coords(index)
        self.ni, self.m = coords[0].ndim, len(coords)
        if broadcasts:   # as in memory: a src that broadcasts to B + I + F stands for its broadcast
            axis, _, _, expected = src_layout(src.shape, coords, axis, expanded_check=False)
            if tuple(src.shape) != expected:
                src = broadcast_src(src, expected, axis, coords)
        self.axis = normalize_axis(axis, src.ndim, self.ni, array="src")
        mini_src = np.zeros(src.shape[:self.axis] + (1,) * self.ni + src.shape[self.axis + self.ni:], src.dtype)
        mini_index = tuple(np.zeros((1,) * self.ni, np.int64) for _ in coords)
        mini_dims = (1,) * self.m if np.ndim(dim_size) or isinstance(dim_size, tuple) else 1
        self.dtype = fun(mini_src, mini_index if self.m > 1 else mini_index[0], dim_size=mini_dims, axis=self.axis,
                         mode=mode, **kwargs).dtype
        compute = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        if src.shape[self.axis:self.axis + self.ni] != coords[0].shape:
            raise ValueError(f"src shape {src.shape} does not hold the index shape {coords[0].shape} at axis "
                             f"{self.axis}")
        self.src = src.astype(compute) if src.dtype != compute else src
        self.index, self.dim_size, self.mode = index, dim_size, mode
        self.nf = src.ndim - self.axis - self.ni

    def put(self, values, op="add"):
        return scatter(values, self.index, op, dim_size=self.dim_size, axis=self.axis, mode=self.mode)

    def take(self, table):
        return gather(table, self.index, axis=self.axis, mode=self.mode).rechunk(self.src.chunks)

    def valid(self):
        """True where an entry belongs to a group (False where mode='drop' dropped it), shaped to broadcast
        against src: the entries' planned rows (dropped ones fall outside the rows), per index chunk, so nothing
        the size of D is made."""
        coords = as_coords(self.index)
        dims = _dims_from(self.dim_size, coords, "dim_size")
        flat = flat_rows(coords, coords[0].chunks, dims, self.mode)
        flags = da.map_blocks(_blocks.in_rows, flat, size=prod(dims), dtype=bool)
        return flags.reshape((1,) * self.axis + flags.shape + (1,) * self.nf)


def _quietly(*blocks, fn):
    with np.errstate(all="ignore"):   # as the in-memory functions: inf - inf, 0/0 are the documented NaNs
        return fn(*blocks)


def _ew(fn, *arrays):
    """`fn` (a NumPy ufunc) applied block by block to aligned Dask arrays, without NumPy's warnings."""
    return da.map_blocks(_quietly, *arrays, fn=fn, dtype=np.result_type(*[a.dtype for a in arrays]))


def _exp_minus(a, b):
    return np.exp(a - b)


def _log_plus(a, b):
    return np.log(a) + b


_GROUP_NOTES = """On Dask: `dim_size` is required (TypeError without it: inferring it would compute the whole index);
    a `src` that broadcasts (where the in-memory function takes one) is broadcast lazily, its index dims chunked
    as the index. The arguments are checked when the graph is built, by the
    in-memory function run on one entry of the same dtypes; an out-of-range entry under ``mode="raise"`` raises
    IndexError when computed (at once for a NumPy index). Sums are grouped by chunk: equal to the in-memory result
    to rounding."""
_SEGMENT_PARAMS = """    dim_chunks : int or sequence of int, optional
        On Dask: chunks of the output along the segment axis (``cyscatter.dask.scatter``'s `dim_chunks`).
    split_every : int, default 4
        On Dask: partials merged per task.
"""
_GATHER_SEGMENT_PARAMS = """    chunks : "auto", -1, int or sequence of int, default "auto"
        On Dask: chunks of the output along `axis` (its ``indptr[-1]`` rows): Dask's "auto" size, one chunk,
        blocks of that many rows, or sizes adding up to the rows (TypeError / ValueError naming `chunks`
        otherwise; MemoryError where more than 2**17 blocks would make a graph that does not fit in memory). An
        ``indptr[-1]`` whose output no array could hold (past 2**63 - 1 bytes) raises the in-memory ValueError
        when the graph is built; a large one that could exist is lazy, as any Dask array.
"""


def _peak(g):
    return g.put(g.src, "max")


@mirror(_logsumexp, notes=_GROUP_NOTES)
def scatter_logsumexp(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                      mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_logsumexp`` of Dask arrays (each group shifted by its finite maximum); shape
    B + D + F. Equal to the in-memory result to rounding (sums grouped by chunk). Raises as the in-memory
    function, at graph time; `dim_size` is required."""
    g = _Groups(_logsumexp, src, index, dim_size, axis, mode)
    peak = _peak(g)
    shift = da.where(da.isfinite(peak), peak, 0).astype(peak.dtype)
    sums = g.put(_ew(_exp_minus, g.src, g.take(shift)))
    return _ew(_log_plus, sums, shift).astype(g.dtype)


@mirror(_softmax, notes=_GROUP_NOTES)
def scatter_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                    mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_softmax`` of Dask arrays; shape and chunks of `src`; 0 for the entries
    ``mode="drop"`` drops. Raises as the in-memory function, at graph time; `dim_size` is required."""
    g = _Groups(_softmax, src, index, dim_size, axis, mode, broadcasts=False)
    shifted = _ew(_exp_minus, g.src, g.take(_peak(g)))
    probs = _ew(np.divide, shifted, g.take(g.put(shifted)))
    if mode in ("drop", "normalize_drop"):
        probs = da.where(g.valid(), probs, probs.dtype.type(0))
    return probs.astype(g.dtype)


@mirror(_log_softmax, notes=_GROUP_NOTES)
def scatter_log_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize, axis: SupportsIndex = 0,
                        mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_log_softmax`` of Dask arrays; shape and chunks of `src`; -inf for the entries
    ``mode="drop"`` drops. Raises as the in-memory function, at graph time; `dim_size` is required."""
    g = _Groups(_log_softmax, src, index, dim_size, axis, mode, broadcasts=False)
    shifted = _ew(np.subtract, g.src, g.take(_peak(g)))
    logp = _ew(np.subtract, shifted, g.take(_ew(np.log, g.put(_ew(np.exp, shifted)))))
    if mode in ("drop", "normalize_drop"):
        logp = da.where(g.valid(), logp, logp.dtype.type(-np.inf))
    return logp.astype(g.dtype)


def _moment(fun, src, index, ddof, dim_size, axis, mode, std, skip_nan):
    ddof = check_ddof(ddof)
    g = _Groups(fun, src, index, dim_size, axis, mode, ddof=ddof)
    real = np.empty(0, g.src.dtype).real.dtype
    if skip_nan and g.src.dtype.kind in "fc":
        counts = g.put((~da.isnan(g.src)).astype(np.int64))
        mean = g.put(g.src, "nansum") / da.maximum(counts, 1)
    else:
        ones = da.ones(g.src.shape, np.int64, chunks=g.src.chunks)
        counts = g.put(ones)
        mean = g.put(g.src) / da.maximum(counts, 1).astype(real)
    dev = _ew(np.subtract, g.src, g.take(mean.astype(g.src.dtype)))
    squares = (dev.real * dev.real + dev.imag * dev.imag) if dev.dtype.kind == "c" else dev * dev
    dof = (counts - ddof).astype(real)
    summed = _ew(np.divide, g.put(squares, "nansum" if skip_nan else "add"), dof)
    summed = da.where(dof > 0, summed, np.nan)
    if skip_nan:
        summed = da.where(da.isfinite(mean), summed, np.nan)
    out = da.sqrt(summed) if std else summed
    return out.astype(g.dtype)


@mirror(_var, notes=_GROUP_NOTES)
def scatter_var(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize, axis: SupportsIndex = 0,
                mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_var`` of Dask arrays (two passes: group means, then squared deviations);
    shape B + D + F; NaN where ``count - ddof <= 0``. Raises as the in-memory function, at graph time."""
    return _moment(_var, src, index, ddof, dim_size, axis, mode, std=False, skip_nan=False)


@mirror(_std, notes=_GROUP_NOTES)
def scatter_std(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize, axis: SupportsIndex = 0,
                mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_std`` of Dask arrays: ``sqrt(scatter_var)``."""
    return _moment(_std, src, index, ddof, dim_size, axis, mode, std=True, skip_nan=False)


@mirror(_nanvar, notes=_GROUP_NOTES)
def scatter_nanvar(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize,
                   axis: SupportsIndex = 0, mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_nanvar`` of Dask arrays: the variance over the non-NaN members."""
    return _moment(_nanvar, src, index, ddof, dim_size, axis, mode, std=False, skip_nan=True)


@mirror(_nanstd, notes=_GROUP_NOTES)
def scatter_nanstd(src: ArrayInput, index: IndexLike, *, ddof: float = 0, dim_size: DimSize,
                   axis: SupportsIndex = 0, mode: Mode = "raise") -> da.Array:
    """Lazy ``cyscatter.scatter_nanstd`` of Dask arrays: ``sqrt(scatter_nanvar)``."""
    return _moment(_nanstd, src, index, ddof, dim_size, axis, mode, std=True, skip_nan=True)


# ---- segments: a CSR pointer held in memory, its segment ids made per chunk -----------------------------------

def _indptr(indptr, rows, fun):
    if isinstance(indptr, da.Array):   # documented: the pointer (B' x (S + 1) integers) is computed at graph time
        indptr = indptr.compute()
    ptr = np.asarray(indptr)
    return ptr if ptr.ndim > 1 else check_indptr(ptr, rows)


def _ids_block(pos, *, indptr):
    return np.searchsorted(indptr, pos, "right").astype(np.int64) - 1


def _segment_ids(indptr, chunks: tuple):
    pos = da.arange(int(indptr[-1]), chunks=(chunks,), dtype=np.int64)
    return pos.map_blocks(_ids_block, indptr=indptr, dtype=np.int64)


def _batched_block(block, *, flat, batch, nseg, rows, coord, block_info=None):
    """Coordinate `coord` (a batch dim, or the segment for the last) of the positions B + (rows,) of one block:
    their row of the flat pointer (`batched_indptr`'s translation) gives batch row and segment."""
    where = [slice(lo, hi) for lo, hi in block_info[None]["array-location"]]
    grid = np.ogrid[tuple(where)]
    if coord < len(batch):
        return np.broadcast_to(grid[coord], block.shape).astype(np.int64)
    b = np.ravel_multi_index(tuple(grid[:-1]), batch) if batch else np.zeros((), np.int64)
    seg = np.searchsorted(flat, b * rows + grid[-1], "right").astype(np.int64) - 1 - b * nseg
    return np.broadcast_to(seg, block.shape).astype(np.int64)


def _batched_coords(flat, batch, nseg, rows, chunks):
    """The index (batch coordinates, segment) of the rows B + (rows,) of a batched pointer: Dask arrays chunked by
    `chunks`, made per block."""
    grid = da.zeros(batch + (rows,), dtype=np.int8, chunks=chunks)
    return tuple(grid.map_blocks(_batched_block, flat=flat, batch=batch, nseg=nseg, rows=rows, coord=c,
                                 dtype=np.int64) for c in range(len(batch) + 1))


@mirror(_segment, params=_SEGMENT_PARAMS)
def segment(src: ArrayInput, indptr: ArrayInput, op: OpLike = "add", *, axis: SupportsIndex | None = None,
            fill_value: FillValue | None = None, dim_chunks: SupportsIndex | Sequence[SupportsIndex] | None = None,
            split_every: SupportsIndex = 4) -> da.Array:
    """Lazy ``cyscatter.segment`` of a Dask `src`: ``cyscatter.dask.scatter(src, segment_ids(indptr), op,
    dim_size=S)``, which the in-memory function equals bit for bit (float sums here to rounding: grouped by
    chunk). `indptr` is a NumPy pointer (a Dask one is computed at graph time: B' x (S + 1) integers); its segment
    ids are made lazily per chunk of `src`. A batched `indptr` (B' + (S + 1,)) scatters with the index (batch
    coordinates, segment ids) of shape B + (n,) into B + (S,) at axis 0 (`dim_chunks` then cuts the first
    batch dim). Raises as the in-memory function at graph time (TypeError, ValueError naming `indptr`)."""
    src = _dask(src, "src")
    ptr = _indptr(indptr, None, "segment")
    axis = segment_axis(ptr, axis, src.ndim)
    if ptr.ndim > 1:
        flat, batch, nseg, rows = batched_indptr(ptr, src.shape, rows=src.shape[axis])
        _segment(np.zeros((1,) + src.shape[axis + 1:], src.dtype), np.array([0, 1]), op,
                 fill_value=fill_value)   # the in-memory checks of op, dtype and fill_value
        coords = _batched_coords(flat, batch, nseg, rows, src.chunks[:axis + 1])
        return scatter_or_median(src, coords, op, dim_size=batch + (nseg,), axis=0, fill_value=fill_value,
                                  dim_chunks=dim_chunks, split_every=split_every)
    ptr = check_indptr(ptr, src.shape[axis])
    _segment(np.zeros(src.shape[:axis] + (1,) + src.shape[axis + 1:], src.dtype), np.array([0, 1]), op, axis=axis,
             fill_value=fill_value)   # the in-memory checks of op, dtype and fill_value
    ids = _segment_ids(ptr, src.chunks[axis])
    return scatter_or_median(src, ids, op, dim_size=len(ptr) - 1, axis=axis, fill_value=fill_value,
                              dim_chunks=dim_chunks, split_every=split_every)


def _check_rows(src, axis, rows, batch=None):
    """The in-memory ValueError for an output of `rows` rows along `axis` that no array could hold (past
    2**63 - 1 bytes), now: the graph (its chunks) is sized by it, before any is listed."""
    shape = (batch if batch is not None else src.shape[:axis]) + (rows,) + src.shape[axis + 1:]
    check_table_bytes(shape, src.dtype, "indptr[-1]", rows)


@mirror(_gather_segment, params=_GATHER_SEGMENT_PARAMS)
def gather_segment(src: ArrayInput, indptr: ArrayInput, *, axis: SupportsIndex | None = None,
                   chunks: Any = "auto") -> da.Array:
    """Lazy ``cyscatter.gather_segment`` of a Dask `src`: row s of `src` repeated over segment s
    (``cyscatter.dask.gather(src, segment_ids(indptr))``), exact. `indptr` as for ``segment`` (batched: a gather
    with the index (batch coordinates, segment ids) of shape B + (n,)); `chunks` the output's chunks along `axis`
    (default: Dask's "auto"). Raises as the in-memory function at graph time."""
    src = _dask(src, "src")
    ptr = _indptr(indptr, None, "gather_segment")
    axis = segment_axis(ptr, axis, src.ndim)
    if ptr.ndim > 1:
        flat, batch, nseg, rows = batched_indptr(ptr, src.shape, segments=src.shape[axis])
        _check_rows(src, axis, rows, batch)
        out_chunks = src.chunks[:axis] + (check_out_chunks(chunks, rows, 8),)
        return gather(src, _batched_coords(flat, batch, nseg, rows, out_chunks), axis=0)
    ptr = check_indptr(ptr, None)
    if len(ptr) - 1 != src.shape[axis]:
        _gather_segment(np.zeros((1,) * axis + (src.shape[axis],), src.dtype), ptr, axis=axis)   # its ValueError
    _check_rows(src, axis, int(ptr[-1]))
    ids = _segment_ids(ptr, check_out_chunks(chunks, int(ptr[-1]), 8))
    return gather(src, ids, axis=axis)
