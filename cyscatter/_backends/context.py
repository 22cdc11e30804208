"""`Reverse`: a validated call on the canonical view, as the reverse rules read it (backend, index plan, src,
out and dst views) with the core's take (gather) and put (scatter) on that backend."""
from __future__ import annotations

import numpy as np

from cyscatter._backends import chunks
from cyscatter._registry.ops import Op, get_op

ADD = get_op("add")


class Reverse:
    """Inputs of a reverse rule: the backend (`cyscatter._arrays.protocols`), the index plan and the canonical src,
    output and initial dst (or None).

    `src3` may be given as a callable that makes it (with `dtype`, the derivative dtype): the rules that never
    read src (add, sub and mean's VJPs, the linear JVPs) then never pay for its n x F conversion (a float16 src's
    derivatives are float64). `source`, when given, is src as `chunks.chunked_source` reads it in place
    (float16/bfloat16 into float32 or float64): `src3` is then made from it when a rule asks for it, and
    `src_chunks` (with `map_rows`, `put_rows`, `put_src`) walks it a cache-sized block of converted rows at a
    time, so that a rule whose per-entry result reads only that entry's src row and per-group tables makes no
    n x F converted copy."""

    __slots__ = ("_src3", "be", "dst3", "dtype", "exact", "out3", "plan", "source")

    def __init__(self, be, plan, src3, out3, dst3, exact: tuple | None = None, *, dtype=None, source=None):
        self.be, self.plan, self._src3, self.out3, self.dst3 = be, plan, src3, out3, dst3
        # (src3, out3, dst3) in their integer dtype, for the winners of max/min and their twins on integer
        # inputs: the float64 views round above 2**53, which would tie distinct integers; None for float inputs
        self.exact = exact
        self.dtype = src3.dtype if dtype is None else dtype
        self.source = source

    @property
    def src3(self) -> np.ndarray:
        if self._src3 is None:
            self._src3 = chunks.whole_rows(self.source)
        elif callable(self._src3):
            self._src3 = self._src3()
        return self._src3

    @property
    def in_place(self) -> bool:
        """Whether src is still read through `source` in place (a host `StagedRows`), not yet converted
        whole."""
        return (self._src3 is None or callable(self._src3)) and getattr(self.source, "staged", False)

    @property
    def shape3(self) -> tuple:
        """src's canonical shape (outer, n, inner), read without converting it."""
        return self.source.shape if self.in_place else self.src3.shape

    def src_chunks(self):
        """(slice of the entries, their plan, their src rows in the context's dtype) over the entries in order: the
        rows of `source` a converted block at a time (no n x F copy), else `src3` whole. The plans serve passes
        after the whole index was checked (a first full pass raised any bad entry)."""
        if self.in_place:
            yield from chunks.row_chunks(self.source, self.plan)
        else:
            yield slice(0, self.plan.n), self.plan, self.src3

    @property
    def xp(self):
        return self.be.xp

    def map_rows(self, fn, dtype) -> np.ndarray:
        """``fn(rows, plan, rows3)`` (`rows`: the chunk's slice of the entries, to read other src-like arrays)
        over `src_chunks`, joined as one (outer, n, inner) array of `dtype`: a per-entry result that reads only
        its entry's src row and per-group tables, computed a chunk at a time and cast into the result (each
        element cast as in the whole array), so no n x F array in the compute dtype is held beside it."""
        if not self.in_place:
            return fn(slice(0, self.plan.n), self.plan, self.src3).astype(dtype, copy=False)
        out = self.xp.empty(self.source.shape, dtype)
        for rows, plan, rows3 in self.src_chunks():
            out[:, rows] = fn(rows, plan, rows3)
        return out

    def take(self, a3: np.ndarray, plan=None) -> np.ndarray:
        """a3[:, flat, :] as (outer, n, inner), zero where an entry was dropped (`plan`: another, a chunk's)."""
        plan = self.plan if plan is None else plan
        taken = self.xp.zeros((a3.shape[0], plan.n, a3.shape[2]), a3.dtype)
        self.be.run_gather(self.xp.ascontiguousarray(a3), plan, taken)
        return taken

    def put(self, v3: np.ndarray, op: Op = ADD, start=0, *, plan=None, into=None) -> np.ndarray:
        """Scatter v3 (outer, n, inner) with `op` (a registry `Op`, default add) into a fresh (outer, size, inner)
        array starting at `start`, or into the table `into` (C-ordered, v3's dtype: a pass over a chunk's rows,
        `plan` the chunk's)."""
        plan = self.plan if plan is None else plan
        out = self.xp.full((v3.shape[0], plan.size, v3.shape[2]), start, v3.dtype) if into is None else into
        self.be.run_scatter(op, self.xp.ascontiguousarray(v3), plan, out)
        return out

    def put_rows(self, fn, dtype, op: Op = ADD, start=0) -> np.ndarray:
        """The scatter (`op`, from `start`) of ``fn(rows, plan, rows3)`` over `src_chunks` into one fresh
        (outer, size, inner) table of `dtype`: each element's updates in index order, the bits of one `put` of
        the whole per-entry array, which is never made."""
        outer, _, inner = self.shape3
        out = self.xp.full((outer, self.plan.size, inner), start, dtype)
        for rows, plan, rows3 in self.src_chunks():
            self.be.run_scatter(op, self.xp.ascontiguousarray(fn(rows, plan, rows3), dtype=dtype), plan, out)
        return out

    def put_src(self, op: Op = ADD, start=0) -> np.ndarray:
        """`put` of src itself, read through `source` when there is one (the staged kernel converts it a block
        at a time: the same bits as the whole conversion)."""
        if not self.in_place:
            return self.put(self.src3, op, start)
        outer, _, inner = self.source.shape
        out = self.xp.full((outer, self.plan.size, inner), start, self.dtype)
        if self.source.code is not None:
            self.be.run_scatter(op, self.source, self.plan, out)
        else:   # a conversion no stage makes: chunk by chunk, each element's updates still in index order
            for _, plan, rows3 in self.src_chunks():
                self.be.run_scatter(op, rows3, plan, out)
        return out

    def counts(self) -> np.ndarray:
        valid = self.plan.valid()
        return self.xp.bincount(self.plan.flat[valid], minlength=self.plan.size)

    def valid3(self) -> np.ndarray:
        return self.plan.valid()[None, :, None]
