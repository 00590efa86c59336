"""`fia-fuzz campaign --metamorphic`: relation outcomes recorded next to the golden verdicts."""

from __future__ import annotations

import json

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results


def test_campaign_records_relation_outcomes(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", "3", "--out", str(out),
                 "--metamorphic", "--no-shrink"]) == 0
    df = read_results(out)
    assert len(df) == 3
    assert set(df["mm_outcome"]) <= {"pass", "unsupported"}, df["mm_failed"].tolist()
    assert (df["mm_pass"] > 0).any()
    rows = json.loads(df["mm_rows"].iloc[0])
    assert rows and {"relation", "variant", "partner_id", "outcome"} <= set(rows[0])


def test_campaign_without_the_flag_has_no_relation_columns(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", "2", "--out", str(out),
                 "--no-shrink"]) == 0
    assert "mm_outcome" not in read_results(out).columns
