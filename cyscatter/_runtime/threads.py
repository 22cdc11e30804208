"""Threads of the CPU kernels: a per-call `num_threads`, else a process default, else OpenMP's own default
(``OMP_NUM_THREADS``, or every core; `threadpoolctl` changes it). Results do not depend on the thread count
(see `set_num_threads`)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, SupportsIndex

from cyscatter import kernels
from cyscatter._arrays.integers import as_int

if TYPE_CHECKING:
    from typing import SupportsIndex


# A child forked after threaded calls runs on one thread (see kernels._after_fork_in_child: GNU OpenMP cannot
# start threads there); spawn and forkserver children start fresh and keep their threads.
os.register_at_fork(after_in_child=kernels._after_fork_in_child)


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


def set_num_threads(num_threads: SupportsIndex | None) -> None:
    """Set how many threads the CPU kernels use when a call passes no ``num_threads``.

    Parameters
    ----------
    num_threads : int or None
        A positive count, or None (the default at import) to follow OpenMP's thread count: what
        ``threadpoolctl.threadpool_limits`` sets, else ``OMP_NUM_THREADS``, else every core. Small calls use
        fewer threads than asked: starting threads costs more than it saves there.

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

    Which count a call uses, first match wins: its own ``num_threads=``; the count set here; OpenMP's thread
    count of the calling thread, which ``threadpoolctl.threadpool_limits`` (it finds the kernels' libgomp, as
    it finds scikit-learn's) and ``omp_set_num_threads`` change, and ``OMP_NUM_THREADS`` starts; every core.
    So a `threadpoolctl` limit holds unless this function (or ``num_threads=``) asked for a count: call
    ``set_num_threads(None)`` to follow it again. Like NumPy's BLAS under threadpoolctl, the limit is
    OpenMP's per-thread setting: it applies to calls made from the thread that set it.

    A child process forked (``multiprocessing``'s default start method on Linux, joblib, Dask's process
    scheduler) after this process ran a call on several threads runs every call on one thread, whatever is
    asked: GNU OpenMP cannot start threads in such a child (it would wait forever). Children started by
    ``spawn`` or ``forkserver`` keep their threads. `get_num_threads` tells which applies.
    """
    kernels.set_num_threads(check_threads(num_threads))


def get_num_threads() -> int:
    """Threads a large call uses when it passes no ``num_threads``.

    Returns
    -------
    int
        The thread count (1 for a build without OpenMP, and in a child forked after threaded calls; see
        `set_num_threads`).
    """
    return kernels.get_num_threads()

MIN_WORK = 32768   # element updates per thread below which fewer threads are used (as the core kernels)
# The fused sums that hold a row in registers (`include/_csrsum.h`) make an update in a third of the row loop's
# time, so a team's start pays off only on more of them: on the 2-core VM two threads lost to one up to about
# 1.5e6 updates (digits graph, 26477 edges x 4-64 float64 features, benchmarks/NOTES.md v30)
REGISTER_SUM_MIN_WORK = 1 << 20


def team(threads: int, work: int, per_thread: int = MIN_WORK) -> int:
    """Threads for a call of `work` element updates (0: the process default), fewer for small work: at least
    `per_thread` updates each."""
    t = threads if threads > 0 else kernels.get_num_threads()
    return max(1, min(t, work // per_thread, 256))
