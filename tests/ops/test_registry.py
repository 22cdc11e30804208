"""The op registry (`cyscatter._registry.ops`) as the tables keyed by its fields read it: every op's reverse rule
family is declared in `cyscatter._reverse.rules.RULES`, and no family there is left without an op."""
from __future__ import annotations

import pytest

from cyscatter import get_op
from cyscatter._reverse.rules import RULES
from testing import OPS


@pytest.mark.parametrize("op", OPS)
def test_every_op_has_its_reverse_rules(op):
    entry = get_op(op)
    assert entry.rule in RULES, f"op {op!r} names the rule family {entry.rule!r}, which RULES does not declare"
    rules = RULES[entry.rule]
    assert callable(rules.vjp_src) and callable(rules.vjp_dst)


def test_every_rule_family_serves_an_op():
    assert set(RULES) == {get_op(op).rule for op in OPS}
