"""The tasks a campaign sends to its isolated workers (module-level, so spawn can import them).

A task runs inside the worker process, next to the device: golden, runner and
differ for one case, and the failure bundle when the case fails, so device
outputs never cross the process boundary except to disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.campaign.accepted import classify_accepted
from fia_fuzz.campaign.bundles import write_bundle
from fia_fuzz.campaign.evaluate import base_row, evaluate
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.metamorphic import check_relations, summarise
from fia_fuzz.op.case import Case
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.rules.validate import validate
from fia_fuzz.runners.isolation import resolve_runner

#: The negative outcome of a call the docs forbid but the campaign's device profile allows.
ACCEPTED_BY_PROFILE = "accepted (device profile)"
#: ... and of such a call the backend rejected: the device contradicts its rule profile.
REJECTED_AGAINST_PROFILE = "rejected (device profile allows it)"


def _case(case: Case | str) -> Case:
    """A case sent as JSON, or as itself when it carries stored tensors."""
    return case if isinstance(case, Case) else Case.from_json(case)


def evaluate_task(ref: tuple[str, str], case_json: Case | str, bundle_dir: str | None,
                  extra: dict[str, Any] | None = None, metamorphic: bool = False
                  ) -> dict[str, Any]:
    """The row of one case (plus `extra`); its bundle goes under `bundle_dir` if it fails.

    With `metamorphic`, the case's relations are checked on the same runner
    (no golden needed, so also when the golden cannot compute the case) and
    summarised into mm_* columns (`fia_fuzz.metamorphic.summarise`).
    """
    case = _case(case_json)
    runner = resolve_runner(ref)
    outputs: dict[str, np.ndarray] = {}
    row = evaluate(case, runner, outputs=outputs)
    if metamorphic and row.get("outcome") != "error":
        source = ((outputs["attention_out"], outputs["softmax_lse"])
                  if "attention_out" in outputs else None)
        row.update(summarise(check_relations(case, runner, source_outputs=source)))
    row.update(extra or {})
    if bundle_dir is not None and failure_kind(row):
        row["bundle"] = str(write_bundle(bundle_dir, case, row, outputs or None))
    return row


def negative_task(ref: tuple[str, str], case_json: Case | str, rules: str = DEFAULT
                  ) -> dict[str, Any]:
    """Send an illegal case straight to the backend: did it reject it or return something?

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
    row = base_row(case, runner.name)
    row["broken_rules"] = ",".join(sorted({v.rule for v in validate(**case.specs())}))
    profile_broken = {v.rule for v in validate(**case.specs(), rules=rules)}
    row.update(rules=rules, profile_broken_rules=",".join(sorted(profile_broken)))
    try:
        out, lse = runner.run(case.call())
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
