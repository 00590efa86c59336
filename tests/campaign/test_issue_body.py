"""`report --issue BUNDLE` on a real failure: torch-api-flash on the CPU returns 0 where torch's
math backend returns NaN, for a query row holding NaN with fewer than 16 keys. The bundle
(tests/data/bundles/nan-query-flash) is what `fia-fuzz campaign --runner torch-api-flash
--filter values=nan_attended --filter plain=true --filter layout=BNSD --filter
q_dtype=bfloat16 --seed 3 --max-cases 12` shrank its failure to (S1=2, S2=1, D=16); its
body's torch script, run alone, prints the mismatch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fia_fuzz.campaign.issue import failure_words, worst_element
from fia_fuzz.cli import main
from fia_fuzz.numerics.environment import environment
from fia_fuzz.op.case import Case

BUNDLE = Path(__file__).parents[1] / "data" / "bundles" / "nan-query-flash"
torch = pytest.importorskip("torch")


def _script(body: str) -> str:
    return re.search(r"```python\n(.*?)```", body, re.S).group(1)


def test_the_issue_body_leads_with_the_disagreement_and_its_script_shows_the_bug(
        tmp_path, capsys) -> None:
    out = tmp_path / "issue.md"
    assert main(["report", "--issue", str(BUNDLE), "--issue-out", str(out)]) == 0
    body = out.read_text()
    first, lead = body.splitlines()[0], body.split("## Summary")[0]
    assert first.startswith("# NaN query row returns 0 (fp64 golden: NaN)"), first
    assert "disagree" in lead and "torch-api-math returns NaN" in lead
    assert f"- torch {environment()['torch']}" in body and "## Minimal call" in body
    assert "| fp64 golden (expected) | NaN |" in body
    assert "| **torch-api-flash** (actual) | **0** | no |" in body
    assert "exit status 1" in body and "MISMATCH" in body  # the script's output, shown
    script = tmp_path / "alone" / "repro_torch.py"
    script.parent.mkdir()
    script.write_text(_script(body))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-I", str(script)], cwd=script.parent, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "MISMATCH: FLASH_ATTENTION" in res.stdout
    assert re.search(r"expected \(MATH float64\):\s+nan", res.stdout)
    assert re.search(r"FLASH_ATTENTION \(bfloat16\): 0\.0", res.stdout)
    assert "fia_fuzz" not in script.read_text().replace("fia-fuzz", "")


def test_a_script_for_a_call_torch_gets_right_says_no_mismatch(tmp_path) -> None:
    from fia_fuzz.campaign.repro_torch import script_for
    from fia_fuzz.runners.torch_api import sdpa_arguments

    case = Case.from_json((BUNDLE / "case.json").read_text())
    case.fills["query"].pop("special")   # the same call without the NaN
    call = case.call()
    script = tmp_path / "repro_torch.py"
    script.write_text(script_for(sdpa_arguments(call, 0), "torch-api-flash", case.case_id,
                                 "no NaN"))
    res = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert res.returncode == 0 and "no mismatch" in res.stdout, res.stdout + res.stderr


def test_worst_element_prefers_a_finiteness_difference_and_words_name_it() -> None:
    truth = np.array([1.0, np.nan, 3.0])
    assert worst_element(np.array([1.5, 0.0, 3.0]), truth) == (
        (1,), "finiteness differs at 1 of 3 elements")
    assert worst_element(np.array([1.5, np.nan, 3.0]), truth)[0] == (0,)
    case = Case.from_json((BUNDLE / "case.json").read_text())
    assert failure_words(case, 0.0, float("nan"), {}) == \
        "NaN query row returns 0 (fp64 golden: NaN)"


def test_issue_refuses_what_is_not_a_bundle(tmp_path, capsys) -> None:
    assert main(["report", "--issue", str(tmp_path)]) == 2
    assert "not a bundle directory" in capsys.readouterr().err
    assert main(["report"]) == 2
    assert "run directories" in capsys.readouterr().err


def _copy(tmp_path: Path, **metrics) -> Path:
    import json
    import shutil

    b = tmp_path / "bundle"
    shutil.copytree(BUNDLE, b)
    m = json.loads((b / "metrics.json").read_text())
    (b / "metrics.json").write_text(json.dumps({**m, **metrics}))
    return b


def test_an_npu_bundle_gets_its_torch_npu_script_and_a_crash_bundle_one_line(
        tmp_path, capsys) -> None:
    from fia_fuzz.campaign.issue import issue_body

    b = _copy(tmp_path, runner="npu", runner_spec="npu")
    body = issue_body(b, run_script=False)
    assert "## Reproduce: torch_npu, no fia-fuzz" in body
    assert (b / "repro_npu.py").read_text().strip() in body
    assert "disagree" not in body   # no other backend of torch_npu runs here
    (b / "outputs.npz").unlink()
    assert main(["report", "--issue", str(b)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no device outputs" in err
