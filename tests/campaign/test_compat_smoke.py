"""A 20-case smoke campaign as a user runs it, in a fresh interpreter of this venv: the CLI
writes its rows, summary, report and dashboard. One of the `compat` set, so it runs under the
oldest and the newest releases pyproject.toml admits (scripts/compat.sh), where a library's
changed API shows up as a crashed case or a failed command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fia_fuzz.reports import read_results

CASES = 20


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "fia_fuzz", *args], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.compat
def test_smoke_campaign_writes_rows_report_and_dashboard(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _cli("campaign", "--runner", "torch-sdpa", "--max-cases", str(CASES), "--seed", "0",
         "--out", str(out))
    df = read_results(out)
    assert len(df) == CASES and df["case_id"].is_unique
    # every case ran to a verdict: a library that moved under us crashes cases, not verdicts
    assert set(df["outcome"]) == {"ok"}, df["outcome"].value_counts().to_dict()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == CASES and summary["outcomes"] == {"ok": CASES}

    page, junit = tmp_path / "dashboard.html", tmp_path / "junit.xml"
    text = _cli("report", str(out), "--html", str(page), "--junit", str(junit))
    assert "flash-attention" in text and "ascend-benchmark" in text
    html = page.read_text()
    assert "pass rate by layout" in html and "Worst cases" in html
    assert junit.read_text().count("<testcase ") == CASES
