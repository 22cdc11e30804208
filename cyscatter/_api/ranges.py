"""Segments given as (start, stop) row ranges: any order, overlapping, empty.

``segment_ranges(src, starts, stops, op)`` reduces rows ``starts[r]:stops[r]`` for each r. Ranges that follow
one another (``starts[r + 1] == stops[r]``) are a CSR pointer over a slice of `src` and run as `segment` on it;
others gather their rows once into range order (``ranges_index``) and run `segment` on that. An empty range
gets the op's identity (or `fill_value` / `initial`), never a row: NumPy's ``reduceat`` copies ``src[start]``
into an empty or decreasing range, which numpy#835 and #25476 and pytorch_scatter#452 ask to change.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter._api.gather import gather
from cyscatter._api.segment import segment, segment_ids
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import shape_of
from cyscatter._backends.select import backend_of
from cyscatter._docs import fill_doc
from cyscatter._plan.index import check_table_bytes
from cyscatter._plan.layout import normalize_axis
from cyscatter._registry.ops import get_op

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, FillValue, OpLike


class Ranges:
    """Checked ranges over `rows` rows of backend `be`: `indptr` (int64, R + 1) over the rows in range order,
    and `index` (int64, the rows to gather, None where the ranges follow one another: then the rows are
    ``offset + arange(indptr[-1])``, a slice)."""

    def __init__(self, starts, stops, rows: int, be):
        xp = be.xp
        lo, hi = _bounds(be.asarray(starts), "starts"), _bounds(be.asarray(stops), "stops")
        if lo.shape != hi.shape:
            raise ValueError(f"starts and stops must have one shape, got {lo.shape} and {hi.shape}")
        if lo.size:
            bad = (lo < 0) | (hi > rows) | (hi < lo)
            if bool(bad.any()):
                r = int(xp.argmax(bad))
                start, stop = int(lo[r]), int(hi[r])
                raise ValueError(f"range {r}, starts[{r}] = {start} to stops[{r}] = {stop}, must satisfy "
                                 f"0 <= start <= stop <= {rows} (the rows of src along axis)")
        lengths = hi - lo
        self.indptr = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(lengths)])
        total = int(self.indptr[-1])
        self.offset = int(lo[0]) if lo.size else 0
        follow = lo.size == 0 or bool((lo[1:] == hi[:-1]).all())
        if follow:
            self.index = None
        else:
            check_table_bytes((total,), np.int64, "the ranges' total length", total)
            owner = segment_ids(self.indptr)
            self.index = lo[owner] + xp.arange(total, dtype=np.int64) - self.indptr[owner]
        self.rows = rows

    def rows_of(self, src, axis: int, be):
        """The rows of `src` along `axis` in range order: a slice where the ranges follow one another."""
        if self.index is None:
            key = (slice(None),) * axis + (slice(self.offset, self.offset + int(self.indptr[-1])),)
            return be.asarray(src)[key]
        return gather(src, self.index, axis=axis)


def _bounds(a, arg: str):
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        raise TypeError(f"{arg} must hold integers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{arg} must be 1-D (one entry per range), got shape {a.shape}")
    if a.dtype == np.uint64 and a.size and a.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{arg} holds {a.max()}, larger than any row count")
    return a.astype(np.int64, copy=False)


def ranges_index(starts, stops, rows: int, be) -> Ranges:
    """The checked `Ranges` of `starts`/`stops` over `rows` rows (for the reverse functions and grad)."""
    return Ranges(starts, stops, rows, be)


@fill_doc
def segment_ranges(src: ArrayInput, starts: ArrayInput, stops: ArrayInput, op: OpLike = "add", *,
                   axis: SupportsIndex = 0, fill_value: FillValue | None = None,
                   initial: FillValue | None = None, **porting: object) -> Any:
    """Reduce row ranges: ``out[b, r, f] = op-reduction of src[b, starts[r]:stops[r], f]``.

    `segment` with the segments given as (start, stop) pairs in any order: ranges may overlap, repeat, skip
    rows or be empty, and each is reduced as `segment` reduces a segment (the same op, dtypes and rules; an
    empty range gets the identity, `fill_value` or `initial`). NumPy's ``ufunc.reduceat(src, indices)`` takes
    the starts only (each range ends where the next starts) and gives ``src[start]`` for an empty or decreasing
    range (numpy#835, numpy#25476); pytorch_scatter's ``segment_csr`` takes a pointer from 0 (its #452).
    Ranges that follow one another (``starts[r + 1] == stops[r]``) read a slice of `src` as it is; others
    gather their rows once (``stops - starts`` rows in all) and reduce those.

    Parameters
    ----------
    src : array_like, shape B + (n,) + F
        Values; the ranges index its n rows along `axis`.
    starts, stops : 1-D int arrays of length R
        Range r holds rows ``starts[r] <= k < stops[r]``; ``0 <= starts[r] <= stops[r] <= n``.
    {op}
    axis : int, default 0
        The axis of `src` holding the rows (negative counts from the end); the dims before it are batch dims.
    fill_value, initial : scalar, optional
        As for `segment`: the value of the empty ranges (and of a NaN-skipping op's all-NaN elements), and the
        value each range's reduction starts from.

    Returns
    -------
    out : ndarray, shape B + (R,) + F
        The dtype `segment` gives (float64 for integer `src` with div, mean, sqrt_n and nanmean).

    Raises
    ------
    TypeError
        Non-integer `starts`/`stops`, an op or dtype `segment` refuses.
    ValueError
        `starts` and `stops` of different shapes or not 1-D, a range outside the rows or with its stop before its
        start (the message names the range), an unknown op, an `axis` that does not fit.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> src = np.array([1., 2., 3., 4., 5.])
    >>> cs.segment_ranges(src, np.array([3, 0, 2, 1]), np.array([5, 2, 2, 4]))   # any order, overlaps, empty
    array([9., 3., 0., 9.])
    >>> np.add.reduceat(src, [3, 0, 2, 1])[2]   # reduceat: an empty or decreasing range gets src[start]
    np.float64(3.0)
    """
    if porting:
        raise unexpected_keywords("segment_ranges", porting)
    op = get_op(op)
    be = backend_of(src=src, starts=starts, stops=stops)
    src = be.asarray(src)
    axis = normalize_axis(axis, src.ndim, 1)
    ranges = Ranges(starts, stops, shape_of(src)[axis], be)
    return segment(ranges.rows_of(src, axis, be), ranges.indptr, op, axis=axis, fill_value=fill_value,
                   initial=initial)
