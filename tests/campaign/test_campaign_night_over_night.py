"""Night over night: a failure triaged after the first night gates nothing the next night,
a new one does (naming only itself), and the first night's bundles replayed against a
fixed backend report "now passes"."""

from __future__ import annotations

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
    night1, night2 = tmp_path / "n1", tmp_path / "n2"
    assert main(["campaign", "--runner", "test-double-night-one", *NIGHT,
                 "--out", str(night1)]) == 0
    assert main(["campaign", "--runner", "test-double-night-one", *NIGHT[:2],
                 "--max-cases", "1", "--no-shrink", "--out", str(night2),
                 "--replay", str(night1)]) == 0
    df = read_results(night2)
    replayed = df[df["origin"] == "replay"]
    assert len(replayed) and (replayed["replay_result"] == "still fails").all()
    assert "still fails" in capsys.readouterr().out
