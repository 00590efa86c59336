"""The dashboard's data marks exactly the cell with the injected error and lists its worst
case first; JUnit and the page carry the same facts."""

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from fia_fuzz.cli import main
from fia_fuzz.diff import DEFAULT_POLICY, POLICIES
from fia_fuzz.reports import aggregate as agg
from fia_fuzz.reports import render, write_junit


def test_the_injected_cell_and_only_it_is_marked(injected) -> None:
    double = injected.df[injected.df["runner"] == "perturbing-golden-double"]
    for policy in ("flash-attention", "ascend-benchmark"):
        assert agg.marked_cells(double, "layout", "q_dtype", policy) == {injected.target}
    cells = agg.cell_table(double, "layout", "q_dtype")
    hit = cells[cells["marked"]].iloc[0]
    assert hit["fail"] == len(injected.perturbed)
    assert hit["worst_case"] == injected.worst_case
    clean = injected.df[injected.df["runner"] == "golden"]
    assert agg.marked_cells(clean, "layout", "q_dtype") == set()


def test_the_worst_case_is_listed_first(injected) -> None:
    worst = agg.worst_cases(injected.df, n=len(injected.perturbed) + 5)
    assert worst.iloc[0]["case_id"] == injected.worst_case
    assert worst.iloc[0]["runner"] == "perturbing-golden-double"
    top = worst.head(len(injected.perturbed))
    assert set(top["case_id"]) == injected.perturbed
    assert (top["verdict"] == "fail").all()
    assert top.iloc[0]["repro"].startswith(f"fia-fuzz repro {injected.worst_case}")


def test_headline_and_every_heatmap_model(injected) -> None:
    h = agg.headline(injected.df).set_index("policy")
    assert list(h.index) == list(POLICIES) and h.loc[DEFAULT_POLICY, "default"]
    n = len(agg.judged(injected.df))
    assert h.loc["flash-attention", "fail"] == len(injected.perturbed)
    assert h.loc["flash-attention", "pass_rate"] == pytest.approx(
        1 - len(injected.perturbed) / n)
    assert h.loc["flash-attention", "baseline_pass_rate"] == 1.0
    assert agg.functional_failures(injected.df).empty  # planted errors are precision ones
    for spec in agg.HEATMAPS:
        t = agg.cell_table(injected.df, spec.rows, spec.cols)
        assert t["n"].sum() == n, spec
        assert t.loc[t["marked"], "fail"].sum() == len(injected.perturbed), spec


def test_trend_and_runner_tabs(injected) -> None:
    t = agg.trend(injected.df)
    assert list(t["run_id"]) == ["run-a", "run-b"]
    assert t.loc[1, "flash-attention"] == 1.0 and t.loc[0, "flash-attention"] < 1.0
    assert [name for name, _ in agg.by_runner(injected.df)] == [
        "all runners", "golden", "perturbing-golden-double"]
    samples = agg.error_samples(injected.df)
    assert samples and all(v.size for v in samples.values())


def test_page_and_junit_carry_the_worst_case(injected, tmp_path) -> None:
    page = render(injected.df, tmp_path / "d.html").read_text()
    assert "<script src=" not in page and "<link" not in page  # self-contained
    assert page.count("class='chart heatmap'") >= 3
    assert page.count("<g class='layer' data-policy=") == page.count(
        "class='chart heatmap'") * len(POLICIES)
    assert page.index(injected.worst_case) < page.index("</table>")
    assert "id='worst'" in page and "perturbing-golden-double" in page
    xml = ET.parse(write_junit(injected.df, tmp_path / "j.xml")).getroot()
    failures = {tc.get("name") for tc in xml.iter("testcase") if tc.find("failure") is not None
                and tc.get("classname") != "fia.signature"}
    assert failures == injected.perturbed
    suites = {s.get("name"): int(s.get("failures")) for s in xml.iter("testsuite")}
    signatures = suites.pop("fia-fuzz.signatures")
    assert suites == {"fia-fuzz.golden": 0,
                      "fia-fuzz.perturbing-golden-double": len(injected.perturbed)}
    assert 1 <= signatures <= len(injected.perturbed)  # the planted cell's distinct failures


