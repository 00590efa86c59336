"""The nightly stream covers the Atlas A2 routes (rules/profiles/a2_routes): every route at
1% or more of unfiltered draws, every (route, boundary) cell and every size class against
the route's tiling at least once in the 5000 draws
`fia-fuzz coverage --profile nightly --cases 5000` makes, all legal."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import strategies as st

from fia_fuzz.rules.profiles import a2_routes
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.axes import ROUTE_AXES
from fia_fuzz.strategies.illegal.a2_routes import ROUTE_BREAKERS
from fia_fuzz.strategies.routes import AIM_FAMILIES, AIMS
from fia_fuzz.strategies.sample import draw_cases

#: The route's size classes (a2_routes/sizes.py), reached in the same draws
SIZE_AXES = ("units_class", "kv_tiles", "q_rows")


@pytest.mark.slow
def test_five_thousand_nightly_draws_reach_every_route_and_cell() -> None:
    drawn = draw_cases(5000, seed=0, profile="nightly")
    feats = [c.features() for c in drawn]
    routes = Counter(f["route"] for f in feats)
    cells = Counter(f["route_edge"] for f in feats)
    assert {r: routes[r] for r in a2_routes.ROUTES if routes[r] < 50} == {}
    assert [c for c in a2_routes.CELLS if not cells[c]] == []
    classes = {axis: Counter(f[axis] for f in feats) for axis in SIZE_AXES}
    assert {a: [v for v in ROUTE_AXES[a] if not classes[a][v]] for a in SIZE_AXES} == {
        a: [] for a in SIZE_AXES}
    assert [c.case_id for c in drawn if validate(**c.specs())] == []


def test_every_route_but_the_empty_call_has_an_aim_and_its_families() -> None:
    assert set(AIMS) == set(AIM_FAMILIES) == set(a2_routes.ROUTES) - {"empty"}



@pytest.mark.parametrize("rule", sorted(ROUTE_BREAKERS))
def test_route_breakers_break_their_rule_alone_on_the_refusing_route(rule: str) -> None:
    from hypothesis import HealthCheck, Phase, given, settings

    from fia_fuzz.op.case import Case
    from fia_fuzz.rules.validate import case_violations
    from fia_fuzz.strategies.edits import apply

    breaker = ROUTE_BREAKERS[rule]
    routes = {b["route"] for b in (breaker.base, *breaker.alt)}
    bases = breaker.cases()
    seen: list[str] = []

    @settings(max_examples=6, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        base = data.draw(bases)
        assert base.features()["route"] in routes
        broken = apply(base, breaker.change(data.draw, base))
        broken = Case(params=broken.params, fills=broken.fills, seed=broken.seed,
                      rules="atlas-a2")
        found = [v.rule for v in case_violations(broken)]
        seen.append(",".join(found))
        assert found in ([rule], [])  # [] only where the base's own shape dodges the bound

    check()
    assert rule in seen
