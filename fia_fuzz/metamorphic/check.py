"""Run a case and its partners on one runner and judge each relation: no golden involved.

`check_relations(case, runner)` is what a campaign calls: one flat row per
(relation, partner) with the partner's id, the expected equality, the
measured differences and an outcome:
  pass / fail       compared under the relation's tolerance
  unsupported       the runner (or its API variant) cannot express one side
  error             the runner raised on one side
  not_applicable    the relation has no partner for this case (only with
                    include_not_applicable=True)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    RELATIONS,
    Call,
    NotApplicable,
    Outputs,
    Partner,
    Relation,
)
from fia_fuzz.metamorphic.equality import compare
from fia_fuzz.metamorphic.variants import variant_of
from fia_fuzz.op.case import Case
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.params import TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.op.tensors import describe
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.runners import Runner


def partner_id(case: Case, relation: str, variant: str) -> str:
    """16 hex digits naming (case, relation, variant): a partner is rebuilt from these."""
    return hashlib.sha256(f"{case.case_id}/{relation}/{variant}".encode()).hexdigest()[:16]


def case_of(call: Call, seed: int = 0, rules: str = DEFAULT) -> Case:
    """A data-free Case describing a materialised call (for `Runner.supports`)."""
    params: dict[str, Any] = {}
    for name, value in call.items():
        if name in TENSOR_ARGS:
            params[name] = [describe(v) for v in value] if isinstance(value, list) \
                else describe(value)
        elif name in VALUE_ARGS:
            arr = np.asarray(value)
            params[name] = arr.tolist() if arr.ndim == 2 else arr.reshape(-1).tolist()
        else:
            params[name] = value
    return Case(params=params, seed=seed, rules=rules)


class BuildFailed(str):
    """The reason a relation's builder crashed: a defect of the relation, reported as an error."""


def build_partners(case: Case, call: Call, relations: Iterable[Relation] | None = None
                   ) -> list[tuple[Relation, list[Partner] | str]]:
    """Each relation with its partners for this case, or the reason it does not apply.

    A builder that crashes yields a `BuildFailed` reason instead of ending the
    campaign; `check_relations` turns it into an "error" row.
    """
    out: list[tuple[Relation, list[Partner] | str]] = []
    for rel in relations if relations is not None else RELATIONS.values():
        try:
            out.append((rel, rel.build(case, call)))
        except NotApplicable as exc:
            out.append((rel, str(exc)))
        except Exception as exc:  # a defect of ours, recorded as a result
            out.append((rel, BuildFailed(f"building {rel.name} partners failed: "
                                         f"{type(exc).__name__}: {exc}")))
    return out


def _run(runner: Runner, call: Call) -> tuple[Outputs | None, str, str]:
    """(outputs, outcome, detail); outcome "" on success."""
    try:
        return runner.run(call), "", ""
    except NotImplementedError as exc:
        return None, "unsupported", f"{runner.name}: {exc}"
    except Exception as exc:  # the backend's failure is a result, not our crash
        return None, "error", f"{runner.name}: {type(exc).__name__}: {exc}"[:2000]


def _copy_call(call: Call) -> Call:
    """A copy of the call whose arrays (and tensor lists) are fresh."""
    return {k: ([np.copy(e) for e in v] if isinstance(v, list) and v
                and isinstance(v[0], np.ndarray) else np.copy(v) if isinstance(v, np.ndarray)
                else v) for k, v in call.items()}


def _mutated(call: Call, before: Call) -> list[str]:
    """Names of the inputs of `call` whose contents differ from the copy `before`."""
    changed = []
    for k, old in before.items():
        new = call[k]
        if isinstance(old, np.ndarray):
            same = np.asarray(new).tobytes() == old.tobytes()
        elif isinstance(old, list) and old and isinstance(old[0], np.ndarray):
            same = all(a.tobytes() == b.tobytes() for a, b in zip(new, old, strict=True))
        else:
            same = new == old
        if not same:
            changed.append(k)
    return changed


