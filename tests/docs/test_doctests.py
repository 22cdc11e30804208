"""The Examples sections of the public docstrings run and print what they show."""
from __future__ import annotations

import doctest
import pkgutil

import pytest

import cyscatter

pytestmark = pytest.mark.full   # full tier: the docstring examples

MODULES = ["cyscatter"] + [m.name for m in pkgutil.walk_packages(cyscatter.__path__, "cyscatter.")]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = pytest.importorskip(name)   # subpackages of optional extras (dask) skip without them
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {name}"


def test_public_functions_have_examples():
    """Every public function documents itself with at least one runnable example."""
    finder = doctest.DocTestFinder()
    for name in ("scatter", "scatter_into", "gather", "gather_into", "scatter_vjp_src", "scatter_vjp_dst",
                 "gather_vjp_src", "scatter_jvp", "gather_jvp"):
        tests = finder.find(getattr(cyscatter, name), name)
        assert sum(len(t.examples) for t in tests) > 0, f"{name} has no doctest example"
