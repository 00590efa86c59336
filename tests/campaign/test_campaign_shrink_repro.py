"""An injected failing cell is found, shrunk, bundled and reproduced by `fia-fuzz repro` in a
fresh process, from the stored device output; the next run replays the corpus."""

import json
import subprocess
import sys

import numpy as np
import runner_doubles
from runner_doubles import SEED

from fia_fuzz.campaign import CampaignConfig, run_campaign
from fia_fuzz.campaign.bundles import load_bundle
from fia_fuzz.numerics.environment import environment
from fia_fuzz.reports import read_results


def test_failing_cell_is_found_shrunk_bundled_and_reproduced(tmp_path, capsys) -> None:
    """The shrink runs to its example bound (no wall-clock cap, so a loaded machine gets
    the same minimal case)."""
    out = tmp_path / "run"
    run_campaign(CampaignConfig(runner="test-double-perturbed-cell", max_cases=24, out=out,
                                filters={"plain": True}, seed=SEED,
                                shrink_seconds=float("inf")))
    df = read_results(out)
    layout, dtype = runner_doubles.PERTURBED_CELL
    in_cell = (df["layout"] == layout) & (df["q_dtype"] == dtype)
    assert in_cell.any() and (~in_cell).any()
    assert set(df[in_cell]["verdict"]) == {"fail"}
    assert "fail" not in set(df[~in_cell]["verdict"])
    # every row records its environment and the digest of the inputs it judged
    assert {json.dumps(environment(), separators=(",", ":"))} == set(df["environment"])
    judged = df[df["outcome"] == "ok"]
    assert judged["input_digest"].str.fullmatch("[0-9a-f]{16}").all()
    digests = dict(zip(judged["case_id"], judged["input_digest"], strict=True))

    summaries = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    assert summaries and {s["cell"]["layout"] for s in summaries} == {layout}
    found = {cid: df.set_index("case_id").loc[cid] for cid in df[in_cell]["case_id"]}
    for s in summaries:
        assert s["status"] == "done" and s["shrunk"] and s["kind"] == "fail"
        b = load_bundle(s["bundle"])
        assert sorted(p.name for p in b.path.iterdir()) == [
            "case.json", "golden.npz", "inputs.npz", "metrics.json", "outputs.npz",
            "repro.txt", "repro_npu.py", "shrink.json"]
        feats = b.case.features()
        assert (feats["layout"], feats["q_dtype"]) == (layout, dtype)
        assert b.metrics["verdict"] == "fail" and b.metrics["shrunk_from"] in found
        v = b.case.view()
        s1 = 1 if feats["branch"] == "decode" else 2
        assert (v.B, v.S1, v.S2, v.D, b.case.seed) == (1, s1, 1, 16, 0)
        assert b.outputs is not None and np.isfinite(b.outputs[0].astype(np.float32)).all()
        # its case file records what its row does
        assert b.recorded.environment == environment()
        assert b.recorded.digest == b.metrics["input_digest"] == digests[b.case.case_id]
    capsys.readouterr()

    bundle = summaries[0]["bundle"]
    res = subprocess.run([sys.executable, "-m", "fia_fuzz", "repro", bundle],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stderr
    assert "mode: stored device output of test-double-perturbed-cell" in res.stdout
    assert "verdict: fail" in res.stdout.replace("  ", "")
    assert "same diff as recorded by the campaign" in res.stdout

    minimal = load_bundle(bundle).case.case_id
    res = subprocess.run([sys.executable, "-m", "fia_fuzz", "repro", minimal, "--results",
                          str(out), "--runner", "golden"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "mode: live on golden" in res.stdout, res.stdout


def test_next_run_replays_the_failure_corpus_first(tmp_path) -> None:
    """Shrinking is bounded by its examples only (no wall-clock cap), so a loaded machine
    cannot cut the first night's shrink short and leave the second night a smaller case."""
    out = tmp_path / "run"
    cfg = CampaignConfig(runner="test-double-perturbed-cell", max_cases=12, out=out,
                         shrink_seconds=float("inf"))
    run_campaign(cfg)
    first = read_results(out)
    bundled = {p.name for p in (out / "bundles").iterdir()}
    run_campaign(cfg)  # the same command after a finished run: the next night
    df = read_results(out)
    second = df[df["run_id"] != first["run_id"].iloc[0]]
    assert set(second["origin"]) == {"replay"}  # the stream itself is done already
    assert set(second["case_id"]) == bundled
    assert set(second["verdict"]) == {"fail"}
    summaries = [json.loads(p.read_text()) for p in (out / "shrunk").glob("*.json")]
    assert summaries and all(s["owner"].startswith(second["run_id"].iloc[0]) for s in summaries)
