"""MLA full quantisation: int8 query/key/value with bf16 rope, query D 512.

[TNPU v2 约束说明 query d=512 全量化] (docs/rules.md disagreement 29): query,
key and value int8, query_rope/key_rope bf16, output bf16; dequant_scale_query
holds one fp32 scale per (token, head) (query_quant_mode 3), and the v1
key_/value_antiquant_scale (v2 dequant_scale_key/value) one fp32 per-tensor
scale each. No document gives the kernel's arithmetic, so the golden models
the plainest flow: dequantise q, K and V in fp32 (float64 for the ideal
reference), append the rope parts, then run the float flash flow of core.py
with P rounded to bf16, the output dtype. In fp64 precision the result is
exactly float attention on the dequantised tensors
(tests/golden/test_mla_full_quant.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from fia_fuzz.golden.core import WORK
from fia_fuzz.golden.kv import KV
from fia_fuzz.golden.quant import dequantize_query, per_tensor
from fia_fuzz.op.call import CallView

#: The dtype P is rounded to before P·V: the rope and output dtype of this path.
P_DTYPE = "bfloat16"


def dequantise_mla(view: CallView, call: dict[str, Any], kv: KV, precision: str
                   ) -> tuple[dict[str, Any], KV]:
    """The call with its query dequantised, and the KV with key/value dequantised."""
    work = WORK[precision]
    query = dequantize_query(call["query"], call["dequant_scale_query"],
                             layout=view.in_layout, num_heads=view.N, precision=precision)
    dq = {**call, "query": query.astype(work),
          "query_rope": np.asarray(call["query_rope"]).astype(work)}
    k_scale = work.type(per_tensor(call["key_antiquant_scale"], "key_antiquant_scale"))
    v_scale = work.type(per_tensor(call["value_antiquant_scale"], "value_antiquant_scale"))
    return dq, replace(kv, key=kv.key.astype(work) * k_scale,
                       value=kv.value.astype(work) * v_scale,
                       key_rope=np.asarray(kv.key_rope).astype(work))
