"""A fixed sample of drawn cases: the same seed gives the same cases, outside a Hypothesis test."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed

from fia_fuzz.op.case import Case
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.strategies import pair_aims
from fia_fuzz.strategies.cases import cases
from fia_fuzz.strategies.seeded import fixed_constants


def draw_cases(n: int, seed: int = 0, profile: str = "smoke", rules: str = DEFAULT,
               **filters: Any) -> list[Case]:
    """`n` cases of `cases(profile, rules, **filters)` drawn under `seed` (generation only,
    no example database), in draw order: the `fia-fuzz coverage` sample and test fixtures.
    The draws are one stream (its pair aims walk as a campaign's do, `pair_aims.stream`)."""
    drawn: list[Case] = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases(profile=profile, rules=rules, **filters))
    def collect(case: Case) -> None:
        drawn.append(case)

    with fixed_constants(), pair_aims.stream(rules):
        collect()
    return drawn
