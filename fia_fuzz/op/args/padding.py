"""query_padding_size / kv_padding_size: left padding of query and KV rows [V4 §左padding].

Shape (1) or (B); with actual_seq_lengths(_kv) the valid rows sit at the
bottom of S; excludes paged and tensor-list KV, prefix and int8 output.
Forms: `*_padding_size_form` per branch, one value or one per batch.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import VALUE, Arg, Param, register


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"q_padding": case.params.get("query_padding_size") is not None,
            "kv_padding": case.params.get("kv_padding_size") is not None}


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    out = {}
    for name in ("query_padding_size", "kv_padding_size"):
        pads = case.params.get(name)
        out[f"{name}_form"] = "none" if pads is None else \
            f"{branch}:{'1' if len(pads) == 1 else 'B'}"
    return out


_ABSENT = {"q_padding": False, "kv_padding": False}

ARG = register(Arg(
    name="padding",
    params=(Param("query_padding_size", VALUE, alone=lambda c: [0]),
            Param("kv_padding_size", VALUE, alone=lambda c: [0])),
    forms={"query_padding_size_form": ("none", "prefill:1", "prefill:B"),
           "kv_padding_size_form": ("none", "prefill:1", "prefill:B", "decode:1", "decode:B")},
    implies={"query_padding_size_form": lambda v: {"q_padding": True},
             "kv_padding_size_form": lambda v: {"kv_padding": True}},
    form_of=form_of,
    features={"q_padding": (False, True), "kv_padding": (False, True)},
    classify=classify,
    families=("dense",),
    absent=_ABSENT,
    empty=_ABSENT,
    rules=("padding",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.geometry",),
))
