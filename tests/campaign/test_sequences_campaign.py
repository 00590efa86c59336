"""Call sequences in a campaign: planted state bugs (test doubles) are found, diagnosed
and shrunk to at most 3 steps; every step of a torch-sdpa nightly run is judged; a
sequence bundle's repro_npu.py replays the whole sequence with the NPU call swapped
for the torch composition (the FIA_REPRO_CALL hook of single-case bundles)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import repro_npu_hooks
import sequence_doubles  # noqa: F401  (registers the doubles)

from fia_fuzz.campaign import sequences as seqs
from fia_fuzz.cli import main
from fia_fuzz.op.sequence import Sequence, Step
from fia_fuzz.reports import read_results
from fia_fuzz.runners.isolation import TaskResult, runner_ref

HOOKS = Path(repro_npu_hooks.__file__).parent


def _campaign(tmp_path: Path, runner: str, workload: str, n: int = 6) -> tuple[Path, pd.DataFrame]:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", runner, "--profile", "nightly", "--seed", "5",
                 "--filter", f"sequence={workload}", "--max-cases", str(n),
                 "--out", str(out)]) == 0
    return out, read_results(out)


@pytest.mark.parametrize("runner, workload, how", [
    ("test-double-stale-replay", "graph_replay", "stale lengths"),
    ("test-double-new-block-offset", "decode_loop", "new block"),
])
def test_a_planted_state_bug_is_found_and_shrunk_to_three_steps(tmp_path, runner, workload,
                                                                 how) -> None:
    out, df = _campaign(tmp_path, runner, workload)
    seq_rows = df[df["step_kind"] == "sequence"]
    failing = seq_rows[seq_rows["failure_kind"] == "state"]
    assert len(failing) >= 1
    shrinks = [json.loads(p.read_text()) for p in (out / "bundles").glob("*/shrink.json")]
    assert len(shrinks) == 1
    summary = shrinks[0]
    bundle = Path(summary["bundle"])
    minimal = Sequence.from_json((bundle / "sequence.json").read_text())
    assert minimal.sequence_id == summary["minimal"] and len(minimal.steps) <= 3
    assert summary["steps_minimal"] == len(minimal.steps) <= summary["steps_found"]
    row = seq_rows[seq_rows["sequence_id"] == minimal.sequence_id].iloc[-1]
    assert row["signature"] == summary["signature"] == \
        f"seq/{workload} step {int(row['failing_step'])} state: {how}"
    assert sorted(p.name for p in (bundle / "steps").iterdir()) == \
        [str(i) for i in range(len(minimal.steps))]
    # the failing step is also judged against the golden: the double is wrong, not just unstable
    steps = df[(df["sequence_id"] == minimal.sequence_id) & (df["step_kind"] != "sequence")]
    assert set(steps["step"].astype(int)) == set(range(len(minimal.steps)))
    bad = steps[steps["step"].astype(int) == int(row["failing_step"])].iloc[0]
    assert bad["state_equal"] in (False, "False") and bad["state_kind"] == how

    res = _repro(bundle, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("fresh call: bitwise equal") == len(minimal.steps)
    assert "PASS" in res.stdout


def _repro(bundle: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(HOOKS), "FIA_TEST_DIGESTS": str(tmp_path / "d.json"),
           "FIA_REPRO_CALL": "repro_npu_hooks:torch_sdpa"}
    assert "fia_fuzz" not in (bundle / "repro_npu.py").read_text().replace("fia-fuzz", "")
    code = f"import runpy; runpy.run_path({str(bundle / 'repro_npu.py')!r}, run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)


def test_torch_sdpa_nightly_judges_every_step_of_decode_loops(tmp_path) -> None:
    _, df = _campaign(tmp_path, "torch-sdpa", "decode_loop", n=3)
    seq_rows = df[df["step_kind"] == "sequence"]
    steps = df[df["step_kind"] != "sequence"]
    assert len(seq_rows) == 3 and set(seq_rows["seq_verdict"]) == {"pass"}
    assert len(steps) == int(seq_rows["seq_steps"].sum())
    assert set(steps["verdict"]) == {"pass"} and steps["state_equal"].astype(bool).all()
    assert {"prefill", "block_new"} <= set(steps["position"])
    assert set(steps["state_compare"]) == {"bitwise"}


class _Worker:
    """The device process, in this process (the shrinker's calls only)."""

    def call(self, fn, *args, timeout=None):
        return TaskResult("ok", value=fn(*args))


class _State:
    def __init__(self) -> None:
        from fia_fuzz.campaign.config import CampaignConfig

        self.cfg = CampaignConfig(runner="test-double-new-block-offset")
        self.worker, self.ref = _Worker(), runner_ref("test-double-new-block-offset")


def test_the_shrinker_brings_the_failing_step_forward_and_drops_the_rest() -> None:
    big = Sequence(workload="decode_loop", form="TND", dtype="bfloat16", heads=(8, 2, 128),
                   block_size=128, num_blocks=8, table_width=3, context=(0, 0, 0),
                   steps=(Step("prefill", (124, 60, 30)), *[Step("decode", (1, 1, 1))] * 6),
                   alloc="shuffled", seed=11)
    st = _State()
    _, row = seqs.evaluate_sequence(st, big, {}, timeout=60, bundle=False)
    assert row["signature"] == "seq/decode_loop step 5 state: new block"
    minimal, trace = seqs.shrink_sequence(st, big, "state", "new block", stop_at=1e18)
    assert len(minimal.steps) <= 2 and minimal.batch == 1 and minimal.heads[0] == 1
    assert minimal.elements() < big.elements() and trace[0]["fails"]
    _, again = seqs.evaluate_sequence(st, minimal, {}, timeout=60, bundle=False)
    assert again["signature"].endswith("state: new block")


def test_a_sequence_filter_names_a_workload(tmp_path, capsys) -> None:
    assert main(["campaign", "--filter", "sequence=nope", "--max-cases", "1",
                 "--out", str(tmp_path)]) == 2
    assert "decode_loop" in capsys.readouterr().err
