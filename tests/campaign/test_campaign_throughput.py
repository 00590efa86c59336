"""Every core busy: a slow worker stalls no other, the summary and the dashboard report
throughput and busy share, and a campaign leaves no half-written bundle behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import runner_doubles

from fia_fuzz.campaign.bundles import BUNDLES, unfinished_bundles, write_bundle
from fia_fuzz.campaign.state import Claims
from fia_fuzz.cli import main
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.reports import read_results
from fia_fuzz.reports.dataset import read_journal

PLAIN = ("--filter", "plain=true")
#: The sleepy double as a plug-in spec, so the spawned worker processes can build it.
SLEEPY = f"{runner_doubles.__name__}:{runner_doubles.SleepyDouble.__name__}"
#: The perturbing double likewise (failures, hence bundles, in one cell).
PERTURBED = f"{runner_doubles.__name__}:{runner_doubles.PerturbedCellDouble.__name__}"
#: Only a campaign that writes no row at all for this long fails a wait.
STALL_S = 600


def _hidden(out: Path) -> list[str]:
    root = out / BUNDLES
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".")) \
        if root.is_dir() else []


def test_a_slow_worker_does_not_stall_the_other(tmp_path: Path) -> None:
    """Worker 0's device sleeps on every case; worker 1 takes the cases worker 0 has no
    time for (claimed in stream order), and together they still run exactly the stream's
    first cases, each once."""
    out = tmp_path / "run"
    n = 24
    assert main(["campaign", *PLAIN, "--runner", SLEEPY, "--max-cases", str(n),
                 "--workers", "2", "--devices", "0-1", "--no-shrink", "--out", str(out)]) == 0
    df = read_results(out)
    assert len(df) == n and df["case_id"].is_unique
    per_worker = df["worker"].value_counts().to_dict()
    slow, fast = per_worker.get(0, 0), per_worker.get(1, 0)
    # split by case id, each worker would run about n/2; the fast one runs many more
    assert fast >= 3 * slow and fast >= n - 6, per_worker
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == n and summary["workers"] == 2
    assert summary["cases_per_worker"] == {"0": slow, "1": fast}
    assert 0 < summary["busy_share"] <= 1 and summary["cases_per_min"] > 0
    assert set(summary["stage_shares"]) == {"generate", "materialise", "golden", "runner",
                                            "diff"}
    assert summary["stage_shares"]["runner"] > 0.5  # the sleeping worker's time


def test_claims_hand_each_case_to_the_first_worker_that_reaches_it() -> None:
    class Counter:  # what multiprocessing.Value offers Claims
        value = 0

        def get_lock(self):
            import threading

            return threading.Lock()

    shared = Counter()
    a, b = Claims(shared), Claims(shared)
    assert a.take(0) and not b.take(0)  # a reached case 0 first
    assert b.take(1) and b.take(2)      # a is busy: b takes the next ones
    assert not a.take(1) and not a.take(2) and a.take(3)
    assert Claims().take(0) and Claims().take(0)  # one worker: every case is its own


def test_summary_and_dashboard_report_throughput(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["campaign", *PLAIN, "--runner", "golden", "--max-cases", "6", "--no-shrink",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "cases/min" in printed and "busy" in printed
    html = tmp_path / "dash.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    page = html.read_text()
    assert "<h2>Throughput</h2>" in page and "class='throughput'" in page
    assert "busy share" in page


def test_a_bundle_write_cut_short_leaves_no_directory(tmp_path: Path) -> None:
    q = TensorSpec((1, 2, 1, 16), "float16")
    kv = TensorSpec((1, 2, 4, 16), "float16")
    case = Case(params={"query": q, "key": kv, "value": kv, "num_heads": 2,
                        "input_layout": "BNSD"})
    row = {"case_id": case.case_id, "runner": "golden"}

    def interrupted(directory: Path) -> bool:
        (directory / "outputs.npz").write_bytes(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_bundle(tmp_path, case, row, arrays=interrupted)
    assert write_bundle(tmp_path, case, row, arrays=lambda d: False) is None
    assert list((tmp_path / BUNDLES).iterdir()) == []
    made = write_bundle(tmp_path, case, row)
    assert made is not None and (made / "case.json").exists() and not _hidden(tmp_path)


def test_budget_ended_campaign_leaves_only_complete_bundles(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", *runner_doubles.STREAM_SEED, "--runner", PERTURBED,
                 "--budget", "15s", "--no-shrink", "--out", str(out)]) == 0
    assert _hidden(out) == []
    for bundle in (out / BUNDLES).iterdir():
        assert {"case.json", "metrics.json", "repro.txt", "repro_npu.py"} <= \
            {p.name for p in bundle.iterdir()}, bundle


def test_resume_removes_what_a_kill_left_half_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = ["campaign", *PLAIN, "--runner", "golden", "--max-cases", "3", "--no-shrink",
           "--out", str(out)]
    assert main(cmd) == 0
    state = next((out / "state").glob("*.json"))
    killed = {**json.loads(state.read_text()), "status": "running"}  # as a kill leaves it
    state.write_text(json.dumps(killed))
    stale = out / BUNDLES / ".0123456789abcdef-x1y2z3-tmp"
    stale.mkdir(parents=True)
    (stale / "case.json").write_text("{}")
    assert unfinished_bundles(out) == [stale]
    assert main(cmd) == 0
    assert not stale.exists() and _hidden(out) == []


def _journal_rows(out: Path) -> int:
    return sum(len(read_journal(p)) for p in (out / "journal").glob("*.jsonl"))


def test_sigterm_ends_the_campaign_with_closed_files_and_no_half_bundle(tmp_path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "fia_fuzz", "campaign", *runner_doubles.STREAM_SEED,
           "--runner", PERTURBED, "--workers", "2", "--budget", "10m", "--out", str(out)]
    here = str(Path(runner_doubles.__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + STALL_S
        while time.time() < deadline and proc.poll() is None:
            if (out / "results").is_dir() and _journal_rows(out) >= 8:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)  # the coordinator only, as k8s or a scheduler does
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert _hidden(out) == []
    written = [j for j in (out / "journal").glob("*.jsonl") if len(read_journal(j))]
    assert written  # every worker that wrote rows closed its results into parquet
    assert all((out / "results" / j.with_suffix(".parquet").name).exists()
               for j in written), written
