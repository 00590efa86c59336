"""The nightly stream covers the Atlas A2 routes (rules/profiles/a2_routes): every route at
1% or more of unfiltered draws and every (route, boundary) cell at least once in the 5000
draws `fia-fuzz coverage --profile nightly --cases 5000` makes, all legal."""

from __future__ import annotations

from collections import Counter

import pytest

from fia_fuzz.rules.profiles import a2_routes
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.routes import AIM_FAMILIES, AIMS
from fia_fuzz.strategies.sample import draw_cases


@pytest.mark.slow
def test_five_thousand_nightly_draws_reach_every_route_and_cell() -> None:
    drawn = draw_cases(5000, seed=0, profile="nightly")
    feats = [c.features() for c in drawn]
    routes = Counter(f["route"] for f in feats)
    cells = Counter(f["route_edge"] for f in feats)
    assert {r: routes[r] for r in a2_routes.ROUTES if routes[r] < 50} == {}
    assert [c for c in a2_routes.CELLS if not cells[c]] == []
    assert [c.case_id for c in drawn if validate(**c.specs())] == []


def test_every_route_but_the_empty_call_has_an_aim_and_its_families() -> None:
    assert set(AIMS) == set(AIM_FAMILIES) == set(a2_routes.ROUTES) - {"empty"}

