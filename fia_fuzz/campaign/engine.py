"""A campaign: Hypothesis draws legal cases, each is evaluated and recorded as it finishes.

Hypothesis drives generation (`@given` over the project's strategies) with a
campaign settings profile: no deadline, seeded per campaign, example database
under the output directory. Exploration never stops at a failure: every case
is recorded, and the run ends at --max-cases or when the time budget is spent.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed
from hypothesis.database import DirectoryBasedExampleDatabase

from fia_fuzz.campaign.evaluate import evaluate
from fia_fuzz.reports import ResultWriter
from fia_fuzz.runners import get_runner
from fia_fuzz.spec import Case
from fia_fuzz.strategies import cases


class BudgetSpent(BaseException):
    """Raised inside the Hypothesis loop to end it; BaseException so it is not a 'failure'."""


@dataclass
class CampaignConfig:
    runner: str = "torch-sdpa"
    out: Path = Path("runs/demo")
    max_cases: int | None = None
    budget_s: float | None = None
    seed: int = 0
    profile: str = "smoke"
    filters: dict[str, Any] = field(default_factory=dict)


@dataclass
class CampaignSummary:
    run_id: str
    cases: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    results: Path | None = None


def parse_duration(text: str) -> float:
    """'90s', '2m', '8h', '1h30m' or plain seconds -> seconds."""
    total, num = 0.0, ""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    for ch in text.strip():
        if ch.isdigit() or ch == ".":
            num += ch
        elif ch in units and num:
            total += float(num) * units[ch]
            num = ""
        else:
            raise ValueError(f"cannot read duration {text!r} (use e.g. 90s, 2m, 8h)")
    return total + (float(num) if num else 0.0)


def run_campaign(cfg: CampaignConfig, log: Any = print) -> CampaignSummary:
    runner = get_runner(cfg.runner)
    ok, why = runner.available()
    if not ok:
        raise RuntimeError(f"runner {cfg.runner!r} is not available here: {why}")
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    summary = CampaignSummary(run_id=run_id)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    max_examples = cfg.max_cases if cfg.max_cases is not None else 10**9
    writer = ResultWriter(out, f"{run_id}-s0-w0")
    meta = {f"meta_{k}": v for k, v in runner.metadata().items()}

    @hseed(cfg.seed)
    @settings(max_examples=max_examples, deadline=None, phases=[Phase.generate],
              database=DirectoryBasedExampleDatabase(str(out / ".hypothesis")),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(cases(profile=cfg.profile, **cfg.filters))
    def explore(case: Case) -> None:
        if cfg.budget_s is not None and time.monotonic() - start >= cfg.budget_s:
            raise BudgetSpent
        row = evaluate(case, runner)
        row.update(meta, run_id=run_id, shard="0/1", worker=0, seed=cfg.seed,
                   timestamp=time.time())
        writer.write(row)
        summary.cases += 1
        summary.outcomes[row["outcome"]] = summary.outcomes.get(row["outcome"], 0) + 1
        if row.get("verdict"):
            summary.verdicts[row["verdict"]] = summary.verdicts.get(row["verdict"], 0) + 1
        if summary.cases % 25 == 0:
            log(f"[{time.monotonic() - start:6.1f}s] {summary.cases} cases "
                f"{summary.verdicts} {summary.outcomes}")

    try:
        explore()
    except BudgetSpent:
        pass
    finally:
        summary.results = writer.close()
        summary.elapsed_s = time.monotonic() - start
    return summary
