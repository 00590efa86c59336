"""Shrinking starts from the observed failure: with a rare planted bug, every
failing cell is shrunk from the case that failed, and each minimal case still fails the
same way, in the same cell, and is no larger."""

from __future__ import annotations

import json

import runner_doubles
from runner_doubles import STREAM_SEED

from fia_fuzz.campaign.bundles import load_bundle
from fia_fuzz.campaign.config import cell_of
from fia_fuzz.campaign.evaluate import evaluate
from fia_fuzz.campaign.shrink import STEPS, case_size
from fia_fuzz.cli import main
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.op.case import Case
from fia_fuzz.reports import read_results
from fia_fuzz.runners import get_runner


def test_every_failing_cell_is_shrunk_from_its_observed_failure(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--filter", "plain=true", *STREAM_SEED,
                 "--runner", "test-double-rare-bug",
                 "--max-cases", "60", "--out", str(out)]) == 0
    df = read_results(out)
    explored = df[df["origin"] == "explore"]
    failed = explored[explored["verdict"] == "fail"]
    assert 0 < len(failed) < len(explored) / 4  # rare: the bug fires on few draws
    cells = {cell_of(r) for _, r in failed.iterrows()}
    assert len(cells) >= 2

    summaries = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    assert {tuple(s["cell"].items()) for s in summaries} == cells  # every failing cell
    double = get_runner("test-double-rare-bug")
    for s in summaries:
        found = failed[failed["case_id"] == s["found"]]
        assert len(found) == 1 and cell_of(found.iloc[0]) == tuple(s["cell"].items())
        assert s["status"] == "done" and s["kind"] == "fail" and s["note"] == "", s
        assert s["shrunk"] and s["minimal_fails"]
        assert s["size_minimal"] <= s["size_found"]
        trace = json.loads((load_bundle(s["bundle"]).path / STEPS).read_text())["trace"]
        assert trace[0]["case_id"] == s["found"] and trace[0]["fails"]  # its starting point
        assert all(t["size"] >= s["size_minimal"] for t in trace if t["fails"])

        rows = df[(df["case_id"] == s["minimal"]) & (df["origin"] == "shrunk")]
        assert len(rows) == 1, "the minimal case is a row of the dataset"
        row = rows.iloc[0]
        assert row["shrunk_from"] == s["found"] and row["verdict"] == "fail"
        assert cell_of(row) == tuple(s["cell"].items())
        minimal = Case.from_json(row["case_json"])
        assert case_size(minimal) == s["size_minimal"]
        assert case_size(minimal) <= case_size(Case.from_json(found.iloc[0]["case_json"]))
        again = evaluate(minimal, double)  # a fresh run: it still fails, the same way
        assert failure_kind(again) == "fail" and cell_of(again) == cell_of(row)
        assert runner_doubles.rare_bug_fires(minimal.view().S2)
        assert load_bundle(row["bundle"]).case.case_id == minimal.case_id
        assert (out / "bundles" / s["found"] / "case.json").exists()  # both are bundled
