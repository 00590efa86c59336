"""`fia-fuzz repro` knows whether it is reproducing: it recomputes the case's input digest
before it runs anything, says the inputs differ (exit status 4, naming the versions that
moved, or that none did) when they are not those recorded, and says in one line when
nothing was recorded. The stored bundle replays with the same digest under whatever
library versions the venv holds (`compat`: scripts/compat.sh runs it in its oldest and
newest venvs). Its diff is the campaign's on any machine kind: the same bits on the
campaign's, within the cross-kind bound elsewhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fia_fuzz.campaign.bundles import load_bundle
from fia_fuzz.cli import INPUTS_DIFFER, USAGE_ERROR, main
from fia_fuzz.numerics.environment import environment
from fia_fuzz.op import case as case_module

BUNDLE = Path(__file__).parents[1] / "data" / "bundles" / "bsh-bf16-gqa-large-keys"
RECORDED = json.loads((BUNDLE / "case.json").read_text())["input_digest"]


@pytest.mark.compat
def test_the_stored_bundle_replays_with_the_recorded_input_digest() -> None:
    res = subprocess.run([sys.executable, "-m", "fia_fuzz", "repro", str(BUNDLE)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stderr  # the planted failure still fails
    lines = res.stdout.splitlines()
    assert lines[:2] == ["case d193096959983c85",
                         f"input digest {RECORDED}: the same as recorded"], res.stdout
    assert "verdict: fail" in res.stdout


def _copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(BUNDLE, tmp_path / "bundle"))


def _edit(path: Path, **fields: object) -> None:
    doc = json.loads(path.read_text())
    for k, v in fields.items():
        if v is None:
            doc.pop(k, None)
        else:
            doc[k] = v
    path.write_text(json.dumps(doc, indent=2))


def test_a_patched_narrowing_is_named_as_our_code_moving(monkeypatch, tmp_path,
                                                         capsys) -> None:
    """One bit of one input changed in process: the recorded versions are all this
    environment's (as recorded here), so the code of fia-fuzz moved."""
    bundle = _copy(tmp_path)
    _edit(bundle / "case.json", environment=environment())
    materialise = case_module.materialise

    def one_bit_off(spec, fill, seed, name, index=0):
        a = materialise(spec, fill, seed, name, index)
        if name == "query":
            a.view(np.uint16).reshape(-1)[0] ^= 1
        return a

    monkeypatch.setattr(case_module, "materialise", one_bit_off)
    ran = []
    monkeypatch.setattr("fia_fuzz.campaign.repro.golden_pair", lambda *a: ran.append(a))
    assert main(["repro", str(bundle)]) == INPUTS_DIFFER
    out, err = capsys.readouterr()
    assert not ran and "mode:" not in out and "verdict" not in out  # nothing ran
    assert len(err.strip().splitlines()) == 1
    assert "the inputs differ from the recorded case: not the same case" in err
    assert f"recorded {RECORDED}" in err
    assert "none of the recorded versions differ: the code of fia-fuzz moved" in err


def test_a_recorded_digest_from_other_versions_names_them(tmp_path, capsys) -> None:
    bundle = _copy(tmp_path)
    here = environment()
    _edit(bundle / "case.json", input_digest="0123456789abcdef",
          environment={**here, "numpy": "1.26.4", "ml_dtypes": "0.5.4"})
    assert main(["repro", str(bundle)]) == INPUTS_DIFFER
    err = capsys.readouterr().err
    assert (f"versions that differ (recorded -> here): numpy 1.26.4 -> {here['numpy']}, "
            f"ml_dtypes 0.5.4 -> {here['ml_dtypes']}") in err
    assert "recorded 0123456789abcdef" in err


def test_a_case_id_in_results_is_checked_against_its_row(tmp_path, capsys) -> None:
    b = load_bundle(BUNDLE)
    row = {"case_id": b.case.case_id, "case_json": b.case.to_json(), "runner": "golden",
           "input_digest": "fedcba9876543210", "environment": json.dumps(environment())}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.jsonl").write_text(json.dumps(row) + "\n")
    assert main(["repro", b.case.case_id, "--results", str(tmp_path)]) == INPUTS_DIFFER
    assert "recorded fedcba9876543210" in capsys.readouterr().err


def test_an_old_bundle_without_a_digest_says_so_in_one_line_and_runs(tmp_path,
                                                                     capsys) -> None:
    bundle = _copy(tmp_path)
    _edit(bundle / "case.json", input_digest=None, environment=None)
    _edit(bundle / "metrics.json", input_digest=None, environment=None)
    assert main(["repro", str(bundle)]) == 1  # still the planted failure
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "case d193096959983c85"
    assert out[1].startswith(f"input digest {RECORDED}: none recorded with this case")
    assert out[2].startswith("mode: stored device output")
    assert any(line.startswith("same diff as recorded by the campaign") for line in out), out


SAME_WITHIN = "same diff as recorded by the campaign, within the cross-kind bound"


@pytest.mark.parametrize("edit, says", [
    ("metric", SAME_WITHIN),
    ("metric, same kind", "differs from the campaign's record:"),
    ("metric, golden moved", "differs from the campaign's record:"),
    ("verdict", "differs from the campaign's record:")])
def test_a_moved_metric_is_the_same_diff_only_within_the_bound_on_another_kind(
        tmp_path, capsys, edit, says) -> None:
    """A metric that moved (edited here, as another kind's golden moves it) is excused
    only where the campaign's machine kind is not this one, no verdict moved, and the
    golden recomputed here is within the cross-kind bound of the stored one."""
    bundle = _copy(tmp_path)
    metrics = json.loads((bundle / "metrics.json").read_text())
    if edit == "verdict":
        _edit(bundle / "metrics.json", **{"out_verdict_flash-attention": "pass"})
    else:
        _edit(bundle / "metrics.json", lse_base_rmse=metrics["lse_base_rmse"] * 2)
    if edit.endswith("same kind"):
        _edit(bundle / "case.json", environment=environment())
    if edit.endswith("golden moved"):
        with np.load(bundle / "golden.npz") as z:
            arrays = dict(z)
        arrays["attention_out_device"] = arrays["attention_out_device"] * 1.5
        np.savez(bundle / "golden.npz", **arrays)
    assert main(["repro", str(bundle)]) == 1
    out = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith(("same diff", "differs")))
    assert out[at].startswith(says), out[at:]
    assert "  lse_base_rmse: recorded" in "\n".join(out[at:]) or edit == "verdict"
    if edit.endswith("golden moved"):
        assert "not within the cross-kind bound of the stored one" in out[-1]
        assert "device attention_out: differs by up to" in out[-1]


def test_a_case_file_written_by_hand_runs_with_the_notice(tmp_path, capsys) -> None:
    path = tmp_path / "case.json"
    path.write_text(load_bundle(BUNDLE).case.to_json())
    assert main(["repro", str(path), "--runner", "golden"]) == 0
    assert "none recorded with this case" in capsys.readouterr().out.splitlines()[1]


def test_a_malformed_recorded_digest_is_bad_input(tmp_path, capsys) -> None:
    bundle = _copy(tmp_path)
    _edit(bundle / "case.json", input_digest=[1, 2])
    assert main(["repro", str(bundle)]) == USAGE_ERROR
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "input_digest: expected a hex string" in err
