"""actual_seq_lengths / actual_seq_lengths_kv: per-batch valid query and KV lengths.

[V4 actualSeqLengths(Kv)] One value (broadcast), one per batch, or longer
(the first B read); packed layouts take cumulative values. Features: each
list's form and whether a batch has length 0. Forms `actual_seq_lengths_form` /
`actual_seq_lengths_kv_form`: absent (the full S), given with every batch's length the
full S (the same call spelled out), or set (packed cumulative lengths, paged and
tensor-list KV, any shorter batch); strategies/draft.py `lengths` draws the full S often
(a free length shrinks toward it).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import VALUE, Arg, Param, register
from fia_fuzz.op.shape_forms import safe_feature

FORMS = ("absent", "one", "per_batch", "longer")


def _length_form(values: list[int] | None, batch: int | None) -> str:
    if values is None:
        return "absent"
    if len(values) == 1:
        return "one"
    if batch is not None and len(values) == batch:
        return "per_batch"
    return "longer"


def _full(case: Any, v: Any, name: str) -> bool:
    """Whether `name` gives every batch the full S of its padded tensor (non-packed,
    contiguous KV)."""
    if v.packed or (name.endswith("_kv") and (v.paged or isinstance(case.params["key"], list))):
        return False
    b, full = v.B, (v.S2 if name.endswith("_kv") else v.S1)
    vals = case.params[name]
    return all(x == full for x in (vals if len(vals) == 1 else vals[:b]))


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    out = {}
    for name in ("actual_seq_lengths", "actual_seq_lengths_kv"):
        if case.params.get(name) is None:
            out[f"{name}_form"] = "absent"
        else:
            out[f"{name}_form"] = "full" if safe_feature(lambda n=name: _full(case, v, n),
                                                          False) else "set"
    return out


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
    forms={"actual_seq_lengths_form": ("absent", "full", "set"),
           "actual_seq_lengths_kv_form": ("absent", "full", "set")},
    form_of=form_of,
    features={"actual_q": FORMS, "actual_kv": FORMS, "act_zero": (False, True)},
    classify=classify,
    empty={"actual_q": "absent", "actual_kv": "absent", "act_zero": False},
    rules=("lengths",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.geometry",),
))
