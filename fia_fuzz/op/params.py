"""The op's keyword arguments: canonical names, kinds and defaults.

Canonical names are those of `torch_npu.npu_fused_infer_attention_score`
(identical to `mindspore.ops.fused_infer_attention_score`, seed 003, plus the
rope tensors), with the v2 and V4 additions (fia-semantics.md §1). Each
keyword is declared by its argument's module in `fia_fuzz/op/args/` (kind and
default: the REG_OP attr defaults, seed 000 "算子原型", and the MindSpore
signature); the tuples below are derived from that registry in signature
order, so an argument added there is in the signature everywhere.
"""

from __future__ import annotations

from fia_fuzz.op.args import ATTR, TENSOR, VALUE, DerivedDict, DerivedTuple, keywords, params

#: Arguments that are tensors (or, for key/value, lists of tensors).
TENSOR_ARGS: DerivedTuple = DerivedTuple(lambda: keywords(TENSOR))

#: Arguments whose integer values matter to legality; lists, ints or int arrays.
VALUE_ARGS: DerivedTuple = DerivedTuple(lambda: keywords(VALUE))

#: Scalar attributes and their defaults.
ATTR_DEFAULTS: DerivedDict = DerivedDict(
    lambda: {p.name: p.default for p in params() if p.kind == ATTR})

ALL_ARGS: DerivedTuple = DerivedTuple(lambda: keywords(TENSOR) + keywords(VALUE)
                                      + keywords(ATTR))

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
