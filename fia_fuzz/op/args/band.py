"""pre_tokens / next_tokens: the band of keys each query row sees [V4 §Mask, SEM §4].

Defaults 2147483647 (no band); modes 3/4 anchor it at the bottom right of each
batch's window. Feature `band`: default, small, huge or with a negative side.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.args.registry import ATTR, Arg, Param, register
from fia_fuzz.op.geometry import NO_BAND


def classify(case: Any, v: Any) -> dict[str, Any]:
    pre, nxt = case.attr("pre_tokens"), case.attr("next_tokens")
    if pre == NO_BAND and nxt == NO_BAND:
        band = "default"
    elif pre < 0 or nxt < 0:
        band = "negative"
    elif max(pre, nxt) >= 1 << 20:
        band = "huge"
    else:
        band = "small"
    return {"band": band}


ARG = register(Arg(
    name="band",
    params=(Param("pre_tokens", ATTR, NO_BAND), Param("next_tokens", ATTR, NO_BAND)),
    features={"band": ("default", "small", "huge", "negative")},
    classify=classify,
    scope={"packed": {"band": ("default",)}, "gqa_nz": {"band": ("default",)}},
    empty={"band": "default"},
    rules=("mask",),
    golden=("fia_fuzz.golden.masks",),
    runners=("fia_fuzz.runners.composition.masks",),
))
