"""Every rule: a legal call passes, and a call breaking only that rule fails with exactly it."""

from __future__ import annotations

import pytest

from fia_fuzz.rules.rule import RULES
from fia_fuzz.rules.rulebook import NEGATIVE, violating
from fia_fuzz.rules.rulebook.bases import BASES, call
from fia_fuzz.rules.validate import validate


@pytest.mark.parametrize("name", sorted(BASES))
def test_bases_are_legal(name: str) -> None:
    assert validate(**BASES[name]) == [], name


@pytest.mark.parametrize("rule_id, base, over", NEGATIVE,
                         ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(NEGATIVE)])
def test_breaking_one_rule_reports_exactly_it(rule_id: str, base: str, over: dict) -> None:
    violations = validate(**call(base, **over))
    assert [v.rule for v in violations] == [rule_id], [str(v) for v in violations]
    v = violations[0]
    assert v.source == RULES[rule_id].source and v.message


def test_every_rule_has_a_negative_case() -> None:
    covered = {r for r, _, _ in NEGATIVE}
    assert set(RULES) - covered == set()
    assert covered - set(RULES) == set()


def test_every_rule_is_cited() -> None:
    for r in RULES.values():
        assert r.summary and "§" in r.source and r.source.split()[0] in (
            "V2", "V4", "IFA", "MS", "TA", "SEM", "TNPU"), r.id


@pytest.mark.parametrize("rule_id", sorted({r for r, _, _ in NEGATIVE}))
def test_rule_is_judged_and_passes_on_a_legal_call(rule_id: str) -> None:
    """The negative case's base is a legal call on which the rule is evaluated (not skipped)."""
    from fia_fuzz.op.call import CallView
    from fia_fuzz.op.undetermined import Undetermined

    bases = [b for r, b, _ in NEGATIVE if r == rule_id]
    judged = []
    for base in bases:
        try:
            judged.append(RULES[rule_id].check(CallView(BASES[base])))
        except Undetermined:
            continue
    assert judged and all(m is None for m in judged), (rule_id, bases, judged)


def test_violating_returns_the_examples() -> None:
    assert violating("gqa.divisible") and violating("no.such.rule") == []


def test_rule_lives_in_the_module_of_its_prefix() -> None:
    """From a rule id to its code in one hop: `gqa.divisible` is `rulebook.gqa.gqa_divisible`,
    and that module's NEGATIVE holds its negative calls."""
    import importlib

    for rid, r in RULES.items():
        prefix = rid.split(".")[0]
        module = importlib.import_module(f"fia_fuzz.rules.rulebook.{prefix}")
        assert r.check.__module__ == module.__name__, rid
        assert r.check.__name__ == rid.replace(".", "_"), rid
        assert all(n[0].startswith(prefix + ".") for n in module.NEGATIVE), prefix
        assert any(n[0] == rid for n in module.NEGATIVE), rid
