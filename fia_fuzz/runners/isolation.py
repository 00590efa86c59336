"""Isolation: run any runner (or any task) in a worker process with a per-case timeout.

The system under test is a real kernel: one case can segfault, abort, hang or
exhaust memory. Each `IsolatedWorker` is one `multiprocessing` process (spawn
start method, so no torch or device state is inherited) optionally bound to
one device index and address-space cap; a case that kills or wedges it
becomes a recorded outcome (`crashed`, `timeout`, `error`, or `oom` when an
allocation fails under the cap) and the next call starts a fresh process. A process
that cannot start (its imports fail: under too small an address-space cap, a plug-in
that does not import there) is `harness`: nothing ran, so nothing about the backend
is known.
`IsolatedRunner` is the same thing behind the `Runner` interface.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import numpy as np

from fia_fuzz.golden.threads import THREADS_ENV
from fia_fuzz.op.case import Case
from fia_fuzz.runners.base import DEVICE_INDEX_ENV, RUNNERS, Runner, get_runner, runner_module

#: Environment variables that make one accelerator the only visible one (index 0).
DEVICE_ENV = ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
#: Thread-pool sizes of the math libraries (read once when they load) and of the golden's
#: tile threads (golden/threads.py): the worker process computes the golden pair too.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", THREADS_ENV)
#: What became of a task; "skipped": never run (a campaign case too big for the device);
#: "harness": never run because the worker process could not start (or, for a campaign,
#: the harness itself failed around the case: record.py).
OUTCOMES = ("ok", "error", "crashed", "timeout", "oom", "skipped", "harness")
#: The outcome of a task that the tool, not the backend, failed to run.
HARNESS = "harness"


@dataclass(frozen=True)
class TaskResult:
    """What became of one task: `outcome` in OUTCOMES, the value when ok, else a message.

    "skipped" is never produced by a worker: a caller that decides not to run a task
    records it as `TaskResult("skipped", message=why)`.
    """

    outcome: str
    value: Any = None
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


class CaseCrashed(RuntimeError):
    """The worker process died while running the case (signal, abort, OOM kill)."""


class CaseTimedOut(RuntimeError):
    """The case did not finish within the per-case timeout; the worker was killed."""


def runner_ref(spec: str) -> tuple[str, str]:
    """(spec, module that defines it): enough for a fresh process to rebuild the runner the
    same way (`get_runner(spec)`: registered name, package.module:factory or entry point)."""
    return spec, runner_module(spec)


_RUNNER_CACHE: dict[str, Runner] = {}


def resolve_runner(ref: tuple[str, str]) -> Runner:
    """The runner `ref` names, built once per process (importing its module registers it)."""
    spec, module = ref
    if spec not in _RUNNER_CACHE:
        if spec not in RUNNERS and ":" not in spec:
            importlib.import_module(module)
        _RUNNER_CACHE[spec] = get_runner(spec)
    return _RUNNER_CACHE[spec]


def _bind(device: int | None, memory_limit: int | None) -> None:
    if device is not None:
        os.environ[DEVICE_INDEX_ENV] = str(device)
        for var in DEVICE_ENV:
            os.environ[var] = str(device)
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))


def _serve(conn: Any, device: int | None, memory_limit: int | None,
           preload: tuple[str, ...]) -> None:
    """Worker loop: receive (fn, args), send back ("ok", value) or ("error", message)."""
    try:
        _bind(device, memory_limit)
        for module in preload:
            importlib.import_module(module)
    except BaseException as exc:  # noqa: BLE001  (one line to the parent, not a traceback)
        try:
            text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            conn.send(("failed", " ".join(text.split())[:500]))
        finally:
            os._exit(1)
    conn.send(("ready",))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, args = task
        try:
            reply = ("ok", fn(*args))
        except MemoryError as exc:
            reply = ("oom", f"MemoryError: out of memory {exc}".strip())
        except Exception as exc:  # the task's failure is a result, not the worker's
            reply = ("error", f"{type(exc).__name__}: {exc}"[:2000],
                     traceback.format_exc(limit=8)[-4000:])
        conn.send(reply)


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        sig = signal.Signals(-exitcode).name
        hint = " (killed: out of memory?)" if sig == "SIGKILL" else ""
        return f"worker died with {sig}{hint}"
    return f"worker exited with code {exitcode}"


class IsolatedWorker:
    """One worker process, bound to `device`, running one task at a time with a timeout."""

    def __init__(self, device: int | None = None, memory_limit: int | None = None,
                 preload: tuple[str, ...] = (), start_method: str = "spawn",
                 startup_timeout: float = 600.0, threads: int | None = None):
        self.device = device
        self.threads = threads
        self.memory_limit = memory_limit
        self.preload = preload
        self.startup_timeout = startup_timeout
        self._ctx = mp.get_context(start_method)
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0

    def _start(self) -> str | None:
        """Start a worker and wait until it is ready (imports done): None, or why it failed.

        Start-up is not charged to the next case's timeout.
        """
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, daemon=True,
                                       args=(child, self.device, self.memory_limit, self.preload),
                                       name=f"fia-worker-dev{self.device}")
        saved = {k: os.environ.get(k) for k in THREAD_ENV}
        if self.threads:  # K workers on one host share its cores instead of each taking all
            os.environ.update({k: str(self.threads) for k in THREAD_ENV})
        try:
            self._proc.start()  # spawn: the child's libraries read these variables
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        child.close()
        self._conn = parent
        reason = ""
        if self._conn.poll(self.startup_timeout):
            try:
                reply = self._conn.recv()
                if reply == ("ready",):
                    return None
                reason = str(reply[1]) if reply[0] == "failed" else ""
            except (EOFError, OSError):
                pass
        self._proc.join(1)
        why = f"worker failed to start: {reason or _death(self._proc.exitcode)}"
        self._discard()
        return why

    def _discard(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(5)
            self._conn.close()
            self.restarts += 1
        self._proc = self._conn = None

    def start(self) -> str | None:
        """Start the process now (if it is not running): None, or why it could not start."""
        if self._proc is not None and self._proc.is_alive():
            return None
        self._discard()
        return self._start()

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float | None = None
             ) -> TaskResult:
        """Run `fn(*args)` in the worker; never raises for what the task does to the worker.

        `fn` must be importable by name (a module-level function) and its
        arguments and value picklable.
        """
        if self._proc is None or not self._proc.is_alive():
            self._discard()
            failed = self._start()
            if failed:
                return TaskResult(HARNESS, message=failed)
        t0 = time.monotonic()
        try:
            self._conn.send((fn, args))
        except (BrokenPipeError, OSError):
            self._discard()
            return TaskResult("crashed", message="worker died before the case was sent")
        ready = wait([self._conn, self._proc.sentinel], timeout)
        dt = time.monotonic() - t0
        if self._conn in ready:
            try:
                reply = self._conn.recv()
            except (EOFError, OSError):
                self._proc.join(5)
                msg = _death(self._proc.exitcode)
                self._discard()
                return TaskResult("crashed", message=msg, seconds=dt)
            if reply[0] == "ok":
                return TaskResult("ok", value=reply[1], seconds=dt)
            if reply[0] == "oom":  # a fresh process for the next case, its heap unfragmented
                self._discard()
                return TaskResult("oom", message=reply[1], seconds=dt)
            return TaskResult("error", message=reply[1], seconds=dt)
        if ready:  # the sentinel: the process is gone
            self._proc.join(5)
            msg = _death(self._proc.exitcode)
            self._discard()
            return TaskResult("crashed", message=msg, seconds=dt)
        self._discard()
        return TaskResult("timeout", message=f"no result after {timeout:g}s; worker killed",
                          seconds=dt)

    def close(self, grace: float = 1.0) -> None:
        """Ask the worker to exit; kill it after `grace` seconds (it holds no unsaved state)."""
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(grace)
            except (BrokenPipeError, OSError):
                pass
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def __enter__(self) -> IsolatedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def address_space() -> int:
    """The peak address space of this process in bytes (VmPeak; 0 where /proc has none):
    what an RLIMIT_AS cap must leave it."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _run_in_worker(ref: tuple[str, str], call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    out, lse = resolve_runner(ref).run(call)
    return np.asarray(out), np.asarray(lse)


