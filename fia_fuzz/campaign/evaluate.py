"""One case through golden, runner and differ, to one result row.

Every outcome is a row: a case the runner cannot express is `unsupported`,
a runner exception is `error: <message>`; only judged rows carry verdicts.
"""

from __future__ import annotations

import time
from typing import Any

from fia_fuzz.diff import judge
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.runners import Runner
from fia_fuzz.spec import Case, output_specs


def repro_command(case: Case, runner: str) -> str:
    return f"fia-fuzz repro {case.case_id} --runner {runner}"


def evaluate(case: Case, runner: Runner) -> dict[str, Any]:
    """The result row of `case` on `runner` (never raises for a legal case)."""
    row: dict[str, Any] = {"case_id": case.case_id, "case_json": case.to_json(),
                           "runner": runner.name, **case.features(),
                           "repro": repro_command(case, runner.name)}
    ok, why = runner.supports(case)
    if not ok:
        row.update(outcome="unsupported", error=why)
        return row
    t0 = time.perf_counter()
    call = case.call()
    t1 = time.perf_counter()
    try:
        truth = npu_fused_infer_attention_score(**call, precision="fp64")
        baseline = npu_fused_infer_attention_score(**call, precision="device")
    except NotImplementedError as exc:
        row.update(outcome="unsupported", error=f"golden: {exc}")
        return row
    t2 = time.perf_counter()
    try:
        actual = runner.run(call)
    except Exception as exc:  # the backend's failure is a result, not a crash of ours
        row.update(outcome="error", error=f"{type(exc).__name__}: {exc}"[:2000],
                   t_materialise=t1 - t0, t_golden=t2 - t1)
        return row
    t3 = time.perf_counter()
    out_spec, _ = output_specs(case.view())
    row.update(judge(actual, truth, baseline, out_spec.dtype,
                     lse=bool(case.attr("softmax_lse_flag"))))
    t4 = time.perf_counter()
    row.update(outcome="ok", error="", t_materialise=t1 - t0, t_golden=t2 - t1,
               t_runner=t3 - t2, t_diff=t4 - t3)
    return row
