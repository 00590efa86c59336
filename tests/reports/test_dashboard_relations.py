"""The dashboard's metamorphic section marks the failing relation, names its worst case
and repro, and appears only for results that carry mm_* columns."""

import json
from pathlib import Path

import pandas as pd

from fia_fuzz.metamorphic import summarise
from fia_fuzz.reports import aggregate as agg
from fia_fuzz.reports import render


def _rel(case: str, relation: str, variant: str, outcome: str, diff: float = 0.0,
         allowed: float = 1e-3, detail: str = "") -> dict:
    row = {"case_id": case, "relation": relation, "variant": variant, "outcome": outcome,
           "detail": detail}
    if outcome in ("pass", "fail"):
        row.update(out_max_abs_diff=diff, out_allowed=allowed)
    return row


def _results() -> pd.DataFrame:
    cases = {
        "c1": [_rel("c1", "batch_perm", "reverse", "pass", 1e-4),
               _rel("c1", "run_twice", "", "pass"),
               _rel("c1", "v1_v2", "", "unsupported", detail="no v2 off the NPU")],
        "c2": [_rel("c2", "batch_perm", "reverse", "fail", 5e-3, detail="out moved"),
               _rel("c2", "batch_perm", "rotate", "fail", 2e-3, detail="out moved"),
               _rel("c2", "run_twice", "", "pass")],
        "c3": [_rel("c3", "batch_perm", "reverse", "pass", 5e-4),
               _rel("c3", "run_twice", "", "error", detail="RuntimeError: boom")],
    }
    rows = [{"case_id": c, "runner": "torch-sdpa", "outcome": "ok", "verdict_flash-attention":
             "pass", "repro": f"fia-fuzz repro {c} --runner torch-sdpa", **summarise(rs)}
            for c, rs in cases.items()]
    return pd.DataFrame(rows)


def test_relation_table_marks_the_failing_relations() -> None:
    t = agg.relation_table(_results()).set_index("relation")
    assert set(t.index) == {"batch_perm", "run_twice", "v1_v2"}
    bp = t.loc["batch_perm"]
    assert (bp["cases"], bp["pass"], bp["fail"], bp["unsupported"]) == (3, 2, 1, 0)
    assert bp["marked"] and bp["worst_ratio"] == 5.0
    assert (bp["worst_case"], bp["worst_variant"]) == ("c2", "reverse")
    assert bp["worst_repro"] == "fia-fuzz repro c2 --runner torch-sdpa"
    rt = t.loc["run_twice"]
    assert rt["marked"] and (rt["pass"], rt["error"]) == (2, 1) and rt["worst_case"] == "c3"
    v = t.loc["v1_v2"]
    assert not v["marked"] and v["unsupported"] == 1 and v["worst_case"] == ""
    assert pd.isna(v["worst_ratio"])


def test_the_section_is_rendered_only_with_mm_columns(tmp_path: Path) -> None:
    df = _results()
    page = render(df, tmp_path / "mm.html").read_text(encoding="utf-8")
    assert "<h2>Metamorphic relations</h2>" in page and "id='relations'" in page
    assert "<tr class='fail' data-relation='batch_perm'>" in page
    assert "fia-fuzz repro c2 --runner torch-sdpa" in page
    plain = df.drop(columns=[c for c in df.columns if c.startswith("mm_")])
    assert agg.relation_table(plain).empty
    page = render(plain, tmp_path / "plain.html").read_text(encoding="utf-8")
    assert "Metamorphic relations" not in page


def test_unparsable_or_missing_mm_rows_are_skipped() -> None:
    df = _results()
    df.loc[0, "mm_rows"] = "not json"
    df.loc[1, "mm_rows"] = None
    t = agg.relation_table(df).set_index("relation")
    assert t.loc["batch_perm", "cases"] == 1 and json.loads(df.loc[2, "mm_rows"])
