"""The runner interface and registry.

A runner executes one canonical call (NumPy arrays in, NumPy arrays out) on a
real backend. `available()` and `supports()` answer with a reason instead of
raising, so a campaign can record *why* a case was not run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from fia_fuzz.spec import Case


class Runner(ABC):
    name: str = ""

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, why not)."""

    @abstractmethod
    def supports(self, case: Case) -> tuple[bool, str]:
        """(True, "") when this backend can express the case, else (False, which feature)."""

    @abstractmethod
    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """(attention_out, softmax_lse) of a canonical call, as NumPy arrays."""

    def metadata(self) -> dict[str, str]:
        """Backend versions and device name, recorded in every result row."""
        return {"runner": self.name}


def bound_device() -> str:
    """The physical device index the isolation worker bound this process to, or ""."""
    import os

    from fia_fuzz.runners.isolation import DEVICE_INDEX_ENV

    return os.environ.get(DEVICE_INDEX_ENV, "")


RUNNERS: dict[str, Callable[[], Runner]] = {}


def register(name: str) -> Callable[[Callable[[], Runner]], Callable[[], Runner]]:
    def deco(factory: Callable[[], Runner]) -> Callable[[], Runner]:
        RUNNERS[name] = factory
        return factory
    return deco


def get_runner(name: str) -> Runner:
    """The runner registered as `name` (see RUNNERS for the list)."""
    if name not in RUNNERS:
        raise KeyError(f"unknown runner {name!r}; known: {sorted(RUNNERS)}")
    return RUNNERS[name]()
