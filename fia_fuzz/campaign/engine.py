"""A campaign: K worker processes, each a partition of the case stream, under one budget.

The coordinator (this module) decides the run identity, the clock and the
workers; each worker (`partition.py`) drives Hypothesis, sends cases to its
own isolated device process and writes its own result stem. With one worker
everything but the isolated device process runs here; with more, a
`concurrent.futures.ProcessPoolExecutor` (spawn) runs the partitions and
their progress events come back over a queue.

Resume: a run's identity is the fingerprint of its command line. Rerunning
the same command after a kill continues the same run (new attempt, new
result stems, finished case ids skipped, remaining budget only); after a
finished run, the same command starts a new run that replays the failure
corpus first.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue
import time
import uuid
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fia_fuzz.campaign.config import CampaignConfig
from fia_fuzz.campaign.partition import run_partition
from fia_fuzz.campaign.progress import Progress
from fia_fuzz.campaign.state import PartitionJob
from fia_fuzz.runners import get_runner

STATE = "state"
#: Share of the budget kept for shrinking once a failure is found.
SHRINK_SHARE = 0.15


@dataclass
class CampaignSummary:
    run_id: str
    attempt: int = 1
    cases: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    results: Path | None = None
    shrunk: list[dict[str, Any]] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)


class RunState:
    """OUT/state/<fingerprint>.json: run id, attempt, budget spent, running/finished."""

    def __init__(self, cfg: CampaignConfig):
        self.path = Path(cfg.out) / STATE / f"{cfg.fingerprint()}.json"
        prev = json.loads(self.path.read_text()) if self.path.exists() else None
        if prev and prev.get("status") == "running":
            self.run_id, self.attempt = prev["run_id"], int(prev["attempt"]) + 1
            self.spent = float(prev.get("spent_s", 0.0))
        else:
            self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
            self.attempt, self.spent = 1, 0.0
        self.resumed = self.attempt > 1
        self._base = self.spent
        self.save(0.0, "running")

    def save(self, elapsed: float, status: str) -> None:
        self.spent = self._base + elapsed
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"run_id": self.run_id, "attempt": self.attempt,
                                   "spent_s": self.spent, "status": status}))
        os.replace(tmp, self.path)


_QUEUE: Any = None


def _set_queue(q: Any) -> None:
    global _QUEUE
    _QUEUE = q


def _run_queued(job: PartitionJob) -> dict[str, Any]:
    return run_partition(job, _QUEUE.put)


def run_campaign(cfg: CampaignConfig, stream: TextIO | None = None,
                 started: float | None = None) -> CampaignSummary:
    """Run (or resume) the campaign `cfg` describes; returns what this invocation did.

    The budget counts from `started` (time.time() when the command began).
    """
    t0 = started or time.time()
    ok, why = get_runner(cfg.runner).available()
    if not ok:
        raise RuntimeError(f"runner {cfg.runner!r} is not available here: {why}")
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    state = RunState(cfg)
    summary = CampaignSummary(run_id=state.run_id, attempt=state.attempt,
                              results=Path(cfg.out) / "results")
    progress = Progress(cfg.budget_s, cfg.max_cases, stream=stream)
    if state.resumed:
        progress.message(f"resuming run {state.run_id} (attempt {state.attempt}, "
                         f"{state.spent:.0f}s of budget already spent)")
    hard_end = explore_end = None
    if cfg.budget_s is not None:
        left = cfg.budget_s - state.spent
        progress.start -= state.spent
        hard_end = t0 + left
        explore_end = t0 + left - SHRINK_SHARE * cfg.budget_s
    jobs = [PartitionJob(cfg=cfg, run_id=state.run_id, attempt=state.attempt, worker=w,
                         device=cfg.device_of(w), hard_end=hard_end, explore_end=explore_end)
            for w in range(cfg.workers)]
    last_save = [time.time()]

    def on_event(event: dict[str, Any]) -> None:
        progress.update(event)
        if time.time() - last_save[0] > 5:
            last_save[0] = time.time()
            state.save(time.time() - t0, "running")

    if cfg.workers == 1:
        summary.partitions = [run_partition(jobs[0], on_event)]
    else:
        summary.partitions = _run_pool(jobs, on_event, progress)
    state.save(time.time() - t0, "finished")
    progress.close()
    summary.elapsed_s = time.time() - t0
    for part in summary.partitions:
        summary.cases += part["evaluated"]
        for counts, total in ((part["outcomes"], summary.outcomes),
                              (part["verdicts"], summary.verdicts)):
            for k, n in counts.items():
                total[k] = total.get(k, 0) + n
    summary.shrunk = [s for p in summary.partitions for s in p["shrunk"]]
    return summary


def _run_pool(jobs: list[PartitionJob], on_event: Any, progress: Progress
              ) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    events = ctx.Queue()
    pool = ProcessPoolExecutor(len(jobs), mp_context=ctx, initializer=_set_queue,
                               initargs=(events,))
    try:
        futures = [pool.submit(_run_queued, job) for job in jobs]
        pending = set(futures)
        while pending:
            try:
                on_event(events.get(timeout=0.2))
            except queue.Empty:
                progress.tick()
            done, pending = wait_futures(pending, timeout=0, return_when=FIRST_EXCEPTION)
            for f in done:
                f.result()  # a partition's own bug surfaces here, with its traceback
        while True:
            try:
                on_event(events.get(timeout=0.05))
            except queue.Empty:
                break
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # idle workers exit on their own
