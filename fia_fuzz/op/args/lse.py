"""softmax_lse_flag: also return the softmax log-sum-exp (B, N, Q_S, 1) [V4 softmaxLse]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.args.registry import ATTR, Arg, Param, register


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"lse": bool(case.attr("softmax_lse_flag"))}


ARG = register(Arg(
    name="lse",
    params=(Param("softmax_lse_flag", ATTR, False),),
    features={"lse": (False, True)},
    classify=classify,
    scope={"mla": {"lse": (False,)}},
    rules=("args",),
    golden=("fia_fuzz.golden.api",),
    runners=("fia_fuzz.runners.composition.attend",),
))
