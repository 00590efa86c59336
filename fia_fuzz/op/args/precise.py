"""inner_precise: 0 high precision, 1 high performance (default), 2/3 the same with the
row-invalid correction [V4 innerPrecise].

Form `inner_precise_form`: left out, its default 1 given explicitly [MS inner_precise
默认值为 1], or another value (every family's tail draws the first two alike).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import ATTR, Arg, Param, register
from fia_fuzz.op.shape_forms import DEFAULT_FORMS, default_form

FORM = "inner_precise_form"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    return {FORM: default_form(case, "inner_precise", 1)}


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"inner_precise": case.attr("inner_precise")}


ARG = register(Arg(
    name="precise",
    params=(Param("inner_precise", ATTR, 1),),
    features={"inner_precise": (1, 0, 2, 3)},
    classify=classify,
    forms={FORM: DEFAULT_FORMS},
    implies={FORM: lambda v: {} if v == "set" else {"inner_precise": 1}},
    form_of=form_of,
    scope={"gqa_nz": {"inner_precise": (1,)}},
    rules=("precise",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.attend",),
))
