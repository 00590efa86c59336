"""Plug-in runners: `package.module:factory` and the `fia_fuzz.runners` entry
points work in-process, inside the isolation workers of a two-worker campaign, and in rows."""

from __future__ import annotations

import textwrap

import pytest

from fia_fuzz.cli import main
from fia_fuzz.reports import read_results
from fia_fuzz.runners import Runner, RunnerSpecError, get_runner

#: A test-double package: the golden at device precision under another name, plus a
#: factory that returns no runner and one that fails.
PACKAGE = textwrap.dedent('''
    from fia_fuzz.runners.golden_runner import GoldenRunner

    class PluggedGoldenDouble(GoldenRunner):
        name = "test-double-plugged"

    def make():
        return PluggedGoldenDouble()

    def not_a_runner():
        return 42

    def broken():
        raise OSError("no such device")
''')
ENTRY_POINTS = "[fia_fuzz.runners]\ntest-double-ep = plugdouble.mod:make\n"


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """`plugdouble` on sys.path and PYTHONPATH, with a dist-info declaring an entry point."""
    root = tmp_path / "site"
    (root / "plugdouble").mkdir(parents=True)
    (root / "plugdouble" / "__init__.py").write_text("")
    (root / "plugdouble" / "mod.py").write_text(PACKAGE)
    info = root / "plugdouble-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugdouble\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", str(root))
    return root


def test_module_factory_and_entry_point_build_the_runner(plugin) -> None:
    for spec in ("plugdouble.mod:make", "test-double-ep"):
        runner = get_runner(spec)
        assert isinstance(runner, Runner) and runner.name == "test-double-plugged"


@pytest.mark.parametrize("spec, says", [
    ("plugdouble.nosuch:make", "cannot load 'make' from 'plugdouble.nosuch'"),
    ("plugdouble.mod:nosuch", "cannot load 'nosuch'"),
    ("plugdouble.mod:not_a_runner", "returned int, not a fia_fuzz.runners.Runner"),
    ("plugdouble.mod:broken", "factory raised OSError: no such device"),
    ("no-such-runner", "unknown runner 'no-such-runner'"),
])
def test_bad_specs_raise_one_clear_error(plugin, spec, says) -> None:
    with pytest.raises(RunnerSpecError, match=says.replace("(", r"\(").replace(")", r"\)")):
        get_runner(spec)


def test_unknown_name_lists_the_entry_points(plugin) -> None:
    with pytest.raises(RunnerSpecError, match="test-double-ep"):
        get_runner("no-such-runner")


@pytest.mark.parametrize("spec", ["plugdouble.mod:make", "test-double-ep"])
def test_two_worker_campaign_runs_the_plugged_runner(plugin, tmp_path, spec) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--filter", "plain=true", "--runner", spec, "--max-cases", "10",
                 "--workers", "2", "--out", str(out), "--no-shrink"]) == 0
    df = read_results(out)
    # Workers claim cases as they come: on a loaded machine one may take all ten.
    assert len(df) == 10 and set(df["worker"]) <= {0, 1}
    assert set(df["outcome"]) == {"ok"}
    assert set(df["runner"]) == {"test-double-plugged"}  # built inside the isolated workers
    assert set(df["runner_spec"]) == {spec}
    assert all(f"--runner {spec}" in r for r in df["repro"])
