"""`Reverse`: a validated call on the canonical view, as the reverse rules read it (backend, index plan, src,
out and dst views) with the core's take (gather) and put (scatter) on that backend."""
from __future__ import annotations

import numpy as np

from cyscatter._registry.ops import Op, get_op

ADD = get_op("add")


class Reverse:
    """Inputs of a reverse rule: the backend (`cyscatter._arrays.protocols`), the index plan and the canonical src,
    output and initial dst (or None).

    `src3` may be given as a callable that makes it (with `dtype`, the derivative dtype): the rules that never
    read src (add, sub and mean's VJPs, the linear JVPs) then never pay for its n x F conversion (a float16 src's
    derivatives are float64)."""

    __slots__ = ("_src3", "be", "dst3", "dtype", "exact", "out3", "plan")

    def __init__(self, be, plan, src3, out3, dst3, exact: tuple | None = None, *, dtype=None):
        self.be, self.plan, self._src3, self.out3, self.dst3 = be, plan, src3, out3, dst3
        # (src3, out3, dst3) in their integer dtype, for the winners of max/min and their twins on integer
        # inputs: the float64 views round above 2**53, which would tie distinct integers; None for float inputs
        self.exact = exact
        self.dtype = src3.dtype if dtype is None else dtype

    @property
    def src3(self) -> np.ndarray:
        if callable(self._src3):
            self._src3 = self._src3()
        return self._src3

    @property
    def xp(self):
        return self.be.xp

    def take(self, a3: np.ndarray) -> np.ndarray:
        """a3[:, flat, :] as (outer, n, inner), zero where an entry was dropped."""
        taken = self.xp.zeros((a3.shape[0], self.plan.n, a3.shape[2]), a3.dtype)
        self.be.run_gather(self.xp.ascontiguousarray(a3), self.plan, taken)
        return taken

    def put(self, v3: np.ndarray, op: Op = ADD, start=0) -> np.ndarray:
        """Scatter v3 (outer, n, inner) with `op` (a registry `Op`, default add) into a fresh (outer, size, inner)
        array starting at `start`."""
        out = self.xp.full((v3.shape[0], self.plan.size, v3.shape[2]), start, v3.dtype)
        self.be.run_scatter(op, self.xp.ascontiguousarray(v3), self.plan, out)
        return out

    def counts(self) -> np.ndarray:
        valid = self.plan.valid()
        return self.xp.bincount(self.plan.flat[valid], minlength=self.plan.size)

    def valid3(self) -> np.ndarray:
        return self.plan.valid()[None, :, None]
