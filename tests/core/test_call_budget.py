"""The Python layer's cost per call, counted exactly: the cyscatter and grad functions a call enters (after a first
call, which fills the per-dtype caches), against the budgets the planner is built to (`benchmarks/bench_overhead.py`
reports the same counts beside the timings). A check, a helper or a conversion added on the common paths shows
here before it shows in a benchmark."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import cyscatter as cs


def _our_calls(fn) -> list[str]:
    fn()
    entered: list[str] = []

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_globals.get("__name__") or ""
            if name.partition(".")[0] in ("cyscatter", "grad"):
                entered.append(f"{name}.{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return entered


rng = np.random.default_rng(0)
SRC = rng.standard_normal((1000, 16))
IDX = rng.integers(0, 50, 1000)
ROWS, COLS = rng.integers(0, 20, 1000), rng.integers(0, 20, 1000)
WIDE = np.ascontiguousarray(SRC.T)

CASES = {
    "default scatter (the C fast path)": (lambda: cs.scatter(SRC, IDX, "max"), 2),
    "scatter with dim_size": (lambda: cs.scatter(SRC, IDX, "add", dim_size=50), 2),
    "tuple index": (lambda: cs.scatter(SRC[:, 0], (ROWS, COLS), "max"), 30),
    "axis=1": (lambda: cs.scatter(WIDE, IDX, "max", axis=1), 30),
    "gather": (lambda: cs.gather(SRC, (IDX,)), 30),
}


@pytest.mark.parametrize("case", list(CASES))
def test_python_calls_per_call_stay_within_budget(case):
    fn, budget = CASES[case]
    entered = _our_calls(fn)
    assert len(entered) <= budget, f"{len(entered)} calls (budget {budget}):\n" + "\n".join(entered)


def test_differentiated_gather_scatter_stays_within_budget():
    autograd = pytest.importorskip("autograd")
    import grad as csgrad

    x = rng.standard_normal((200, 16))
    g, s = rng.integers(0, 200, 1000), rng.integers(0, 200, 1000)
    entered = _our_calls(lambda: autograd.grad(
        lambda v: csgrad.gather_scatter(v, g, s, "max", dim_size=200).sum())(x))
    assert len(entered) <= 120, f"{len(entered)} calls (budget 120):\n" + "\n".join(entered)
