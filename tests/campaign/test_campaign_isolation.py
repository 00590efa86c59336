"""The isolating worker: a segfault, abort, hang or exception becomes an outcome, and the
worker is replaced."""

import runner_doubles as doubles

from fia_fuzz.runners.isolation import CaseCrashed, IsolatedRunner, IsolatedWorker


def test_each_fault_is_an_outcome_and_the_worker_is_replaced() -> None:
    with IsolatedWorker(device=3) as w:
        assert w.call(doubles.answer, timeout=60).value == 42
        crashed = w.call(doubles.segfault, timeout=60)
        assert (crashed.outcome, crashed.message) == ("crashed", "worker died with SIGSEGV")
        assert w.call(doubles.abort, timeout=60).message == "worker died with SIGABRT"
        hung = w.call(doubles.hang, timeout=1.0)
        assert hung.outcome == "timeout" and "1s" in hung.message
        err = w.call(doubles.raise_error, timeout=60)
        assert (err.outcome, err.message) == ("error", "ValueError: injected exception")
        assert w.restarts == 3
        assert w.call(doubles.device_env, timeout=60).value == ("3", "3")


def test_isolated_runner_raises_instead_of_dying() -> None:
    runner = IsolatedRunner("test-double-faulty", timeout=60)
    try:
        call = {"input_layout": "BSH"}
        try:
            runner.run({**call, "query": __import__("numpy").zeros(1, "float16")})
        except CaseCrashed as exc:
            assert "SIGSEGV" in str(exc)
        else:
            raise AssertionError("the segfault did not surface as CaseCrashed")
        assert runner.available() == (True, "")
    finally:
        runner.close()


def test_a_worker_can_be_given_its_share_of_the_cores() -> None:
    with IsolatedWorker(threads=3) as w:
        assert w.call(doubles.thread_env, timeout=60).value == "3"
        # the worker computes the golden pair too: its tile threads take the same share
        assert w.call(doubles.golden_threads, timeout=60).value == 3
