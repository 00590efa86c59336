"""One case, one path: where a campaign makes a case's row, failure kind and bundle.

Every case a partition runs (drawn, replayed, steered, shrunk, a shrink's candidate)
goes through `evaluate_case`: its identity and features (`evaluate.base_row`, the
features computed once per Case object and carried with the pickled case), what the
device process measured (`device_worker.py`, or the isolation layer's `crashed`,
`timeout`, `oom`, or `skipped` for a case the device cannot hold), the campaign's tags,
`harness` when the tool itself failed around the case (the device process could not
start, or the task raised outside the backend's call: no failure kind, never bundled
or shrunk, and the campaign's exit status says so),
then the failure kind (once), the signature and, when the case fails and its signature
has a free slot (`bundle_quota.BundleQuota`: the first K of each signature in the run,
within the run's byte budget), the bundle: written here (`bundles.write_bundle`), its
array files staged by the device process that still holds the outputs. A failing row
without a bundle of its own points to its signature's (`signature_bundle`). A bundled
case that crashed or hung its device process is materialised again here for its input
digest, which the device process took with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fia_fuzz.campaign.bundles import write_bundle
from fia_fuzz.campaign.config import SKIPPED, device_shortfall
from fia_fuzz.campaign.device_worker import evaluate_task, negative_task, stage_bundle_task
from fia_fuzz.campaign.evaluate import base_row
from fia_fuzz.campaign.state import PartitionState
from fia_fuzz.diff.signature import failure_kind, signature
from fia_fuzz.files.cases import INPUT_DIGEST
from fia_fuzz.op.case import Case
from fia_fuzz.op.digest import input_digest
from fia_fuzz.runners.isolation import HARNESS, TaskResult, resolve_runner

#: Outcomes whose device process died with the case's materialised inputs: a bundle of such
#: a case materialises it again here for its input digest.
DIED = ("crashed", "timeout")
#: When a case gets a bundle: when it fails (and its signature has a free slot), always (a
#: shrink's minimal case, beside its steps), or never (a shrink's candidates).
BUNDLE_IF_FAILING, BUNDLE_ALWAYS, BUNDLE_NEVER = "failing", "always", "never"


@dataclass
class Evaluated:
    """A case's row, its failure kind (None: it did not fail), and whether the device
    process measured it (False: it crashed, hung, ran out of memory or was skipped)."""

    row: dict[str, Any]
    kind: str | None
    measured: bool


def evaluate_case(st: PartitionState, case: Case, tags: dict[str, Any], *, timeout: float,
                  bundle: str = BUNDLE_NEVER, drawn: dict[str, Any] | None = None,
                  budget_cut: bool = False) -> Evaluated | None:
    """Run `case` in the partition's device process and make its row; None when the budget
    cut it off (`budget_cut`: the timeout was the budget's, not the case's).

    `drawn` (how the case was drawn) goes into a failing row only, for the shrink and
    the next night's replay.
    """
    cfg = st.cfg
    row = base_row(case, cfg.runner)
    hold = bundle != BUNDLE_NEVER and not cfg.negative
    working = 0 if cfg.device_memory is None else resolve_runner(st.ref).working_bytes(case)
    too_big = device_shortfall(case, cfg.device_memory, cfg.sharing(st.job.worker), working)
    if too_big:  # never sent to the device; a row all the same, so nothing is lost
        res = TaskResult(SKIPPED, message=too_big)
    elif cfg.negative:
        res = st.worker.call(negative_task, st.ref, case, cfg.rules, timeout=timeout)
    else:
        res = st.worker.call(evaluate_task, st.ref, case, cfg.metamorphic, hold,
                             timeout=timeout)
    if res.outcome == "timeout" and budget_cut:
        return None  # not a finished case: the budget ran out under it
    if res.ok:
        row.update(res.value)
    elif res.outcome in ("error", HARNESS):  # the tool failed around the case, not the backend
        row.update(outcome=HARNESS, error=f"harness: {res.message}")
    else:
        row.update(outcome=res.outcome, error=res.message)
    row.update(tags)
    kind = failure_kind(row)
    if kind:
        row.update(drawn or {})
    if kind or bundle == BUNDLE_ALWAYS:
        row["signature"] = signature(row)
    if (kind and bundle == BUNDLE_IF_FAILING) or bundle == BUNDLE_ALWAYS:
        _bundle(st, case, row, res, timeout, always=bundle == BUNDLE_ALWAYS, held=hold)
    return Evaluated(row, kind, res.ok)


def _bundle(st: PartitionState, case: Case, row: dict[str, Any], res: TaskResult,
            timeout: float, always: bool, held: bool) -> None:
    """Write the case's bundle if it gets one (`always`, or a free slot of its signature);
    `bundle` in the row then, else `signature_bundle`: its signature's first bundle."""
    quota, sig = st.quota, str(row["signature"])
    slot = quota.always(case.case_id) if always else \
        None if quota.exhausted else quota.claim(sig, case.case_id)
    made = None
    if slot is not None:
        if res.outcome in DIED and INPUT_DIGEST not in row:
            row[INPUT_DIGEST] = input_digest(case.call())  # its arrays died with the process
        staged = _stage(st, case, row, timeout) if res.ok and held else None
        try:
            made = write_bundle(st.cfg.out, case, row, arrays=staged,
                                admit=lambda n: quota.admit(n, always))
        finally:
            if made is None:
                quota.release(slot)
    if made is not None:
        row["bundle"] = str(made)
    elif quota.first(sig):
        row["signature_bundle"] = quota.first(sig)


def _stage(st: PartitionState, case: Case, row: dict[str, Any], timeout: float) -> Any:
    """The bundle's array writer: the device process, which holds the case's outputs."""
    runner = str(row.get("runner_spec") or row.get("runner"))

    def arrays(directory: Path) -> bool:
        try:
            res = st.worker.call(stage_bundle_task, case, runner, str(directory),
                                 timeout=timeout)
        except BaseException:  # Ctrl-C or SIGTERM: stop its writes before they are removed
            st.worker.close(grace=0.0)
            raise
        return res.ok

    return arrays
