"""softmax_lse_flag: also return the softmax log-sum-exp (B, N, Q_S, 1) [V4 softmaxLse].

Form `softmax_lse_flag_form`: left out, its default False given explicitly [MS
softmax_lse_flag 默认值为 False], or True.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import ATTR, Arg, Param, register
from fia_fuzz.op.shape_forms import DEFAULT_FORMS, default_form, leave_out_or_spell

FORM = "softmax_lse_flag_form"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    return {FORM: default_form(case, "softmax_lse_flag", False)}


def special(dr: Any) -> None:
    """The default given explicitly where the draw left the argument out."""
    leave_out_or_spell(dr, FORM, "softmax_lse_flag", False)


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"lse": bool(case.attr("softmax_lse_flag"))}


ARG = register(Arg(
    name="lse",
    params=(Param("softmax_lse_flag", ATTR, False),),
    features={"lse": (False, True)},
    classify=classify,
    forms={FORM: DEFAULT_FORMS},
    implies={FORM: lambda v: {"lse": v == "set"}},
    form_of=form_of,
    special=special,
    specials={FORM: ("explicit_default",)},
    scope={"mla": {"lse": (False,)}},
    rules=("args",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.attend",),
))
