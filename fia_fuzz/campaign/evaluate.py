"""One case through golden, runner and differ, to one result row.

Every outcome is a row: a case the runner cannot express is `unsupported`,
a runner exception is `error` (message in `error`); the isolating worker adds
`crashed` and `timeout`. Only judged rows carry verdicts. The same judging
serves a live run and a stored device output (`judge_outputs`), so a repro on
a machine without the device prints the diff the campaign recorded.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from fia_fuzz.campaign.bundles import GOLDEN_NAMES
from fia_fuzz.diff import judge
from fia_fuzz.files.cases import ENVIRONMENT, INPUT_DIGEST
from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.numerics.environment import environment
from fia_fuzz.op.case import Case
from fia_fuzz.op.digest import input_digest
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.runners import Runner

#: Floor of the baseline error in the error ratio, so an exact baseline does not divide by 0.
_RATIO_FLOOR = 1e-6


def repro_command(case: Case, runner: str, results: str | None = None) -> str:
    where = f" --results {results}" if results else ""
    return f"fia-fuzz repro {case.case_id}{where} --runner {runner}"


def environment_json() -> str:
    """This process's environment as a row holds it (compact JSON, keys in order)."""
    return json.dumps(environment(), separators=(",", ":"))


def base_row(case: Case, runner: str) -> dict[str, Any]:
    """Identity, features, environment and repro command of a case (features of an illegal
    case may fail)."""
    try:
        features = case.features()
    except Exception as exc:  # an illegal case can defeat feature extraction; still record it
        features = {"features_error": f"{type(exc).__name__}: {exc}"}
    return {"case_id": case.case_id, "case_json": case.to_json(), "runner": runner,
            "rules": case.rules, **features, ENVIRONMENT: environment_json(),
            "repro": repro_command(case, runner)}


def golden_pair(call: dict[str, Any], rules: str = DEFAULT) -> tuple[Any, Any]:
    """(fp64 truth, device-precision baseline) of a canonical call legal under `rules`."""
    truth = npu_fused_infer_attention_score(**call, precision="fp64", rules=rules)
    baseline = npu_fused_infer_attention_score(**call, precision="device", rules=rules)
    return truth, baseline


def judge_outputs(case: Case, actual: tuple[np.ndarray, np.ndarray], truth: Any,
                  baseline: Any) -> dict[str, Any]:
    """Metrics and verdicts of a device output against the golden, plus the error ratio."""
    out_spec, _ = output_specs(case.view())
    row = judge(actual, truth, baseline, out_spec.dtype, lse=bool(case.attr("softmax_lse_flag")),
                features=case.features())
    row["error_ratio"] = error_ratio(row)
    return row


def error_ratio(row: dict[str, Any]) -> float:
    """Device max abs error over the same-dtype golden's: what exploration maximises."""
    if row.get("out_shape_mismatch") or row.get("out_nonfinite_mismatch"):
        return 1e9
    err, base = row.get("out_max_abs"), row.get("out_base_max_abs", 0.0)
    if err is None:
        return 0.0
    return float(err) / max(float(base), _RATIO_FLOOR)


def evaluate(case: Case, runner: Runner, outputs: dict[str, np.ndarray] | None = None,
             call: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result row of `case` on `runner` (never raises for a legal case): its identity
    and features (`base_row`) and what running it gave (`measure`).

    When `outputs` is given, the device's (attention_out, softmax_lse) and the
    golden's (bundles.GOLDEN_NAMES) are put there, for failure bundles. `call`: the case
    already materialised (`case.call()`), not materialised again.
    """
    row = base_row(case, runner.name)
    row.update(measure(case, runner, outputs, call))
    return row


def measure(case: Case, runner: Runner, outputs: dict[str, np.ndarray] | None = None,
            call: dict[str, Any] | None = None, keep: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    """What running `case` on `runner` gives: outcome, error, the input digest, metrics,
    verdicts and stage timings (t_materialise, which includes the digest, t_golden,
    t_runner, t_diff), without the case's identity or features (a campaign's device process
    measures; its partition makes the row). `keep` gets the materialised call (for a
    bundle's inputs, not materialised twice)."""
    row: dict[str, Any] = {}
    ok, why = runner.supports(case)
    if not ok:
        row.update(outcome="unsupported", error=why)
        return row
    t0 = time.perf_counter()
    call = case.call() if call is None else call
    row[INPUT_DIGEST] = input_digest(call)
    if keep is not None:
        keep.update(call)
    t1 = time.perf_counter()
    try:
        truth, baseline = golden_pair(call, case.rules)
    except NotImplementedError as exc:
        row.update(outcome="unsupported", error=f"golden: {exc}")
        return row
    t2 = time.perf_counter()
    if outputs is not None:
        outputs.update(zip(GOLDEN_NAMES, (*truth, *baseline), strict=True))
    try:
        actual = runner.run(call)
    except MemoryError:
        raise  # over the worker's memory cap: the isolation layer records it as `oom`
    except NotImplementedError as exc:  # the backend refused the call only when it met it
        row.update(outcome="unsupported", error=str(exc)[:2000])
        return row
    except Exception as exc:  # the backend's failure is a result, not a crash of ours
        row.update(outcome="error", error=f"{type(exc).__name__}: {exc}"[:2000],
                   t_materialise=t1 - t0, t_golden=t2 - t1)
        return row
    t3 = time.perf_counter()
    if outputs is not None:
        outputs["attention_out"], outputs["softmax_lse"] = actual
    row.update(judge_outputs(case, actual, truth, baseline))
    t4 = time.perf_counter()
    row.update(outcome="ok", error="", t_materialise=t1 - t0, t_golden=t2 - t1,
               t_runner=t3 - t2, t_diff=t4 - t3)
    return row
