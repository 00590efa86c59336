"""Where each route decision of the Atlas A2 model comes from: the vendor's public host code.

Every decision of the route model names its file and function here, the way a rule
cites its document (`fia_fuzz/rules/rule.py` `src`). Paths are under
`attention/` of the ops-transformer repository (cannmirror/ops-transformer); the
A2 build is its `arch32` host code (SocVersion ASCEND910B), which device-a2.md calls
the V3 tiling (`arch22/` in older trees).
"""

from __future__ import annotations

REPO = "ops-transformer attention/"
FIA = "fused_infer_attention_score/op_host/"
V3 = FIA + "arch32/fused_infer_attention_score_tiling_v3.cpp"
TOP = FIA + "fused_infer_attention_score_tiling.cpp"
FAI = FIA + "flash_attention_infer_tiling.h"
V3_GQA = "common/op_host/arch32/fia_tiling_nonquant.cpp"
V3_MLA = "common/op_host/arch32/fia_tiling_nonquant_mla.cpp"
SPLIT = "common/op_host/split_core.h"
IFA = "incre_flash_attention/op_host/incre_flash_attention_tiling.cpp"
IFA_CHECK = "incre_flash_attention/op_host/incre_flash_attention_tiling_check.cpp"
PFA = "prompt_flash_attention/op_host/prompt_flash_attention_tiling.cpp"


def cite(path: str, function: str) -> str:
    """A route decision's source: the vendor file and the function that decides it."""
    return f"{REPO}{path} {function}"
