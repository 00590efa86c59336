"""actual_seq_lengths / actual_seq_lengths_kv: per-batch valid query and KV lengths.

[V4 actualSeqLengths(Kv)] One value (broadcast), one per batch, or longer
(the first B read); packed layouts take cumulative values. Features: each
list's form and whether a batch has length 0.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.args.registry import VALUE, Arg, Param, register
from fia_fuzz.op.args.shapes import safe_feature

FORMS = ("absent", "one", "per_batch", "longer")


def _length_form(values: list[int] | None, batch: int | None) -> str:
    if values is None:
        return "absent"
    if len(values) == 1:
        return "one"
    if batch is not None and len(values) == batch:
        return "per_batch"
    return "longer"


def _act_zero(v: Any) -> bool:
    for name in ("actual_seq_lengths", "actual_seq_lengths_kv"):
        vals = v.values.get(name)
        if not vals:
            continue
        lens = safe_feature(lambda n=name: v.packed_lengths(n)) if v.packed else vals
        if lens and 0 in lens[: safe_feature(lambda: v.B, len(lens))]:
            return True
    return False


def classify(case: Any, v: Any) -> dict[str, Any]:
    b = safe_feature(lambda: v.B)
    return {"actual_q": _length_form(case.params.get("actual_seq_lengths"), b),
            "actual_kv": _length_form(case.params.get("actual_seq_lengths_kv"), b),
            "act_zero": _act_zero(v)}


ARG = register(Arg(
    name="lengths",
    params=(Param("actual_seq_lengths", VALUE, alone=lambda c: [c.s1]),
            Param("actual_seq_lengths_kv", VALUE, alone=lambda c: [c.s2])),
    features={"actual_q": FORMS, "actual_kv": FORMS, "act_zero": (False, True)},
    classify=classify,
    empty={"actual_q": "absent", "actual_kv": "absent", "act_zero": False},
    rules=("lengths",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.geometry",),
))
