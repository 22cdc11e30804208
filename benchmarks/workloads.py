"""The benchmark workloads of issue 5 (W1-W6) and a small latency workload, built reproducibly from a seed."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Workload:
    """One benchmark case: ``kind`` is "scatter" (op into `size` rows) or "gather" (rows of a `size`-row table)."""

    name: str
    title: str
    kind: str
    op: str
    dtype: str
    n: int               # index entries
    size: int            # destination rows (scatter) or table rows (gather)
    width: int           # features per row (1: a plain vector)
    index: str = "uniform"   # uniform, skewed (90% on 10 rows) or sorted

    def make(self, seed: int = 0):
        """(src, index) for this workload; the same seed gives the same arrays in every process."""
        rng = np.random.default_rng(seed)
        rows = self.n if self.kind == "scatter" else self.size
        shape = (rows,) if self.width == 1 else (rows, self.width)
        src = rng.standard_normal(shape, dtype=np.dtype(self.dtype))
        index = rng.integers(0, self.size, self.n, dtype=np.int64)
        if self.index == "skewed":
            hot = rng.random(self.n) < 0.9
            index[hot] = rng.integers(0, 10, int(hot.sum()))
        elif self.index == "sorted":
            index.sort()
        return src, index

    def nbytes(self, src, index) -> int:
        """Bytes moved once: src read + index read + output written (1 GB = 1e9 B)."""
        out_rows = self.size if self.kind == "scatter" else self.n
        return src.nbytes + index.nbytes + out_rows * self.width * src.itemsize


def workloads(scale: float = 1.0) -> list[Workload]:
    """All workloads; `scale` < 1 shrinks the entry and row counts (the --quick run)."""
    n6, n5, n7 = int(1e6 * scale), int(1e5 * scale), int(1e7 * scale)
    return [
        Workload("W1-f32", "scatter-add rows, f32 (1e6 x 64 -> 1e5)", "scatter", "add", "float32", n6, n5, 64),
        Workload("W1-f64", "scatter-add rows, f64 (1e6 x 64 -> 1e5)", "scatter", "add", "float64", n6, n5, 64),
        Workload("W2", "scatter-add vector, f32 (1e7 -> 1e6)", "scatter", "add", "float32", n7, n6, 1),
        Workload("W3-max", "scatter-max rows, f32 (W1 sizes)", "scatter", "max", "float32", n6, n5, 64),
        # not in the issue: the float64 max row loop once compiled to branches and ran 4.6x slower than add
        Workload("W3-max-f64", "scatter-max rows, f64 (W1 sizes)", "scatter", "max", "float64", n6, n5, 64),
        Workload("W3-mean", "scatter-mean rows, f32 (W1 sizes)", "scatter", "mean", "float32", n6, n5, 64),
        Workload("W4", "gather rows, f32 (1e5 x 64 table, 1e6 indices)", "gather", "take", "float32", n6, n5, 64),
        Workload("W5", "W1 f32, 90% of indices on 10 rows", "scatter", "add", "float32", n6, n5, 64, "skewed"),
        Workload("W6", "W1 f32, sorted index", "scatter", "add", "float32", n6, n5, 64, "sorted"),
        Workload("S", "small: scatter-add 1e4 elements (2500 x 4 -> 500), f32", "scatter", "add", "float32",
                 2500, 500, 4),
    ]
