"""Seeded walks of the construction a stream's pair aim takes (strategies/cases.py
`_walk_aim`) with filters as pins: the steering tests count how many carry them."""

from __future__ import annotations

import random
from typing import Any

from fia_fuzz.op.case import Case
from fia_fuzz.strategies.cases import _pins, aim_families, build
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.draft import PROFILES


def walked(filters: dict[str, Any], walks: int, seed: int = 0, profile: str = "nightly",
           rules: str = "docs") -> list[Case]:
    """The cases of the `walks` seeded walks pinned to `filters` that did not die."""
    pins = _pins(filters)
    rng = random.Random(seed)
    drawn = []
    for _ in range(walks):
        try:
            drawn.append(build(RandomChooser(rng, pins), PROFILES[profile],
                               aim_families(pins, rules), pins, rules))
        except Dead:
            continue
    return drawn
