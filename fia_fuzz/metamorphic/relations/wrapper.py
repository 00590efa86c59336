"""Wrapper versus kernel: a framework front door and the aclnn interface it wraps agree.

torch_npu's `npu_fused_infer_attention_score` (and `_v2`) are thin wrappers
that marshal their arguments into an aclnn call (torch_npu's op-plugin calls
aclnnFusedInferAttentionScoreV4 for them). The same case through the wrapper
and straight through the C interface (`aclnn-v4`, runners/aclnn) must give the
same bits: the kernel is the same, only the marshalling differs. A difference
is a finding against the wrapper (its argument mapping, defaults, layouts or
copies), signed apart from kernel precision failures (`wrapper_signature`).
The partner runs on the runner's `aclnn` variant (metamorphic/variants.py).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from fia_fuzz.metamorphic.catalogue import Call, NotApplicable, Partner, relation
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.op.case import Case

SAME_KERNEL_CALL = Tolerance(0, "the wrapper marshals the call into the same aclnn kernel: "
                                "only the argument mapping differs")


def _copy(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, list):
        return [_copy(e) for e in x]
    return x


def wrapper_signature(case: Case, row: dict[str, Any]) -> str:
    """`wrapper <wrapper> vs <aclnn>: layout/q_dtype/branch: what differs`, numbers out."""
    f = case.features()
    cell = f"{f.get('layout')}/{f.get('q_dtype')}/{f.get('branch')}"
    detail = str(row.get("detail") or "")
    parts = [p for p, key in (("attention_out", "output"), ("softmax_lse", "lse"),
                              ("shapes", "shapes"), ("non-finite", "finite on one side"))
             if key in detail]
    what = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", ", ".join(parts) or detail)[:80]
    return (f"wrapper {row.get('runner')} vs {row.get('partner_runner')}: "
            f"{cell}: {what}")


@relation("wrapper_vs_aclnn", "a framework wrapper and the aclnn interface it calls agree "
          "bit for bit", "seed 001 函数原型 (aclnnFusedInferAttentionScoreV4); seed 003/004 "
          "(the Python front doors)", (SAME_KERNEL_CALL,))
def wrapper_vs_aclnn(case: Case, call: Call) -> list[Partner]:
    if not call:
        raise NotApplicable("empty call")
    return [Partner("aclnn", {k: _copy(v) for k, v in call.items()}, SAME_KERNEL_CALL,
                    api="aclnn", signature=wrapper_signature)]
