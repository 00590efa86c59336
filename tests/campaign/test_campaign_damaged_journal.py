"""A results journal with a line of invalid bytes (a torn write, two hosts appending to
one file): report and resume skip it, count it and name it in one warning line; every
other row is kept and the resume runs only the case that line held."""

import json
from pathlib import Path

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results

N = 6
CMD = ["campaign", "--runner", "golden", "--max-cases", str(N), "--no-shrink"]


def _damage(out: Path, lineno: int) -> str:
    """Turn journal line `lineno` into invalid UTF-8, as a killed run left it (no parquet,
    run still marked running); returns the case id that line held."""
    journal = next((out / "journal").glob("*.jsonl"))
    for p in (out / "results").glob("*.parquet"):
        p.unlink()
    lines = journal.read_bytes().splitlines(keepends=True)
    case_id = json.loads(lines[lineno - 1])["case_id"]
    lines[lineno - 1] = lines[lineno - 1][:40] + b"\xff\xfe\x00garbage" + lines[lineno - 1][40:]
    journal.write_bytes(b"".join(lines))
    for state in (out / "state").glob("*.json"):
        doc = json.loads(state.read_text())
        state.write_text(json.dumps({**doc, "status": "running"}))
    return case_id


def _campaign(tmp_path: Path) -> tuple[Path, set[str]]:
    out = tmp_path / "run"
    assert main([*CMD, "--out", str(out)]) == 0
    return out, set(read_results(out)["case_id"])


def test_report_skips_counts_and_names_the_damaged_line(tmp_path, capsys) -> None:
    out, ids = _campaign(tmp_path)
    lost = _damage(out, 3)
    capsys.readouterr()
    assert main(["report", str(out), "--html", str(tmp_path / "d.html")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert "skipped 1 damaged result line" in err[0] and ".jsonl:3" in err[0]
    assert set(read_results(out)["case_id"]) == ids - {lost}


def test_resume_reruns_only_the_case_the_damaged_line_held(tmp_path, capsys) -> None:
    out, ids = _campaign(tmp_path)
    lost = _damage(out, 4)
    capsys.readouterr()
    assert main([*CMD, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    warnings = [ln for ln in (captured.out + captured.err).splitlines() if "damaged" in ln]
    assert len(warnings) == 1 and ".jsonl:4" in warnings[0]
    after = read_results(out)
    assert after["case_id"].is_unique and set(after["case_id"]) == ids
    rerun = after[after["attempt"] == 2]
    assert list(rerun["case_id"]) == [lost]
