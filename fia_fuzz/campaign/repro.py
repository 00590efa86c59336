"""`fia-fuzz repro`: rerun one case from a bundle, a case.json or a case id.

A bundle with stored device outputs reproduces anywhere: the golden is
recomputed locally (bit-identical inputs, op/values.py) and the same
judging prints the same diff the campaign recorded. With `--runner` (or for
a case without stored outputs) the case runs live on that backend.

Before anything runs, the case is materialised once and its input digest compared with
the one the campaign recorded: different inputs are a different case, whatever the
verdict, so repro stops (`InputsDiffer`) and names the versions that moved between the
recorded environment and this one.

The golden's bits are pinned per machine kind (numerics/environment.py `machine_kind`):
on another kind than the campaign's (or one it did not record) its metrics may move in
their last digits. When they do and no verdict moved, the golden recomputed here is
compared with the bundle's stored one within the cross-kind bound
(numerics/cross_kind.py): within it, repro says the diff is the same within that bound
and that the golden's bits are not pinned across the two kinds, not that it differs.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from fia_fuzz.campaign.bundles import GOLDEN_NAMES, Bundle, find_bundle, load_bundle, row_bundle
from fia_fuzz.campaign.evaluate import evaluate, golden_pair, judge_outputs
from fia_fuzz.campaign.issue import value_text, worst_element
from fia_fuzz.diff.signature import NONFINITE, failure_kind, signature
from fia_fuzz.files.cases import InputError, Recorded, load_case, load_recorded, recorded
from fia_fuzz.numerics.cross_kind import bound, excess, scale_and_gap
from fia_fuzz.numerics.environment import differences, machine_kind
from fia_fuzz.op.case import Case
from fia_fuzz.op.digest import input_digest
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.rules.validate import case_violations
from fia_fuzz.runners import Runner

DEFAULT_RUNNER = "torch-sdpa"


class InputsDiffer(Exception):
    """The inputs materialised here differ from those recorded: not the same case."""


def resolve(ref: str, results: list[str]
            ) -> tuple[Case, Bundle | None, str | None, Recorded]:
    """(case, its bundle if any, the runner that recorded it if known, its recorded input
    digest and environment)."""
    path = Path(ref)
    if path.is_dir() and (path / "case.json").exists():
        return _from_bundle(load_bundle(path))
    if path.is_file():
        return load_case(path), None, None, load_recorded(path)
    found = find_bundle(ref, results)
    if found is not None:
        return _from_bundle(load_bundle(found))
    row = row_bundle(ref, results)  # a failing row past its signature's first bundles, ...
    if row is None:
        missing = [d for d in results if not Path(d).is_dir()]
        raise InputError(f"{ref!r} is neither a bundle, a case file nor a case id in "
                         f"{[d for d in results if d not in missing]}"
                         + (f" ({', '.join(missing)}: no such directory)" if missing else ""))
    return _from_bundle(row)


def _from_bundle(b: Bundle) -> tuple[Case, Bundle, str | None, Recorded]:
    """A bundle's case; what it recorded of its inputs from case.json, else from its row."""
    record = b.recorded if b.recorded.digest is not None else \
        recorded(b.metrics, str(b.path / "metrics.json"))
    return b.case, b, b.metrics.get("runner_spec") or b.metrics.get("runner"), record


def check_inputs(record: Recorded, digest: str) -> str:
    """The line repro prints about its inputs; InputsDiffer when `digest` (of the inputs
    materialised here) is not the recorded one, naming the versions that differ."""
    if record.digest is None:
        return (f"input digest {digest}: none recorded with this case (a case file written "
                "by hand or by import-msprobe, a case that ran out of memory, or one "
                "written before digests were recorded), so its inputs go unchecked")
    if record.digest == digest:
        return f"input digest {digest}: the same as recorded"
    if record.environment is None:
        moved = "no environment recorded to compare with this one"
    else:
        changed = differences(record.environment)
        moved = ("versions that differ (recorded -> here): " + ", ".join(changed)) if changed \
            else "none of the recorded versions differ: the code of fia-fuzz moved"
    raise InputsDiffer(f"the inputs differ from the recorded case: not the same case (input "
                       f"digest {digest}, recorded {record.digest}); {moved}")


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f


