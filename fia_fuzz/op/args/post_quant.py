"""quant_scale2 / quant_offset2: int8 output, quantised per tensor or per channel.

[V4 §INT8 quantScale2; SEM §8] Per-tensor (1,) or per-channel over the
output's N x Dv in the output layout's shapes; an empty KV may take it
without an offset. Form `quant_scale2_form` (shape per branch, or empty_kv).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.registry import TENSOR, Arg, Param, register
from fia_fuzz.op.shape_forms import branch_values, safe, shape_form, symbols
from fia_fuzz.op.tensors import TensorSpec

#: quant_scale2 / quant_offset2: per-tensor, or per-channel over the output's N x Dv in the
#: output layout's shapes [V4 §INT8 quantScale2; SEM §8].
QUANT_SCALE2_SHAPES = ("1", "1,1,H", "H", "1,1,N,D", "1,N,1,D", "N,D")
#: The output layout a per-channel quant_scale2 shape belongs to [SEM §8].
_OUT_LAYOUT_OF = {"1,1,H": {"out_layout": "BSH"}, "H": {"out_layout": "BSH"},
                  "1,1,N,D": {"out_layout": "BSND"}, "1,N,1,D": {"out_layout": "BNSD"}}


def classify(case: Any, v: Any) -> dict[str, Any]:
    qs2 = case.params.get("quant_scale2")
    form = "none" if qs2 is None else "per_tensor" if qs2.numel == 1 else "per_channel"
    return {"post_quant": qs2 is not None, "post_quant_form": form,
            "post_quant_offset": case.params.get("quant_offset2") is not None}


def form_of(case: Any, v: Any, branch: str) -> dict[str, str]:
    qs2 = case.params.get("quant_scale2")
    if qs2 is None:
        form = "none"
    elif safe(lambda: v.S2) == 0 and not v.paged:
        form = "empty_kv"
    else:
        form = shape_form(qs2.shape, branch, QUANT_SCALE2_SHAPES, symbols(v, False))
    return {"quant_scale2_form": form}


def _implies(v: str) -> dict[str, Any]:
    return {"post_quant": True, **(
        {"empty": "kv"} if v == "empty_kv" else
        {"post_quant_form": "per_tensor" if v.endswith(":1") else "per_channel",
         **_OUT_LAYOUT_OF.get(v.split(":")[-1], {})})}


_SCALE = TensorSpec((1,), "float32")

ARG = register(Arg(
    name="post_quant",
    params=(Param("quant_scale2", TENSOR, alone=lambda c: _SCALE),
            Param("quant_offset2", TENSOR, alone=lambda c: _SCALE)),
    forms={"quant_scale2_form": ("none", *branch_values(QUANT_SCALE2_SHAPES), "empty_kv")},
    implies={"quant_scale2_form": _implies},
    form_of=form_of,
    features={"post_quant": (False, True),
              "post_quant_form": ("none", "per_tensor", "per_channel"),
              "post_quant_offset": (False, True)},
    classify=classify,
    families=("dense", "full_quant"),
    absent={"post_quant": False},
    rules=("quant",),
    golden=("fia_fuzz.golden.quant",),
    runners=("fia_fuzz.runners.composition.attend",),
))
