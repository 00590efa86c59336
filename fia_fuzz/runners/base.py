"""The runner interface and registry.

A runner executes one canonical call (NumPy arrays in, NumPy arrays out) on a
real backend. `available()` and `supports()` answer with a reason instead of
raising, so a campaign can record *why* a case was not run.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from fia_fuzz.op.case import Case


class Runner(ABC):
    name: str = ""
    #: Memory of the device the backend runs on, the default of `campaign --device-memory`
    #: (None: a host backend, whose campaigns skip nothing for size unless told).
    device_memory: int | None = None

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, why not)."""

    @abstractmethod
    def supports(self, case: Case) -> tuple[bool, str]:
        """(True, "") when this backend can express the case, else (False, which feature)."""

    @abstractmethod
    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """(attention_out, softmax_lse) of a canonical call, as NumPy arrays.

        NotImplementedError (with the reason) where the backend itself refuses the call
        only when it meets it: a campaign records the case as unsupported, not an error."""

    def working_bytes(self, case: Case) -> int:
        """Device memory the backend allocates for the case beyond its inputs and outputs
        (`Case.device_bytes`): what a campaign adds before comparing with a worker's share
        of the device. 0 for a backend that states none."""
        return 0

    def metadata(self) -> dict[str, str]:
        """Backend versions and device name, recorded in every result row."""
        return {"runner": self.name}


#: Set by the isolation worker (isolation.py) to the physical device index it bound.
DEVICE_INDEX_ENV = "FIA_DEVICE_INDEX"


def bound_device() -> str:
    """The physical device index the isolation worker bound this process to, or ""."""
    return os.environ.get(DEVICE_INDEX_ENV, "")


RUNNERS: dict[str, Callable[[], Runner]] = {}
#: Entry-point group under which installed packages offer runner factories.
ENTRY_POINT_GROUP = "fia_fuzz.runners"


class RunnerSpecError(LookupError):
    """A runner spec that names no runner, or whose factory cannot be loaded or called."""


def register(name: str) -> Callable[[Callable[[], Runner]], Callable[[], Runner]]:
    def deco(factory: Callable[[], Runner]) -> Callable[[], Runner]:
        RUNNERS[name] = factory
        return factory
    return deco


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def runner_module(spec: str) -> str:
    """The module that defines the runner `spec` (imported first by an isolation worker)."""
    if spec in RUNNERS:
        return RUNNERS[spec].__module__
    if ":" in spec:
        return spec.partition(":")[0]
    ep = _entry_points().get(spec)
    if ep is None:
        raise RunnerSpecError(_unknown(spec))
    return str(ep.value).partition(":")[0]


def _unknown(spec: str) -> str:
    plugged = sorted(_entry_points())
    return (f"unknown runner {spec!r}; known: {sorted(RUNNERS)}"
            + (f", entry points ({ENTRY_POINT_GROUP}): {plugged}" if plugged else "")
            + "; or give package.module:factory")


def _factory(spec: str) -> Callable[[], Any]:
    if spec in RUNNERS:
        return RUNNERS[spec]
    if ":" in spec:
        module, _, attr = spec.partition(":")
        try:
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except Exception as exc:  # a broken plug-in is the user's error: say which and why
            raise RunnerSpecError(f"runner {spec!r}: cannot load {attr!r} from {module!r}: "
                                  f"{type(exc).__name__}: {exc}") from exc
        return obj  # type: ignore[no-any-return]
    ep = _entry_points().get(spec)
    if ep is None:
        raise RunnerSpecError(_unknown(spec))
    try:
        return ep.load()  # type: ignore[no-any-return]
    except Exception as exc:
        raise RunnerSpecError(f"runner {spec!r}: entry point {ep.value!r} "
                              f"({ENTRY_POINT_GROUP}) does not load: "
                              f"{type(exc).__name__}: {exc}") from exc


def get_runner(spec: str) -> Runner:
    """The runner `spec` names: a registered name (see RUNNERS), `package.module:factory`
    (a callable returning a Runner), or an entry point of the group `fia_fuzz.runners`.

    Raises RunnerSpecError when the spec names nothing, does not load, or its
    factory fails or returns something that is not a Runner.
    """
    factory = _factory(spec)
    if not callable(factory):
        raise RunnerSpecError(f"runner {spec!r}: {factory!r} is not callable")
    try:
        runner = factory()
    except Exception as exc:
        raise RunnerSpecError(f"runner {spec!r}: its factory raised "
                              f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(runner, Runner):
        raise RunnerSpecError(f"runner {spec!r}: the factory returned "
                              f"{type(runner).__name__}, not a fia_fuzz.runners.Runner")
    return runner
