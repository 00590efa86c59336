"""Failure signatures: failures grouped by cell, kind and error shape, with count,
first/last seen across runs, minimal case and repro, in the dataset, dashboard and JUnit."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd
import runner_doubles  # noqa: F401  (registers the test doubles)
from runner_doubles import STREAM_SEED

from fia_fuzz.cli import main
from fia_fuzz.diff.signature import error_shape, failure_kind, signature
from fia_fuzz.op.case import Case
from fia_fuzz.reports import read_results, render, write_junit
from fia_fuzz.reports.signatures import signatures


def _row(**kw):
    base = {"outcome": "ok", "verdict": "fail", "layout": "BSH", "q_dtype": "float16",
            "branch": "prefill", "out_layout": "BSH", "out_dtype": "float16", "S1": 100,
            "out_verdict_flash-attention": "fail", "lse_verdict_flash-attention": "pass"}
    return {**base, **kw}


def test_error_shapes_read_the_metrics() -> None:
    assert error_shape(_row(verdict="pass")) == ""
    nan = _row(out_nan_actual_only=3, out_nonfinite_mismatch=3,
               out_nonfinite_class="finite_to_nan")
    assert failure_kind(nan) == "nonfinite:finite_to_nan" and error_shape(nan) == "out"
    lost = _row(verdict="pass", lse_nonfinite_mismatch=1, lse_nonfinite_class="inf_to_finite")
    assert signature(lost) == "BSH/float16/prefill nonfinite:inf_to_finite: lse"
    assert error_shape(_row(lse_invalid_mismatch=2)) == "lse invalid row"
    assert error_shape(_row(**{"out_verdict_flash-attention": "pass",
                               "lse_verdict_flash-attention": "fail"})) == "lse only"
    assert error_shape(_row(out_worst_actual=65504.0, out_worst_golden=300.0)) == "saturation"
    assert error_shape(_row(out_worst_index="(0, 97, 5)")) == "worst element: tail"
    assert error_shape(_row(out_worst_index="(0, 63, 5)")) == "worst element: tile edge"
    assert error_shape(_row(out_worst_index="(0, 40, 5)")) == "worst element: interior"
    assert error_shape(_row(S1=1, out_worst_index="(0, 0, 5)")) == "worst element: one tile"
    assert error_shape(_row(outcome="error", verdict=None, error="ValueError: 12 != 13")) == \
        "error: ValueError: N != N"
    timeout = signature(_row(outcome="timeout", verdict=None))
    assert timeout == "BSH/float16/prefill timeout: timeout"


def test_signatures_over_two_runs_in_dataset_dashboard_and_junit(tmp_path) -> None:
    out = tmp_path / "run"
    cmd = ["campaign", "--filter", "plain=true", *STREAM_SEED, "--runner", "test-double-rare-bug",
           "--max-cases", "60", "--out", str(out)]
    assert main(cmd) == 0
    assert main(cmd) == 0  # the next night: replays the corpus, the same failures again
    df = read_results(out)
    failed = df[df["verdict"] == "fail"]
    assert len(failed) and (failed["signature"].str.len() > 0).all()  # in the dataset
    assert (df[df["verdict"] != "fail"]["signature"].fillna("") == "").all()
    t = signatures(df)
    assert set(t["signature"]) == set(failed["signature"])
    assert t["count"].sum() == len(failed)
    assert (t["runs"] == 2).all() and (t["first_seen"] <= t["last_seen"]).all()
    # a signature holding a shrunk case names it as its minimal case (a shrink keeps the
    # cell failing, not the error shape, so another signature of the cell may have none)
    with_shrunk = set(failed[failed["origin"] == "shrunk"]["signature"])
    assert with_shrunk
    for _, s in t.iterrows():
        assert s["minimal_shrunk"] == (s["signature"] in with_shrunk), s
        rows = failed[failed["signature"] == s["signature"]]
        assert s["minimal_size"] <= min(rows["case_json"].map(
            lambda j: Case.from_json(j).elements()))
        assert s["minimal_case"] in s["repro"]
    page = render(df, tmp_path / "d.html").read_text()
    assert page.index("id='signatures'") < page.index("id='worst'")
    for sig in t["signature"]:
        assert f"data-signature='{sig}'" in page
    root = ET.parse(write_junit(df, tmp_path / "j.xml")).getroot()
    suite = [s for s in root.iter("testsuite") if s.get("name") == "fia-fuzz.signatures"][0]
    names = [tc.get("name") for tc in suite.iter("testcase")]
    assert sorted(names) == sorted(t["signature"]) and suite.get("failures") == str(len(t))


def test_no_failures_no_signatures() -> None:
    assert signatures(pd.DataFrame([_row(verdict="pass")])).empty
