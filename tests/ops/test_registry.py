"""The op registry (`cyscatter._registry.ops`) as the tables keyed by its fields read it: every op's reverse rule
family is declared in `cyscatter._reverse.rules.RULES`, no family there is left without an op, and the ops that
share a kernel op code agree on everything looked up by that code; grad builds every op's partials by its family."""
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


def test_ops_sharing_an_op_code_agree_on_what_the_backends_look_up_by_it():
    """The backends are called with op codes (run_scatter, run_forward) and look up by code what they need
    (WINNERS, TWIN_OPCODES, the GPU backend's op of a code); add, mean and sqrt_n share one code, nansum and
    nanmean another, so none of it may depend on which of them the code came from."""
    by_code: dict = {}
    for op in map(get_op, OPS):
        kernel = (op.gpu_update, op.gpu_cas, op.winner, op.skips_nan, op.twin_opcode)
        assert by_code.setdefault(op.opcode, kernel) == kernel, f"op {op.name!r} and another op share op code " \
                                                                f"{op.opcode} but not its kernel"


@pytest.mark.parametrize("op", OPS)
def test_grad_builds_every_ops_partials_by_its_family(op):
    """grad keeps the value-dependent partials (`Op.partials`: mul's products, div's quotient, nanprod's) keyed by
    the registry's family; every other op's partials are locally constant."""
    pytest.importorskip("autograd")
    from grad._scatter import _VALUE_DEPENDENT, _constant_partials, _partials_rule
    entry = get_op(op)
    assert _partials_rule(entry) is (_VALUE_DEPENDENT[entry.partials] if entry.partials else _constant_partials)
