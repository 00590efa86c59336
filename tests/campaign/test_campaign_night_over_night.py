"""Night over night: a failure triaged after the first night gates nothing the next night,
a new one does (naming only itself), and the first night's bundles replayed against a
fixed backend report "now passes"."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import runner_doubles  # noqa: F401  (registers the doubles)
from runner_doubles import NIGHT_CELLS, STREAM_SEED

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results
from fia_fuzz.reports.signatures import failing

#: A night: the first 12 plain cases of seed 5's stream (they hold both NIGHT_CELLS).
NIGHT = [*STREAM_SEED, "--max-cases", "12", "--no-shrink"]


def _signatures(out) -> set[str]:
    return set(failing(read_results(out))["signature"])


def test_triaged_failures_pass_the_gate_new_ones_fail_it_fixed_ones_replay_clean(
        tmp_path, capsys) -> None:
    triage = tmp_path / "triage.toml"
    night1, night2, night2b, night3 = (tmp_path / n for n in ("n1", "n2", "n2b", "n3"))
    assert main(["campaign", "--runner", "test-double-night-one", *NIGHT,
                 "--out", str(night1), "--fail-on", "new"]) == 1  # nothing triaged yet
    first = _signatures(night1)
    layout, dtype = NIGHT_CELLS[0]
    assert first and all(s.startswith(f"{layout}/{dtype}/") for s in first), first
    assert "new: " in capsys.readouterr().out
    for sig in sorted(first):
        assert main(["triage", "add", sig, "--ticket", "KERNEL-1", "--note", "planted",
                     "--triage", str(triage)]) == 0

    assert main(["campaign", "--runner", "test-double-night-one", *NIGHT, "--out", str(night2),
                 "--triage", str(triage), "--fail-on", "new"]) == 0
    printed = capsys.readouterr().out
    assert all(f"known: {s}" in printed for s in first), printed

    assert main(["campaign", "--runner", "test-double-night-two", *NIGHT, "--out",
                 str(night2b), "--triage", str(triage), "--fail-on", "new"]) == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    fresh = _signatures(night2b) - first
    layout2, dtype2 = NIGHT_CELLS[1]
    assert fresh and all(s.startswith(f"{layout2}/{dtype2}/") for s in fresh)
    assert all(s in line for s in fresh) and not any(s in line for s in first), line

    assert main(["campaign", "--runner", "golden", *NIGHT[:2], "--max-cases", "1",
                 "--no-shrink", "--out", str(night3), "--replay", str(night1),
                 "--triage", str(triage), "--fail-on", "new"]) == 0
    assert "now passes" in capsys.readouterr().out
    df = read_results(night3)
    replayed = df[df["origin"] == "replay"]
    bundled = {p.name for p in (night1 / "bundles").iterdir()}
    assert set(replayed["case_id"]) == bundled
    assert (replayed["replay_result"] == "now passes").all()
    assert set(replayed["replay_signature"]) == first
    assert replayed["replay_of"].str.startswith(str(night1)).all()


def test_the_same_replay_on_the_broken_backend_still_fails(tmp_path, capsys) -> None:
    """Also on bundles as older campaigns wrote them (no signature, no runner_spec in
    metrics.json); a bundle that cannot be read is named, not replayed."""
    night1, night2 = tmp_path / "n1", tmp_path / "n2"
    assert main(["campaign", "--runner", "test-double-night-one", *NIGHT,
                 "--out", str(night1)]) == 0
    bundles = sorted((night1 / "bundles").iterdir())
    old = bundles[0] / "metrics.json"
    metrics = json.loads(old.read_text())
    was = metrics.pop("signature")
    metrics.pop("runner_spec")
    old.write_text(json.dumps(metrics))
    damaged = night1 / "bundles" / "0123456789abcdef"
    damaged.mkdir()
    (damaged / "case.json").write_text("{not json")
    capsys.readouterr()
    assert main(["campaign", "--runner", "test-double-night-one", *NIGHT[:2],
                 "--max-cases", "1", "--no-shrink", "--out", str(night2),
                 "--replay", str(night1)]) == 0
    df = read_results(night2)
    replayed = df[df["origin"] == "replay"]
    assert len(replayed) == len(bundles)
    assert (replayed["replay_result"] == "still fails").all()
    assert was in set(replayed["replay_signature"])
    printed = capsys.readouterr()
    assert "still fails" in printed.out
    assert "1 bundle(s) cannot be read" in printed.out and str(damaged) in printed.out


def test_the_dashboard_counts_new_known_regressed_and_possibly_fixed_per_night(
        tmp_path, capsys) -> None:
    triage, night1 = tmp_path / "triage.toml", tmp_path / "n1"
    assert main(["campaign", "--runner", "test-double-night-one", *NIGHT,
                 "--out", str(night1)]) == 0
    first = sorted(_signatures(night1))
    assert main(["triage", "add", first[0], "--ticket", "https://example.org/1",
                 "--triage", str(triage)]) == 0
    fixed = [tmp_path / f"f{i}" for i in range(2)]
    for d in fixed:   # two nights on a fixed backend, replaying the first night's bundles
        assert main(["campaign", "--runner", "golden", *NIGHT[:2], "--max-cases", "1",
                     "--no-shrink", "--out", str(d), "--replay", str(night1)]) == 0
    html = tmp_path / "d.html"
    capsys.readouterr()
    assert main(["report", str(night1), *map(str, fixed), "--triage", str(triage),
                 "--fixed-after", "2", "--html", str(html), "--junit",
                 str(tmp_path / "j.xml")]) == 0
    junit = (tmp_path / "j.xml").read_text()
    assert 'message="known, https://example.org/1 (open): ' in junit
    assert 'message="new: ' in junit
    out = capsys.readouterr().out
    assert f"known: {first[0]}" in out and "possibly fixed (bundles pass 2 nights)" in out
    page = html.read_text()
    assert "id='nights'" in page and "data-triage='known'" in page
    assert "Possibly fixed" in page and "https://example.org/1" in page
    table = re.search(r"<table id='nights'.*?</table>", page).group(0)
    nights = [re.findall(r"<td>(\d+)</td>", row) for row in table.split("<tr data-run=")[1:]]
    # new, known, regressed, possibly fixed: the first night found them (one triaged); the
    # fixed nights found nothing, and after two of them every signature is possibly fixed
    assert nights == [[str(len(first) - 1), "1", "0", "0"], ["0", "0", "0", "0"],
                      ["0", "0", "0", str(len(first))]], nights


def test_a_real_bundle_replays_still_failing_on_flash_and_passing_on_math(tmp_path,
                                                                           capsys) -> None:
    """The NaN-query bundle a campaign on torch-api-flash wrote (tests/data): today's CPU
    flash kernel still returns 0 for the NaN row, torch's math backend NaN."""
    pytest.importorskip("torch")
    night = tmp_path / "night"
    src = Path(__file__).parents[1] / "data" / "bundles" / "nan-query-flash"
    shutil.copytree(src, night / "bundles" / "657dd1e90a2ab36d")
    for runner, result in (("torch-api-flash", "still fails"), ("torch-api-math", "now passes")):
        out = tmp_path / runner
        assert main(["campaign", "--runner", runner, "--max-cases", "1", "--no-shrink",
                     "--out", str(out), "--replay", str(night)]) == 0
        replayed = read_results(out).query("origin == 'replay'")
        assert replayed["replay_result"].tolist() == [result], runner
        assert replayed["replay_signature"].tolist() == [
            "BNSD/bfloat16/prefill nonfinite:nan_to_finite: out"]
