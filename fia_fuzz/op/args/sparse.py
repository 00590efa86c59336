"""sparse_mode: 0 (full mask or none), 1 (all), 2-4 (optimized 2048 mask: left-up causal,
right-down causal, band) [V4 sparseMode]. Decode without rope ignores it."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.args.registry import ATTR, Arg, Param, register


def classify(case: Any, v: Any) -> dict[str, Any]:
    return {"sparse_mode": case.attr("sparse_mode")}


ARG = register(Arg(
    name="sparse",
    params=(Param("sparse_mode", ATTR, 0),),
    features={"sparse_mode": (0, 1, 2, 3, 4)},
    classify=classify,
    scope={"packed": {"sparse_mode": (0, 3)}, "mla": {"sparse_mode": (0, 3, 4)},
           "gqa_nz": {"sparse_mode": (0, 3)}, "workloads": {"sparse_mode": (0, 3, 4)}},
    empty={"sparse_mode": 0},
    rules=("mask",),
    golden=("fia_fuzz.golden.masks",),
    runners=("fia_fuzz.runners.composition.masks",),
))
