"""Pair aims: unfiltered draws that pin the values of feature pairs the stream's own mix
reaches rarely or never, so a night covers the feasible pairs (strategies/pairs.py).

A profile with `pair_aims` (nightly, stress) aims PAIR_AIMED of PAIR_AIM_OF unfiltered
draws at one pin set of its rule profile's schedule, picked about evenly: the pin sets
`pair_feasible.schedule` chose greedily (AETG style: each covers the most pairs still
uncovered) among the pairs the unaimed mix leaves rare, stored beside the feasible set.
The pins go through the same path as `--filter`: a draw that cannot carry them draws
again, up to PAIR_TRIES times, then keeps an unaimed draw.

Both decisions are choices of the draw, so the aims are a function of the stream alone:
every worker and shard walks the same stream and sees the same aims, a resumed run
walks it again, and a replay of the case's choices (the shrink, an example database)
rebuilds it. (A schedule walked in stream order would need the stream position, which
Hypothesis's draws may not depend on.) Smoke makes no decision here; `unaimed()` turns
the aims off (the reference draws of the schedule, a campaign's `--no-pair-aims`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from fia_fuzz.strategies import pairs
from fia_fuzz.strategies.choices import Chooser
from fia_fuzz.strategies.draft import Profile

#: PAIR_AIMED unfiltered draws in PAIR_AIM_OF take a pair aim
PAIR_AIMED, PAIR_AIM_OF = 1, 2
#: Draws a pair aim may take to carry its pins before the draw keeps an unaimed one
PAIR_TRIES = 12

_off: ContextVar[bool] = ContextVar("pair_aims_off", default=False)


@contextlib.contextmanager
def unaimed(off: bool = True) -> Iterator[None]:
    """Draws inside (when `off`) take no pair aim and make no decision for one."""
    token = _off.set(off)
    try:
        yield
    finally:
        _off.reset(token)


@lru_cache(maxsize=4)
def schedule(rules: str) -> tuple[dict[str, Any], ...]:
    """The stored pin sets of `rules` whose pins are all still axis values (filtered once per
    process, as the stored set is read once: every unfiltered nightly draw asks for it)."""
    fs = pairs.load(rules)
    if fs is None:
        return ()
    index = pairs.space().index
    return tuple(aim for aim in fs.aims if all((a, repr(v)) in index for a, v in aim.items()))


def _even(ch: Chooser, n: int) -> int:
    """One of 0..n-1, about evenly: Hypothesis draws integers unevenly (small values and
    bounds first), so two draws are mixed (as routes._even)."""
    return (ch.int(0, 255) + 251 * ch.int(0, 255)) % n


def aim(ch: Chooser, prof: Profile, pins: Mapping[str, Any], rules: str
        ) -> dict[str, Any] | None:
    """The pins of this draw's pair aim, None for an unaimed draw (and for filtered draws,
    profiles without pair aims, or under `unaimed()`: no decision is drawn then)."""
    if not prof.pair_aims or pins or _off.get():
        return None
    aims = schedule(rules)
    if not aims:
        return None
    if ch.int(0, PAIR_AIM_OF - 1) < PAIR_AIM_OF - PAIR_AIMED:
        return None   # shrinks toward an unaimed draw
    return aims[_even(ch, len(aims))]
