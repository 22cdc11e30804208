"""Child processes after threaded calls: a child forked after the parent ran the kernels on several
threads must compute right and never hang (GNU OpenMP cannot start threads in such a child: it runs on one);
forkserver and spawn children start fresh and keep their threads. Each pool gets 30 s."""
from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import kernels

TIMEOUT_S = 30
ROWS, FEATURES, SIZE = 100_000, 8, 500   # large enough for a team of 2 threads (32768 updates per thread)


def _threaded_calls(seed: int) -> tuple[bool, int]:
    """scatter, gather, segment and gather_scatter on 2 threads, each against a NumPy reference; returns
    (all equal, the default thread count of this process)."""
    rng = np.random.default_rng(seed)
    src = rng.random((ROWS, FEATURES))
    idx = rng.integers(0, SIZE, ROWS)
    ok = True
    ref = np.zeros((SIZE, FEATURES))
    np.add.at(ref, idx, src)
    ok &= np.allclose(cs.scatter(src, idx, "add", dim_size=SIZE, num_threads=2), ref)
    ok &= np.allclose(cs.scatter(src, idx, "add", dim_size=SIZE), ref)   # the default count
    ok &= np.array_equal(cs.gather(src, idx[::-1], num_threads=2), src[idx[::-1]])
    order = np.argsort(idx, kind="stable")
    indptr = np.searchsorted(idx[order], np.arange(SIZE + 1))
    ok &= np.allclose(cs.segment(src[order], indptr, "add"), ref)
    table = rng.random((SIZE, FEATURES))
    senders = rng.integers(0, SIZE, ROWS)
    ref_gs = np.zeros((SIZE, FEATURES))
    np.add.at(ref_gs, idx, table[senders])
    ok &= np.allclose(cs.gather_scatter(table, senders, idx, "add", dim_size=SIZE, num_threads=2), ref_gs)
    return bool(ok), cs.get_num_threads()


def _methods():
    return [m for m in ("fork", "forkserver", "spawn") if m in mp.get_all_start_methods()]


@pytest.mark.parametrize("method", _methods())
def test_children_after_threaded_calls(method):
    assert _threaded_calls(0)[0]
    assert kernels._teams_have_started()   # the parent did run a team: the case that hung
    pool = mp.get_context(method).Pool(2)
    try:
        results = pool.map_async(_threaded_calls, range(1, 5)).get(timeout=TIMEOUT_S)
    except mp.TimeoutError:
        pytest.fail(f"{method} children did not finish in {TIMEOUT_S} s")
    finally:
        pool.terminate()
        pool.join()
    assert all(ok for ok, _ in results)
    threads = {n for _, n in results}
    if method == "fork":
        assert threads == {1}
    else:   # a fresh process: OpenMP's default, every core (or OMP_NUM_THREADS)
        assert threads == {cs.get_num_threads()}


def test_fork_asks_again_in_the_child():
    """num_threads=2 and set_num_threads(2) in a forked child still run (on one thread) and do not hang."""
    assert _threaded_calls(0)[0]
    script = textwrap.dedent("""
        import os, sys
        import numpy as np
        import cyscatter as cs
        src = np.random.default_rng(0).random((100_000, 8)); idx = np.arange(100_000) % 500
        cs.scatter(src, idx, "add", num_threads=2)
        pid = os.fork()
        if pid == 0:
            cs.set_num_threads(2)
            out = cs.scatter(src, idx, "add", num_threads=2)
            ref = np.zeros((500, 8)); np.add.at(ref, idx, src)
            os._exit(0 if np.allclose(out, ref) and cs.get_num_threads() == 1 else 3)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    """)
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork on this platform")
    result = subprocess.run([sys.executable, "-c", script], timeout=TIMEOUT_S, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_child_of_a_parent_without_threads_keeps_them():
    """Only a parent that ran a team makes its forked children single-threaded."""
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork on this platform")
    script = textwrap.dedent("""
        import os, sys
        import cyscatter as cs
        expected = cs.get_num_threads()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if cs.get_num_threads() == expected else 3)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    """)
    result = subprocess.run([sys.executable, "-c", script], timeout=TIMEOUT_S, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
