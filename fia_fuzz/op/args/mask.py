"""atten_mask: the user's attention mask (bool/int8/uint8), full or the optimized 2048 template.

[V4 §Mask, attenMask] Modes 0/1 take a full mask (S1, S2) in five batch
forms, possibly larger than S1 x S2 (alignment padding); modes 2-4 the
optimized 2048 x 2048 mask; decode masks are (B, S2) in three forms. S2
counts the shared prefix and, paged, the whole block-table width. Its draw is
`fia_fuzz/strategies/masks.py`, with sparse_mode and the band.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import TENSOR, Arg, Param, register
from fia_fuzz.op.shape_forms import OPTIMIZED_MASK, extent, safe, safe_feature
from fia_fuzz.op.tensors import TensorSpec

NAME = "atten_mask"


def mask_extent(case: Any, v: Any | None = None) -> str:
    """How a user mask covers S1 x S2: "exact", "rows", "cols", or "2048" (optimized).
    `v`: the case's view when the caller has built it already."""
    m = case.params.get(NAME)
    if m is None:
        return "none"
    if case.attr("sparse_mode") in (2, 3, 4):
        return str(OPTIMIZED_MASK)
    v = case.view() if v is None else v
    rows = 1 if safe(lambda: v.decode) else m.shape[-2]
    return extent(case, v, rows, m.shape[-1])


def _mask_shape(case: Any, b: int | None, decode: bool | None) -> str:
    m = case.params.get(NAME)
    if m is None:
        return "none"
    shape = m.shape
    if case.attr("sparse_mode") in (2, 3, 4) and shape[-2:] == (OPTIMIZED_MASK,) * 2:
        return ",".join(["1"] * (len(shape) - 2) + ["2048"])
    if decode:
        return {2: "B,S2", 3: "B,1,S2", 4: "B,1,1,S2"}.get(len(shape), "other")
    lead = [("B" if shape[0] == b else "1")] + ["1"] * (len(shape) - 3) if len(shape) > 2 \
        else []
    return ",".join(lead + ["S1", "S2"])


def classify(case: Any, v: Any) -> dict[str, Any]:
    m = case.params.get(NAME)
    b, decode = safe_feature(lambda: v.B), safe_feature(lambda: v.decode)
    return {"mask": m.dtype if m is not None else "none",
            "mask_shape": _mask_shape(case, b, decode),
            # a full mask larger than the S1 x S2 it covers (alignment padding)
            "mask_oversized": mask_extent(case, v) in ("rows", "cols"),
            "mask_fill": case.fill(NAME).get("dist") if m is not None else "none"}


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    ext = mask_extent(case, v)
    return {"atten_mask_size": "none" if ext == "none" else f"{branch}:{ext}"}


def _alone(c: Any) -> Any:
    if c.d == 0:
        return None
    return TensorSpec((c.b, 1, c.s1, c.s2) if c.s1 > 1 else (c.b, 1, 1, c.s2), "bool")



ARG = register(Arg(
    name="mask",
    params=(Param(NAME, TENSOR, alone=_alone),),
    forms={"atten_mask_size": ("none", "prefill:exact", "prefill:rows", "prefill:cols",
                               "decode:exact", "decode:cols", "prefill:2048", "decode:2048")},
    implies={"atten_mask_size": lambda v: {"mask_oversized": v.endswith(("rows", "cols"))}},
    form_of=form_of,
    features={"mask": ("none", "bool", "int8", "uint8"),
              "mask_shape": ("none", "S1,S2", "B,S1,S2", "1,S1,S2", "B,1,S1,S2", "1,1,S1,S2",
                             "B,S2", "B,1,S2", "B,1,1,S2", "2048", "1,2048", "1,1,2048"),
              "mask_oversized": (False, True),
              "mask_fill": ("none", "bernoulli", "zeros", "nearly_full", "triu")},
    classify=classify,
    empty={"mask": "none", "mask_shape": "none"},
    rules=("mask",),
    golden=("fia_fuzz.golden.masks",),
    runners=("fia_fuzz.runners.composition.masks",),
))
