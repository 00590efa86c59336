"""input_layout: the query/KV layout and, after an underscore, the output's [V4 inputLayout].

BSH, BSND, BNSD, TND, NTD_TND, BNSD_BSND, TND_NTD and the *_NBSD forms; the
layout features (layout, in_layout, out_layout) are core features of
`op/features.py`. Form `input_layout_form`: left out (its default "BSH"
[MS input_layout 默认值为 BSH]), "BSH" given explicitly, or another layout.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import ATTR, Arg, Param, register

FORM = "input_layout_form"
DEFAULT = "BSH"


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    given = case.params.get("input_layout")
    return {FORM: "absent" if given is None else "explicit_default" if given == DEFAULT
            else "set"}


def special(dr: Any) -> None:
    """The default layout BSH left out where the draw took it."""
    if dr.params.get("input_layout") == DEFAULT and dr.pick_special(
            FORM, "explicit_default", {"explicit_default": False, "absent": True}):
        del dr.params["input_layout"]


ARG = register(Arg(
    name="layout",
    params=(Param("input_layout", ATTR, DEFAULT),),
    forms={FORM: ("absent", "explicit_default", "set")},
    implies={FORM: lambda v: {} if v == "set" else {"layout": DEFAULT}},
    form_of=form_of,
    special=special,
    specials={FORM: ("absent",)},
    rules=("layout", "tnd"),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.geometry",),
))
