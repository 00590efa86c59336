"""SIGKILL after failures were found, rerun the same command: the resumed attempt shrinks
every failing cell of the whole run (those found before the kill too), and its summary
counts the whole run and says what this attempt added."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import runner_doubles

from fia_fuzz.campaign.config import cell_of
from fia_fuzz.cli import main
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.op.case import Case
from fia_fuzz.reports import read_results
from fia_fuzz.reports.dataset import read_journal

N = 30
PERTURBED = f"{runner_doubles.__name__}:{runner_doubles.PerturbedCellDouble.__name__}"
#: Only a campaign that writes no failing row at all for this long fails the wait.
STALL_S = 600


def _journal(out: Path):
    frames = [read_journal(p) for p in (out / "journal").glob("*.jsonl")]
    return [r for f in frames for r in f.to_dict("records")]


def _failing_cells(rows) -> set:
    return {cell_of(Case.from_json(r["case_json"]).features()) + (failure_kind(r),)
            for r in rows if failure_kind(r) and r.get("origin") != "shrunk"}


def test_a_resumed_run_shrinks_the_failures_found_before_the_kill(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    cmd = ["campaign", *runner_doubles.STREAM_SEED, "--filter", "plain=true",
           "--runner", PERTURBED, "--max-cases", str(N), "--out", str(out)]
    here = str(Path(runner_doubles.__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", "fia_fuzz", *cmd, "--no-shrink"],
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + STALL_S
        while time.time() < deadline and proc.poll() is None:
            if (out / "results").is_dir():
                rows = _journal(out)
                if len(rows) >= 4 and _failing_cells(rows):
                    break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the campaign and its device process
        proc.wait()
    before = _journal(out)
    found_before = _failing_cells(before)
    assert found_before and len(before) < N, "the kill should land mid-run, after a failure"
    assert not (out / "shrunk").exists()
    capsys.readouterr()

    assert main(cmd) == 0  # the same command (shrinking on): resumes the run
    stdout = capsys.readouterr().out
    df = read_results(out)
    assert set(df["attempt"]) == {1, 2}
    assert df["run_id"].nunique() == 1
    run_id = df["run_id"].iloc[0]
    found = _failing_cells(df.to_dict("records"))
    assert found_before <= found
    summaries = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    shrunk = {tuple(s["cell"].items()) + (s["kind"],) for s in summaries
              if s["status"] == "done"}
    assert found <= shrunk, f"not shrunk: {found - shrunk}"
    assert all(s["owner"] == f"{run_id}/a2" for s in summaries)

    summary = json.loads((out / "summary.json").read_text())
    stream = df[df["origin"] != "shrunk"]
    added = int((stream["attempt"] == 2).sum())
    assert summary["attempt"] == 2 and summary["cases"] == N == len(stream)
    assert summary["this_attempt"]["cases"] == added == N - len(before)
    assert sum(summary["outcomes"].values()) == N
    assert summary["verdicts"].get("fail", 0) == int((stream["verdict"] == "fail").sum())
    assert len(summary["shrunk"]) == len(summaries)
    assert f"{N} cases over 2 attempts (this one added {added}:" in stdout


def test_a_run_killed_before_its_shrink_is_shrunk_by_the_resume(tmp_path, capsys) -> None:
    """Every case ran before the kill: the resumed attempt runs none, and shrinks every
    failing cell from the failures the first attempt recorded."""
    out = tmp_path / "run"
    cmd = ["campaign", *runner_doubles.STREAM_SEED, "--filter", "plain=true",
           "--runner", PERTURBED, "--max-cases", "12", "--out", str(out)]
    assert main([*cmd, "--no-shrink"]) == 0
    for state in (out / "state").glob("*.json"):  # as a SIGKILL before the shrink leaves it
        state.write_text(json.dumps({**json.loads(state.read_text()), "status": "running"}))
    for p in (out / "results").glob("*.parquet"):
        p.unlink()
    found = _failing_cells(read_results(out).to_dict("records"))
    assert found and not (out / "shrunk").exists()
    capsys.readouterr()

    assert main(cmd) == 0
    stdout = capsys.readouterr().out
    summaries = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    assert {tuple(s["cell"].items()) + (s["kind"],) for s in summaries
            if s["status"] == "done"} == found
    df = read_results(out)
    assert set(df.loc[df["origin"] != "shrunk", "attempt"]) == {1}  # no case ran again
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == 12 and summary["this_attempt"]["cases"] == 0
    assert "12 cases over 2 attempts (this one added 0:" in stdout
    assert stdout.count("case of") == len(summaries)  # each shrunk cell is named
