"""A planted one-sided bound: a backend that validates calls but checks one two-sided rule
on one side only. A short seeded negative campaign filtered to that rule finds it and
shrinks it to a minimal case whose signature names the rule and the side it accepted."""

from __future__ import annotations

import json

import runner_doubles
from runner_doubles import ONE_SIDED_ACCEPTS, ONE_SIDED_RULE

from fia_fuzz.cli import main
from fia_fuzz.op.case import Case
from fia_fuzz.reports import read_results
from fia_fuzz.rules.validate import validate


def test_a_negative_campaign_finds_and_shrinks_the_one_sided_bound(tmp_path) -> None:
    out = tmp_path / "neg"
    assert main(["campaign", "--negative", "--filter", f"rule={ONE_SIDED_RULE}",
                 "--runner", runner_doubles.OneSidedBoundDouble.name, "--seed", "3",
                 "--max-cases", "12", "--out", str(out)]) == 0
    df = read_results(out)
    assert set(df["broken_rules"]) == {ONE_SIDED_RULE}
    # the checked side is refused, the other accepted with a wrong result
    assert set(df[df["broken_side"] != ONE_SIDED_ACCEPTS]["outcome"]) == {"rejected"}
    wrong = df[df["outcome"] == "accepted-wrong"]
    assert len(wrong) and set(wrong["broken_side"]) == {ONE_SIDED_ACCEPTS}
    assert set(df[df["broken_side"] == ONE_SIDED_ACCEPTS]["outcome"]) == {"accepted-wrong"}
    sig = f"{ONE_SIDED_RULE}/{ONE_SIDED_ACCEPTS} accepted-wrong"
    assert all(s.startswith(sig) for s in wrong["signature"])
    summaries = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    assert len(summaries) == 1, summaries
    (summary,) = summaries
    assert summary["kind"] == "accepted-wrong" and summary["minimal_fails"], summary
    assert summary["cell"] == {"broken_rules": ONE_SIDED_RULE, "broken_side": ONE_SIDED_ACCEPTS}
    assert summary["shrunk"] and summary["size_minimal"] < summary["size_found"]
    minimal = df[df["case_id"] == summary["minimal"]].iloc[0]
    assert minimal["origin"] == "shrunk" and minimal["signature"].startswith(sig)
    # the minimal case still breaks that rule alone, on the accepted side
    case = Case.from_json(minimal["case_json"])
    assert [v.rule for v in validate(**case.specs())] == [ONE_SIDED_RULE]
    assert case.params["inner_precise"] > 3
