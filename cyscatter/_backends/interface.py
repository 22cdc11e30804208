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

    def writable_rows(self, dst: Any, dtype: Any, outer: int, rows: int, inner: int) -> tuple[Any, bool]:
        """(work, direct): `dst` itself as (outer, rows, inner) when possible, else a converted copy to copy
        back."""

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

    def exclusive_products(self, *args: Any) -> Any:
        """Per entry, the product of the other members of its group (mul's partials, without division)."""


MEMBERS = ("xp", "asarray", "rows_view", "writable_rows", "check_writable", "precheck", "run_scatter", "run_gather",
           "fresh_table", "exclusive_products")
