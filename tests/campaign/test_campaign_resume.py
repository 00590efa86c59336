"""SIGKILL mid-run, rerun the same command: nothing lost, nothing counted twice.

Robust on a loaded machine: the kill waits for the sixth row however long
start-up and the first cases take (minutes on a 2-core host loaded several times
over), not a fixed deadline.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results
from fia_fuzz.reports.dataset import read_journal

N = 24
#: Only a campaign that writes no row at all for this long fails the wait.
STALL_S = 600


def _journal_rows(out: Path) -> int:
    return sum(len(read_journal(p)) for p in (out / "journal").glob("*.jsonl"))


def test_sigkill_then_rerun_loses_and_duplicates_nothing(tmp_path) -> None:
    out = tmp_path / "run"
    cmd = ["campaign", "--runner", "golden", "--max-cases", str(N), "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "fia_fuzz", *cmd], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + STALL_S
        while time.time() < deadline and proc.poll() is None:
            if (out / "results").is_dir() and _journal_rows(out) >= 6:
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the campaign and its worker process
        proc.wait()
    before = read_results(out)
    assert 6 <= len(before) < N, "the kill should land mid-run"

    assert main(cmd) == 0
    after = read_results(out)
    assert after["case_id"].is_unique
    assert set(before["case_id"]) <= set(after["case_id"])
    assert len(after) == N
    assert set(after["attempt"]) == {1, 2}

    clean = tmp_path / "clean"
    assert main(["campaign", "--runner", "golden", "--max-cases", str(N), "--out",
                 str(clean)]) == 0
    assert set(read_results(clean)["case_id"]) == set(after["case_id"])


#: Cases of the two-worker kill below, drawn from the simple cases (cheap to run).
PAIR_N = 120
PLAIN = ("--filter", "plain=true")


def test_a_killed_two_worker_run_resumed_is_one_parquet_dataset(tmp_path) -> None:
    """Every parquet reader opens OUT/results as it is: after a kill (the first attempt's
    journals compacted when the run resumes) every row once, and with a second runner's
    run in the same directory too."""
    import pandas as pd
    import pyarrow.dataset as ds

    out = tmp_path / "run"
    cmd = ["campaign", "--runner", "golden", *PLAIN, "--max-cases", str(PAIR_N),
           "--workers", "2", "--no-shrink", "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "fia_fuzz", *cmd], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + STALL_S
        while time.time() < deadline and proc.poll() is None:
            if _journal_rows(out) >= 10:
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the campaign, its workers and device processes
        proc.wait()
    assert 10 <= len(read_results(out)) < PAIR_N, "the kill should land mid-run"
    assert not list((out / "results").glob("*.parquet"))  # nothing was compacted

    assert main(cmd) == 0
    df = pd.read_parquet(out / "results")
    assert len(df) == PAIR_N and df["case_id"].is_unique
    assert set(df["attempt"]) == {1, 2}
    assert {p.suffix for p in (out / "results").iterdir()} == {".parquet"}

    other = ["--runner", "torch-sdpa", *PLAIN, "--max-cases", "6", "--seed", "1"]
    assert main(["campaign", *other, "--no-shrink", "--out", str(out)]) == 0
    df = pd.read_parquet(out / "results")
    assert len(df) == len(read_results(out)) > PAIR_N and df["case_id"].is_unique
    assert set(df["runner"]) == {"golden", "torch-sdpa"}
    assert ds.dataset(out / "results").to_table().num_rows == len(df)
