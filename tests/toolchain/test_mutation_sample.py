"""tools/mutation.py's sample stays applicable: each mutant names a file of the tree that holds its original
text exactly once, so moving or rewording code cannot silently turn a mutant into a no-op."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mutants():
    spec = importlib.util.spec_from_file_location("cyscatter_mutation_tool", ROOT / "tools" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look the module up while the class is made
    spec.loader.exec_module(module)
    return module.MUTANTS


MUTANTS = _mutants()


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_mutant_finds_its_text_once(mutant):
    path = ROOT / mutant.path
    assert path.is_file(), f"{mutant.name}: {mutant.path} is not a file of the tree"
    assert path.read_text().count(mutant.old) == 1, f"{mutant.name}: its text is not in {mutant.path} exactly once"
    assert mutant.old != mutant.new
