"""One partition of a campaign: a worker process's share of the case stream, start to finish.

A partition's job is to walk the stream and record what it runs. Every partition
(shard i of n hosts x worker w of K on the host) walks the same Hypothesis stream:
rounds of `round_size` examples, round r seeded by (seed, r), so the stream is a pure
function of the command line. A case belongs to shard `int(case_id) mod n*K // K` (the
shards are disjoint by construction, shards 0..n-1 together cover exactly what one host
covers); within the host, its workers claim the shard's cases in stream order, the first
worker to reach a case running it (`state.Claims`), so a slow case holds up no other.
A rerun skips the case ids already in OUT (resume). `--max-cases N` counts distinct
cases of the stream, so N is the campaign's total over all hosts and workers.

Each case takes one path (`record.evaluate_case`): the row, failure kind and bundle are
made there, the device process only measures (`device_worker.py`).

Steering (under --budget): after every n*K stream rounds a partition runs one
private round with `hypothesis.target(error_ratio)`, in which Hypothesis
hill-climbs from the worst cases it has seen; see `_steer_round`.

Order inside a partition: take the failures of a resumed run's earlier attempts (to
shrink them too), replay the seed cases (`--seed-cases`) and the failure corpus
(bundles of earlier runs in OUT), split among workers by case id, explore, then shrink
each failing feature cell of the whole run not yet shrunk (`shrink.py`; under --negative
each broken rule and side with a finding). With seed
cases the stream draws from their feature cells only. A partition whose cases the
harness cannot run (outcome `harness`: the device process does not start)
stops exploring after HARNESS_STREAK of them in a row.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
from hypothesis import seed as hseed
from hypothesis import strategies as hst
from hypothesis.errors import InvalidArgument

from fia_fuzz.campaign import sequences as seqs
from fia_fuzz.campaign.bundle_quota import BundleQuota
from fia_fuzz.campaign.bundles import bundle_cases
from fia_fuzz.campaign.config import CampaignConfig, cell_of
from fia_fuzz.campaign.evaluate import repro_command
from fia_fuzz.campaign.record import BUNDLE_IF_FAILING, BUNDLE_NEVER, evaluate_case
from fia_fuzz.campaign.shrink import SHRUNK, Drawn, shrink_failures, shrink_strategy
from fia_fuzz.campaign.state import (
    Claims,
    Found,
    PartitionJob,
    PartitionState,
    Report,
    choices_from_hex,
    choices_hex,
    steered,
    wind_down,
)
from fia_fuzz.diff.signature import failure_kind, negative_cell, signature
from fia_fuzz.op.case import Case
from fia_fuzz.reports import ResultWriter
from fia_fuzz.reports.dataset import damage_warning, read_result_file, result_files
from fia_fuzz.reports.signatures import NOT_RUN, NOW_PASSES, NOW_UNSUPPORTED, STILL_FAILS
from fia_fuzz.runners.isolation import HARNESS, IsolatedWorker, runner_query, runner_ref
from fia_fuzz.strategies import cases, pair_aims
from fia_fuzz.strategies.seeded import fixed_constants

#: The stages of a case's time that rows record as t_<stage> (seconds).
STAGES = ("generate", "materialise", "golden", "runner", "diff")
#: Cases in a row the harness could not run (the device process does not start, ...)
#: after which a partition stops exploring.
HARNESS_STREAK = 5
#: What the device process imports before its first case.
DEVICE_MODULE = "fia_fuzz.campaign.device_worker"


class StopExploring(BaseException):
    """Ends a Hypothesis loop from inside (a BaseException: not a test failure)."""


def derive_seed(*parts: object) -> int:
    """A seed for one (campaign seed, round / cell ...) tuple, the same on every machine."""
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:15], 16)


def _timeout(st: PartitionState) -> tuple[float, bool]:
    """(timeout for the next case, whether it is cut short by the budget)."""
    left = st.time_left()
    full = st.cfg.case_timeout_s
    if left is None:
        return full, False
    grace = 0.01 * (st.cfg.budget_s or 0.0)
    capped = max(0.5, left + grace)
    return (capped, True) if capped < full else (full, False)


def replay_result(row: dict[str, Any], kind: str | None) -> str:
    """A replayed bundle's result: still fails, now passes, now unsupported, or not run (the
    tool could not run it, or the device could not hold it: nothing said about the fix)."""
    if kind:
        return STILL_FAILS
    outcome = row.get("outcome")
    if outcome == "ok":
        return NOW_PASSES
    return NOW_UNSUPPORTED if outcome == "unsupported" else NOT_RUN


def run_case(st: PartitionState, case: Case, origin: str, t_generate: float,
             found: Found | None = None, extra: dict[str, Any] | None = None
             ) -> dict[str, Any] | None:
    """Run one case and record its row (`record.evaluate_case`); None if the budget cut it
    off.

    `found` carries how the case was drawn; a failing row records it (draw_choices,
    draw_xor) so this night's shrink and the next night's replay can shrink from it.
    `extra` goes into the row (a replay's bundle and signature); a replay's row also gets
    its `replay_result`.
    """
    cfg = st.cfg
    found = found or Found(case)
    key_cell = () if cfg.negative else cell_of(case.features())
    timeout, budget_cut = _timeout(st)
    t0 = time.perf_counter()
    tags = {**st.meta, "run_id": st.job.run_id, "shard": f"{cfg.shard}/{cfg.shards}",
            "worker": st.job.worker, "device": st.job.device, "seed": cfg.seed,
            "attempt": st.job.attempt, "origin": origin,
            "mode": cfg.mode,
            "repro": repro_command(case, cfg.runner, str(cfg.out)), **found.tags,
            **(extra or {})}
    drawn = ({} if found.choices is None else  # kept by failing rows and their bundles
             {"draw_choices": choices_hex(found.choices), "draw_xor": found.seed_xor,
              **({} if found.aim is None else {"draw_aim": found.aim})})
    done = evaluate_case(st, case, tags, timeout=timeout, drawn=drawn, budget_cut=budget_cut,
                         bundle=BUNDLE_NEVER if cfg.negative else BUNDLE_IF_FAILING)
    if done is None:
        return None
    row, kind = done.row, done.kind
    st.routes[str(row.get("route"))] += 1
    row.update(t_generate=t_generate, t_case=time.perf_counter() - t0, timestamp=time.time())
    if origin == "replay":
        row["replay_result"] = replay_result(row, kind)
    if kind:
        cell = negative_cell(row) if cfg.negative else key_cell
        st.failing.setdefault(cell + (kind,), found)
    st.writer.write(row)
    if row["outcome"] == HARNESS:
        st.harness_streak += 1
        st.harness_note = st.harness_note or str(row.get("error") or "")
        if st.harness_streak == HARNESS_STREAK:
            st.report({"type": "log", "text": f"worker {st.job.worker}: stopping, "
                       f"{HARNESS_STREAK} cases in a row could not be run "
                       f"({st.harness_note})"})
    else:
        st.harness_streak = 0
    st.done.add(case.case_id)
    st.evaluated += 1
    st.busy_s += row["t_case"]
    for stage in STAGES:
        st.stage_s[stage] += float(row.get(f"t_{stage}") or 0.0)
    st.outcomes[str(row["outcome"])] += 1
    if row.get("verdict"):
        st.verdicts[str(row["verdict"])] += 1
    st.report({"type": "case", "outcome": row["outcome"], "verdict": row.get("verdict"),
               "origin": origin})
    return row


def recorded(out: Path, damaged: list[str] | None = None) -> pd.DataFrame:
    """case_id, run_id and origin of every row already in OUT (only those columns: a
    directory that holds many nights stays cheap to resume); `damaged` gets the
    journal lines skipped, whose cases are then run again."""
    cols = ["case_id", "run_id", "origin"]
    frames = [read_result_file(f, damaged, columns=cols) for f in result_files([out])]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True).reindex(columns=cols)


def run_files(out: Path, run_id: str) -> list[Path]:
    """The results files of the run `run_id` in OUT (its stems start with the run id)."""
    return [f for f in result_files([out]) if f.name.startswith(f"{run_id}-")]


def earlier_failures(st: PartitionState) -> int:
    """Take this worker's share (by case id) of the failures a resumed run's earlier
    attempts found into `st.failing`, so the shrink covers the whole run (a cell already
    shrunk in this run is skipped by its claim, `shrink.shrink_cell`); returns how many
    failing cells that added."""
    job = st.job
    if job.attempt <= 1:
        return 0
    added = 0
    for f in run_files(Path(st.cfg.out), job.run_id):
        df = read_result_file(f)
        if df.empty or "case_json" not in df:
            continue
        for row in df.to_dict("records"):
            kind = failure_kind(row)
            if not kind or row.get("origin") == SHRUNK or not isinstance(row["case_json"], str):
                continue
            case = Case.from_json(row["case_json"])
            if not job.owns(case.case_id):
                continue
            text, xor = row.get("draw_choices"), row.get("draw_xor")
            cell = negative_cell(row) if st.cfg.negative else cell_of(case.features())
            aim = row.get("draw_aim")
            found = Found(case, choices_from_hex(text) if isinstance(text, str) and text
                          else None, int(xor) if isinstance(xor, (int, float)) and xor == xor
                          else 0, {"broken_side": dict(cell)["broken_side"]}
                          if st.cfg.negative else {}, aim if isinstance(aim, str) else None)
            key = cell + (kind,)
            if key not in st.failing:
                st.failing[key] = found
                added += 1
    return added


def replay_corpus(st: PartitionState) -> None:
    """Re-run the failure corpus first: the bundles of earlier runs in OUT and of the run
    directories given with --replay (each case once). Did last night's failures stay?"""
    prior = st.prior
    mine = prior[(prior["run_id"] == st.job.run_id) & (prior["origin"] == "replay")]
    replayed = set(mine["case_id"])
    unreadable: list[str] = []
    corpus = []
    for d in (Path(st.cfg.out), *st.cfg.replay):
        for c, m, path in bundle_cases(d, unreadable):
            if m.get("run_id") == st.job.run_id or c.case_id in replayed \
                    or not st.job.owns(c.case_id):
                continue
            replayed.add(c.case_id)
            corpus.append((c, m, path))
    if unreadable and st.job.worker == 0:
        st.report({"type": "log", "text": f"warning: {len(unreadable)} bundle(s) cannot be "
                   f"read, not replayed: {'; '.join(unreadable)[:500]}"})
    if corpus:
        st.report({"type": "log", "text": f"replaying {len(corpus)} corpus case(s) first"})
    for case, metrics, path in corpus:
        if st.time_left() is not None and st.time_left() <= 0:
            return
        choices = metrics.get("draw_choices")
        aim = metrics.get("draw_aim")
        found = Found(case, choices_from_hex(choices) if choices else None,
                      int(metrics.get("draw_xor") or 0), aim=aim if isinstance(aim, str) else None)
        was = str(metrics.get("signature") or signature(metrics) or "")
        run_case(st, case, "replay", 0.0, found,
                 extra={"replay_of": str(path), "replay_signature": was})


def replay_seeds(st: PartitionState) -> None:
    """Run this partition's share of the seed cases first (each once, also across resumes)."""
    seeds = [c for c in st.cfg.seed_cases if st.job.owns(c.case_id) and c.case_id not in st.done]
    if seeds:
        st.report({"type": "log", "text": f"replaying {len(seeds)} seed case(s) first"})
    for case in seeds:
        if st.time_left() is not None and st.time_left() <= 0:
            return
        run_case(st, case, "seed", 0.0)


def stream_strategy(cfg: CampaignConfig) -> hst.SearchStrategy[Drawn]:
    """(case, its choice sequence or None, tags) as the stream draws them: illegal cases
    (--negative, with the side of the rule's bound each broke), cases of the seed cases'
    cells, or `recorded_cases`. The shrink replays a choice sequence through the same
    strategy (`shrink_strategy`).

    Draws from seed cells carry no choice sequence: the shrink replays sequences
    through `recorded_cases(profile, **filters)`, which would read them otherwise.
    """
    if cfg.negative:
        return shrink_strategy(cfg)
    cells = cfg.seed_cells() if cfg.seed_cases else []
    reachable = []
    for cell in cells:
        try:
            reachable.append(cases(profile=cfg.profile, rules=cfg.rules, **cell)
                             .map(lambda c: (c, None, {})))
        except InvalidArgument:
            continue  # a seed's cell no strategy family reaches: replayed, not fuzzed
    if reachable:
        return hst.one_of(reachable)
    return shrink_strategy(cfg)


def _stop_exploring(st: PartitionState) -> bool:
    if st.harness_streak >= HARNESS_STREAK:
        return True  # the tool cannot run cases here: more rows would say nothing new
    now = time.time()
    job = st.job
    if job.hard_end is not None and now >= job.hard_end - wind_down(st.cfg):
        return True
    return bool(job.explore_end is not None and st.failing and now >= job.explore_end)


def _settings(cfg: CampaignConfig, phases: list[Phase]) -> settings:
    return settings(max_examples=cfg.round_size, deadline=None, database=None, phases=phases,
                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)


def _stream_round(st: PartitionState, rnd: int) -> bool:
    """Round `rnd` of the shared stream; False when the campaign must stop exploring.

    No `target` here: Hypothesis's mutator keeps a mutant only if its target
    observations are no worse, so observations seen by one partition only
    would make the partitions' streams drift apart.
    """
    cfg = st.cfg
    every = 0 if cfg.negative or cfg.seed_cases else seqs.every(cfg.profile, cfg.filters)
    if every == 1:
        return seqs.sequence_round(st, rnd, lambda: _stop_exploring(st))
    # one sequence in place of every `every`-th position (their own seeded draws, so the
    # cases of the stream stay what they were, in the same order)
    pending = seqs.draw(cfg.seed, rnd, cfg.round_size // max(1, every - 1) + 1, cfg.profile,
                        None) if every else []
    strategy = stream_strategy(cfg)
    fresh = [0]

    @hseed(derive_seed(cfg.seed, "round", rnd))
    @_settings(cfg, [Phase.generate])
    @given(strategy)
    def step(drawn: Drawn) -> None:
        case, choices, tags = drawn
        if _stop_exploring(st):
            raise StopExploring
        cid = case.case_id
        if cid in st.seen:
            return
        if cfg.max_cases is not None and st.positions >= cfg.max_cases:
            raise StopExploring
        if pending and (st.positions + 1) % every == 0:
            if not seqs.stream_item(st, pending.pop(0)):
                raise StopExploring
            if cfg.max_cases is not None and st.positions >= cfg.max_cases:
                raise StopExploring
        st.seen.add(cid)
        st.positions += 1
        fresh[0] += 1
        if not st.job.in_shard(cid):
            return
        k = st.shard_positions
        st.shard_positions += 1
        if not st.claims.take(k) or cid in st.done:
            return  # another worker reached it first, or an earlier attempt ran it
        t_gen = time.perf_counter() - st.last_mark
        row = run_case(st, case, "explore", t_gen,
                       Found(case, choices, tags=tags, aim=pair_aims.last()))
        st.last_mark = time.perf_counter()
        if row is None:
            raise StopExploring

    try:
        with fixed_constants():
            step()
    except StopExploring:
        return False
    return fresh[0] > 0  # no fresh case: the filtered space is exhausted


def _steer_round(st: PartitionState, k: int) -> bool:
    """A private round that maximises `hypothesis.target(error_ratio)` and the rarity of
    the case's route among the partition's cases (1 / cases run on that route, so the
    routes drawn least weigh most); False to stop.

    Seeded per partition and with data seeds in a per-partition space, so
    partitions steer independently and still never draw the same case.
    """
    cfg = st.cfg
    space = derive_seed(cfg.seed, "steer-space", st.job.index, st.job.count) & 0xFFFFFFFF

    @hseed(derive_seed(cfg.seed, "steer", k, st.job.index, st.job.count))
    @_settings(cfg, [Phase.generate, Phase.target])
    @given(stream_strategy(cfg))
    def step(drawn: Drawn) -> None:
        if _stop_exploring(st):
            raise StopExploring
        case = steered(drawn[0], space)
        cid = case.case_id
        if cid in st.seen or cid in st.done:
            return
        st.seen.add(cid)
        t_gen = time.perf_counter() - st.last_mark
        row = run_case(st, case, "steer", t_gen, Found(case, drawn[1], space, drawn[2]))
        st.last_mark = time.perf_counter()
        if row is None:
            raise StopExploring
        if row.get("outcome") == "ok":
            target(min(float(row["error_ratio"]), 1e9), label="error_ratio")
        # the routes drawn least weigh most: the round climbs toward them too
        target(1.0 / st.routes[str(row.get("route"))], label="route_rarity")

    try:
        with fixed_constants():
            step()
    except StopExploring:
        return False
    return True


def explore(st: PartitionState) -> None:
    """Walk the shared stream; under a time budget, steer after every n*K stream rounds.

    With --max-cases the run is exactly the first N cases of the shared stream
    (no steering), so any split into shards and workers covers the same cases.
    With --budget each partition alternates: n*K rounds of the shared stream
    (of which it evaluates about one round's worth) and one steering round.
    """
    cfg = st.cfg
    steer = cfg.budget_s is not None and cfg.max_cases is None and not cfg.negative
    rnd = k = 0
    with pair_aims.stream(cfg.rules):  # the stream's pair aims, the same in every partition
        while _stream_round(st, rnd):
            rnd += 1
            if steer and rnd % st.job.count == 0:
                with pair_aims.stream(None):  # a private round: no aim, the stream's untouched
                    if not _steer_round(st, k):
                        return
                k += 1


def run_partition(job: PartitionJob, report: Report, claims: Claims | None = None,
                  budget: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """Run one partition to the end; returns its counts. Never raises for a case's fate.

    `claims` shares the host's stream cases with its other workers (None: one worker);
    `budget` the bytes its bundles took and whether the budget refused one (the host's
    shared values, `bundle_quota.BundleQuota`; None: this worker's own).
    """
    cfg = job.cfg
    damaged: list[str] = []
    prior = recorded(Path(cfg.out), damaged)
    done = set(prior["case_id"])
    ref = runner_ref(cfg.runner)
    threads = max(1, (os.cpu_count() or 1) // cfg.workers) if cfg.workers > 1 else None
    worker = IsolatedWorker(device=job.device, memory_limit=cfg.memory_limit,
                            preload=(DEVICE_MODULE, ref[1]), threads=threads)
    left = None if job.hard_end is None else max(0.5, job.hard_end - time.time())
    meta_res = worker.call(runner_query, ref, "metadata", None,
                           timeout=min(cfg.case_timeout_s, left or cfg.case_timeout_s))
    meta = {f"meta_{k}": v for k, v in (meta_res.value or {}).items()}
    meta["runner_spec"] = cfg.runner  # how to rebuild it: a name, module:factory or entry point
    spent, announced = budget or (None, None)
    quota = BundleQuota(cfg.out, job.run_id, cfg.bundles_per_signature, cfg.bundle_budget,
                        spent, announced, report)
    st = PartitionState(job=job, report=report, writer=ResultWriter(cfg.out, job.stem),
                        worker=worker, ref=ref, meta=meta, done=done, prior=prior, quota=quota,
                        claims=claims or Claims())
    shrunk: list[dict[str, Any]] = []
    warning = damage_warning(damaged)
    if warning and job.worker == 0:
        report({"type": "log", "text": warning})
    try:
        # the stream and its shrink draw with the same aims (replays read the choices)
        with pair_aims.unaimed(not cfg.pair_aims):
            if cfg.shrink and earlier_failures(st):
                report({"type": "log", "text": f"worker {job.worker}: "
                        f"{len(st.failing)} failing cell(s) of earlier attempts to shrink"})
            if not cfg.negative:
                replay_seeds(st)
                replay_corpus(st)
            explore(st)
            if cfg.shrink:
                shrunk = shrink_failures(st) + ([] if cfg.negative
                                                else seqs.shrink_failures(st))
    finally:
        worker.close(grace=0.2)  # idle; nothing of ours lives in it
        results = st.writer.close()
    return {"worker": job.worker, "evaluated": st.evaluated, "positions": st.positions,
            "harness_note": st.harness_note,
            "busy_s": st.busy_s, "stage_s": dict(st.stage_s),
            "outcomes": dict(st.outcomes), "verdicts": dict(st.verdicts),
            "results": str(results) if results else None, "shrunk": shrunk,
            "restarts": worker.restarts, "stem": job.stem, "out": str(Path(cfg.out))}
