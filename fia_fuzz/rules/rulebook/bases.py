"""Legal base calls of the rulebook's worked examples, and shorthands to vary them.

`BASES` holds one minimal legal call per feature family (prefill, decode,
masks, paging, packed layouts, lists, padding, prefix, antiquant, full and
post quantisation, MLA, NZ caches, learnable sink). Each rule module's
`NEGATIVE` lists base calls with a few arguments replaced so that exactly one
of its rules is violated; the tests under tests/rules/ hold the rulebook to
both. All tensors are TensorSpecs, so nothing here allocates.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.tensors import TensorSpec

_t = TensorSpec


def _h(*shape: int, dtype: str = "float16") -> TensorSpec:
    return TensorSpec(shape, dtype)


BASES: dict[str, dict[str, Any]] = {
    # BNSD fp16 prefill, GQA 8/2
    "prefill": {"query": _h(2, 8, 4, 64), "key": _h(2, 2, 16, 64), "value": _h(2, 2, 16, 64),
                "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BNSD"},
    # BSH fp16 decode
    "decode": {"query": _h(2, 1, 8 * 64), "key": _h(2, 16, 2 * 64), "value": _h(2, 16, 2 * 64),
               "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BSH"},
    # BNSD prefill with a full mask, lengths and pse
    "masked": {"query": _h(2, 8, 4, 64), "key": _h(2, 2, 16, 64), "value": _h(2, 2, 16, 64),
               "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BNSD",
               "atten_mask": _t((2, 1, 4, 16), "bool"), "sparse_mode": 0,
               "actual_seq_lengths": [3, 4], "actual_seq_lengths_kv": [10, 16],
               "pse_shift": _h(1, 8, 4, 16), "pre_tokens": 100, "next_tokens": 0},
    # causal with the optimized 2048 mask
    "causal": {"query": _h(1, 4, 8, 64), "key": _h(1, 4, 32, 64), "value": _h(1, 4, 32, 64),
               "num_heads": 4, "input_layout": "BNSD", "sparse_mode": 3,
               "atten_mask": _t((2048, 2048), "bool")},
    # paged decode, BnBsH cache, block size 16
    "paged_decode": {"query": _h(2, 8, 1, 64), "key": _h(8, 16, 128), "value": _h(8, 16, 128),
                     "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BNSD",
                     "block_table": [[0, 1, 2, 3], [4, 5, 6, 7]], "block_size": 16,
                     "actual_seq_lengths_kv": [40, 64]},
    # paged prefill, BnNBsD cache, block size 128, with a mask
    "paged_prefill": {"query": _h(1, 8, 4, 64), "key": _h(2, 2, 128, 64),
                      "value": _h(2, 2, 128, 64), "num_heads": 8, "num_key_value_heads": 2,
                      "input_layout": "BNSD", "block_table": [[0, 1]], "block_size": 128,
                      "actual_seq_lengths_kv": [200], "atten_mask": _t((1, 1, 4, 256), "bool"),
                      "pse_shift": _h(1, 8, 4, 256)},
    # packed TND bf16, D 128
    "tnd": {"query": _h(10, 8, 128, dtype="bfloat16"), "key": _h(20, 2, 128, dtype="bfloat16"),
            "value": _h(20, 2, 128, dtype="bfloat16"), "num_heads": 8, "num_key_value_heads": 2,
            "input_layout": "TND", "actual_seq_lengths": [4, 10],
            "actual_seq_lengths_kv": [8, 20]},
    # vLLM-ascend prefill: TND, paged BnBsH block 128, sparse 3, act_q == act_kv per batch
    "tnd_paged_causal": {"query": _h(10, 8, 128, dtype="bfloat16"),
                         "key": _h(4, 128, 256, dtype="bfloat16"),
                         "value": _h(4, 128, 256, dtype="bfloat16"), "num_heads": 8,
                         "num_key_value_heads": 2, "input_layout": "TND",
                         "block_table": [[0, 1], [2, 3]], "block_size": 128,
                         "actual_seq_lengths": [4, 10], "actual_seq_lengths_kv": [4, 6],
                         "sparse_mode": 3, "atten_mask": _t((2048, 2048), "bool")},
    # BNSD prefill on views: query heads sliced from a fused qkv buffer, key and value the
    # two halves of one fused KV buffer (B, 2, KV_N, S, D)
    "strided": {"query": TensorSpec((2, 8, 4, 64), "float16", (3072, 256, 64, 1), 0),
                "key": TensorSpec((2, 2, 16, 64), "float16", (4096, 1024, 64, 1), 0),
                "value": TensorSpec((2, 2, 16, 64), "float16", (4096, 1024, 64, 1), 2048),
                "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BNSD"},
    # key/value tensor list, decode BSH
    "kvlist": {"query": _h(2, 1, 4 * 64), "key": [_h(1, 16, 128), _h(1, 24, 128)],
               "value": [_h(1, 16, 128), _h(1, 24, 128)], "num_heads": 4,
               "num_key_value_heads": 2, "input_layout": "BSH"},
    # prefill with left padding
    "padded": {"query": _h(2, 6, 4 * 64), "key": _h(2, 16, 4 * 64), "value": _h(2, 16, 4 * 64),
               "num_heads": 4, "input_layout": "BSH", "actual_seq_lengths": [2, 3],
               "query_padding_size": [1], "actual_seq_lengths_kv": [10, 12],
               "kv_padding_size": [2]},
    # shared prefix, prefill with mask and pse
    "prefix": {"query": _h(1, 4, 4, 64), "key": _h(1, 4, 16, 64), "value": _h(1, 4, 16, 64),
               "num_heads": 4, "input_layout": "BNSD",
               "key_shared_prefix": _h(1, 4, 8, 64), "value_shared_prefix": _h(1, 4, 8, 64),
               "actual_shared_prefix_len": [5], "atten_mask": _t((4, 24), "bool"),
               "pse_shift": _h(1, 4, 4, 24)},
    # combined antiquant, decode, int8 KV
    "aq_combined": {"query": _h(2, 1, 4 * 64), "key": _h(2, 16, 2 * 64, dtype="int8"),
                    "value": _h(2, 16, 2 * 64, dtype="int8"), "num_heads": 4,
                    "num_key_value_heads": 2, "input_layout": "BSH",
                    "antiquant_scale": _h(2, 2, 1, 64), "antiquant_offset": _h(2, 2, 1, 64)},
    # separate antiquant, decode, int8 KV, per-channel
    "aq_separate": {"query": _h(2, 1, 4 * 64), "key": _h(2, 16, 2 * 64, dtype="int8"),
                    "value": _h(2, 16, 2 * 64, dtype="int8"), "num_heads": 4,
                    "num_key_value_heads": 2, "input_layout": "BSH",
                    "key_antiquant_scale": _h(1, 2, 1, 64),
                    "value_antiquant_scale": _h(1, 2, 1, 64),
                    "key_antiquant_offset": _h(1, 2, 1, 64),
                    "value_antiquant_offset": _h(1, 2, 1, 64)},
    # separate per-channel antiquant with an int8 shared prefix
    "aq_prefix": {"query": _h(2, 1, 4 * 64), "key": _h(2, 16, 2 * 64, dtype="int8"),
                  "value": _h(2, 16, 2 * 64, dtype="int8"), "num_heads": 4,
                  "num_key_value_heads": 2, "input_layout": "BSH",
                  "key_antiquant_scale": _h(1, 2, 1, 64),
                  "value_antiquant_scale": _h(1, 2, 1, 64),
                  "key_shared_prefix": _h(1, 8, 2 * 64, dtype="int8"),
                  "value_shared_prefix": _h(1, 8, 2 * 64, dtype="int8")},
    # separate antiquant, prefill: bf16 query, int8 KV
    "aq_prefill": {"query": _h(2, 2, 4, 64, dtype="bfloat16"),
                   "key": _h(2, 2, 16, 64, dtype="int8"),
                   "value": _h(2, 2, 16, 64, dtype="int8"), "num_heads": 2,
                   "input_layout": "BNSD", "key_antiquant_scale": _h(2, 64, dtype="bfloat16"),
                   "value_antiquant_scale": _h(2, 64, dtype="bfloat16")},
    # int4 packed in int32, decode, separate per-channel
    "int4": {"query": _h(1, 1, 2 * 64), "key": _h(1, 16, 2 * 64 // 8, dtype="int32"),
             "value": _h(1, 16, 2 * 64 // 8, dtype="int32"), "num_heads": 2,
             "input_layout": "BSH", "key_antiquant_scale": _h(1, 2, 64),
             "value_antiquant_scale": _h(1, 2, 64)},
    # full int8 quantisation, prefill, int8 out
    "int8": {"query": _h(1, 2, 4, 64, dtype="int8"), "key": _h(1, 2, 16, 64, dtype="int8"),
             "value": _h(1, 2, 16, 64, dtype="int8"), "num_heads": 2, "input_layout": "BNSD",
             "dequant_scale1": _t((1,), "uint64"), "quant_scale1": _t((1,), "float32"),
             "dequant_scale2": _t((1,), "uint64"), "quant_scale2": _t((1,), "float32"),
             "quant_offset2": _t((1,), "float32")},
    # float in, int8 out, per-channel, with a mask
    "post_quant": {"query": _h(1, 2, 4, 64), "key": _h(1, 2, 16, 64), "value": _h(1, 2, 16, 64),
                   "num_heads": 2, "input_layout": "BNSD",
                   "quant_scale2": _t((1, 2, 1, 64), "float32"),
                   "quant_offset2": _t((1, 2, 1, 64), "float32"),
                   "atten_mask": _t((4, 16), "bool"), "sparse_mode": 0},
    # MLA D 512 decode, paged BnBsH cache, rope
    "mla": {"query": _h(2, 1, 8, 512, dtype="bfloat16"),
            "query_rope": _h(2, 1, 8, 64, dtype="bfloat16"),
            "key": _h(4, 128, 512, dtype="bfloat16"), "value": _h(4, 128, 512, dtype="bfloat16"),
            "key_rope": _h(4, 128, 64, dtype="bfloat16"), "num_heads": 8,
            "num_key_value_heads": 1, "input_layout": "BSND", "block_table": [[0, 1], [2, 3]],
            "block_size": 128, "actual_seq_lengths_kv": [100, 256]},
    # MLA D 512 MTP (Q_S 4) with NBSD output and NZ caches
    "mla_nz": {"query": _h(1, 4, 8, 512), "query_rope": _h(1, 4, 8, 64),
               "key": _h(2, 1, 32, 128, 16), "value": _h(2, 1, 32, 128, 16),
               "key_rope": _h(2, 1, 4, 128, 16), "num_heads": 8, "num_key_value_heads": 1,
               "input_layout": "BSND_NBSD", "block_table": [[0, 1]], "block_size": 128,
               "actual_seq_lengths_kv": [200], "sparse_mode": 3,
               "atten_mask": _t((2048, 2048), "bool")},
    # MLA D 512 with 128 query heads on its one KV head (G = 128 > 64 is legal here)
    "mla_128": {"query": _h(1, 1, 128 * 512, dtype="bfloat16"),
                "query_rope": _h(1, 1, 128 * 64, dtype="bfloat16"),
                "key": _h(2, 128, 512, dtype="bfloat16"),
                "value": _h(2, 128, 512, dtype="bfloat16"),
                "key_rope": _h(2, 128, 64, dtype="bfloat16"), "num_heads": 128,
                "num_key_value_heads": 1, "input_layout": "BSH", "block_table": [[0, 1]],
                "block_size": 128, "actual_seq_lengths_kv": [200]},
    # MLA full quantisation: int8 query, int8 NZ caches, bf16 rope
    "mla_int8": {"query": _h(1, 2, 8, 512, dtype="int8"),
                 "query_rope": _h(1, 2, 8, 64, dtype="bfloat16"),
                 "key": _h(2, 1, 16, 128, 32, dtype="int8"),
                 "value": _h(2, 1, 16, 128, 32, dtype="int8"),
                 "key_rope": _h(2, 1, 4, 128, 16, dtype="bfloat16"), "num_heads": 8,
                 "num_key_value_heads": 1, "input_layout": "BSND", "block_table": [[0, 1]],
                 "block_size": 128, "actual_seq_lengths_kv": [150], "sparse_mode": 3,
                 "atten_mask": _t((2048, 2048), "bool"),
                 "dequant_scale_query": _t((2, 8, 1), "float32"), "query_quant_mode": 3,
                 "key_antiquant_scale": _t((1,), "float32"),
                 "value_antiquant_scale": _t((1,), "float32")},
    # packed MLA, query D 512, paged
    "tnd_mla": {"query": _h(5, 32, 512, dtype="bfloat16"),
                "query_rope": _h(5, 32, 64, dtype="bfloat16"),
                "key": _h(4, 128, 512, dtype="bfloat16"),
                "value": _h(4, 128, 512, dtype="bfloat16"),
                "key_rope": _h(4, 128, 64, dtype="bfloat16"), "num_heads": 32,
                "num_key_value_heads": 1, "input_layout": "TND_NTD",
                "block_table": [[0, 1], [2, 3]], "block_size": 128,
                "actual_seq_lengths": [1, 5], "actual_seq_lengths_kv": [130, 256],
                "sparse_mode": 3, "atten_mask": _t((2048, 2048), "bool")},
    # packed MLA, query D 128
    "tnd_rope": {"query": _h(4, 6, 128, dtype="bfloat16"),
                 "query_rope": _h(4, 6, 64, dtype="bfloat16"),
                 "key": _h(4, 12, 128, dtype="bfloat16"), "value": _h(4, 12, 128, dtype="bfloat16"),
                 "key_rope": _h(4, 12, 64, dtype="bfloat16"), "num_heads": 4,
                 "input_layout": "NTD_TND", "actual_seq_lengths": [2, 6],
                 "actual_seq_lengths_kv": [5, 12], "sparse_mode": 3,
                 "atten_mask": _t((2048, 2048), "bool")},
    # GQA int8 antiquant with 5-D NZ caches
    "nz": {"query": _h(1, 1, 10 * 128, dtype="bfloat16"), "key": _h(2, 1, 4, 128, 32, dtype="int8"),
           "value": _h(2, 1, 4, 128, 32, dtype="int8"), "num_heads": 10,
           "num_key_value_heads": 1, "input_layout": "BSH", "block_table": [[0, 1]],
           "block_size": 128, "actual_seq_lengths_kv": [200], "inner_precise": 1,
           "key_antiquant_scale": _h(128, dtype="bfloat16"),
           "value_antiquant_scale": _h(128, dtype="bfloat16")},
    # learnable sink and lse
    "sink": {"query": _h(1, 4, 4, 64), "key": _h(1, 4, 16, 64), "value": _h(1, 4, 16, 64),
             "num_heads": 4, "input_layout": "BNSD", "learnable_sink": _t((4,), "float32"),
             "softmax_lse_flag": True, "inner_precise": 2},
}


def call(base: str, **over: Any) -> dict[str, Any]:
    """The base call with some arguments replaced (None removes an argument)."""
    kw = dict(BASES[base])
    for k, v in over.items():
        if v is None:
            kw.pop(k, None)
        else:
            kw[k] = v
    return kw


def T(*shape: int, dtype: str = "float16") -> TensorSpec:  # noqa: N802
    return TensorSpec(shape, dtype)


def B(*shape: int) -> TensorSpec:  # noqa: N802
    return TensorSpec(shape, "bool")


def bf(*shape: int) -> TensorSpec:
    return TensorSpec(shape, "bfloat16")


def i8(*shape: int) -> TensorSpec:
    return TensorSpec(shape, "int8")


def f32(*shape: int) -> TensorSpec:
    return TensorSpec(shape, "float32")
