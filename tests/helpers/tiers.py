"""Test tiers: a default tier a contributor runs before every commit, and the full tier CI runs.

``python -m pytest`` runs the default tier: every test function, each parametrised grid cut to a pairwise
covering slice (every pair of parameter values that the grid holds appears in at least one kept case), and no
case marked ``full``. ``python -m pytest --tier=full`` runs every collected case; ``--tier=rest`` runs the cases
of the full tier that the default tier leaves out (so that CI, which runs both, runs nothing twice). Naming
tests on the command line (``path::name``) selects the full tier, so a named case always runs.

Cases marked ``full`` (and those marked ``distributed``, which start worker processes) are builds, docs, the
demo's model, memory, the campaigns and cases measured over a second. The exhaustive grids are in the full tier
whole, their covering slice in the default tier. The slice is chosen by a greedy cover over the cases in
collection order, so it is the same on every run and machine for the same tests (SciPy's ``label='fast'`` and
NumPy's ``slow`` split the same way, by hand).

Grid combinations that do not exist (an ordered op on complex values, a pattern a geometry cannot have) are
dropped at collection by ``@pytest.mark.valid(predicate)``: the predicate takes the case's parameters by name
(any subset of them; a lambda, since pytest takes a named function for the test it marks) and says whether the
case is one, usually through the registry's predicates (`testing.op_supports`, `testing.into_supports`). Such a
case is never collected to be skipped.

GPU cases (marked ``gpu``) are deselected at collection without a usable CUDA device, unless
``CYSCATTER_REQUIRE_GPU=1`` keeps them (they then fail instead of skipping).
"""
from __future__ import annotations

import heapq
import inspect
import itertools
import os

import pytest

TIERS = ("default", "full", "rest")


def pytest_addoption(parser):
    parser.addoption("--tier", choices=TIERS, default=None,
                     help="default: a pairwise slice of every grid, no case marked full (about 4 minutes on "
                          "2 cores); full: every case; rest: the full tier's cases the default tier leaves out. "
                          "Default: $CYSCATTER_TEST_TIER, else 'full' when tests are named by node id, else "
                          "'default'.")


def tier_of(config) -> str:
    chosen = config.getoption("--tier") or os.environ.get("CYSCATTER_TEST_TIER")
    if chosen:
        if chosen not in TIERS:
            raise pytest.UsageError(f"CYSCATTER_TEST_TIER={chosen!r}: expected one of {', '.join(TIERS)}")
        return chosen
    return "full" if any("::" in str(arg) for arg in config.args) else "default"


def _key(value):
    """A hashable stand-in for one parameter value (the object itself when it can be hashed)."""
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return ("id", id(value))


def _features(item) -> frozenset:
    """The parameter values of one case and every pair of them: what a covering slice must keep."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return frozenset()
    values = sorted(((name, _key(v)) for name, v in callspec.params.items()), key=repr)
    return frozenset(itertools.chain(values, itertools.combinations(values, 2)))


def covering_slice(items) -> list:
    """The cases of one test function that cover every parameter value and pair of values (greedy, lazy gains)."""
    features = [_features(item) for item in items]
    heap = [(-len(f), i) for i, f in enumerate(features)]
    heapq.heapify(heap)
    covered: set = set()
    kept = []
    while heap:
        gain, i = heapq.heappop(heap)
        fresh = len(features[i] - covered)
        if fresh == 0:
            continue
        if heap and fresh < -heap[0][0]:   # stale gain: put it back with the true one
            heapq.heappush(heap, (-fresh, i))
            continue
        covered |= features[i]
        kept.append(i)
    return [items[i] for i in sorted(kept)]


def _function_of(item):
    return (item.path, getattr(item.cls, "__qualname__", None), getattr(item, "originalname", item.name))


def default_tier(items) -> list:
    """The default tier's cases among `items`, in their collection order."""
    groups: dict = {}
    for item in items:
        if item.get_closest_marker("full") is None and item.get_closest_marker("distributed") is None:
            groups.setdefault(_function_of(item), []).append(item)
    kept = set()
    for group in groups.values():
        kept.update(map(id, covering_slice(group) if len(group) > 1 else group))
    return [item for item in items if id(item) in kept]


def is_valid(item) -> bool:
    """Whether every ``valid`` predicate of `item` holds for its parameters."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for mark in item.iter_markers("valid"):
        predicate = mark.args[0]
        names = inspect.signature(predicate).parameters
        if not predicate(**{name: params[name] for name in names}):
            return False
    return True


def _deselect(config, items, keep):
    keep_ids = set(map(id, keep))
    dropped = [item for item in items if id(item) not in keep_ids]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if id(item) in keep_ids]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    from testing import REQUIRE_GPU, gpu_available
    if any(item.get_closest_marker("valid") for item in items):
        _deselect(config, items, [item for item in items if is_valid(item)])
    if not REQUIRE_GPU and any(item.get_closest_marker("gpu") for item in items) and not gpu_available():
        _deselect(config, items, [item for item in items if item.get_closest_marker("gpu") is None])
    tier = tier_of(config)
    if tier == "full":
        return
    default = default_tier(items)
    if tier == "default":
        _deselect(config, items, default)
    else:
        chosen = set(map(id, default))
        _deselect(config, items, [item for item in items if id(item) not in chosen])


def pytest_report_header(config):
    return f"cyscatter test tier: {tier_of(config)} (--tier=default|full|rest)"