def format_row(row: dict[str, Any]) -> list[str]:
    """The diff as printed by repro: outcome, verdicts, then every metric."""
    keys = ["outcome", "error", "verdict", "error_ratio"]
    keys += sorted(k for k in row if k.startswith("verdict_"))
    keys += sorted(k for k in row if k.startswith(("out_", "lse_")))
    return [f"{k:>32}: {row[k]}" for k in keys if k in row and row[k] not in (None, "")]


def compare_recorded(row: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    """Metrics whose value differs from the campaign's record (empty: same diff)."""
    diffs = []
    for k, v in row.items():
        if not k.startswith(("out_", "lse_", "verdict")) or k not in recorded:
            continue
        a, b = _num(v), _num(recorded[k])
        if a is not None and b is not None:
            same = a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9)
        else:
            same = str(v) == str(recorded[k])
        if not same:
            diffs.append(f"{k}: recorded {recorded[k]}, now {v}")
    return diffs


def golden_off_bound(bundle: Bundle, truth: Any, baseline: Any) -> str | None:
    """Why the golden recomputed here (`truth`, `baseline`) is not within the cross-kind
    bound of the one stored in the bundle's golden.npz, or None when it is; a bundle
    without a stored golden says so."""
    path = bundle.path / "golden.npz"
    if not path.exists():
        return "the bundle stores no golden to compare with"
    try:
        with np.load(path) as z:
            stored = [z[n] for n in GOLDEN_NAMES]
    except (OSError, ValueError, KeyError) as exc:
        return f"cannot read {path} ({exc})"
    out_dtype = output_specs(bundle.case.view())[0].dtype
    problems = []
    for i, (part, dtype) in enumerate((("attention_out", out_dtype), ("softmax_lse", np.float32))):
        ref_truth, ref_device = stored[i], stored[2 + i]
        scale, gap = scale_and_gap(ref_truth, ref_device)
        gap = min(gap, scale_and_gap(truth[i], baseline[i])[1])  # neither side widens it
        # a bundle may keep the fp64 ideal of a 16-bit output as float32 (bundles.py):
        # then float32's rounding bounds it, not float64's
        ideal = None if ref_truth.dtype == np.float64 else ref_truth.dtype
        for tag, here, ref, dt in (("fp64", truth[i], ref_truth, ideal),
                                   ("device", baseline[i], ref_device, dtype)):
            why = excess(np.asarray(here), ref, bound(dt, scale, gap))
            if why:
                problems.append(f"{tag} {part}: {why}")
    return "; ".join(problems) or None


def record_lines(row: dict[str, Any], bundle: Bundle, record: Recorded,
                 golden: tuple[Any, Any] | None) -> list[str]:
    """What repro says of its diff against the campaign's record: the same, the same
    within the cross-kind bound (another machine kind, no verdict moved, the golden
    recomputed here, `golden`, within the bound of the stored one), or how it differs."""
    diffs = compare_recorded(row, bundle.metrics)
    if not diffs:
        return ["same diff as recorded by the campaign"]
    here = machine_kind()
    there = machine_kind(record.environment or {})
    moved_verdict = any("verdict" in d.split(":")[0] for d in diffs)
    if golden is not None and there != here and not moved_verdict:
        truth, baseline = golden
        off = golden_off_bound(bundle, truth, baseline)
        kinds = (f"the campaign's {there or 'not named by its recorded environment'}, "
                 f"here {here}")
        if off is None:
            return ["same diff as recorded by the campaign, within the cross-kind bound: the "
                    f"golden's bits are not pinned across machine kinds ({kinds}); metrics that "
                    "moved:", *(f"  {d}" for d in diffs)]
        return ["differs from the campaign's record:", *(f"  {d}" for d in diffs),
                f"  the golden recomputed here is not within the cross-kind bound of the "
                f"stored one ({kinds}): {off}"]
    return ["differs from the campaign's record:", *(f"  {d}" for d in diffs)]


