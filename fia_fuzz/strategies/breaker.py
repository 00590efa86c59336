"""What a breaker is: a legal neighbourhood where a rule applies, and the change that breaks it.

Shared by `illegal.py` (the simple breakers and the searched table) and the
`breakers_*.py` modules that hold the compound ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from fia_fuzz.spec import Case
from fia_fuzz.strategies.cases import cases
from fia_fuzz.strategies.mutations import Change


@dataclass(frozen=True)
class Breaker:
    """How to break one rule: a legal base case, then a change drawn from it.

    The base is `cases(**base)` or any of `cases(**alt[i])` (filters cannot say
    "one of these layouts").
    """

    change: Callable[[st.DrawFn, Case], Change]
    base: dict[str, Any] = field(default_factory=dict)
    alt: tuple[dict[str, Any], ...] = ()

    def cases(self) -> st.SearchStrategy[Case]:
        """The legal cases this breaker starts from."""
        return st.one_of([cases(**b) for b in (self.base, *self.alt)])
