"""What a partition carries: its job (config, identity, clock), its running state, and
the failures it found as drawn, so that the shrink can replay them.

A module of its own so that partition.py (which explores) and shrink.py
(which it calls at the end) both read it without importing each other.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from hypothesis.database import choices_from_bytes, choices_to_bytes

from fia_fuzz.campaign.bundle_quota import BundleQuota
from fia_fuzz.campaign.config import CampaignConfig
from fia_fuzz.op.case import Case
from fia_fuzz.reports import ResultWriter
from fia_fuzz.runners.isolation import IsolatedWorker

#: Where a partition sends its progress events (rows, logs, counts).
Report = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Found:
    """A failing case as drawn: its choice sequence through the campaign's strategy
    (`partition.stream_strategy`) and the seed mask of a steered draw (see `steered`), from
    which the shrink replays and shrinks it; `choices` is None when unknown (an old bundle).
    `tags` are what the draw knew and the case does not say, for its row (a negative
    case's `broken_side`)."""

    case: Case
    choices: tuple[int, ...] | None = None
    seed_xor: int = 0
    tags: dict[str, Any] = field(default_factory=dict)
    #: the pair aim the draw took (`pair_aims.last()`; None: it made no decision for one)
    aim: str | None = None


@dataclass(frozen=True)
class PartitionJob:
    """What one worker process needs: the config, who it is, and the clock."""

    cfg: CampaignConfig
    run_id: str
    attempt: int
    worker: int
    device: int | None
    hard_end: float | None  # time.time() at which everything must be over
    explore_end: float | None  # stop exploring here if a failure waits to be shrunk

    @property
    def count(self) -> int:
        return self.cfg.shards * self.cfg.workers

    @property
    def index(self) -> int:
        return self.cfg.shard * self.cfg.workers + self.worker

    def owns(self, case_id: str) -> bool:
        """Whether the case is this worker's by its id (seed cases and the replayed corpus,
        which are few, are split by id; the stream's cases are claimed, `Claims`)."""
        return int(case_id, 16) % self.count == self.index

    def in_shard(self, case_id: str) -> bool:
        """Whether the case belongs to this host's shard: the same cases as the K workers'
        `owns` together (a worker of the shard claims each one, `Claims`)."""
        return int(case_id, 16) % self.count // self.cfg.workers == self.cfg.shard

    @property
    def stem(self) -> str:
        c = self.cfg
        return (f"{self.run_id}-s{c.shard}of{c.shards}-w{self.worker}of{c.workers}"
                f"-a{self.attempt}")


class Claims:
    """How a host's workers share its cases: dynamically, in stream order.

    Every worker walks the same stream, so the host's k-th case (its shard's k-th fresh
    case in stream order) is the same case for all of them. Case k goes to the first
    worker that reaches it: a worker busy with a slow case leaves the next ones to the
    others instead of holding them. The counter is the next unclaimed k (a
    `multiprocessing.Value` shared by the host's worker processes; None with one worker,
    which claims everything). Each worker asks for every k in order, so the counter never
    skips one: the host runs exactly the cases it ran with a split by case id, only the
    worker that runs each one depends on timing.
    """

    def __init__(self, counter: Any = None):
        self.counter = counter

    def take(self, k: int) -> bool:
        """True when this worker is the first to reach the host's case k."""
        if self.counter is None:
            return True
        with self.counter.get_lock():
            if self.counter.value <= k:
                self.counter.value = k + 1
                return True
            return False


@dataclass
class PartitionState:
    """A running partition: its writer and device worker, the case ids done, counts, failures."""

    job: PartitionJob
    report: Report
    writer: ResultWriter
    worker: IsolatedWorker
    ref: tuple[str, str]
    meta: dict[str, Any]
    done: set[str]
    prior: pd.DataFrame
    #: The run's bundle slots per signature and its byte budget (shared by its workers).
    quota: BundleQuota
    claims: Claims = field(default_factory=Claims)
    seen: set[str] = field(default_factory=set)
    positions: int = 0
    #: The host's cases (in this shard) met so far in the stream: the next one's k.
    shard_positions: int = 0
    evaluated: int = 0
    #: Seconds spent on cases (their t_case summed) and per stage (t_generate,
    #: t_materialise, t_golden, t_runner, t_diff summed): the summary's busy share.
    busy_s: float = 0.0
    stage_s: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)
    #: Cases run per Atlas A2 route (case.features()["route"]): steering rounds favour the
    #: routes drawn least (partition._steer_round).
    routes: Counter[str] = field(default_factory=Counter)
    failing: dict[tuple[Any, ...], Found] = field(default_factory=dict)
    #: Cases in a row the harness could not run (outcome `harness`), and the first
    #: such message of this partition.
    harness_streak: int = 0
    harness_note: str = ""
    #: Failing call sequences by (workload, kind, diagnosis): the first one found of each.
    seq_failing: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    last_mark: float = field(default_factory=time.perf_counter)

    @property
    def cfg(self) -> CampaignConfig:
        return self.job.cfg

    def time_left(self) -> float | None:
        return None if self.job.hard_end is None else self.job.hard_end - time.time()


def wind_down(cfg: CampaignConfig) -> float:
    """Seconds before the budget's end at which no new case starts (room to close files)."""
    return min(0.025 * (cfg.budget_s or 0.0), 10.0)


def steered(case: Case, space: int) -> Case:
    """The case with its data seed moved into this partition's private seed space."""
    if not space:
        return case
    return Case(params=case.params, fills=case.fills, seed=(case.seed ^ space) & 0xFFFFFFFF,
                rules=case.rules)


def choices_hex(choices: tuple[int, ...]) -> str:
    """A choice sequence as text for a row (Hypothesis's own serialisation, hex)."""
    return choices_to_bytes(choices).hex()


def choices_from_hex(text: str) -> tuple[int, ...] | None:
    """The choice sequence of `choices_hex`, or None when it does not decode."""
    try:
        decoded = choices_from_bytes(bytes.fromhex(text))
    except ValueError:
        return None
    return None if decoded is None else tuple(int(c) for c in decoded)  # type: ignore[arg-type]
