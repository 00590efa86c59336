"""A campaign: K worker processes, each a partition of the case stream, under one budget.

The coordinator (this module) has one job: the run's identity, clock, workers and
summary. It decides the run identity and the clock, compacts the journals a killed run
left into results/ (`dataset.compact_journals`), removes what it left half-written
(`bundles.remove_unfinished_bundles`, and the bundle slots those held,
`bundle_quota.drop_unfinished`), starts the workers, hands them the claim counter
through which they share this host's cases (`Claims`) and the bundle byte counter
(`bundle_quota.BundleQuota`), and sums up what
they did (cases, outcomes, throughput, busy share, where the time went) in
`OUT/summary.json`. Each worker (`partition.py`) walks the case stream, sends cases to
its own isolated device process (`device_worker.py`) and makes their rows
(`record.py`) in its own result stem. With one worker everything but the isolated device
process runs here; with more, a `concurrent.futures.ProcessPoolExecutor` (spawn) runs
the partitions and their progress events come back over a queue. SIGTERM ends the
campaign as Ctrl-C does: every process closes its files and removes its unfinished
bundle.

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
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fia_fuzz.campaign.bundle_quota import drop_unfinished, run_bytes
from fia_fuzz.campaign.bundles import STALE_S, remove_unfinished_bundles
from fia_fuzz.campaign.config import CampaignConfig, size_text
from fia_fuzz.campaign.partition import DEVICE_MODULE, run_files, run_partition
from fia_fuzz.campaign.progress import Progress
from fia_fuzz.campaign.shrink import SHRUNK
from fia_fuzz.campaign.state import Claims, PartitionJob
from fia_fuzz.reports.dataset import (
    compact_journals,
    damage_warning,
    read_result_file,
    repair_results,
)
from fia_fuzz.runners import get_runner
from fia_fuzz.runners.isolation import HARNESS, IsolatedWorker, address_space, runner_ref

STATE = "state"
#: Share of the budget kept for shrinking once a failure is found.
SHRINK_SHARE = 0.15


#: What the coordinator writes at the end of each invocation (`CampaignSummary.to_dict`).
SUMMARY = "summary.json"


@dataclass
class CampaignSummary:
    """What the run has done over all its attempts (`cases`, `outcomes`, `verdicts`,
    `shrunk`) and what this invocation added (`added_*`, and the throughput: `busy_s` is
    the workers' case time summed (their rows' t_case), `stage_s` the same per stage
    (t_generate, t_materialise, ...)). Shrunk cases (origin=shrunk) are not cases of the
    stream and count in `shrunk` only."""

    run_id: str
    attempt: int = 1
    cases: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    added_cases: int = 0
    added_outcomes: dict[str, int] = field(default_factory=dict)
    added_verdicts: dict[str, int] = field(default_factory=dict)
    #: The first message of a case the harness could not run ("" when none).
    harness_note: str = ""
    elapsed_s: float = 0.0
    results: Path | None = None
    shrunk: list[dict[str, Any]] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)
    workers: int = 1
    busy_s: float = 0.0
    stage_s: dict[str, float] = field(default_factory=dict)
    removed_unfinished: int = 0

    @property
    def cases_per_min(self) -> float:
        """This invocation's cases per minute of its wall time."""
        return self.added_cases / self.elapsed_s * 60 if self.elapsed_s > 0 else 0.0

    @property
    def harness(self) -> int:
        """Cases of the run the tool could not run (outcome `harness`)."""
        return self.outcomes.get(HARNESS, 0)

    @property
    def busy_share(self) -> float:
        """Summed case time over workers x wall: how busy the workers kept (1 = always)."""
        wall = self.workers * self.elapsed_s
        return min(self.busy_s / wall, 1.0) if wall > 0 else 0.0

    def stage_shares(self) -> dict[str, float]:
        """Each stage's share of the summed case time (the rest: transfers, bundles)."""
        if self.busy_s <= 0:
            return {}
        return {k: v / self.busy_s for k, v in self.stage_s.items()}

    def throughput_line(self) -> str:
        stages = ", ".join(f"{k} {v:.0%}" for k, v in self.stage_shares().items())
        return (f"throughput {self.cases_per_min:.0f} cases/min; {self.workers} worker(s) busy "
                f"{self.busy_share:.0%} of the wall time" + (f" ({stages})" if stages else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "attempt": self.attempt, "cases": self.cases,
                "outcomes": self.outcomes, "verdicts": self.verdicts,
                "this_attempt": {"cases": self.added_cases, "outcomes": self.added_outcomes,
                                 "verdicts": self.added_verdicts},
                "harness_note": self.harness_note,
                "elapsed_s": self.elapsed_s, "workers": self.workers,
                "cases_per_min": self.cases_per_min, "busy_s": self.busy_s,
                "busy_share": self.busy_share, "stage_s": self.stage_s,
                "stage_shares": self.stage_shares(),
                "cases_per_worker": {str(p["worker"]): p["evaluated"]
                                     for p in self.partitions},
                "removed_unfinished_bundles": self.removed_unfinished,
                "shrunk": self.shrunk, "results": str(self.results) if self.results else None}


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
_COUNTER: Any = None
_BUDGET: Any = None


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so its `finally` blocks run (as for Ctrl-C)."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated(f"signal {signum}")


def _catch_sigterm() -> Any:
    """Make SIGTERM end this process like Ctrl-C; returns the handler it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


def _set_queue(q: Any, counter: Any, budget: tuple[Any, Any]) -> None:
    global _QUEUE, _COUNTER, _BUDGET
    _QUEUE, _COUNTER, _BUDGET = q, counter, budget
    _catch_sigterm()


def _run_queued(job: PartitionJob) -> dict[str, Any]:
    return run_partition(job, _QUEUE.put, Claims(_COUNTER), _BUDGET)


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
    for note in repair_results(cfg.out):  # torn parquet files a crash left: from journals
        print(note, file=sys.stderr)
    damaged: list[str] = []  # what a killed attempt left uncompacted: results/ has it all
    compact_journals(cfg.out, damaged)
    if damage_warning(damaged):
        print(damage_warning(damaged), file=sys.stderr)
    state = RunState(cfg)
    summary = CampaignSummary(run_id=state.run_id, attempt=state.attempt,
                              results=Path(cfg.out) / "results", workers=cfg.workers)
    progress = Progress(cfg.budget_s, cfg.max_cases, stream=stream)
    # what a killed run left half-written (another host's shard may be writing now: only
    # directories no live write can still own, then)
    summary.removed_unfinished = remove_unfinished_bundles(
        cfg.out, older_than=0.0 if cfg.shards == 1 else STALE_S)
    if summary.removed_unfinished:
        progress.message(f"removed {summary.removed_unfinished} unfinished bundle "
                         "directory(ies) a killed run left")
    if state.resumed:
        progress.message(f"resuming run {state.run_id} (attempt {state.attempt}, "
                         f"{state.spent:.0f}s of budget already spent)")
        if cfg.shards == 1:  # bundle slots whose write a kill cut short
            drop_unfinished(cfg.out, state.run_id)
    ctx = mp.get_context("spawn")
    # the run's bundle bytes so far and whether the budget refused one (bundle_quota.py)
    budget = (ctx.Value("q", run_bytes(cfg.out, state.run_id) if state.resumed else 0),
              ctx.Value("b", 0))
    hard_end = explore_end = None
    if cfg.budget_s is not None:
        left = cfg.budget_s - state.spent
        progress.start -= state.spent
        hard_end = t0 + left
        if cfg.shrink:  # the budget's last share is the shrink's (none with --no-shrink)
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

    previous = _catch_sigterm()
    try:
        if cfg.workers == 1:
            summary.partitions = [run_partition(jobs[0], on_event, None, budget)]
        else:
            summary.partitions = _run_pool(jobs, on_event, progress, ctx, budget)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    state.save(time.time() - t0, "finished")
    progress.close()
    summary.elapsed_s = time.time() - t0
    for part in summary.partitions:
        summary.added_cases += part["evaluated"]
        summary.busy_s += part.get("busy_s", 0.0)
        summary.harness_note = summary.harness_note or part.get("harness_note", "")
        for k, v in part.get("stage_s", {}).items():
            summary.stage_s[k] = summary.stage_s.get(k, 0.0) + v
        for counts, total in ((part["outcomes"], summary.added_outcomes),
                              (part["verdicts"], summary.added_verdicts)):
            for k, n in counts.items():
                total[k] = total.get(k, 0) + n
    whole_run(summary, cfg, [s for p in summary.partitions for s in p["shrunk"]])
    tmp = Path(cfg.out) / f".{SUMMARY}.tmp"
    tmp.write_text(json.dumps(summary.to_dict(), indent=2, default=str) + "\n")
    os.replace(tmp, Path(cfg.out) / SUMMARY)
    return summary


def check_memory_limit(runner: str, limit: int) -> str | None:
    """None when a device process of `runner` starts under an address-space cap of `limit`
    bytes (`--memory-limit`); otherwise why not, and how much address space the process
    takes once its imports are done (measured in one started without the cap)."""
    preload = (DEVICE_MODULE, runner_ref(runner)[1])
    probe = IsolatedWorker(memory_limit=limit, preload=preload)
    try:
        why = probe.start()
    finally:
        probe.close(grace=0.5)
    if why is None:
        return None
    need = ""
    free = IsolatedWorker(preload=preload)
    try:
        if free.start() is None:
            res = free.call(address_space, timeout=120)
            if res.ok and res.value:
                need = (f"; after its imports it takes {size_text(int(res.value))} of address "
                        "space, and its cases more")
    finally:
        free.close(grace=0.5)
    return (f"a device process cannot start under it "
            f"({why.removeprefix('worker failed to start: ')}){need}")


def whole_run(summary: CampaignSummary, cfg: CampaignConfig,
              shrunk_now: list[dict[str, Any]]) -> None:
    """The run's cases, outcomes and verdicts over all its attempts (from its rows in
    OUT), and every cell it shrank (OUT/shrunk/, this invocation's first)."""
    if summary.attempt == 1:
        summary.cases, summary.shrunk = summary.added_cases, shrunk_now
        summary.outcomes, summary.verdicts = summary.added_outcomes, summary.added_verdicts
        return
    outcomes: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    for f in run_files(Path(cfg.out), summary.run_id):
        df = read_result_file(f, columns=["outcome", "verdict", "origin", "error"])
        if df.empty or "outcome" not in df:
            continue
        if "origin" in df:
            df = df[df["origin"] != SHRUNK]
        outcomes.update(str(o) for o in df["outcome"])
        if "verdict" in df:
            verdicts.update(str(v) for v in df["verdict"] if isinstance(v, str) and v)
        if not summary.harness_note and "error" in df:
            notes = df.loc[df["outcome"] == HARNESS, "error"]
            summary.harness_note = str(notes.iloc[0]) if len(notes) else ""
    summary.cases = sum(outcomes.values())
    summary.outcomes, summary.verdicts = dict(outcomes), dict(verdicts)
    mine = {s["minimal"] for s in shrunk_now}
    earlier = []
    for p in sorted((Path(cfg.out) / SHRUNK).glob("*.json")):
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if (isinstance(doc, dict) and doc.get("status") == "done" and doc.get("minimal")
                not in mine and str(doc.get("owner", "")).split("/")[0] == summary.run_id):
            earlier.append(doc)
    summary.shrunk = shrunk_now + earlier


def _run_pool(jobs: list[PartitionJob], on_event: Any, progress: Progress, ctx: Any,
              budget: tuple[Any, Any]) -> list[dict[str, Any]]:
    events = ctx.Queue()
    counter = ctx.Value("q", 0)  # the host's next unclaimed stream case (state.Claims)
    pool = ProcessPoolExecutor(len(jobs), mp_context=ctx, initializer=_set_queue,
                               initargs=(events, counter, budget))
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
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: every worker winds down its files
        _stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # idle workers exit on their own


def _stop_workers(pool: ProcessPoolExecutor, grace: float = 10.0) -> None:
    """SIGTERM each worker process (it closes its results and removes its unfinished
    bundle), then wait up to `grace` seconds for them."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        if p.is_alive():
            p.terminate()
    end = time.time() + grace
    for p in procs:
        p.join(max(0.0, end - time.time()))
