"""Pair aims: draws of a stream that pin feature pairs the stream has not carried yet, so a
night covers the feasible pairs (strategies/pairs.py) in one greedy covering-array walk.

A profile with `pair_aims` (nightly, stress) gives PAIR_AIMED of PAIR_AIM_OF unfiltered
draws of a stream a pair aim. The stream (`Stream`, one per drawn stream: a campaign's
stream rounds, `draw_cases`) keeps which feasible pairs its cases carried so far, and
aims at what is left, AETG style:
- first the stored schedule in order (`pair_feasible.schedule`: pin sets chosen greedily,
  each covering the most pairs the profile's own mix leaves rare), an entry skipped once
  the stream's cases carried all its pairs;
- then each feasible pair still uncovered, the least missed first, until MISSES aims at
  it failed to carry it.

Hypothesis requires a draw to be a function of its choices, and the aim is a function of
the stream, so an aimed draw is not built from Hypothesis's choices: it draws a seed, and
walks the construction with the aim's pins as filters on a seeded, recording chooser (up
to PAIR_TRIES walks, then one unaimed walk: a miss). The walk's decisions replay through
`cases.aimed_cases(pins)` (the pins `last()` names, a failing row's `draw_aim`), where
Hypothesis shrinks them with the pins held. Every partition of a campaign walks the whole
stream (the shard and worker split comes after the draw), and a resumed run walks it
again, so every worker and shard sees the same aims. Draws outside a stream make the
decision and go on unaimed; smoke makes none; `unaimed()` turns the aims off (the
reference draws of the schedule, a campaign's `--no-pair-aims`).
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import numpy as np

from fia_fuzz.op.case import Case
from fia_fuzz.strategies import pairs
from fia_fuzz.strategies.choices import Chooser
from fia_fuzz.strategies.draft import Profile

#: PAIR_AIMED unfiltered draws in PAIR_AIM_OF take a pair aim
PAIR_AIMED, PAIR_AIM_OF = 1, 2
#: Draws a pair aim may take to carry its pins before the draw keeps an unaimed one
PAIR_TRIES = 8
#: Aims at one uncovered pair that may fail before the stream stops aiming at it
MISSES = 3

_off: ContextVar[bool] = ContextVar("pair_aims_off", default=False)
_stream: ContextVar[Stream | None] = ContextVar("pair_aims_stream", default=None)


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
    process, as the stored set is read once)."""
    fs = pairs.load(rules)
    if fs is None:
        return ()
    index = pairs.space().index
    return tuple(aim for aim in fs.aims if all((a, repr(v)) in index for a, v in aim.items()))


class Stream:
    """What one stream of draws has carried so far, and the aim its next aimed draw takes."""

    def __init__(self, rules: str):
        fs = pairs.load(rules)
        self.sp = sp = pairs.space()
        #: by pair id: feasible and not yet carried by a case of the stream
        self.open = np.zeros(sp.n * sp.n, bool)
        if fs is not None:
            self.open[fs.pairs(pairs.FEASIBLE)] = True
        self.entries = [(aim, [sp.pair_id(a, b) for a in ids for b in ids if a < b])
                        for aim in schedule(rules)
                        for ids in [sorted(sp.index[(k, repr(v))] for k, v in aim.items())]]
        self.cursor = 0
        #: the stream's draws so far (which of them aim is a function of the count)
        self.drawn = 0
        self.misses: Counter[int] = Counter()
        self.queue: deque[int] | None = None  # the uncovered pairs, once the schedule is walked
        #: the pins the latest draw's walk carried ({}: an unaimed walk; None: no walk)
        self.last: dict[str, Any] | None = None
        self.pending: tuple[int, ...] = ()

    def next(self) -> list[dict[str, Any]]:
        """The pin sets the next aim tries (none when nothing is left to aim at): the next
        schedule entry with a pair still uncovered, else the next uncovered pair."""
        while self.cursor < len(self.entries):
            aim, ids = self.entries[self.cursor]
            self.cursor += 1
            todo = tuple(p for p in ids if self.open[p])
            if todo:
                self.pending = todo
                return [aim]
        if self.queue is None:
            self.queue = deque(np.flatnonzero(self.open).tolist())
        while self.queue:
            p = self.queue.popleft()
            if self.open[p] and self.misses[p] < MISSES:
                self.pending = (p,)
                self.queue.append(p)  # back of the line: tried again if this aim misses
                return [self.sp.pins(self.sp.split(p))]
        self.pending = ()
        return []

    def add(self, case: Case) -> None:
        """Count a drawn case's pairs as covered; an aim it did not carry is a miss."""
        ids = np.array(sorted(self.sp.indices(case.features())), np.int64)
        upper = np.triu_indices(ids.size, 1)
        self.open[(ids[:, None] * self.sp.n + ids[None, :])[upper]] = False
        for p in self.pending:
            if self.open[p]:
                self.misses[p] += 1
        self.pending = ()

    @property
    def uncovered(self) -> int:
        """Feasible pairs no case of the stream carried yet."""
        return int(np.count_nonzero(self.open))


@contextlib.contextmanager
def stream(rules: str | None) -> Iterator[Stream | None]:
    """Draws inside are one stream of `rules` (None: draws outside any stream)."""
    token = _stream.set(Stream(rules) if rules is not None else None)
    try:
        yield _stream.get()
    finally:
        _stream.reset(token)


def last() -> str | None:
    """The pins the current stream's latest walk carried, as JSON ("{}" for an unaimed walk;
    None outside a stream, or for a draw built from Hypothesis's choices): its case
    replays through `cases.aimed_cases(last())`."""
    s = _stream.get()
    return None if s is None or s.last is None else json.dumps(s.last, sort_keys=True)


def aim(ch: Chooser, prof: Profile, pins: Mapping[str, Any]
        ) -> tuple[list[dict[str, Any]], int] | None:
    """(the pin sets this draw's walks try in turn, none for an unaimed draw; the seed of
    its walks), or None for a draw built from Hypothesis's choices: outside a stream, for
    filtered draws, profiles without pair aims and under `unaimed()`. A stream's draw aims
    when it is one of PAIR_AIMED in PAIR_AIM_OF; Hypothesis's choices are its seed alone."""
    s = _stream.get()
    if s is None or not prof.pair_aims or pins or _off.get():
        return None
    seed = ch.int(0, 2**32 - 1)
    s.pending = ()
    targets = s.next() if s.drawn % PAIR_AIM_OF < PAIR_AIMED else []
    s.drawn += 1
    s.last = {}
    return targets, seed


def carried(pins: dict[str, Any]) -> None:
    """The stream's latest walk carried `pins` (what `last()` names)."""
    s = _stream.get()
    if s is not None:
        s.last = dict(pins)


def drew(case: Case, pins: Mapping[str, Any]) -> None:
    """A draw is done (`pins`: its filters): an unfiltered one's pairs are its stream's."""
    s = _stream.get()
    if s is not None and not pins and not _off.get():
        s.add(case)
