"""What a backend returned for a call the docs forbid: correct, wrong, or undefined.

In negative mode an accepted illegal call is compared with the golden's
result for it through the explicit lenient route (`golden.lenient`):
`accepted-correct` when it passes the default policy (or is inconclusive),
`accepted-wrong` when it fails (a silent wrong result, the worst finding),
`accepted-undefined` when the call has no defined arithmetic. A check that
decides first (e.g. the call is legal under a device rule profile) goes in
front of `classify_accepted`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.diff import DEFAULT_POLICY, judge
from fia_fuzz.golden.lenient import Undefined, unchecked_golden
from fia_fuzz.op.case import Case

ACCEPTED = ("accepted-correct", "accepted-wrong", "accepted-undefined")


def classify_accepted(case: Case, actual: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """`outcome` (one of ACCEPTED) and the metrics behind it, for an accepted illegal case."""
    call = case.call()
    try:
        truth = unchecked_golden(**call, precision="fp64")
        baseline = unchecked_golden(**call, precision="device")
    except Undefined as exc:
        return {"outcome": "accepted-undefined", "accepted_detail": str(exc)}
    shapes = (np.shape(actual[0]), np.shape(actual[1]))
    if shapes[0] != np.shape(baseline[0]):
        return {"outcome": "accepted-wrong", "accepted_detail":
                f"attention_out shape {shapes[0]}, golden {np.shape(baseline[0])}"}
    try:
        features = case.features()
    except Exception:  # an illegal case can defeat feature extraction; judge without them
        features = {}
    lse = bool(case.attr("softmax_lse_flag")) and shapes[1] == np.shape(baseline[1])
    row = judge(actual, truth, baseline, np.asarray(baseline[0]).dtype.name, lse=lse,
                features=features)
    wrong = row.get("verdict") == "fail"
    return {**row, "outcome": "accepted-wrong" if wrong else "accepted-correct",
            "accepted_detail": str(row.get(f"reason_{DEFAULT_POLICY}", "")) if wrong else ""}
