"""Harness failures (the tool cannot run a case: a device process that does not start
under the memory limit, an import that fails in it) are their own outcome, `harness`:
never bundled or shrunk as failures of the backend, and exit status 3. A memory limit
too small for a device process to start, and more workers than the host can run, are
refused up front with one line and exit status 2."""

import multiprocessing
import time

import fia_fuzz.campaign.coordinator as coordinator
from fia_fuzz.campaign.config import host_workers
from fia_fuzz.cli import EXIT_CODES, HARNESS_FAILED, USAGE_ERROR, main
from fia_fuzz.reports import read_results
from fia_fuzz.reports.aggregate import PROBLEM_OUTCOMES
from fia_fuzz.runners.isolation import HARNESS, OUTCOMES, IsolatedWorker
from fia_fuzz.runners.isolation import address_space as peak

#: Too small for a device process's imports (it takes a few hundred MiB of address space).
TINY = "150M"


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


def test_harness_is_an_outcome_the_reports_count() -> None:
    assert HARNESS in OUTCOMES and HARNESS in PROBLEM_OUTCOMES
    assert "3  harness failure" in EXIT_CODES and HARNESS_FAILED == 3
    assert peak() > 0  # this process's address space (what --memory-limit caps)


def test_a_device_process_whose_imports_fail_is_a_harness_result_in_one_line(capfd) -> None:
    with IsolatedWorker(preload=("fia_fuzz_no_such_module",)) as worker:
        res = worker.call(peak, timeout=60)
    assert res.outcome == HARNESS
    assert res.message == ("worker failed to start: ModuleNotFoundError: No module named "
                           "'fia_fuzz_no_such_module'")
    assert "Traceback" not in capfd.readouterr().err


def test_a_memory_limit_too_small_to_start_is_refused_up_front(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    code = main(["campaign", "--runner", "golden", "--max-cases", "3", "--memory-limit", TINY,
                 "--out", str(out)])
    assert code == USAGE_ERROR
    err = _err_lines(capsys)
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith(f"fia-fuzz campaign: --memory-limit {TINY}: too small")
    assert "of address space" in err[0]  # what a device process takes after its imports
    assert not out.exists()


def test_more_workers_than_the_host_runs_exit_2_at_once(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    t0 = time.monotonic()
    assert main(["campaign", "--max-cases", "3", "--workers", "1000000",
                 "--out", str(out)]) == USAGE_ERROR
    assert time.monotonic() - t0 < 30  # nothing started (only imports)
    err = _err_lines(capsys)
    most, _ = host_workers()
    assert err == [f"fia-fuzz campaign: --workers 1000000: this host runs at most {most} "
                   f"worker(s) ({host_workers()[1]})"]
    assert not out.exists() and multiprocessing.active_children() == []


def test_harness_failures_are_not_bundled_nor_shrunk_and_exit_3(tmp_path, capsys,
                                                                  monkeypatch) -> None:
    # past the up-front check (as a limit that lets start-up through but not the cases)
    monkeypatch.setattr(coordinator, "check_memory_limit", lambda runner, limit: None)
    out = tmp_path / "run"
    code = main(["campaign", "--runner", "golden", "--max-cases", "3", "--memory-limit", TINY,
                 "--out", str(out)])
    assert code == HARNESS_FAILED
    err = _err_lines(capsys)
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith("fia-fuzz campaign: 3 case(s) could not be run by the tool")
    df = read_results(out)
    assert len(df) == 3 and set(df["outcome"]) == {HARNESS}
    assert df["error"].str.startswith("harness: ").all()
    assert "signature" not in df or df["signature"].isna().all()
    assert not list((out / "bundles").glob("*")) and not (out / "shrunk").exists()
    assert main(["report", str(out), "--html", str(tmp_path / "d.html"),
                 "--fail-on", "harness"]) == 1
    assert "3 harness" in _err_lines(capsys)[-1]

