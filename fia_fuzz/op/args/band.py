"""pre_tokens / next_tokens: the band of keys each query row sees [V4 §Mask, SEM §4].

Defaults 2147483647 (no band) [MS pre_tokens/next_tokens 默认值为 2147483647; mode 0
without a mask "内部赋值为INT_MAX"]; modes 3/4 anchor it at the bottom right of each
batch's window. Feature `band`: default, small, huge or with a negative side. Form
`band_form`: both left out, the no-band sentinel given explicitly for both, or set.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.geometry import NO_BAND
from fia_fuzz.op.registry import ATTR, Arg, Param, register

FORM = "band_form"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    p = case.params
    if "pre_tokens" not in p and "next_tokens" not in p:
        return {FORM: "absent"}
    sentinel = case.attr("pre_tokens") == NO_BAND and case.attr("next_tokens") == NO_BAND
    return {FORM: "explicit_sentinel" if sentinel else "set"}


def special(dr: Any) -> None:
    """The no-band sentinel given explicitly where the draw left the band out."""
    if "pre_tokens" in dr.params or "next_tokens" in dr.params:
        return
    if dr.pick_special(FORM, "absent", {"absent": False, "explicit_sentinel": True}):
        dr.set("pre_tokens", NO_BAND)
        dr.set("next_tokens", NO_BAND)


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
    forms={FORM: ("absent", "explicit_sentinel", "set")},
    implies={FORM: lambda v: {} if v == "set" else {"band": "default"}},
    form_of=form_of,
    special=special,
    specials={FORM: ("explicit_sentinel",)},
    features={"band": ("default", "small", "huge", "negative")},
    classify=classify,
    scope={"packed": {"band": ("default",)}, "gqa_nz": {"band": ("default",)}},
    empty={"band": "default"},
    rules=("mask",),
    golden=("fia_fuzz.golden.masks",),
    runners=("fia_fuzz.runners.composition.masks",),
))
