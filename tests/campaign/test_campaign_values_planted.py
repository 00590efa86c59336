"""Planted bugs that only non-finite values and fully masked rows expose (the `values` axis):
a short seeded campaign filtered to the values that reach each one finds it and shrinks it
to a minimal case whose signature names the class."""

from __future__ import annotations

import json

import pytest
import runner_doubles  # noqa: F401  (registers the doubles)

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results

PLANTED = [
    ("test-double-nan-to-zero", "nan_attended", "nonfinite:nan_to_finite"),
    ("test-double-inf-clamp", "inf_attended", "nonfinite:inf_to_finite"),
    ("test-double-masked-row-unzeroed", "masked_row", "fail"),
]


@pytest.mark.parametrize(("runner", "values", "kind"), PLANTED, ids=[p[0] for p in PLANTED])
def test_a_values_campaign_finds_and_shrinks_the_planted_bug(tmp_path, runner, values,
                                                            kind) -> None:
    out = tmp_path / "run"
    # one layout and dtype: few failing cells, so few shrinks (each is a Hypothesis search)
    assert main(["campaign", "--filter", f"values={values}", "--filter", "layout=BNSD",
                 "--filter", "q_dtype=float16", "--seed", "3", "--runner", runner,
                 "--max-cases", "12", "--out", str(out)]) == 0
    df = read_results(out)
    failed = df[df["signature"].fillna("").str.contains(kind, regex=False)]
    assert len(failed), df["signature"].value_counts()
    summaries = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    mine = [s for s in summaries if s["kind"] == kind]
    assert mine and all(s["minimal_fails"] for s in mine), summaries
    assert all(s["size_minimal"] <= s["size_found"] for s in mine)
    shrunk = df[(df["origin"] == "shrunk")]
    sigs = set(shrunk["signature"]) | {s for s in failed["signature"]}
    assert any(kind in s for s in sigs)
    if kind == "fail":
        assert any("invalid row" in s for s in failed["signature"])
