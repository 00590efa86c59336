"""Where a strategy's decisions come from: Hypothesis draws, or a seeded RNG.

Every construction step asks a `Chooser`, never Hypothesis directly, so the
same code draws shrinkable cases under Hypothesis and does the cheap random
walks with which `cases(**filters)` proves at build time that a filter
combination can be met. Named picks honour the filters (`pins`): a pinned
feature returns its pinned value, or raises `Dead` when this path cannot
carry it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st
from hypothesis.control import current_build_context


class Dead(Exception):
    """This construction path cannot honour a pinned feature."""


class Chooser:
    def __init__(self, pins: dict[str, Any]):
        self.pins = pins
        #: The choices that replay this draw, where they are not the chooser's own (a
        #: stream's pair-aimed draw: its walk's, strategies/cases.py `_walk_aim`)
        self.replay: tuple[int, ...] | None = None
        #: A route aim's boundary (strategies/routes.py): ("edge", (offset, tiles, role)) for
        #: lengths at that offset (-1, 0, 1) from a tile multiple (role "q": the query's
        #: tile, "kv": the keys'), or ("units", targets) for B x heads
        #: on one of the targets (a split threshold); None: sizes draw their own mix.
        self.aim: tuple[str, Any] | None = None

    def one(self, options: Sequence[Any]) -> Any:
        raise NotImplementedError

    def int(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def pad(self, length: int) -> None:
        """Make the decision sequence at least `length` long (Hypothesis only)."""

    def coin(self) -> bool:
        return bool(self.one((False, True)))

    def pinned(self, name: str, value: Any) -> bool:
        """True when the filters pin `name` to `value`."""
        return name in self.pins and self.pins[name] == value

    def allows(self, name: str, value: Any) -> bool:
        """True when the filters leave `name` free or pin it to `value`."""
        return name not in self.pins or self.pins[name] == value

    def fixed(self, name: str, value: Any) -> Any:
        """`value` for feature `name` when the path leaves no choice: no decision is drawn
        (the path's length, and so the shrink order, stays), Dead if a filter pins another."""
        if name in self.pins and self.pins[name] != value:
            raise Dead(f"{name}={self.pins[name]!r} is not {value!r} here")
        return value

    def pick(self, name: str, options: Sequence[Any]) -> Any:
        """A value for feature `name` among the options legal on this path."""
        if name in self.pins:
            if self.pins[name] in options:
                return self.pins[name]
            raise Dead(f"{name}={self.pins[name]!r} not in {list(options)} here")
        if not options:
            raise Dead(f"no legal value for {name}")
        return self.one(options)


@lru_cache(maxsize=16384)
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


class HypothesisChooser(Chooser):
    """Decisions drawn by Hypothesis; sampled_from order is the shrink order."""

    def __init__(self, draw: st.DrawFn, pins: dict[str, Any]):
        super().__init__(pins)
        self.draw = draw
        #: Every value drawn, in order: the case's choice sequence, which Hypothesis can
        #: replay and shrink (see strategies.cases.recorded_cases).
        self.choices: list[int] = []

    @property
    def count(self) -> int:
        return len(self.choices)

    def _draw(self, lo: int, hi: int) -> int:
        value = self.draw(_integers(lo, hi))
        self.choices.append(value)
        return value

    def one(self, options: Sequence[Any]) -> Any:
        # an index, not sampled_from: same shrink order (toward the first option), less overhead
        return options[self._draw(0, len(options) - 1)]

    def int(self, lo: int, hi: int) -> int:
        # drawn even when forced (see pad)
        return self._draw(lo, max(lo, hi))

    def pad(self, length: int) -> None:
        """Hypothesis shrinks shortlex on the choice sequence, so a family whose path is
        short would beat the simplest case of a longer one; forced draws even them out."""
        for _ in range(length - self.count):
            self._draw(0, 0)


class RandomChooser(Chooser):
    """Decisions from a seeded RNG, for build-time feasibility walks."""

    def __init__(self, rng: random.Random, pins: dict[str, Any]):
        super().__init__(pins)
        self.rng = rng

    def one(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def int(self, lo: int, hi: int) -> int:
        return lo if hi <= lo else self.rng.randint(lo, hi)


class RecordingChooser(RandomChooser):
    """A seeded walk that records its decisions as a HypothesisChooser would draw them, so
    the same path replays through Hypothesis (and shrinks there)."""

    def __init__(self, rng: random.Random, pins: dict[str, Any]):
        super().__init__(rng, pins)
        self.choices: list[int] = []

    def one(self, options: Sequence[Any]) -> Any:
        i = self.rng.randrange(len(options))
        self.choices.append(i)
        return options[i]

    def int(self, lo: int, hi: int) -> int:
        value = super().int(lo, hi)
        self.choices.append(value)
        return value

    def pad(self, length: int) -> None:
        self.choices.extend([0] * (length - len(self.choices)))


def with_choices(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, tuple]]:
    """(value, the choice sequence that drew it), for a strategy that is a test's only draw
    (`@given(with_choices(s))`): replayed through the same strategy (an example database),
    the sequence rebuilds the value, and Hypothesis can shrink from it. For strategies that
    draw through Hypothesis directly (the breakers), where no Chooser records the choices."""
    @st.composite
    def recorded(draw: st.DrawFn) -> tuple[Any, tuple]:
        value = draw(strategy)
        # the test's choices so far; Hypothesis keeps them on the data of the build context
        return value, tuple(current_build_context().data.choices)

    return recorded()
