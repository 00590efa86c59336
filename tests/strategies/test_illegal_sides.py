"""Breakers break their rule on every side of its bound and from every family it covers.

A bound rule's illegal range has sides (`illegal.BOUNDS`: below and above a
range, both of an equality, a list shorter and longer, the first and the last
element of a per-element limit); `width.by_base` labels each draw with the
sides it reached (the change's `edits.SIDE`, else inferred from base to
broken case). A rule covers a family when its breaker's change, applied to
legal bases of that family (`width.family_pool`), breaks it alone there
(`width.covered`); the breaker must then draw bases of that family too.
"""

from __future__ import annotations

from functools import cache

import pytest

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies.edits import SIDE, SIDES, apply, sided
from fia_fuzz.strategies.illegal import BOUNDS, BREAKERS
from fia_fuzz.strategies.illegal.width import by_base, covered, family_pool, infer_sides, width

#: Draws per rule, spread over its breaker's bases (`width.by_base`): derandomised, so the
#: same in every CI run.
DRAWS = 24


@cache
def _width(rule: str):
    return width(by_base(rule, BREAKERS[rule], DRAWS))


@cache
def _pool() -> dict[str, list[Case]]:
    return family_pool()


def _case(**params) -> Case:
    return Case(params={"query": TensorSpec((1, 2, 4, 64), "float16"), **params})


def test_a_change_carries_its_side_and_apply_drops_it() -> None:
    base = _case(num_heads=2)
    change = sided({"num_heads": 0}, "below")
    assert change[SIDE] == ("below",)
    assert apply(base, change).params == {**base.params, "num_heads": 0}
    with pytest.raises(AssertionError):
        sided({}, "sideways")


def test_sides_are_inferred_from_what_moved() -> None:
    base = _case(num_heads=2, actual_seq_lengths=[1, 3, 4])
    assert infer_sides(base, _case(num_heads=3, actual_seq_lengths=[1, 3, 4])) == {"above"}
    assert infer_sides(base, _case(num_heads=2, actual_seq_lengths=[0, 3, 4])) == \
        {"below", "first"}
    assert infer_sides(base, _case(num_heads=2, actual_seq_lengths=[1, 3, 9])) == \
        {"above", "last"}
    assert infer_sides(base, _case(num_heads=2, actual_seq_lengths=[1])) == {"shorter"}
    assert infer_sides(base, Case(params={**base.params,
                                          "query": TensorSpec((1, 2, 4, 64, 1), "float16")})) \
        == {"longer"}
    assert infer_sides(base, Case(params={**base.params,
                                          "query": TensorSpec((1, 2, 4, 32), "float16")})) \
        == {"below"}
    # moved both ways (a change of several quantities): no side, its breaker labels it
    assert infer_sides(base, Case(params={**base.params, "num_heads": 1,
                                          "query": TensorSpec((1, 2, 8, 64), "float16")})) \
        == frozenset()


def test_bounds_name_sides_of_rules_with_breakers() -> None:
    for rule, sides in BOUNDS.items():
        assert rule in BREAKERS, rule
        assert sides and set(sides) <= set(SIDES), (rule, sides)


@pytest.mark.parametrize("rule", sorted(BOUNDS))
def test_bound_rule_breaker_reaches_every_side(rule: str) -> None:
    w = _width(rule)
    missing = [s for s in BOUNDS[rule] if s not in w.sides]
    assert not missing, f"{rule}: its breaker reaches {dict(w.sides)}, never {missing}"


@pytest.mark.parametrize("rule", sorted(BREAKERS))
def test_breaker_lands_on_every_family_it_covers(rule: str) -> None:
    found = covered(rule, BREAKERS[rule], _pool(), n=3)
    reached = set(_width(rule).families)
    missed = sorted(f for f, how in found.items() if how == "lands" and f not in reached)
    assert not missed, \
        f"{rule}: its change breaks it alone from {missed} bases, its breaker draws only " \
        f"{sorted(reached)}: add such bases"
