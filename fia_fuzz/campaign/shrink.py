"""Shrinking: for each failing feature cell, a minimal failing case, bundled.

A second Hypothesis run draws `cases(**cell)` (the cell's features pinned,
plus the campaign's own filters) and asserts the case does not fail the same
way; Hypothesis finds a failing draw and shrinks it toward the simplest case
of the cell (strategies order their choices simplest first). Its example
database lives in OUT/.hypothesis under a key per cell, so the next night's
shrink of the same cell replays the stored minimal case first (which is also
why this run is not seeded: Hypothesis does not use its database under
@seed). A claim file per cell in OUT/shrunk/ keeps two workers from
shrinking the same cell.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from fia_fuzz.campaign.bundles import write_bundle
from fia_fuzz.campaign.config import cell_of
from fia_fuzz.campaign.evaluate import failure_kind
from fia_fuzz.campaign.execute import evaluate_task
from fia_fuzz.campaign.state import PartitionState, wind_down
from fia_fuzz.spec import Case
from fia_fuzz.strategies import cases

SHRUNK = "shrunk"


class CellStillFails(AssertionError):
    """The drawn case fails like the cell's original failure (what Hypothesis shrinks)."""


def cell_key(cell: tuple[tuple[str, Any], ...], kind: str) -> str:
    return hashlib.sha256(repr((cell, kind)).encode()).hexdigest()[:12]


def _claim(path: Path, owner: str) -> bool:
    """Take the cell for `owner` ("<run_id>/a<attempt>"): new, left by a killed attempt, or
    shrunk on an earlier night (then it is shrunk again, from the stored minimal case)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = {"owner": owner, "status": "shrinking"}
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        try:
            held = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return False
        run, held_owner = owner.split("/")[0], str(held.get("owner", ""))
        same_run = held_owner.split("/")[0] == run
        if same_run and (held.get("status") == "done" or held_owner == owner):
            return False
        path.write_text(json.dumps(mine))
        return True
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(mine))
    return True


def shrink_cell(st: PartitionState, cell: tuple[tuple[str, Any], ...], kind: str,
                found: Case) -> dict[str, Any] | None:
    """Shrink one failing cell; returns its summary (also in OUT/shrunk/<key>.json)."""
    cfg = st.cfg
    key = cell_key(cell, kind)
    claim = Path(cfg.out) / SHRUNK / f"{key}.json"
    if not _claim(claim, f"{st.job.run_id}/a{st.job.attempt}"):
        return None
    stop_at = time.time() + cfg.shrink_seconds
    if st.job.hard_end is not None:
        stop_at = min(stop_at, st.job.hard_end - wind_down(cfg))
    memo: dict[str, bool] = {}
    smallest: list[Case] = []

    def fails(case: Case) -> bool:
        cid = case.case_id
        if cid not in memo:
            if time.time() >= stop_at:
                return False  # out of time: report passes so the shrinker winds down
            res = st.worker.call(evaluate_task, st.ref, case.to_json(), None,
                                 timeout=cfg.case_timeout_s)
            row = res.value if res.ok else {"outcome": res.outcome}
            memo[cid] = failure_kind(row) == kind and (
                not res.ok or cell_of(row) == cell)
        return memo[cid]

    filters = {**cfg.filters, **{k: v for k, v in cell if v is not None}}

    @settings(max_examples=cfg.shrink_examples, deadline=None,
              database=DirectoryBasedExampleDatabase(str(Path(cfg.out) / ".hypothesis")),
              phases=[Phase.reuse, Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
              report_multiple_bugs=False, print_blob=False)
    @given(cases(profile=cfg.profile, **filters))
    def must_not_fail(case: Case) -> None:
        if fails(case):
            smallest.append(case)
            raise CellStillFails(f"{case.case_id} fails with {kind}")

    must_not_fail.hypothesis.inner_test._hypothesis_internal_add_digest = key.encode()
    try:
        must_not_fail()
    except CellStillFails:
        pass
    except Exception as exc:  # a flaky backend makes Hypothesis give up; keep what we have
        st.report({"type": "log", "text": f"shrink of {dict(cell)} stopped: {exc!r}"[:300]})
    minimal = smallest[-1] if smallest else found
    tags = {"run_id": st.job.run_id, "origin": "shrunk", "seed": cfg.seed,
            "shrunk_from": found.case_id, "shrink_steps": len(memo), "failure_kind": kind,
            "shrunk": bool(smallest)}
    res = st.worker.call(evaluate_task, st.ref, minimal.to_json(), str(cfg.out), tags,
                         timeout=cfg.case_timeout_s)
    bundle = res.value.get("bundle") if res.ok else None
    if bundle is None:
        row = res.value if res.ok else {"runner": cfg.runner, "outcome": res.outcome,
                                        "error": res.message}
        bundle = str(write_bundle(cfg.out, minimal, {**row, **tags}))
    summary = {"owner": f"{st.job.run_id}/a{st.job.attempt}", "status": "done",
               "cell": dict(cell), "kind": kind, "found": found.case_id,
               "minimal": minimal.case_id, "shrunk": bool(smallest), "steps": len(memo),
               "bundle": bundle}
    claim.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    st.report({"type": "shrunk", **summary})
    return summary


def shrink_failures(st: PartitionState) -> list[dict[str, Any]]:
    """Shrink every failing cell this partition found, while time is left."""
    done = []
    for key, found in list(st.failing.items()):
        if st.time_left() is not None and st.time_left() <= 1.0:
            break
        cell, kind = key[:-1], key[-1]
        summary = shrink_cell(st, cell, kind, found)
        if summary:
            done.append(summary)
    return done
