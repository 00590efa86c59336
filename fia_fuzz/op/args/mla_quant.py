"""key_rope_antiquant_scale / dequant_scale_query / query_quant_mode: MLA full quantisation.

[TNPU v2 query d=512 全量化; V4 MLA] int8 query, key and value in 5-D NZ
caches with a bfloat16 rope, a per-token dequant scale of the query
(query_quant_mode 3) and per-tensor KV scales; key_rope_antiquant_scale is
documented as not in effect ("当前版本不生效").
"""

from __future__ import annotations

from fia_fuzz.op.registry import ATTR, TENSOR, Arg, Param, register
from fia_fuzz.op.tensors import TensorSpec

_SCALE = TensorSpec((1,), "float32")

ARG = register(Arg(
    name="mla_quant",
    params=(Param("key_rope_antiquant_scale", TENSOR, alone=lambda c: _SCALE),
            Param("dequant_scale_query", TENSOR, alone=lambda c: _SCALE),
            Param("query_quant_mode", ATTR, 0)),
    rules=("mla",),
    golden=("fia_fuzz.golden.mla_quant",),
    runners=("fia_fuzz.runners.composition.attend",),
))
