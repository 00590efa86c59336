"""The triage file: marks (new, known, regressed), exact and glob patterns, `triage add`,
bad files (exit status 2, one line), `--fail-on new`, and "possibly fixed" over nights."""

from __future__ import annotations

import pandas as pd
import pytest

from fia_fuzz.cli import main
from fia_fuzz.reports.gate import found, marked, parse_fail_on
from fia_fuzz.reports.signatures import night_counts, possibly_fixed, signatures
from fia_fuzz.reports.triage import (
    KNOWN,
    NEW,
    REGRESSED,
    Entry,
    Triage,
    TriageError,
    add_entry,
    load_triage,
)

SIG = "BNSD/float16/decode fail: worst element: one tile"


def _fail(sig: str, run: str = "r1", t: float = 1.0, **kw) -> dict:
    return {"outcome": "ok", "verdict": "fail", "signature": sig, "run_id": run,
            "timestamp": t, "case_id": f"c-{sig[:4]}", **kw}


def test_marks_exact_before_glob_and_fixed_entries_regress() -> None:
    t = Triage((Entry("BNSD/*", "T-glob", "wontfix"), Entry(SIG, "T-1", "fixed-in 2.6.0")))
    assert t.mark(SIG) == REGRESSED and t.entry(SIG).ticket == "T-1"
    assert t.mark("BNSD/bfloat16/decode fail: tail") == KNOWN
    assert t.mark("BSH/float16/prefill timeout: timeout") == NEW
    assert Triage().mark(SIG) == NEW


def test_triage_add_creates_appends_updates_and_reads_back(tmp_path, capsys) -> None:
    f = tmp_path / "sub" / "triage.toml"
    f.parent.mkdir()
    odd = 'a "quoted" \\ back\tslash\x7f'
    assert main(["triage", "add", SIG, "--ticket", "https://x/1", "--triage", str(f)]) == 0
    f.write_text(f.read_text() + "# kept by hand\n")
    assert main(["triage", "add", "BSH/*", "--ticket", "T-2", "--status", "wontfix",
                 "--note", odd, "--triage", str(f)]) == 0
    assert "# kept by hand" in f.read_text()  # appending keeps the user's text
    t = load_triage(f)
    assert [e.signature for e in t.entries] == [SIG, "BSH/*"] and t.entries[1].note == odd
    assert main(["triage", "add", SIG, "--ticket", "https://x/1", "--status",
                 "fixed-in 2.6.0", "--triage", str(f)]) == 0
    assert "updated" in capsys.readouterr().out
    assert load_triage(f).mark(SIG) == REGRESSED and len(load_triage(f).entries) == 2


BAD = [
    ("[[known]\n", "not TOML"),
    ('[[known]]\nticket = "T"\n', "signature is missing"),
    ('[[known]]\nsignature = "s"\nticket = "T"\nstatus = "closed"\n', "status 'closed'"),
    ('[[known]]\nsignature = "s"\nticket = "T"\nowner = "me"\n', "unknown key"),
    ('[[known]]\nsignature = 3\nticket = "T"\n', "must be a string"),
    ('known = 3\n', "array of tables"),
    ('[other]\n', "unknown top-level"),
]


@pytest.mark.parametrize(("text", "says"), BAD, ids=[b[1] for b in BAD])
def test_a_bad_triage_file_is_one_line_and_exit_2(tmp_path, capsys, text, says) -> None:
    f = tmp_path / "t.toml"
    f.write_text(text)
    with pytest.raises(TriageError, match=says):
        load_triage(f)
    run = tmp_path / "run"
    run.mkdir()
    assert main(["report", str(run), "--triage", str(f)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err


def test_triage_add_refuses_a_bad_status_and_a_missing_file_is_named(tmp_path, capsys) -> None:
    f = tmp_path / "t.toml"
    assert main(["triage", "add", SIG, "--ticket", "T", "--status", "fixed",
                 "--triage", str(f)]) == 2
    assert "fixed-in VERSION" in capsys.readouterr().err and not f.exists()
    with pytest.raises(TriageError, match="no such file"):
        load_triage(tmp_path / "missing.toml")
    with pytest.raises(TriageError, match="ticket is empty"):
        add_entry(f, Entry(SIG, " "))


def test_fail_on_new_counts_only_untriaged_signatures() -> None:
    other = "BSH/bfloat16/prefill fail: worst element: tail"
    df = pd.DataFrame([_fail(SIG), _fail(SIG), _fail(other), {"outcome": "ok",
                                                              "verdict": "pass"}])
    t = Triage((Entry(SIG, "T-1"),))
    assert parse_fail_on(["new,regressed"]) == ("new", "regressed")
    assert found(df, ("new",), triage=t) == {"new": 1}
    assert marked(df, t, NEW) == {other: 1}
    assert found(df, ("new",)) == {"new": 3}  # no triage file: everything is new
    assert found(df, ("regressed",), triage=t) == {}
    table = signatures(df, t).set_index("signature")
    assert table.at[SIG, "triage"] == KNOWN and table.at[SIG, "ticket"] == "T-1"
    assert table.at[other, "triage"] == NEW and table.at[other, "ticket"] == ""


def _replay(sig: str, run: str, t: float, result: str) -> dict:
    return {"outcome": "ok", "verdict": "pass" if result == "now passes" else "fail",
            "origin": "replay", "run_id": run, "timestamp": t, "replay_signature": sig,
            "replay_result": result, "repro": f"fia-fuzz repro c1 --results {run}",
            "case_id": "c1"}


def test_possibly_fixed_after_n_passing_nights_only() -> None:
    rows = [_fail(SIG, "n0", 0.0, origin="explore")]
    rows += [_replay(SIG, f"n{i}", float(i), "now passes") for i in (1, 2)]
    df = pd.DataFrame(rows)
    assert possibly_fixed(df, 3) == {}
    assert possibly_fixed(df, 2) == {SIG: "fia-fuzz repro c1 --results n2"}
    # a night on which it failed again (as a replay or a fresh draw) restarts the count
    worse = pd.concat([df, pd.DataFrame([_fail(SIG, "n2", 2.5, origin="explore")])])
    assert possibly_fixed(worse, 1) == {}
    again = pd.DataFrame([*rows, _replay(SIG, "n3", 3.0, "still fails")])
    assert possibly_fixed(again, 1) == {}
    nights = night_counts(df, Triage((Entry(SIG, "T-1"),)), 2).set_index("run_id")
    assert nights.at["n0", "known"] == 1 and nights.at["n0", "new"] == 0
    assert nights["possibly_fixed"].tolist() == [0, 0, 1]


def test_rows_of_runs_without_replay_results_are_no_evidence() -> None:
    old = pd.DataFrame([_fail(SIG, "n0", 0.0), {**_fail(SIG, "n1", 1.0), "origin": "replay"}])
    assert possibly_fixed(old, 1) == {}


def test_replay_flags_refuse_what_cannot_be_replayed(tmp_path, capsys) -> None:
    (tmp_path / "night").mkdir()
    assert main(["campaign", "--max-cases", "1", "--out", str(tmp_path / "o"),
                 "--replay", str(tmp_path / "night")]) == 2
    assert "no bundles/" in capsys.readouterr().err
    (tmp_path / "night" / "bundles").mkdir()
    assert main(["campaign", "--negative", "--max-cases", "1", "--out", str(tmp_path / "o"),
                 "--replay", str(tmp_path / "night")]) == 2
    assert "negative mode" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "night"), "--fixed-after", "0"]) == 2
    assert "--fixed-after 0: must be positive" in capsys.readouterr().err
