"""`fia-fuzz bisect BUNDLE --env NAME=PYTHON ...`: in which environments a failure reproduces.

Each environment is a Python interpreter with another backend release (a venv with
another torch; torch_npu and CANN on a host) and fia-fuzz installed (`pip install
--no-deps -e .` of the same checkout). In each, in the order given (oldest first), the
bundle is rerun live on its runner: `PYTHON -m fia_fuzz repro BUNDLE --runner R`, so every
environment judges the failure by the same call and the same verdict as the campaign
(a standalone script would judge only what it re-implements). Its exit status says
`fails` (1) or `passes` (0; `unsupported` where the runner refuses the case there), and
`cannot run` for anything else (bad input, a missing import), with its last line. Each
environment's versions are its `numerics/environment.py` record. The first and last
environment that fail bound the range.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

FAILS, PASSES, UNSUPPORTED, CANNOT_RUN = "fails", "passes", "unsupported", "cannot run"
_VERSIONS = ("import json; from fia_fuzz.numerics.environment import environment; "
             "print(json.dumps({k: v for k, v in environment().items() if v is not None}))")


@dataclass
class EnvResult:
    """One environment's verdict on the bundle, its versions and the repro's last line."""

    name: str
    python: str
    result: str
    versions: dict[str, str] = field(default_factory=dict)
    detail: str = ""

    def versions_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.versions.items()) or "versions unknown"


def parse_env(text: str) -> tuple[str, str]:
    """NAME=PYTHON; ValueError naming the form."""
    name, sep, python = text.partition("=")
    if not sep or not name or not python:
        raise ValueError(f"--env {text!r}: expected NAME=PYTHON (a name and an interpreter)")
    return name, python


def _versions(python: str, timeout: float) -> dict[str, str]:
    try:
        res = subprocess.run([python, "-c", _VERSIONS], capture_output=True,
                             text=True, timeout=timeout)
        return dict(json.loads(res.stdout.strip().splitlines()[-1])) if res.returncode == 0 \
            else {}
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def run_env(name: str, python: str, bundle: Path, runner: str, timeout: float) -> EnvResult:
    """The bundle's repro in one environment."""
    versions = _versions(python, timeout)
    cmd = [python, "-m", "fia_fuzz", "repro", str(bundle), "--runner", runner]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env=dict(os.environ))
    except subprocess.TimeoutExpired:
        return EnvResult(name, python, CANNOT_RUN, versions, f"no result in {timeout:.0f}s")
    except OSError as exc:
        return EnvResult(name, python, CANNOT_RUN, versions, str(exc))
    verdict = next((ln.split(":", 1)[1].strip() for ln in res.stdout.splitlines()
                    if ln.startswith("verdict:")), "")
    if res.returncode == 1:
        return EnvResult(name, python, FAILS, versions, verdict)
    if res.returncode == 0:
        return EnvResult(name, python, UNSUPPORTED if verdict.startswith("unsupported")
                         else PASSES, versions, verdict)
    return EnvResult(name, python, CANNOT_RUN, versions,
                     _last_line(res.stderr) or _last_line(res.stdout))


def summary(results: list[EnvResult]) -> list[str]:
    """The range: the first and last environment that fail, with their versions."""
    failing = [r for r in results if r.result == FAILS]
    if not failing:
        return ["fails in none of the environments"]
    first, last = failing[0], failing[-1]
    lines = [f"first failing: {first.name} ({first.versions_text()})",
             f"last failing: {last.name} ({last.versions_text()})"]
    after = results[results.index(last) + 1:]
    passing = next((r for r in after if r.result == PASSES), None)
    if passing is not None:
        lines.append(f"passes again from: {passing.name} ({passing.versions_text()})")
    return lines
