"""The smoke stream is a fixed contract: its seeded case ids do not move when the
nightly profile learns to aim at more (kernel routes, sizes, values)."""

from __future__ import annotations

import hashlib

import pytest

from fia_fuzz.strategies.sample import draw_cases

#: sha256 (first 16 hex digits) of the space-joined ids of the first 200 smoke cases per seed
SMOKE_DIGESTS = {0: "3cd220c4fd29b2d8", 1: "2fdf184ecf8ee576", 2: "75e67707d3797a10"}


@pytest.mark.parametrize("seed", sorted(SMOKE_DIGESTS))
def test_smoke_case_ids_are_pinned(seed: int) -> None:
    ids = " ".join(c.case_id for c in draw_cases(200, seed=seed, profile="smoke"))
    assert hashlib.sha256(ids.encode()).hexdigest()[:16] == SMOKE_DIGESTS[seed]
