"""The two ends of what fia-fuzz installs: requirements.lock (what scripts/setup.sh installs)
agrees with pyproject.toml's ranges, and the torch floor those ranges admit runs the compat
set (slow: the registry's torch at the floor is a CUDA build of several GB)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()
LOCK = (ROOT / "requirements.lock").read_text()
#: the extras scripts/setup.sh installs beside the dependencies
LOCKED_EXTRAS = ("torch", "test")


def _requirements(pyproject: str) -> list[Requirement]:
    project = tomllib.loads(pyproject)["project"]
    extras = project["optional-dependencies"]
    return [Requirement(r) for r in project["dependencies"]
            + [r for extra in LOCKED_EXTRAS for r in extras[extra]]]


def _locked(lock: str) -> dict[str, tuple[Version, list[str]]]:
    """name -> (pinned version, its sha256 hashes), from uv's `name==version \\` blocks."""
    entries = {}
    for block in re.split(r"\n(?=\S)", lock):
        pin = re.match(r"([A-Za-z0-9._-]+)==(\S+)", block)
        if pin:
            entries[canonicalize_name(pin[1])] = (
                Version(pin[2]), re.findall(r"--hash=sha256:([0-9a-f]{64})", block))
    return entries


def lock_problems(pyproject: str, lock: str) -> list[str]:
    """Why the lock does not install what pyproject.toml asks for (empty when it does)."""
    locked = _locked(lock)
    problems = [f"{name}=={version}: no hash" for name, (version, hashes) in locked.items()
                if not hashes]
    for req in _requirements(pyproject):
        if req.marker is not None and not req.marker.evaluate({"python_version": "3.11"}):
            continue  # the lock is for Python 3.11
        name = canonicalize_name(req.name)
        if name not in locked:
            problems.append(f"{req}: not in the lock")
        elif not req.specifier.contains(locked[name][0], prereleases=True):
            problems.append(f"{req}: the lock has {locked[name][0]}")
    return problems


def test_the_lock_installs_what_pyproject_asks_for() -> None:
    assert lock_problems(PYPROJECT, LOCK) == [], "refresh it: bash scripts/lock.sh"


def test_a_stale_or_unhashed_lock_is_named() -> None:
    numpy_floor = PYPROJECT.replace('"numpy>=1.26"', '"numpy>=9"')
    assert numpy_floor != PYPROJECT
    version = str(_locked(LOCK)["numpy"][0])
    assert lock_problems(numpy_floor, LOCK) == [f"numpy>=9: the lock has {version}"]
    without_uv = re.sub(r"\nuv==.*?(?=\n\S|\Z)", "", LOCK, flags=re.S)
    uv = next(str(r) for r in _requirements(PYPROJECT) if r.name == "uv")
    assert lock_problems(PYPROJECT, without_uv) == [f"{uv}: not in the lock"]
    unhashed = re.sub(r"(\ntorch==\S+) \\\n\s+--hash=sha256:[0-9a-f]+", r"\1", LOCK)
    assert f"torch=={_locked(LOCK)['torch'][0]}: no hash" in lock_problems(PYPROJECT, unhashed)


def test_the_locked_torch_is_the_cpu_build_on_local_disk() -> None:
    pin = next(line for line in (ROOT / "scripts/lock-constraints.txt").read_text().splitlines()
               if line.startswith("torch=="))
    version, hashes = _locked(LOCK)["torch"]
    assert f"torch=={version}" == pin and version.local == "cpu"
    # one build, not the registry's CUDA wheels of the same version
    assert len(hashes) == 1


def _torch_floor() -> str:
    (req,) = (r for r in _requirements(PYPROJECT) if r.name == "torch")
    (floor,) = (s.version for s in req.specifier if s.operator == ">=")
    return floor


@pytest.mark.slow
def test_the_compat_set_passes_at_the_torch_floor() -> None:
    """Built once at .venv-torch-FLOOR (the registry's torch: several GB), then reused."""
    floor = _torch_floor()
    venv = ROOT / f".venv-torch-{floor}"
    python = venv / "bin" / "python"
    built = venv / ".fia-built"
    uv = [sys.executable, "-m", "uv"]
    if not built.exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                       check=True)
        subprocess.run([*uv, "pip", "install", "--quiet", "--python", str(python),
                        "-e", f"{ROOT}[test]", f"torch=={floor}"], check=True, cwd=ROOT)
        built.touch()
    torch = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, check=True).stdout
    assert Version(torch.strip()).base_version == floor
    env = {**os.environ, "NUMBA_CACHE_DIR": str(venv / "numba-cache")}
    env.pop("PYTHONPATH", None)  # the venv's editable install of this checkout, nothing else
    done = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-m", "compat"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