def runner_query(ref: tuple[str, str], what: str, case_json: str | None) -> Any:
    """`available()`, `metadata()` or `supports(case)` of the runner, asked inside the worker."""
    runner = resolve_runner(ref)
    if what == "available":
        return runner.available()
    if what == "metadata":
        return runner.metadata()
    return runner.supports(Case.from_json(case_json or ""))


class IsolatedRunner(Runner):
    """`name` run in an isolated worker process: a crash or hang raises instead of killing us.

    `run` raises CaseCrashed or CaseTimedOut (and RuntimeError with the
    worker's message for an exception inside the backend); the worker is
    replaced before the next call.
    """

    def __init__(self, name: str, timeout: float = 300.0, device: int | None = None,
                 memory_limit: int | None = None):
        self.ref = runner_ref(name)
        self.name = name
        self.timeout = timeout
        self.worker = IsolatedWorker(device=device, memory_limit=memory_limit)

    def _ask(self, what: str, case: Case | None = None) -> Any:
        res = self.worker.call(runner_query, self.ref, what,
                               case.to_json() if case is not None else None,
                               timeout=self.timeout)
        if not res.ok:
            return False, f"{self.name}: {res.outcome}: {res.message}"
        return res.value

    def available(self) -> tuple[bool, str]:
        return tuple(self._ask("available"))  # type: ignore[return-value]

    def supports(self, case: Case) -> tuple[bool, str]:
        return tuple(self._ask("supports", case))  # type: ignore[return-value]

    def metadata(self) -> dict[str, str]:
        meta = self._ask("metadata")
        return meta if isinstance(meta, dict) else {"runner": self.name}

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        res = self.worker.call(_run_in_worker, self.ref, call, timeout=self.timeout)
        if res.outcome in ("crashed", HARNESS):
            raise CaseCrashed(res.message)
        if res.outcome == "timeout":
            raise CaseTimedOut(res.message)
        if res.outcome == "oom":
            raise MemoryError(res.message)
        if res.outcome == "error":
            raise RuntimeError(res.message)
        return res.value

    def close(self) -> None:
        self.worker.close()
