"""A torn results file (a killed night, a crash before the write reached the disk): the
next campaign on the directory rebuilds a torn parquet file from the journal beside it,
`report` reads the journal in its place, and each says so in one line on stderr; a torn
journal loses only its torn line."""

from pathlib import Path

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results

N = 6
CMD = ["campaign", "--runner", "golden", "--no-shrink"]


def _campaign(out: Path, n: int = N) -> int:
    return main([*CMD, "--max-cases", str(n), "--out", str(out)])


def _tear(path: Path) -> None:
    """Keep the first half of the file, as a write cut short leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _stderr_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


def test_torn_parquet_is_read_from_its_journal_and_rebuilt_by_the_next_campaign(
        tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert _campaign(out) == 0
    ids = set(read_results(out)["case_id"])
    parquet = next((out / "results").glob("*.parquet"))
    _tear(parquet)
    capsys.readouterr()

    assert main(["report", str(out), "--html", str(tmp_path / "d.html")]) == 0
    err = _stderr_lines(capsys)
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert parquet.name in err[0] and "damaged" in err[0] and "journal" in err[0]
    assert set(read_results(out)["case_id"]) == ids

    assert _campaign(out, N + 2) == 0  # a new run on the same directory
    err = _stderr_lines(capsys)
    assert len(err) == 1 and err[0].startswith(f"rebuilt {parquet}"), err
    after = read_results(out)
    assert ids <= set(after["case_id"]) and after["case_id"].is_unique
    assert len(after) == N + 2
    assert main(["report", str(out), "--html", str(tmp_path / "d.html")]) == 0
    assert _stderr_lines(capsys) == []  # rebuilt: nothing left to warn about


def test_torn_parquet_without_its_journal_is_skipped_in_one_line(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert _campaign(out) == 0
    parquet = next((out / "results").glob("*.parquet"))
    _tear(parquet)
    (out / "journal" / parquet.with_suffix(".jsonl").name).unlink()
    capsys.readouterr()
    assert main(["report", str(out), "--html", str(tmp_path / "d.html")]) == 2
    err = _stderr_lines(capsys)
    assert len(err) == 1, err  # nothing left to report, and why
    assert err[0].startswith(f"fia-fuzz report: no results under {out} (skipped {parquet}")
    assert "no journal" in err[0]

    assert _campaign(out) == 0  # resumes nothing it cannot read: runs the cases again
    err = _stderr_lines(capsys)
    assert len(err) == 1 and err[0].startswith(f"warning: skipped {parquet}"), err


def test_torn_journal_of_a_killed_run_loses_only_its_torn_line(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert _campaign(out) == 0
    for p in (out / "results").glob("*.parquet"):
        p.unlink()  # killed before it compacted its journal
    journal = next((out / "journal").glob("*.jsonl"))
    _tear(journal)
    kept = len(read_results(out))
    assert 0 < kept < N
    capsys.readouterr()
    assert main(["report", str(out), "--html", str(tmp_path / "d.html")]) == 0
    err = _stderr_lines(capsys)
    assert len(err) == 1 and "skipped 1 damaged result line" in err[0], err
