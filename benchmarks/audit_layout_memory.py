"""Which calls copy a non-C-ordered dst/out/src whole: the traced peak (tracemalloc, which NumPy and the kernels'
buffers report to) of every public function that writes a given array, for every op it takes and each layout of
the written array and of src, against the same call's peak with C-ordered arrays.

    python benchmarks/audit_layout_memory.py                  # the table of every case, copies flagged
    python benchmarks/audit_layout_memory.py --only-copies    # only the cases that copy a whole array
    python benchmarks/audit_layout_memory.py --ratio 8        # 8x more entries than destination rows (0.5: half)

Shapes: float64, destination (8192, 64) (4 MiB), src (n, 64) with n = ratio * 8192 (default 2: 8 MiB), a
random index; "ff" cases put the features first (``axis=1``: dst (64, 8192), src (64, n)). Layouts of the
array under test: C, F (``np.asfortranarray``), T (the transpose of a C array of the reversed shape: for 2-d the
same strides as F, made differently), rows2 (every other row of a twice longer array), cols2 (every other
column), neg (both dims reversed). A case is flagged when its peak exceeds the C-ordered call's by at least 90%
of the array's bytes (the ``extra`` column is that excess over the array's bytes).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

import numpy as np
from memory import traced_peak

import cyscatter as cs

SIZE, FEATURES = 8192, 64
LAYOUTS = ("C", "F", "T", "rows2", "cols2", "neg")
FLAG = 0.9


def laid_out(values: np.ndarray, layout: str) -> np.ndarray:
    """`values` (2-d) copied into an array of `layout` (the same values, other strides)."""
    if layout == "C":
        return np.ascontiguousarray(values)
    if layout == "F":
        return np.asfortranarray(values)
    if layout == "T":
        return np.ascontiguousarray(values.T).T
    a, b = values.shape
    if layout == "rows2":
        base = np.zeros((2 * a, b), values.dtype)
        base[::2] = values
        return base[::2]
    if layout == "cols2":
        base = np.zeros((a, 2 * b), values.dtype)
        base[:, ::2] = values
        return base[:, ::2]
    if layout == "neg":
        return np.ascontiguousarray(values[::-1, ::-1])[::-1, ::-1]
    raise ValueError(layout)


def _scatter_cases(ratio: float):
    """(function name, op, features_first, make) where make(dst_layout, src_layout) -> (call, dst, src)."""
    rng = np.random.default_rng(0)
    n = int(ratio * SIZE)
    idx = rng.integers(0, SIZE, n)
    rows = rng.standard_normal((n, FEATURES))
    table = rng.standard_normal((SIZE, FEATURES))

    def scatter_out(op, ff):
        def make(dl, sl):
            src = laid_out(rows.T if ff else rows, sl)
            out = laid_out(np.zeros_like(table.T if ff else table), dl)
            return (lambda: cs.scatter(src, idx, op, dim_size=SIZE, axis=int(ff), out=out)), out, src
        return make

    def scatter_into(op, ff):
        def make(dl, sl):
            src = laid_out(rows.T if ff else rows, sl)
            dst = laid_out(table.T if ff else table, dl)
            return (lambda: cs.scatter_into(dst, src, idx, op, axis=int(ff))), dst, src
        return make

    for op in cs.OP_NAMES:
        for ff in (False, True):
            yield "scatter(out=)", op, ff, scatter_out(op, ff)
            yield "scatter_into", op, ff, scatter_into(op, ff)

    gidx = rng.integers(0, SIZE, n)

    def gather_out(ff):
        def make(dl, sl):
            src = laid_out(table.T if ff else table, sl)
            out = laid_out(np.zeros_like(rows.T if ff else rows), dl)
            return (lambda: cs.gather(src, gidx, axis=int(ff), out=out)), out, src
        return make

    def gather_into(ff):
        def make(dl, sl):
            src = laid_out(table.T if ff else table, sl)
            dst = laid_out(np.zeros_like(rows.T if ff else rows), dl)
            return (lambda: cs.gather_into(dst, src, gidx, axis=int(ff))), dst, src
        return make

    for ff in (False, True):
        yield "gather(out=)", "-", ff, gather_out(ff)
        yield "gather_into", "-", ff, gather_into(ff)

    def grouped(fun, name):
        def outer(ff):
            def make(dl, sl):
                src = laid_out(rows.T if ff else rows, sl)
                shape = (rows.T if ff else rows).shape if name != "scatter_logsumexp" else (table.T if ff
                                                                                            else table).shape
                out = laid_out(np.zeros(shape), dl)
                return (lambda: fun(src, idx, dim_size=SIZE, axis=int(ff), out=out)), out, src
            return make
        return outer

    for fun in (cs.scatter_softmax, cs.scatter_log_softmax, cs.scatter_logsumexp):
        for ff in (False, True):
            yield fun.__name__ + "(out=)", "-", ff, grouped(fun, fun.__name__)(ff)

    def quantile(ff):
        def make(dl, sl):
            src = laid_out(rows.T if ff else rows, sl)
            out = laid_out(np.zeros((table.T if ff else table).shape), dl)
            return (lambda: cs.scatter_quantile(src, idx, 0.5, dim_size=SIZE, axis=int(ff), out=out)), out, src
        return make

    for ff in (False, True):
        yield "scatter_quantile(out=)", "-", ff, quantile(ff)


def _peak(make, dl, sl):
    call, dst, src = make(dl, sl)
    try:
        call()   # warm: kernels' kept blocks, lazily imported modules
        call, dst, src = make(dl, sl)
        _, peak = traced_peak(call)
    except (TypeError, ValueError) as err:   # a layout the function refuses is reported, not audited
        return None, dst, src, f"{type(err).__name__}"
    return peak, dst, src, ""


def audit(ratio: float, only_copies: bool = False):
    """Rows (function, op, ff, role, layout, peak KiB, C peak KiB, extra, copies) for every case."""
    rows = []
    for fun, op, ff, make in _scatter_cases(ratio):
        base, dst, src, err = _peak(make, "C", "C")
        if base is None:
            continue
        for role in ("dst", "src"):
            for layout in LAYOUTS[1:]:
                peak, dst, src, err = _peak(make, *((layout, "C") if role == "dst" else ("C", layout)))
                if peak is None:
                    rows.append((fun, op, ff, role, layout, None, base / 1024, None, err))
                    continue
                nbytes = (dst if role == "dst" else src).nbytes
                extra = (peak - base) / nbytes
                copies = extra >= FLAG
                if copies or not only_copies:
                    rows.append((fun, op, ff, role, layout, peak / 1024, base / 1024, extra,
                                 "COPY" if copies else ""))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ratio", type=float, default=2, help="index entries per destination row (default 2)")
    p.add_argument("--only-copies", action="store_true")
    a = p.parse_args()
    rows = audit(a.ratio, a.only_copies)
    print(f"# n = {a.ratio} x {SIZE} entries, {FEATURES} float64 features; peaks in KiB; "
          f"extra = (peak - C peak) / bytes of the array under test")
    print(f"{'function':26} {'op':9} {'ff':3} {'role':4} {'layout':6} {'peak':>8} {'C peak':>8} {'extra':>6}")
    for fun, op, ff, role, layout, peak, base, extra, note in rows:
        shown = "-" if peak is None else f"{peak:8.0f}"
        print(f"{fun:26} {op:9} {'y' if ff else 'n':3} {role:4} {layout:6} {shown:>8} {base:8.0f} "
              f"{'' if extra is None else f'{extra:6.2f}':>6} {note}")


if __name__ == "__main__":
    main()
