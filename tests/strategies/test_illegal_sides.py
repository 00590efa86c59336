"""Breakers break their rule on every side of its bound and from every family it covers.

A bound rule's illegal range has sides (`illegal.BOUNDS`: below and above a
range, both of an equality, a list shorter and longer, the first and the last
element of a per-element limit); `width.by_base` labels each draw with the
sides it reached (the change's `edits.SIDE`, else inferred from base to
broken case). A rule covers a family when its breaker's change, applied to
legal bases of that family (`width.family_pool`), breaks it alone there
(`width.covered`); the breaker must then draw bases of that family too. Likewise a
bound rule's bases span the Atlas A2 routes its change breaks it on
(`width.route_pool`): its own bases reach them, or a route base (`spans.py`) does.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.profiles.a2_routes import ROUTES
from fia_fuzz.strategies.edits import SIDE, SIDES, apply, sided
from fia_fuzz.strategies.illegal import BOUNDS, BREAKERS, OWN_BREAKERS
from fia_fuzz.strategies.illegal.spans import ROUTE_BASES, UNSPANNED, lands_alone
from fia_fuzz.strategies.illegal.width import (
    by_base,
    covered,
    family_pool,
    infer_sides,
    route_pool,
    width,
)

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


@pytest.mark.parametrize("rule", sorted(BOUNDS))
def test_bound_rule_bases_span_every_route_it_breaks_on(rule: str) -> None:
    breaker = BREAKERS[rule]
    found = covered(rule, breaker, route_pool(), n=2)
    reached = set(_width(rule).routes) | {b["route"] for b in breaker.routes}
    reached |= set(UNSPANNED.get(rule, ()))
    missed = sorted(r for r, how in found.items() if how == "lands" and r not in reached)
    assert not missed, \
        f"{rule}: its change breaks it alone on {missed}, its bases reach only " \
        f"{sorted(reached)}: python -m fia_fuzz.strategies.illegal.search --routes {rule}, " \
        f"and paste into spans.ROUTE_BASES"


def test_route_bases_pin_a_route_of_a_breaker() -> None:
    for rule, bases in ROUTE_BASES.items():
        assert rule in OWN_BREAKERS, rule
        assert bases and all(b.get("route") in ROUTES for b in bases), (rule, bases)
        assert BREAKERS[rule].routes == bases
    for rule, routes in UNSPANNED.items():
        assert rule in BOUNDS and set(routes) <= set(ROUTES), (rule, routes)
        assert not set(routes) & {b["route"] for b in ROUTE_BASES.get(rule, ())}, rule


def test_a_route_base_lands_alone_on_its_route() -> None:
    # the route bases' generator keeps a base only where this holds; one base, drawn here
    rule = "dims.d_max"
    fq = {**OWN_BREAKERS[rule].alt[0], "route": "pfa.full_quant"}
    assert lands_alone(rule, replace(OWN_BREAKERS[rule], base=fq, alt=()), 4)
    assert not lands_alone("dims.n_max", replace(OWN_BREAKERS[rule], base=fq, alt=()), 4)
    assert {c.features()["route"] for c in route_pool()["pfa.full_quant"]} == {"pfa.full_quant"}


@pytest.mark.slow
@pytest.mark.parametrize("rule", sorted(ROUTE_BASES))
def test_every_route_base_lands_alone(rule: str) -> None:
    breaker = OWN_BREAKERS[rule]
    bad = [b for b in ROUTE_BASES[rule]
           if not lands_alone(rule, replace(breaker, base=b, alt=()), 6)]
    assert not bad, f"{rule}: no lone break from {bad}"
