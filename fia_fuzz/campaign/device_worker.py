"""The device process's one job: run a case and measure it (module-level tasks, so spawn
can import them).

A task runs inside the isolated device process (`runners/isolation.py`), next to the
device: golden, runner and differ for one case (`evaluate.measure`), or an illegal call
sent straight to the backend (`negative_task`). It returns what running the case gave,
never the case's row: the partition makes the row, its verdict's failure kind and its
bundle (`record.py`). A case that may be bundled keeps its outputs here until the next
case, and `stage_bundle_task` writes them to the bundle's temporary directory, so device
outputs never cross the process boundary except to disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.campaign.accepted import classify_accepted
from fia_fuzz.campaign.bundles import write_arrays
from fia_fuzz.campaign.evaluate import measure
from fia_fuzz.files.cases import INPUT_DIGEST
from fia_fuzz.metamorphic import check_relations, summarise
from fia_fuzz.op.case import Case
from fia_fuzz.op.digest import input_digest
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.rules.validate import validate
from fia_fuzz.runners.isolation import resolve_runner

#: The negative outcome of a call the docs forbid but the campaign's device profile allows.
ACCEPTED_BY_PROFILE = "accepted (device profile)"
#: ... and of such a call the backend rejected: the device contradicts its rule profile.
REJECTED_AGAINST_PROFILE = "rejected (device profile allows it)"

#: The outputs and materialised call of the last case evaluated with `hold`, by case id
#: (at most one case).
_HELD: dict[str, tuple[dict[str, np.ndarray], dict[str, Any]]] = {}


def _case(case: Case | str) -> Case:
    """A case sent as itself (with its computed features), or as JSON."""
    return case if isinstance(case, Case) else Case.from_json(case)


def evaluate_task(ref: tuple[str, str], case: Case | str, metamorphic: bool = False,
                  hold: bool = False) -> dict[str, Any]:
    """What running the case gives (`evaluate.measure`) and the name of the runner.

    With `metamorphic`, the case's relations are checked on the same runner
    (no golden needed, so also when the golden cannot compute the case) and
    summarised into mm_* columns (`fia_fuzz.metamorphic.summarise`). With `hold`, the
    device's and the golden's outputs stay here for `stage_bundle_task` until the next
    case starts.
    """
    _HELD.clear()
    case = _case(case)
    runner = resolve_runner(ref)
    outputs: dict[str, np.ndarray] = {}
    call: dict[str, Any] = {}
    row: dict[str, Any] = {"runner": runner.name,
                           **measure(case, runner, outputs=outputs, keep=call)}
    if metamorphic and row.get("outcome") != "error":
        source = ((outputs["attention_out"], outputs["softmax_lse"])
                  if "attention_out" in outputs else None)
        row.update(summarise(check_relations(case, runner, source_outputs=source)))
    if hold and outputs:
        _HELD[case.case_id] = outputs, call
    return row


def stage_bundle_task(case: Case | str, runner: str, directory: str) -> None:
    """Write the array files of `case`'s bundle (`bundles.write_arrays`: its held outputs,
    inputs.npz, golden.npz, repro_npu.py) into `directory`, the bundle being made."""
    case = _case(case)
    outputs, call = _HELD.pop(case.case_id, (None, None))
    write_arrays(directory, case, runner, outputs, call or None)


def negative_task(ref: tuple[str, str], case_json: Case | str, rules: str = DEFAULT
                  ) -> dict[str, Any]:
    """Send an illegal case straight to the backend: did it reject it or return something?
    (What it gave, without the case's identity and features: the partition adds those.)

    `rejected` (with the backend's message) is the good answer. A result for
    a call the docs forbid is `accepted (device profile)` when the campaign's
    rule profile `rules` (the device's own checks) holds the call legal, as
    expected (and a rejection of such a call is `rejected (device profile
    allows it)`, a finding about the profile); otherwise it is judged against
    the golden's lenient route (`accepted.classify_accepted`): accepted-correct,
    accepted-wrong (a silent wrong result) or accepted-undefined (no defined
    arithmetic).
    """
    case = _case(case_json)
    runner = resolve_runner(ref)
    row: dict[str, Any] = {"runner": runner.name}
    row["broken_rules"] = ",".join(sorted({v.rule for v in validate(**case.specs())}))
    profile_broken = {v.rule for v in validate(**case.specs(), rules=rules)}
    row.update(rules=rules, profile_broken_rules=",".join(sorted(profile_broken)))
    try:
        call = case.call()
        row[INPUT_DIGEST] = input_digest(call)
        out, lse = runner.run(call)
    except Exception as exc:  # a clean rejection is what we hope for
        contradicted = rules != DEFAULT and not profile_broken
        row.update(outcome=REJECTED_AGAINST_PROFILE if contradicted else "rejected",
                   error=f"{type(exc).__name__}: {exc}"[:2000])
        return row
    row.update(error="", accepted_shapes=f"{np.shape(out)} {np.shape(lse)}")
    if not profile_broken:
        row["outcome"] = ACCEPTED_BY_PROFILE
    else:
        row.update(classify_accepted(case, (np.asarray(out), np.asarray(lse))))
    return row
