"""The backend interface: what `cyscatter._backends.host` (NumPy arrays, Cython kernels) and
`cyscatter._backends.cuda` (CuPy arrays, CUDA kernels) each provide, as module attributes.

Callers receive one of the two modules from `select.backend_of` and use only these names, so that the
validation and the semantics above the backends are written once for both. Every view argument is canonical:
(outer, rows, inner) with adjacent elements in a row.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Protocol


class Backend(Protocol):
    """A backend module, typed: the array namespace and the kernel calls on canonical views."""

    xp: ModuleType
    """The array namespace: numpy or cupy."""

    def asarray(self, a: Any, dtype: Any = None) -> Any:
        """`a` as an array of this backend (no copy where its layout allows)."""

    def rows_view(self, arr: Any, dtype: Any, outer: int, rows: int, inner: int) -> Any:
        """`arr` as an (outer, rows, inner) array of `dtype` with unit inner stride, copied only when needed."""

    def rows_source(self, arr: Any, dtype: Any, outer: int, rows: int, inner: int) -> Any:
        """What `run_scatter` and `segment_reduce` (they alone) read a src from: `rows_view`'s array, or an object
        the backend's kernels convert and lay out a block at a time instead of a whole copy."""

    def rows_in_place(self, arr: Any, dtype: Any, outer: int, rows: int, inner: int) -> Any:
        """`arr` itself as (outer, rows, inner) with the strides the backend's kernels read and write in place
        (the host's: any), or None where that would take a copy or a conversion."""

    def writable_rows(self, dst: Any, dtype: Any, outer: int, rows: int, inner: int) -> tuple[Any, bool]:
        """(work, direct): `dst` itself as (outer, rows, inner) when possible, else a converted copy to copy
        back. A backend whose `run_scatter` and `run_gather` take rows with apart elements may hand those out."""

    def check_writable(self, dst: Any, arg: str = "dst") -> Any:
        """The array to write for `dst` (ValueError / TypeError naming `arg` for one that cannot be written)."""

    def precheck(self, plan: Any) -> None:
        """Under mode='raise', raise the index error before an in-place write touches the destination."""

    def run_scatter(self, opcode: int, src3: Any, plan: Any, out3: Any, counts: Any = None,
                    threads: int = 0) -> None:
        """Reduce `src3` into `out3` along the plan's rows with the op of `opcode` (counting into `counts`)."""

    def run_gather(self, src3: Any, plan: Any, out3: Any, threads: int = 0) -> None:
        """``out3[:, k] = src3[:, plan.flat[k]]``, under the plan's mode."""

    def fresh_table(self, shape: tuple, dtype: Any, identity: Any) -> Any:
        """A new C-ordered array of `shape` and `dtype` holding `identity` (an allocating scatter's table)."""

    def rounded(self, table: Any, dtype: Any) -> Any:
        """`table` (a compute-dtype result) as `dtype`: ``astype(dtype, copy=False)``, the same bits and the same
        floating-point errors, by a faster loop where the backend has one (float32 to float16 on the host)."""

    def exclusive_products(self, *args: Any) -> Any:
        """Per entry, the product of the other members of its group (mul's partials, without division)."""

    name: str
    """The backend's name, "host" or "cuda": the suffix of the modules above the backends that implement a family
    for it (`cyscatter._api.gather_scatter_host` / `_cuda`), which callers reach through this name alone."""

    raises_in_kernels: bool
    """Whether the kernels report an out-of-range entry under mode='raise' (False: `plan_index` checks them)."""

    fused_reverse: bool
    """Whether the reverse rules may run `cyscatter.fused_kernels` (the CPU's one-pass selections) on these arrays."""

    def reduce_max(self, a: Any) -> Any:
        """The largest element of a non-empty array (on the host a ufunc reduce: no Python-level frame)."""

    def reduce_all(self, a: Any) -> Any:
        """Whether every element of a non-empty array is true (on the host a ufunc reduce)."""

    def reduce_any(self, a: Any) -> Any:
        """Whether some element of a non-empty array is true (on the host a ufunc reduce)."""

    def shape_of(self, a: Any) -> tuple:
        """The shape of an array argument this backend takes (host: any kind; CuPy's refuse implicit conversion)."""

    def refuse_dtype(self, name: str, dtype: Any) -> None:
        """TypeError naming `name` for a `dtype=` this backend has no arrays of (CuPy: bfloat16)."""

    def on_host(self, indices: tuple) -> tuple:
        """The index arrays of `indices` on the host, where gather_scatter's edge plan is validated and grouped."""

    def divide_by_counts(self, work3: Any, counts: Any, threads: int = 0) -> bool:
        """Divide `work3` (outer, size, inner) by its (size,) row counts in one kernel pass, or return False."""

    def divide_by_element_counts(self, work3: Any, counts: Any) -> bool:
        """Divide `work3` by element counts of its shape in one kernel pass, or return False."""

    def count_rows(self, plan: Any) -> Any:
        """int64 (plan.size,): the entries per destination row (IndexError for one out of range, mode='raise')."""

    def nonzero_flags(self, src: Any) -> Any:
        """int32 0/1 of ``src != 0`` (NaN is nonzero)."""

    def group_scan(self, op: Any, src3: Any, plan: Any, ident: Any, reverse: bool, exclusive: bool, track: bool,
                   sized: Any) -> tuple:
        """(out3, arg3 or None): the running `op` of each group of `src3` in index order (see `_api.scan`)."""

    def linear_scan(self, b3: Any, a3: Any, plan: Any, reverse: bool, exclusive: bool, sized: Any) -> Any:
        """The recurrence ``new = b + a * prev`` along each group of the plan (0 for dropped entries)."""

    def route(self, g3: Any, arg3: Any) -> Any:
        """g3[o, k, f] added at position arg3[o, k, f] along axis 1 (nothing where arg3 < 0)."""

    segment_reduce: Any
    """(op, src3, ptr, work3, counting) -> counts: the CSR segments of `src3` reduced into `work3` by their own
    kernels, returning the counts to finish with; None where there are none (`segment` runs as a scatter)."""

    repeat_segments: Any
    """(src, ptr, axis) -> row s of `src` along `axis` repeated for each member of CSR segment s; None where the
    array library has no repeat by an array of counts (`gather_segment` runs as a gather)."""

    arg_winners: Any
    """(op, src3, plan, size) -> (best, arg): max/min winners and their positions from a kernel of their own; None
    where there is none (`scatter_argmax` composes scatter and gather)."""


MEMBERS = ("xp", "asarray", "rows_view", "rows_in_place", "writable_rows", "check_writable", "precheck",
           "run_scatter", "run_gather", "fresh_table", "rounded", "exclusive_products", "name", "raises_in_kernels", "fused_reverse", "reduce_max",
           "reduce_all", "reduce_any", "shape_of", "refuse_dtype", "on_host", "divide_by_counts",
           "divide_by_element_counts", "count_rows", "nonzero_flags", "group_scan", "linear_scan", "route",
           "segment_reduce", "repeat_segments", "arg_winners")
