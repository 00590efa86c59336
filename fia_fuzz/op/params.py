"""The op's keyword arguments: canonical names, kinds and defaults.

Canonical names are those of `torch_npu.npu_fused_infer_attention_score`
(identical to `mindspore.ops.fused_infer_attention_score`, seed 003, plus
query_rope/key_rope/key_rope_antiquant_scale), with `dequant_scale_query`,
`query_quant_mode` (V4, seed 001) and `learnable_sink` (v2) added
(fia-semantics.md §1). Defaults are the REG_OP attr defaults (seed 000,
"算子原型") and the MindSpore signature.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.geometry import NO_BAND

#: Arguments that are tensors (or, for key/value, lists of tensors).
TENSOR_ARGS: tuple[str, ...] = (
    "query", "key", "value",
    "pse_shift", "atten_mask",
    "dequant_scale1", "quant_scale1", "dequant_scale2", "quant_scale2", "quant_offset2",
    "antiquant_scale", "antiquant_offset",
    "key_antiquant_scale", "key_antiquant_offset",
    "value_antiquant_scale", "value_antiquant_offset",
    "key_shared_prefix", "value_shared_prefix",
    "query_rope", "key_rope", "key_rope_antiquant_scale",
    "dequant_scale_query", "learnable_sink",
)

#: Arguments whose integer values matter to legality; lists, ints or int arrays.
VALUE_ARGS: tuple[str, ...] = (
    "actual_seq_lengths", "actual_seq_lengths_kv", "block_table",
    "query_padding_size", "kv_padding_size", "actual_shared_prefix_len",
)

#: Scalar attributes and their defaults.
ATTR_DEFAULTS: dict[str, Any] = {
    "num_heads": 1,
    "scale": 1.0,
    "pre_tokens": NO_BAND,
    "next_tokens": NO_BAND,
    "input_layout": "BSH",
    "num_key_value_heads": 0,
    "sparse_mode": 0,
    "inner_precise": 1,
    "block_size": 0,
    "antiquant_mode": 0,
    "key_antiquant_mode": 0,
    "value_antiquant_mode": 0,
    "softmax_lse_flag": False,
    "query_quant_mode": 0,
}

ALL_ARGS: tuple[str, ...] = TENSOR_ARGS + VALUE_ARGS + tuple(ATTR_DEFAULTS)

#: torch_npu v2 keyword -> canonical keyword (fia-semantics.md §1, seed 004).
V2_TO_CANONICAL: dict[str, str] = {
    "num_query_heads": "num_heads",
    "softmax_scale": "scale",
    "actual_seq_qlen": "actual_seq_lengths",
    "actual_seq_kvlen": "actual_seq_lengths_kv",
    "dequant_scale_key": "key_antiquant_scale",
    "dequant_offset_key": "key_antiquant_offset",
    "dequant_scale_value": "value_antiquant_scale",
    "dequant_offset_value": "value_antiquant_offset",
    "dequant_scale_key_rope": "key_rope_antiquant_scale",
    "key_quant_mode": "key_antiquant_mode",
    "value_quant_mode": "value_antiquant_mode",
    "quant_scale_out": "quant_scale2",
    "quant_offset_out": "quant_offset2",
    "return_softmax_lse": "softmax_lse_flag",
}
CANONICAL_TO_V2: dict[str, str] = {v: k for k, v in V2_TO_CANONICAL.items()}
