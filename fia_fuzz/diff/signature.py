"""Failure signatures: one line per distinct bug instead of one row per failing case.

A signature is the feature cell, the failure kind and the error's shape, read
from a result row's metrics. An output whose finiteness differs from the truth's
is its own kind, `nonfinite:<class>` (NaN or Inf lost, gained or of the other
sign: metrics.NONFINITE_CLASSES), shaped by the output it is in (out, lse); a
failing verdict otherwise has the functional failure (shape, an inexact invalid
row), saturation (the worst element at the
output dtype's extreme where the golden is not), `lse only` (attention_out
passes, softmax_lse fails), or where attention_out's worst element sits among
the query-row tiles (the A2 kernels tile query rows in blocks of 32/64/128,
production-calls.md "Tile edges"): in the last partial tile (`tail`), on a
tile's first or last row (`tile edge`), or elsewhere (`interior`). A runner
error is signed by its message with the numbers taken out, a crash by how
the worker died.

A negative-mode row (an illegal call sent as is) fails when the backend accepted it
with a wrong result (`accepted-wrong`) or crashed or hung on it; its signature names
the broken rule and the side of the rule's bound the call broke (`broken_side`, where
the breaker says), not a feature cell: `precise.range/above accepted-wrong: ...`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fia_fuzz.diff.policies import DEFAULT_POLICY
from fia_fuzz.op.geometry import SEQ_AXIS

#: Outcomes that are failures of the backend even without a verdict.
FAILED_OUTCOMES = ("crashed", "timeout", "error")
#: Negative-mode outcomes that are findings: an illegal call accepted with a wrong result,
#: or one that crashed or hung the backend (a rejection is the good answer).
NEGATIVE_FAILED = ("accepted-wrong", "crashed", "timeout")
#: The feature axes of a signature's cell (the campaign's failing cell).
CELL_AXES = ("layout", "q_dtype", "branch")
#: The smallest query-row tile of the A2 kernels (SOUTER 32/64/128): every larger tile's
#: edges are edges of these.
ROW_TILE = 32
#: The largest finite value of each output dtype (saturation).
DTYPE_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
             "float32": 3.4028234663852886e38, "int8": 127.0}


#: The failure kind of a row whose output differs from the truth in finiteness (NaN where
#: the truth is finite or finite where it is NaN, an Inf lost or of the other sign): its
#: own kind whatever the numeric metrics say, `nonfinite:<class>` (metrics.NONFINITE_CLASSES).
NONFINITE = "nonfinite"


def nonfinite_class(row: Mapping[str, Any]) -> tuple[str, str]:
    """(tensor prefix, class) of the first output whose finiteness differs, or ('', '')."""
    for prefix in ("out", "lse"):
        if not (_num(row, f"{prefix}_nonfinite_mismatch")
                or _num(row, f"{prefix}_nan_actual_only")):
            continue
        cls = row.get(f"{prefix}_nonfinite_class")
        if isinstance(cls, str):
            if cls:
                return prefix, cls
            continue  # only invalid rows differ: an invalid-row failure
        # a row judged before the classes were counted
        return prefix, "finite_to_nan" if _num(row, f"{prefix}_nan_actual_only") else "mismatch"
    return "", ""


def is_wrong_result(kind: str | None) -> bool:
    """A kind that is a wrong result (a failing verdict), not a crash, hang or error."""
    return kind == "fail" or str(kind).startswith(NONFINITE + ":")


def failure_kind(row: Mapping[str, Any]) -> str | None:
    """'fail', 'nonfinite:<class>', 'crashed', 'timeout' or 'error' for a failing row (a
    negative-mode row: one of NEGATIVE_FAILED), None otherwise."""
    if row.get("mode") == "negative":
        return str(row["outcome"]) if row.get("outcome") in NEGATIVE_FAILED else None
    if row.get("outcome") in FAILED_OUTCOMES:
        return str(row["outcome"])
    _, cls = nonfinite_class(row)
    if cls:
        return f"{NONFINITE}:{cls}"
    if row.get("verdict") == "fail":
        return "fail"
    return None


def _num(row: Mapping[str, Any], key: str) -> float:
    try:
        v = float(row.get(key) or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if v != v else v


def _functional(row: Mapping[str, Any]) -> str:
    for prefix in ("out", "lse"):
        if row.get(f"{prefix}_shape_mismatch") is True or \
                str(row.get(f"{prefix}_shape_mismatch")) == "True":
            return f"{prefix} shape"
        if _num(row, f"{prefix}_invalid_mismatch"):
            return f"{prefix} invalid row"
    return ""


def _saturated(row: Mapping[str, Any]) -> bool:
    top = DTYPE_MAX.get(str(row.get("out_dtype")))
    if top is None:
        return False
    actual, golden = abs(_num(row, "out_worst_actual")), abs(_num(row, "out_worst_golden"))
    return actual >= top and golden < top


def _where(row: Mapping[str, Any]) -> str:
    """tail / tile edge / interior / one tile: the worst out element's query row."""
    axis = SEQ_AXIS.get(str(row.get("out_layout") or row.get("layout")))
    index = [int(i) for i in re.findall(r"-?\d+", str(row.get("out_worst_index") or ""))]
    s1 = int(_num(row, "S1"))
    if axis is None or axis >= len(index) or s1 <= ROW_TILE:
        return "one tile"
    r = index[axis]
    if s1 % ROW_TILE and r >= s1 - s1 % ROW_TILE:
        return "tail"
    if r % ROW_TILE in (0, ROW_TILE - 1):
        return "tile edge"
    return "interior"


def error_shape(row: Mapping[str, Any], policy: str = DEFAULT_POLICY) -> str:
    """The shape of a failing row's error (see the module doc); '' for a passing row."""
    kind = failure_kind(row)
    if kind is None:
        return ""
    if kind == "error":
        return "error: " + re.sub(r"\d+(\.\d+)?", "N", str(row.get("error", "")))[:80]
    if kind == "crashed":
        return "crashed: " + str(row.get("error", ""))[:80]
    if kind == "timeout":
        return "timeout"
    if kind.startswith(NONFINITE + ":"):
        return nonfinite_class(row)[0]
    functional = _functional(row)
    if functional:
        return functional
    if row.get(f"out_verdict_{policy}") != "fail" and row.get(f"lse_verdict_{policy}") == "fail":
        return "lse only"
    if _saturated(row):
        return "saturation"
    return f"worst element: {_where(row)}"


def negative_cell(row: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """What a negative finding is about: the rule its call broke and the side of the
    rule's bound (a campaign shrinks it only to cases breaking the same, on that side)."""
    side = row.get("broken_side")
    return (("broken_rules", str(row.get("broken_rules") or "")),
            ("broken_side", side if isinstance(side, str) else ""))


def signature(row: Mapping[str, Any], cell_axes: tuple[str, ...] = CELL_AXES) -> str:
    """`layout/q_dtype/branch kind: error shape` of a failing row (a negative row:
    `rule[/side] kind: ...`); '' for a passing row."""
    kind = failure_kind(row)
    if kind is None:
        return ""
    if row.get("mode") == "negative":
        rule, side = (v for _, v in negative_cell(row))
        shape = error_shape({**row, "mode": "precision"}) if kind == "accepted-wrong" else \
            error_shape(row)
        detail = shape or re.sub(r"\d+", "N", str(row.get("accepted_detail", "")))[:80]
        return f"{rule}{'/' + side if side else ''} {kind}: {detail}"
    cell = "/".join(str(row.get(a)) for a in cell_axes)
    return f"{cell} {kind}: {error_shape(row)}"
