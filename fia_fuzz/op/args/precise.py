"""inner_precise: 0 high precision, 1 high performance (default), 2/3 the same with the
row-invalid correction [V4 innerPrecise]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.args.registry import ATTR, Arg, Param, register


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"inner_precise": case.attr("inner_precise")}


ARG = register(Arg(
    name="precise",
    params=(Param("inner_precise", ATTR, 1),),
    features={"inner_precise": (1, 0, 2, 3)},
    classify=classify,
    scope={"gqa_nz": {"inner_precise": (1,)}},
    rules=("precise",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.attend",),
))
