"""Shrinking: each failing feature cell's observed failure, shrunk by Hypothesis, bundled.

The failing case's own choice sequence (recorded as it was drawn through
`shrink_strategy`, the campaign's strategy: `recorded_cases`, or under --negative the
illegal cases) is the shrink's starting point:
a `SeedDatabase` (a Hypothesis `ExampleDatabase`) serves it as the test's
only stored example, in the secondary corpus, so Hypothesis's reuse phase
replays it (the same case again) and its shrink phase shrinks it; nothing is
generated afresh, so a failure that one draw in a thousand reaches shrinks as
well as a common one. A candidate counts as failing only when it fails the
same way (failure kind) in the same cell (a negative finding: breaking the same rule on
the same side of its bound). The minimal case is the smallest
failing case the shrink met (tensor elements, `case_size`), so it is never
larger than the found one; it is bundled with the shrink's steps
(`shrink.json`) and written as a row with origin=shrunk. A claim file per
cell in OUT/shrunk/ keeps two workers from shrinking the same cell.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as hst
from hypothesis.database import ExampleDatabase, choices_to_bytes

from fia_fuzz.campaign.bundles import write_bundle
from fia_fuzz.campaign.config import CampaignConfig, cell_of
from fia_fuzz.campaign.evaluate import repro_command
from fia_fuzz.campaign.record import BUNDLE_ALWAYS, evaluate_case
from fia_fuzz.campaign.state import (
    Found,
    PartitionState,
    choices_hex,
    steered,
    wind_down,
)
from fia_fuzz.diff.signature import negative_cell
from fia_fuzz.op.case import Case
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.cases import aimed_cases, device_cases, recorded_cases
from fia_fuzz.strategies.choices import with_choices
from fia_fuzz.strategies.illegal import sided_illegal_cases
from fia_fuzz.strategies.seeded import fixed_constants

SHRUNK = "shrunk"
#: The steps file in the minimal case's bundle.
STEPS = "shrink.json"


class CellStillFails(AssertionError):
    """The drawn case fails like the cell's original failure (what Hypothesis shrinks)."""


class SeedDatabase(ExampleDatabase):
    """An example database holding one choice sequence: the observed failure to shrink.

    Served as the secondary corpus (examples that failed once, not yet
    shrunk: Hypothesis skips shrinking its primary corpus, which it takes as
    already minimal); what Hypothesis saves while shrinking is kept in `saved`.
    """

    def __init__(self, choices: tuple[int, ...]):
        super().__init__()
        self.seed = choices_to_bytes(choices)
        self.saved: list[bytes] = []

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return [self.seed] if key.endswith(b".secondary") else []

    def save(self, key: bytes, value: bytes) -> None:
        self.saved.append(value)

    def delete(self, key: bytes, value: bytes) -> None:
        """Nothing persists beyond this shrink."""

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        """Nothing persists beyond this shrink."""


#: A draw of the campaign's strategy: the case, its choice sequence (None when not
#: replayable) and the tags its row takes from the draw (`Found.tags`).
Drawn = tuple[Case, tuple[int, ...] | None, dict[str, Any]]


def shrink_strategy(cfg: CampaignConfig, aim: str | None = None) -> hst.SearchStrategy[Drawn]:
    """What the stream draws with a replayable choice sequence, and the shrink replays:
    `recorded_cases(profile, **filters)`, or under --negative the illegal cases (of the rule
    `--filter rule=ID` names), each with the sides it broke as its `broken_side` tag. A
    stream's pair-aimed draw (`aim`, strategies/pair_aims.py) replays through
    `aimed_cases(aim)`."""
    if aim is not None:
        return aimed_cases(aim, cfg.profile, cfg.rules).map(lambda d: (*d, {}))
    if cfg.negative:
        return with_choices(_negative_cases(cfg.rules, cfg.filters.get("rule"))).map(
            lambda d: (d[0][0], d[1], {"broken_side": "+".join(sorted(d[0][1]))}))
    return recorded_cases(profile=cfg.profile, rules=cfg.rules, **cfg.filters).map(
        lambda d: (*d, {}))


def _negative_cases(rules: str, rule: str | None = None) -> Any:
    """(case, sides broken) of calls the docs forbid; under a device profile also calls only
    it forbids and calls only it allows, so the rows tell `accepted (device profile)` apart
    from findings, and show where the device contradicts its profile
    (execute.negative_task). `rule`: only calls breaking that rule (of `rules`)."""
    if rules == "docs" or rule is not None:
        return sided_illegal_cases(rule, rules)
    docs_illegal = device_cases(rules).filter(lambda c: bool(validate(**c.specs())))
    return hst.one_of(sided_illegal_cases(), sided_illegal_cases(rules=rules),
                      docs_illegal.map(lambda c: (c, frozenset())))


