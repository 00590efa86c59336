"""learnable_sink: a learned per-head sink logit, one more softmax term per row (v2 only).

[TNPU v2 learnableSink; fia-semantics.md §5] Shape (N,), any float dtype;
each row's softmax denominator adds exp(sink[n] - max) (the sink takes no
value). Not with a shared prefix or left padding. Form
`learnable_sink_form`: present per branch.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import TENSOR, Arg, Param, register
from fia_fuzz.op.tensors import TensorSpec

NAME = "learnable_sink"


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"sink": case.params.get(NAME) is not None}


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    return {"learnable_sink_form": branch if case.params.get(NAME) is not None else "none"}


def draw(dr: Any, allowed: bool = True) -> None:
    """Draw the sink (`dr`: the strategies' Draft) where the path may carry one."""
    ch = dr.ch
    ok = allowed and "key_shared_prefix" not in dr.params and not dr.padded
    if ch.pick("sink", (False, True) if ok else (False,)):
        ch.fixed("learnable_sink_form", dr.branch)
        dr.set(NAME, TensorSpec((int(dr.n),), "float32"))
        dr.fills[NAME] = {"dist": "normal", "scale": ch.one((1.0, 4.0))}


ARG = register(Arg(
    name="sink",
    params=(Param(NAME, TENSOR, roles=frozenset({"per_head"}),
                  alone=lambda c: TensorSpec((c.n,), "float32")),),
    forms={"learnable_sink_form": ("none", "prefill", "decode")},
    implies={"learnable_sink_form": lambda v: {"sink": True}},
    form_of=form_of,
    features={"sink": (False, True)},
    classify=classify,
    families=("dense",),
    absent={"sink": False},
    empty={"sink": False},
    draw=draw,
    rules=("sink",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.attend", "fia_fuzz.runners.npu_calls"),
    notes={23: """23. **learnable_sink** is only in the v2 signature: shape (N,) from
    fia-semantics.md §5, any float dtype."""},
))