def headline(row: dict[str, Any], case: Case | None = None,
             out: tuple[np.ndarray, np.ndarray] | None = None) -> list[str]:
    """The verdict, the one-line reason (the failure's signature with the case's cell, as
    JUnit names it) and the worst output element: what a kernel engineer reads first.
    With `out` (attention_out, its fp64 golden) the element of a non-finite failure is one
    whose finiteness differs, as `report --issue` names it (`issue.worst_element`)."""
    full = {**(case.features() if case is not None else {}), **row}
    kind = failure_kind(full)
    lines = [f"verdict: {row.get('verdict') or row.get('outcome')}"
             + (f"  ({signature(full)})" if kind else "")]
    if row.get("outcome") not in (None, "ok") and row.get("error"):
        lines.append(f"reason: {' '.join(str(row['error']).split())[:300]}")
    if out is not None and str(kind).startswith(NONFINITE) and out[0].shape == out[1].shape:
        at, why = worst_element(np.asarray(out[0]), np.asarray(out[1]))
        lines.append(f"worst element: out{at} = {value_text(float(out[0][at]))}, golden "
                     f"{value_text(float(out[1][at]))} ({why})")
    elif row.get("out_worst_index") not in (None, ""):
        lines.append(f"worst element: out{row['out_worst_index']} = {row.get('out_worst_actual')}"
                     f", golden {row.get('out_worst_golden')} (max abs error "
                     f"{row.get('out_max_abs')})")
    return lines


def _live_runner(name: str, bundle: Bundle | None) -> Runner:
    """The runner `name`, available here, or InputError saying why not."""
    from fia_fuzz.runners import RunnerSpecError, get_runner

    try:
        r = get_runner(name)
    except RunnerSpecError as exc:
        raise InputError(str(exc)) from None
    ok, why = r.available()
    if not ok:
        raise InputError(f"runner {name!r} is not available here: {why}"
                         + ("" if bundle is None or bundle.outputs is None
                            else " (drop --runner to use the stored device output)"))
    return r


def reproduce(ref: str, runner: str | None, results: list[str],
              stream: TextIO | None = None, features: bool = False) -> int:
    """Print the verdict, its reason and worst element, then the diff (and with `features`
    the case's features); exit status 1 when it (still) fails, else 0. InputsDiffer, before
    anything runs, when the case's inputs are not those recorded (`check_inputs`)."""
    out = stream or sys.stdout
    case, bundle, recorded_runner, record = resolve(ref, results)
    illegal = case_violations(case)
    if illegal:  # refused before its tensors are allocated
        raise InputError(f"{ref}: illegal case, not run: "
                         + "; ".join(f"[{v.rule}] {v.message}" for v in illegal))
    stored = bundle.outputs if runner is None and bundle is not None else None
    name = runner or recorded_runner or DEFAULT_RUNNER
    live = _live_runner(name, bundle) if stored is None else None
    call = case.call()
    inputs = check_inputs(record, input_digest(call))
    out.write(f"case {case.case_id}\n{inputs}\n")
    if bundle is not None and bundle.of_row:
        out.write(f"the row of {case.case_id} in {bundle.path}; no bundle of its own"
                  + (f", its signature's: {bundle.signature_bundle}"
                     if bundle.signature_bundle else "") + "\n")
    if live is not None:
        out.write(f"mode: live on {name}\n")
        arrays: dict[str, np.ndarray] = {}
        row = evaluate(case, live, arrays, call=call)
        pair = (arrays["attention_out"], arrays["attention_out_fp64"]) \
            if "attention_out" in arrays else None
    else:
        assert stored is not None and bundle is not None  # no live runner: the stored output
        out.write(f"mode: stored device output of {recorded_runner} from {bundle.path}; "
                  "golden recomputed here\n")
        truth, baseline = golden_pair(call, case.rules)
        row = {"outcome": "ok", **judge_outputs(case, stored, truth, baseline)}
        pair = (stored[0], truth[0])
    for line in headline(row, case, pair) + format_row(row):
        out.write(line + "\n")
    if bundle is not None and bundle.metrics:
        lines = record_lines(row, bundle, record, None if live else (truth, baseline))
        out.write("".join(line + "\n" for line in lines))
    if features:
        out.write("features:\n" + "".join(f"  {k:>14}: {v}\n"
                                          for k, v in case.features().items()))
    return 1 if failure_kind(row) else 0
