"""`--fail-on`: report (and campaign, through the same gate) exit 1 when the results hold
what it names, 0 otherwise, so CI fails without parsing JUnit."""

from __future__ import annotations

import pandas as pd
import pytest

from fia_fuzz.cli import main
from fia_fuzz.reports.gate import FOUND, found, parse_fail_on


def test_report_exits_1_on_what_fail_on_names_and_0_otherwise(injected, tmp_path,
                                                              capsys) -> None:
    run = str(injected.run_dirs[0])
    html = str(tmp_path / "d.html")
    assert main(["report", run, "--html", html, "--fail-on", "timeout,crash"]) == 0
    assert main(["report", run, "--html", html, "--fail-on", "crash", "--fail-on",
                 "fail"]) == FOUND
    assert "--fail-on: found " in capsys.readouterr().err
    assert main(["report", run, "--html", html]) == 0


def test_gate_counts_verdicts_outcomes_and_failure_kinds() -> None:
    df = pd.DataFrame([
        {"outcome": "ok", "verdict": "fail", "verdict_flash-attention": "fail"},
        {"outcome": "crashed", "verdict": None, "verdict_flash-attention": None},
        {"outcome": "ok", "verdict": "pass", "verdict_flash-attention": "warn",
         "failure_kind": "nonfinite"},
    ])
    tokens = parse_fail_on(["fail,crash", "warn,nonfinite,timeout"])
    assert found(df, tokens, "flash-attention") == {"fail": 1, "crash": 1, "warn": 1,
                                                    "nonfinite": 1}
    with pytest.raises(ValueError, match="'often'"):
        parse_fail_on(["often"])