def test_junit_errors_and_skips(tmp_path) -> None:
    df = pd.DataFrame([
        {"case_id": "a", "runner": "r", "outcome": "error", "error": "boom", "repro": "x"},
        {"case_id": "b", "runner": "r", "outcome": "unsupported", "error": "no rope"},
        {"case_id": "c", "runner": "r", "outcome": "ok", "verdict_flash-attention": "warn",
         "reason_flash-attention": "out: close"}])
    root = ET.parse(write_junit(df, tmp_path / "j.xml")).getroot()
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("errors"), suite.get("skipped"),
            suite.get("failures")) == ("3", "1", "1", "0")


def test_cli_report_writes_html_and_junit(injected, tmp_path, capsys) -> None:
    html, junit = tmp_path / "d.html", tmp_path / "j.xml"
    args = ["report", *map(str, injected.run_dirs), "--html", str(html), "--junit", str(junit),
            "--policy", "ascend-benchmark", "--worst", "5"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ascend-benchmark" in out and str(html.resolve()) in out
    assert "Worst cases (top 5, ascend-benchmark)" in html.read_text()
    assert ET.parse(junit).getroot().get("name") == "fia-fuzz (ascend-benchmark)"
    capsys.readouterr()
    assert main(["report", str(injected.run_dirs[0]), "--policy", "strictest"]) == 2
    assert "not one of" in capsys.readouterr().err


def test_unknown_policy_is_named() -> None:
    with pytest.raises(ValueError, match="'nope'"):
        agg.verdict_col("nope")


def test_inconclusive_cases_stay_out_of_pass_rates_and_are_counted(tmp_path) -> None:
    """An inconclusive verdict (float conditioning the fp64 truth cannot decide) is
    neither a pass nor a failure: rates are over decided cases, the count is shown."""
    rows = [{"case_id": f"c{i}", "runner": "r", "outcome": "ok", "layout": "BSH",
             "q_dtype": "float16", "verdict": v, **{f"verdict_{p}": v for p in POLICIES},
             **{f"baseline_verdict_{p}": "pass" for p in POLICIES},
             "reason_flash-attention": "out: float conditioning" if v == "inconclusive" else ""}
            for i, v in enumerate(["pass", "pass", "pass", "fail", "inconclusive"])]
    df = pd.DataFrame(rows)
    h = agg.headline(df).set_index("policy").loc[DEFAULT_POLICY]
    assert (h["judged"], h["inconclusive"], h["fail"]) == (5, 1, 1)
    assert h["pass_rate"] == pytest.approx(0.75)
    cell = agg.cell_table(df, "layout", "q_dtype").iloc[0]
    assert cell["pass_rate"] == pytest.approx(0.75) and cell["inconclusive"] == 1
    only = agg.cell_table(df[df["verdict"] == "inconclusive"], "layout", "q_dtype").iloc[0]
    assert np.isnan(only["pass_rate"]) and not only["marked"]
    assert list(agg.rank_worst(df)["case_id"][:2]) == ["c3", "c4"]
    page = render(df, tmp_path / "d.html").read_text()
    assert "1 inconclusive of 5 judged" in page and "pass of 4 decided" in page
    root = ET.parse(write_junit(df, tmp_path / "j.xml")).getroot()
    skipped = [tc.find("skipped") for tc in root.iter("testcase")]
    assert [s.get("message") for s in skipped if s is not None] == [
        "inconclusive: out: float conditioning"]


def test_dashboard_of_a_20_case_run_is_at_most_1_5_mb(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", "20", "--no-shrink",
                 "--out", str(run)]) == 0
    assert main(["report", str(run), "--html", str(tmp_path / "d.html")]) == 0
    size = (tmp_path / "d.html").stat().st_size
    print(f"dashboard of a 20-case run: {size} bytes")
    assert size <= 1.5e6
