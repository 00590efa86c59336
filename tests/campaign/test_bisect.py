"""`fia-fuzz bisect`: a bundle rerun under several interpreters, the first and last that fail.

The fast test uses the first night's double as a plug-in (`runner_doubles:night_one`) and
two interpreters: this one, and a wrapper script (a test double of an environment whose
backend has the bug fixed) that sets FIXED_ENV and runs this one. The slow test builds a
venv with torch 2.5.1 once (`.venv-torch-2.5.1` in the repository root, a CUDA build of
several GB from the registry) and bisects the NaN-query flash bundle across it and this
environment's torch: 2.5.1 returns 0 for the NaN query row at every key length, the
current torch at S2 < 16 only.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from runner_doubles import FIXED_ENV, NIGHT_CELLS

from fia_fuzz.campaign.bundles import write_bundle
from fia_fuzz.cli import main
from fia_fuzz.op.case import Case

ROOT = Path(__file__).parents[2]
NAN_BUNDLE = ROOT / "tests" / "data" / "bundles" / "nan-query-flash"
OLD_TORCH = "2.5.1"
OLD_VENV = ROOT / f".venv-torch-{OLD_TORCH}"


def _case(**params) -> Case:
    """The NaN-query bundle's call, with `params` changed."""
    d = json.loads((NAN_BUNDLE / "case.json").read_text())
    for name, value in params.items():
        keys = name.split(".")
        node = d["params"]
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return Case.from_dict(d)


def _wrapper(tmp_path: Path) -> Path:
    """python-fixed-backend-double: this interpreter in an environment whose backend is fixed."""
    path = tmp_path / "python-fixed-backend-double"
    path.write_text(f'#!/bin/sh\n{FIXED_ENV}=1 exec "{sys.executable}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_bisect_names_the_first_and_last_failing_environment(tmp_path, monkeypatch,
                                                             capsys) -> None:
    layout, dtype = NIGHT_CELLS[0]
    case = _case(**{"input_layout": layout, "query.dtype": dtype, "key.dtype": dtype,
                    "value.dtype": dtype})
    case.fills["query"].pop("special")
    bundle = write_bundle(tmp_path / "run", case, {"runner": "test-double-night-one",
                                                   "runner_spec": "runner_doubles:night_one"})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(Path(__file__).parent)]))
    fixed = _wrapper(tmp_path)
    assert main(["bisect", str(bundle), "--env", f"broken={sys.executable}",
                 "--env", f"fixed={fixed}"]) == 1
    out = capsys.readouterr().out
    assert "broken: fails" in out and "fixed: passes" in out, out
    assert "first failing: broken (python " in out and "last failing: broken" in out
    assert "passes again from: fixed" in out
    import numpy
    assert f"numpy {numpy.__version__}" in out


def test_bisect_bad_input_is_one_line(tmp_path, capsys) -> None:
    assert main(["bisect", str(NAN_BUNDLE), "--env", "nopython"]) == 2
    assert "NAME=PYTHON" in capsys.readouterr().err
    assert main(["bisect", str(NAN_BUNDLE), "--env", "x=/no/such/python"]) == 2
    assert "no such interpreter" in capsys.readouterr().err
    assert main(["bisect", str(tmp_path), "--env", f"x={sys.executable}"]) == 2
    assert "not a bundle" in capsys.readouterr().err


def _old_torch_python() -> Path:
    """The venv with torch 2.5.1 and fia-fuzz (built once, kept in the repository root)."""
    python = OLD_VENV / "bin" / "python"
    probe = [str(python), "-c", "import torch, fia_fuzz; print(torch.__version__)"]
    if python.exists() and subprocess.run(probe, capture_output=True, text=True
                                          ).stdout.startswith(OLD_TORCH):
        return python
    subprocess.run([sys.executable, "-m", "venv", str(OLD_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"torch=={OLD_TORCH}"], check=True)
    deps = ["hypothesis>=6.100", "numpy>=1.26", "ml_dtypes>=0.4", "numba>=0.61",
            "pandas>=2.1", "pyarrow>=14"]
    subprocess.run([*pip, *deps], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    return python


@pytest.mark.slow
def test_bisect_across_torch_releases_on_the_nan_query_bundle(tmp_path, capsys) -> None:
    old = _old_torch_python()
    assert main(["bisect", str(NAN_BUNDLE), "--env", f"torch-{OLD_TORCH}={old}",
                 "--env", f"current={sys.executable}"]) == 1
    out = capsys.readouterr().out
    import torch
    assert f"first failing: torch-{OLD_TORCH} (python" in out and f"torch {OLD_TORCH}" in out
    assert "last failing: current (" in out and f"torch {torch.__version__}" in out
    # the same query row over 32 keys: 2.5.1 still returns 0, the current torch NaN
    long = _case(**{"key.shape": [1, 1, 32, 16], "value.shape": [1, 1, 32, 16]})
    bundle = write_bundle(tmp_path / "run", long, {"runner": "torch-api-flash"})
    assert main(["bisect", str(bundle), "--env", f"torch-{OLD_TORCH}={old}",
                 "--env", f"current={sys.executable}"]) == 1
    out = capsys.readouterr().out
    assert f"first failing: torch-{OLD_TORCH}" in out and f"last failing: torch-{OLD_TORCH}" in out
    assert "passes again from: current" in out, out
