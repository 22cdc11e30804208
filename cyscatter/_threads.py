"""Threads of the CPU kernels: a per-call `num_threads`, else a process default, else OpenMP's own default
(``OMP_NUM_THREADS``, or every core). Results do not depend on the thread count (see `set_num_threads`)."""
from __future__ import annotations

from cyscatter import kernels
from cyscatter._integers import as_int


def check_threads(num_threads, arg: str = "num_threads") -> int:
    """The kernels' thread argument for `num_threads`: 0 (the default) for None, else a positive int."""
    if num_threads is None:
        return 0
    if type(num_threads) is int and 0 < num_threads <= 2**30:   # the common case, without as_int's checks
        return num_threads
    n = as_int(num_threads, f"{arg} must be a positive integer or None, got {num_threads!r}")
    if n < 1:
        raise ValueError(f"{arg} must be a positive integer or None, got {n}")
    return min(n, 2**30)   # the kernels start at most 256 threads (MAX_THREADS) whatever is asked


def set_num_threads(num_threads: int | None) -> None:
    """Set how many threads the CPU kernels use when a call passes no ``num_threads``.

    Parameters
    ----------
    num_threads : int or None
        A positive count, or None to go back to OpenMP's default (``OMP_NUM_THREADS`` when set, else every
        core). Small calls use fewer threads than asked: starting threads costs more than it saves there.

    Raises
    ------
    TypeError, ValueError
        For anything but None or a positive integer.

    Notes
    -----
    Threads never share a destination element and every element receives its updates in index order, so
    results are bitwise identical whatever the thread count, float sums included (the sign and payload of a
    NaN made from two NaNs aside, which IEEE 754 leaves open), and no atomics are used.
    Without OpenMP at build time (``CYSCATTER_OPENMP=0``) everything runs on one thread.
    """
    kernels.set_num_threads(check_threads(num_threads))


def get_num_threads() -> int:
    """Threads a large call uses when it passes no ``num_threads`` (1 for a build without OpenMP)."""
    return kernels.get_num_threads()
