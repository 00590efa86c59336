"""sparse_mode: 0 (full mask or none), 1 (all), 2-4 (optimized 2048 mask: left-up causal,
right-down causal, band) [V4 sparseMode]. Decode without rope ignores it.

Form `sparse_mode_form`: left out, its default 0 given explicitly [MS sparse_mode
默认值为 0], or another mode.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import ATTR, Arg, Param, register
from fia_fuzz.op.shape_forms import DEFAULT_FORMS, default_form, leave_out_or_spell

FORM = "sparse_mode_form"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    return {FORM: default_form(case, "sparse_mode", 0)}


def special(dr: Any) -> None:
    """The default given explicitly where the draw left the argument out."""
    leave_out_or_spell(dr, FORM, "sparse_mode", 0)


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"sparse_mode": case.attr("sparse_mode")}


ARG = register(Arg(
    name="sparse",
    params=(Param("sparse_mode", ATTR, 0),),
    features={"sparse_mode": (0, 1, 2, 3, 4)},
    classify=classify,
    forms={FORM: DEFAULT_FORMS},
    implies={FORM: lambda v: {} if v == "set" else {"sparse_mode": 0}},
    form_of=form_of,
    special=special,
    specials={FORM: ("explicit_default",)},
    scope={"packed": {"sparse_mode": (0, 3)}, "mla": {"sparse_mode": (0, 3, 4)},
           "gqa_nz": {"sparse_mode": (0, 3)}, "workloads": {"sparse_mode": (0, 3, 4)}},
    empty={"sparse_mode": 0},
    rules=("mask",),
    golden=("fia_fuzz.golden.masks",),
    runners=("fia_fuzz.runners.composition.masks",),
))