def check_relations(case: Case, runner: Runner, relations: Iterable[str] | None = None, *,
                    source_outputs: Outputs | None = None,
                    include_not_applicable: bool = False) -> list[dict[str, Any]]:
    """One row per (relation, partner) of `case` run on `runner` (never raises for a legal case).

    `relations` selects by name (default: the whole catalogue); `source_outputs`
    reuses the runner's result for the case when the caller already has it.
    """
    rels = [RELATIONS[n] for n in relations] if relations is not None \
        else list(RELATIONS.values())
    call = case.call()
    base = {"case_id": case.case_id, "runner": runner.name}
    out_spec, _ = output_specs(case.view())
    lse_flag = bool(case.attr("softmax_lse_flag"))
    rows: list[dict[str, Any]] = []
    source_state: tuple[Outputs | None, str, str] | None = None
    if source_outputs is not None:
        source_state = (source_outputs, "", "")
    for rel, built in build_partners(case, call, rels):
        if isinstance(built, BuildFailed):
            rows.append({**base, "relation": rel.name, "variant": "", "partner_id": "",
                         "outcome": "error", "detail": str(built)})
            continue
        if isinstance(built, str):
            if include_not_applicable:
                rows.append({**base, "relation": rel.name, "variant": "", "partner_id": "",
                             "outcome": "not_applicable", "detail": built})
            continue
        for partner in built:
            row = {**base, "relation": rel.name, "variant": partner.variant,
                   "partner_id": partner_id(case, rel.name, partner.variant),
                   "partner_runner": runner.name}
            rows.append(row)
            if source_state is None:
                ok, why = runner.supports(case)
                # a copy: partners share arrays with `call`, and a mutating
                # runner must not corrupt them (run_twice reports the mutation)
                source_state = _run(runner, _copy_call(call)) if ok else \
                    (None, "unsupported", why)
            src, outcome, detail = source_state
            if src is None:
                row.update(outcome=outcome, detail=f"source: {detail}")
                continue
            row.update(_check_partner(case, runner, partner, src, out_spec.dtype, lse_flag))
    return rows


def _check_partner(case: Case, runner: Runner, partner: Partner, source: Outputs,
                   out_dtype: str, lse_flag: bool) -> dict[str, Any]:
    target: Runner | None = runner
    if partner.api is not None:
        target, why = variant_of(runner, partner.api)
        if target is None:
            return {"outcome": "unsupported", "detail": why}
    assert target is not None
    ok, why = target.supports(case_of(partner.call, case.seed, case.rules))
    if not ok:
        return {"partner_runner": target.name, "outcome": "unsupported",
                "detail": f"partner: {why}"}
    before = _copy_call(partner.call) if partner.inputs_unchanged else None
    t0 = time.perf_counter()
    got, outcome, detail = _run(target, partner.call)
    elapsed = time.perf_counter() - t0
    row: dict[str, Any] = {"partner_runner": target.name, "t_partner": elapsed}
    if got is None:
        row.update(outcome=outcome, detail=f"partner: {detail}")
        return row
    partner_lse = bool(partner.call.get("softmax_lse_flag", False))
    try:
        mapped = partner.source_out(source), partner.partner_out(got)
    except (ValueError, IndexError) as exc:  # an output of the wrong shape cannot be mapped
        row.update(outcome="fail", detail=f"outputs could not be put in one frame "
                   f"({type(exc).__name__}: {exc}); shapes {np.shape(source[0])} and "
                   f"{np.shape(got[0])}")
        return row
    row.update(compare(*mapped, partner.tolerance, out_dtype, lse=lse_flag and partner_lse))
    if partner.signature is not None and row.get("outcome") == "fail":
        row["signature"] = partner.signature(case, {"runner": runner.name, **row})
    if before is not None:
        changed = _mutated(partner.call, before)
        if changed:
            row.update(outcome="fail", detail=(row.get("detail", "") + "; " if row.get(
                "detail") else "") + f"the run modified its input(s) {changed}")
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Flat `mm_*` columns of one case's relation rows, to sit next to its golden verdict.

    mm_outcome is "fail" when any relation failed or errored, else "pass" when
    any was judged, else "unsupported" (or "none" without rows); mm_rows keeps
    every row as JSON so a report can expand them.
    """
    counts = {k: sum(r["outcome"] == k for r in rows)
              for k in ("pass", "fail", "error", "unsupported")}
    worst = 0.0
    for r in rows:
        if r["outcome"] in ("pass", "fail") and "out_max_abs_diff" in r:
            diff, allowed = r["out_max_abs_diff"], r["out_allowed"]
            ratio = diff / allowed if allowed else (0.0 if diff == 0 else float("inf"))
            worst = max(worst, ratio if ratio == ratio else float("inf"))
    if counts["fail"] or counts["error"]:
        outcome = "fail"
    elif counts["pass"]:
        outcome = "pass"
    else:
        outcome = "unsupported" if rows else "none"
    failed = [f"{r['relation']}/{r['variant']}: {r.get('detail', '')}" for r in rows
              if r["outcome"] in ("fail", "error")]
    return {"mm_outcome": outcome, **{f"mm_{k}": v for k, v in counts.items()},
            "mm_worst_ratio": worst, "mm_failed": "; ".join(failed)[:2000],
            "mm_rows": json.dumps(rows, default=str)}