def _cell(cfg: CampaignConfig, row: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """What a candidate must keep to fail "the same way": its feature cell, or under
    --negative the broken rule and side (`signature.negative_cell`)."""
    return negative_cell(row) if cfg.negative else cell_of(row)


def case_size(case: Case) -> int:
    """Elements of every tensor of the call (`Case.elements`): "smaller" for a minimal case."""
    return case.elements()


def cell_key(cell: tuple[tuple[str, Any], ...], kind: str) -> str:
    return hashlib.sha256(repr((cell, kind)).encode()).hexdigest()[:12]


def _claim(path: Path, owner: str) -> bool:
    """Take the cell for `owner` ("<run_id>/a<attempt>"): new, left by a killed attempt, or
    shrunk on an earlier night (then it is shrunk again, from this night's failure)."""
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


def _search(st: PartitionState, cell: tuple[tuple[str, Any], ...], kind: str, found: Found,
            stop_at: float) -> tuple[list[dict[str, Any]], dict[str, Found], str]:
    """Hypothesis's shrink from `found`: (steps, failing cases as drawn, note)."""
    cfg = st.cfg
    steps: list[dict[str, Any]] = []
    failing: dict[str, Found] = {}
    memo: dict[str, bool] = {}

    def fails(case: Case, choices: tuple[int, ...], tags: dict[str, Any]) -> bool:
        cid = case.case_id
        if cid not in memo:
            if time.time() >= stop_at:
                return False  # out of time: report passes so the shrinker winds down
            done = evaluate_case(st, case, {"mode": cfg.mode, **tags},
                                 timeout=cfg.case_timeout_s)
            assert done is not None  # no budget cut here: the stop time ends the search
            memo[cid] = done.kind == kind and _cell(cfg, done.row) == cell
            steps.append({"case_id": cid, "size": case_size(case), "fails": memo[cid]})
            if memo[cid]:
                failing[cid] = Found(case, choices, found.seed_xor, tags, found.aim)
        return memo[cid]

    @settings(max_examples=cfg.shrink_examples, deadline=None,
              database=SeedDatabase(found.choices or ()),
              phases=[Phase.reuse, Phase.shrink],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
              report_multiple_bugs=False, print_blob=False)
    @given(shrink_strategy(cfg, found.aim))
    def must_not_fail(drawn: Drawn) -> None:
        case = steered(drawn[0], found.seed_xor)
        if fails(case, drawn[1], drawn[2]):
            raise CellStillFails(f"{case.case_id} fails with {kind}")

    note = ""
    try:
        with fixed_constants():
            must_not_fail()
    except CellStillFails:
        pass
    except Exception as exc:  # a flaky backend makes Hypothesis give up; keep what we have
        note = f"stopped: {exc!r}"[:300]
    if not steps or steps[0]["case_id"] != found.case.case_id:
        note = note or ("its choice sequence does not rebuild it under this campaign's "
                        "profile and filters")
    elif not steps[0]["fails"]:
        note = note or "the found case did not fail again (flaky?)"
    return steps, failing, note


def shrink_cell(st: PartitionState, cell: tuple[tuple[str, Any], ...], kind: str,
                found: Found) -> dict[str, Any] | None:
    """Shrink one failing cell from its observed failure; returns its summary (also in
    OUT/shrunk/<key>.json)."""
    cfg = st.cfg
    key = cell_key(cell, kind)
    claim = Path(cfg.out) / SHRUNK / f"{key}.json"
    if not _claim(claim, f"{st.job.run_id}/a{st.job.attempt}"):
        return None
    stop_at = time.time() + cfg.shrink_seconds
    if st.job.hard_end is not None:
        stop_at = min(stop_at, st.job.hard_end - wind_down(cfg))
    if found.choices is None:
        steps, failing, note = [], {}, ("no recorded choice sequence (an older bundle, a "
                                        "seed case or a draw from a seed case's cell)")
    else:
        steps, failing, note = _search(st, cell, kind, found, stop_at)
    failing.pop(found.case.case_id, None)
    size_found = case_size(found.case)
    smaller = sorted(((case_size(f.case), i, f) for i, f in enumerate(failing.values())
                      if case_size(f.case) <= size_found), key=lambda t: (t[0], -t[1]))
    least = smaller[0][2] if smaller else found
    minimal, choices = least.case, least.choices
    shrunk = minimal.case_id != found.case.case_id
    tags = {**st.meta, "run_id": st.job.run_id, "origin": SHRUNK, "seed": cfg.seed,
            "shard": f"{cfg.shard}/{cfg.shards}", "worker": st.job.worker,
            "device": st.job.device, "attempt": st.job.attempt,
            "mode": cfg.mode, **least.tags, "shrunk_from": found.case.case_id,
            "shrink_steps": len(steps),
            "failure_kind": kind, "shrunk": shrunk, "size_found": size_found,
            "size_minimal": case_size(minimal), "timestamp": time.time(),
            "repro": repro_command(minimal, cfg.runner, str(cfg.out))}
    if choices is not None:
        tags.update(draw_choices=choices_hex(choices), draw_xor=found.seed_xor,
                    **({} if least.aim is None else {"draw_aim": least.aim}))
    done = evaluate_case(st, minimal, tags, timeout=cfg.case_timeout_s, bundle=BUNDLE_ALWAYS)
    assert done is not None
    row = done.row
    bundle = str(row.get("bundle") or write_bundle(cfg.out, minimal, row))
    row["bundle"] = bundle
    if shrunk and minimal.case_id not in st.done:
        st.writer.write(row)  # the minimal case is a row of the dataset too
        st.done.add(minimal.case_id)
    summary = {"owner": f"{st.job.run_id}/a{st.job.attempt}", "status": "done",
               "cell": dict(cell), "kind": kind, "found": found.case.case_id,
               "minimal": minimal.case_id, "shrunk": shrunk, "steps": len(steps),
               "size_found": size_found, "size_minimal": case_size(minimal),
               "minimal_fails": done.kind == kind and _cell(cfg, row) == cell,
               "note": note, "bundle": bundle}
    (Path(bundle) / STEPS).write_text(json.dumps({**summary, "trace": steps}, indent=2,
                                                 default=str) + "\n")
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
