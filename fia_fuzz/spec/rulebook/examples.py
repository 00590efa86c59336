"""Worked examples of the rulebook: legal base calls and, per rule, a call breaking only it.

`BASES` holds one minimal legal call per feature family (prefill, decode,
masks, paging, packed layouts, lists, padding, prefix, antiquant, full and
post quantisation, MLA, NZ caches, learnable sink). `NEGATIVE` lists, for
every rule id, base calls with a few arguments replaced so that exactly that
rule is violated. The tests under tests/spec/ hold the rulebook to both, and
`illegal_cases(rule)` may start from them. All tensors are TensorSpecs, so
nothing here allocates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.spec.tensors import TensorSpec

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
    # MLA full quantisation: int8 query, int8 NZ caches, bf16 rope
    "mla_int8": {"query": _h(1, 2, 8, 512, dtype="int8"),
                 "query_rope": _h(1, 2, 8, 64, dtype="bfloat16"),
                 "key": _h(2, 1, 16, 128, 32, dtype="int8"),
                 "value": _h(2, 1, 16, 128, 32, dtype="int8"),
                 "key_rope": _h(2, 1, 4, 128, 16, dtype="bfloat16"), "num_heads": 8,
                 "num_key_value_heads": 1, "input_layout": "BSND", "block_table": [[0, 1]],
                 "block_size": 128, "actual_seq_lengths_kv": [150], "sparse_mode": 3,
                 "atten_mask": _t((2048, 2048), "bool")},
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


#: (rule id, base, overrides): the overrides break exactly that rule.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    # arguments
    ("args.unknown_keyword", "prefill", {"bogus": 1}),
    ("args.required", "prefill", {"value": None}),
    ("args.required", "kvlist", {"key": [], "value": []}),
    ("args.type", "prefill", {"pse_shift": "not a tensor"}),
    ("args.type", "padded", {"query_padding_size": 1.5}),
    ("args.attr_type", "prefill", {"num_heads": "8"}),
    ("args.attr_type", "prefill", {"scale": float("nan")}),
    ("args.attr_type", "masked", {"pre_tokens": 1 << 70}),
    ("args.dtype_known", "prefill", {"query": T(2, 8, 4, 64, dtype="complex64")}),
    ("args.shape_sane", "prefill", {"query": T(2, 8, -4, 64)}),
    ("args.shape_sane", "prefill", {"key": TensorSpec((2, 2, 16.5, 64), "float16")}),
    ("args.values_integral", "masked", {"actual_seq_lengths": [1, float("nan")]}),
    ("args.values_integral", "masked", {"actual_seq_lengths_kv": [10, 1 << 64]}),
    ("args.memory", "prefill", {"query": T(65536, 8, 4096, 64), "key": T(65536, 2, 16, 64),
                                "value": T(65536, 2, 16, 64)}),
    # dtypes
    ("dtype.query", "prefill", {"query": T(2, 8, 4, 64, dtype="float32")}),
    ("dtype.kv_match", "aq_combined", {"value": T(2, 16, 128, dtype="int4")}),
    ("dtype.kv_float_match_query", "prefill",
     {"key": bf(2, 2, 16, 64), "value": bf(2, 2, 16, 64)}),
    ("dtype.kv", "prefill", {"key": f32(2, 2, 16, 64), "value": f32(2, 2, 16, 64)}),
    ("dtype.int8_query_kv", "int8", {"key": T(1, 2, 16, 64), "value": T(1, 2, 16, 64)}),
    ("dtype.all_int8_decode", "int8", {"query": i8(1, 2, 1, 64), "quant_scale2": None,
                                       "quant_offset2": None}),
    ("dtype.mask", "masked", {"atten_mask": T(2, 1, 4, 16)}),
    ("dtype.pse", "masked", {"pse_shift": bf(1, 8, 4, 16)}),
    ("dtype.block_table", "paged_decode",
     {"block_table": np.array([[0, 1, 2, 3], [4, 5, 6, 7]], np.int64)}),
    ("dtype.int64_values", "padded", {"kv_padding_size": np.array([2], np.int32)}),
    # layouts
    ("layout.known", "prefill", {"input_layout": "XYZ"}),
    ("layout.query_rank", "prefill", {"query": T(2, 8, 256)}),
    ("layout.bsh_h_divisible", "decode", {"query": T(2, 1, 8 * 64 + 4)}),
    ("layout.query_heads", "prefill", {"query": T(2, 4, 4, 64)}),
    ("layout.kv_rank", "prefill", {"key": T(2, 32, 64), "value": T(2, 32, 64)}),
    ("layout.kv_batch", "prefill", {"key": T(3, 2, 16, 64), "value": T(3, 2, 16, 64)}),
    ("layout.kv_heads", "prefill", {"key": T(2, 4, 16, 64), "value": T(2, 4, 16, 64)}),
    ("layout.kv_heads", "decode", {"key": T(2, 16, 2 * 64 + 1), "value": T(2, 16, 2 * 64 + 1)}),
    ("layout.kv_seq_match", "prefill", {"value": T(2, 2, 24, 64)}),
    ("layout.qk_head_dim", "prefill", {"key": T(2, 2, 16, 128)}),
    ("layout.value_head_dim", "prefill", {"value": T(2, 2, 16, 128)}),
    ("layout.bnsd_bsnd_prefill", "decode",
     {"query": T(2, 8, 1, 64), "key": T(2, 2, 16, 64), "value": T(2, 2, 16, 64),
      "input_layout": "BNSD_BSND"}),
    ("layout.nbsd_seq", "mla_nz", {"query": T(1, 1, 8, 512), "query_rope": T(1, 1, 8, 64),
                                   "sparse_mode": 4}),
    ("layout.nbsd_rope", "prefill", {"input_layout": "BNSD_NBSD"}),
    # heads
    ("gqa.num_heads_positive", "prefill", {"num_heads": 0}),
    ("gqa.kv_heads_nonnegative", "prefill", {"num_key_value_heads": -2}),
    ("gqa.divisible", "prefill", {"num_key_value_heads": 3, "key": T(2, 3, 16, 64),
                                  "value": T(2, 3, 16, 64)}),
    ("gqa.ratio_max_64", "prefill", {"query": T(2, 130, 4, 64), "num_heads": 130}),
    # dims
    ("dims.d_align_float", "prefill", {"query": T(2, 8, 4, 40), "key": T(2, 2, 16, 40),
                                       "value": T(2, 2, 16, 40)}),
    ("dims.d_align_int8", "int8", {"query": i8(1, 2, 4, 48), "key": i8(1, 2, 16, 48),
                                   "value": i8(1, 2, 16, 48)}),
    ("dims.d_align_int4", "int4", {"query": T(1, 1, 2 * 32), "key": T(1, 16, 8, dtype="int32"),
                                   "value": T(1, 16, 8, dtype="int32"),
                                   "key_antiquant_scale": T(1, 2, 32),
                                   "value_antiquant_scale": T(1, 2, 32)}),
    ("dims.d_max", "decode", {"query": T(2, 1, 8 * 640), "key": T(2, 16, 2 * 640),
                              "value": T(2, 16, 2 * 640)}),
    ("dims.n_max", "prefill", {"query": T(1, 320, 4, 64), "key": T(1, 20, 16, 64),
                               "value": T(1, 20, 16, 64), "num_heads": 320,
                               "num_key_value_heads": 20}),
    ("dims.b_max", "decode", {"query": T(65537, 1, 512), "key": T(65537, 1, 128),
                              "value": T(65537, 1, 128)}),
    ("dims.s_max", "prefill", {"query": T(1, 1, 20971530, 16), "key": T(1, 1, 16, 16),
                               "value": T(1, 1, 16, 16), "num_heads": 1,
                               "num_key_value_heads": 1}),
    # lengths
    ("lengths.q_count", "padded", {"query_padding_size": None, "kv_padding_size": None,
                                   "query": T(3, 6, 256), "key": T(3, 16, 256),
                                   "value": T(3, 16, 256), "actual_seq_lengths": [2, 3],
                                   "actual_seq_lengths_kv": [10]}),
    ("lengths.kv_count", "padded", {"query_padding_size": None, "kv_padding_size": None,
                                    "query": T(3, 6, 256), "key": T(3, 16, 256),
                                    "value": T(3, 16, 256), "actual_seq_lengths": [2],
                                    "actual_seq_lengths_kv": [10, 12]}),
    ("lengths.kv_count", "tnd", {"actual_seq_lengths_kv": [20]}),
    ("lengths.q_nonnegative", "masked", {"actual_seq_lengths": [-1, 4]}),
    ("lengths.kv_nonnegative", "masked", {"actual_seq_lengths_kv": [-3, 16]}),
    ("lengths.q_max", "masked", {"actual_seq_lengths": [3, 5]}),
    ("lengths.kv_max", "masked", {"actual_seq_lengths_kv": [10, 17]}),
    ("lengths.kv_max", "kvlist", {"actual_seq_lengths_kv": [16, 25]}),
    ("lengths.packed_required", "tnd", {"actual_seq_lengths_kv": None}),
    ("lengths.packed_count_max", "tnd",
     {"actual_seq_lengths": list(range(1, 4098)), "actual_seq_lengths_kv": list(range(1, 4098)),
      "query": bf(4097, 8, 128), "key": bf(4097, 2, 128), "value": bf(4097, 2, 128)}),
    ("lengths.packed_monotonic", "tnd", {"actual_seq_lengths": [6, 4]}),
    ("lengths.packed_total", "tnd", {"actual_seq_lengths": [4, 11]}),
    # masks
    ("mask.sparse_mode_range", "prefill", {"sparse_mode": 5}),
    ("mask.sparse_mode_range", "prefill", {"sparse_mode": 9}),
    ("mask.mode1_required", "prefill", {"sparse_mode": 1}),
    ("mask.optimized_required", "causal", {"atten_mask": None}),
    ("mask.optimized_shape", "causal", {"atten_mask": B(8, 32)}),
    ("mask.full_form", "masked", {"atten_mask": B(3, 4, 16)}),
    ("mask.full_form", "decode", {"atten_mask": B(1, 4, 16)}),
    ("mask.full_size", "masked", {"atten_mask": B(2, 1, 4, 8)}),
    ("mask.full_size", "masked", {"atten_mask": B(3, 16)}),
    # pse
    ("pse.shape", "masked", {"pse_shift": T(1, 8, 4, 8)}),
    ("pse.shape", "masked", {"pse_shift": T(3, 8, 4, 16)}),
    ("pse.decode_d_align", "decode", {"query": T(2, 1, 8 * 40), "key": T(2, 16, 2 * 40),
                                      "value": T(2, 16, 2 * 40), "pse_shift": T(2, 8, 1, 16)}),
    # padding
    ("padding.shape", "padded", {"query_padding_size": [1, 1, 1]}),
    ("padding.not_paged", "paged_prefill", {"kv_padding_size": [0]}),
    ("padding.not_int4_kv", "int4", {"kv_padding_size": [0], "actual_seq_lengths_kv": [8]}),
    ("padding.q_window", "padded", {"query_padding_size": [4]}),
    ("padding.kv_window", "padded", {"kv_padding_size": [5]}),
    # kv lists
    ("kvlist.count", "kvlist", {"key": [T(1, 16, 128)] * 3, "value": [T(1, 16, 128)] * 3}),
    ("kvlist.batch_one", "kvlist", {"key": [T(2, 16, 128)] * 2, "value": [T(2, 16, 128)] * 2}),
    ("kvlist.uniform", "kvlist", {"value": [T(1, 16, 128), T(1, 20, 128)]}),
    ("kvlist.b_max_256", "kvlist", {"query": T(257, 1, 256), "key": [T(1, 16, 128)] * 257,
                                    "value": [T(1, 16, 128)] * 257}),
    ("kvlist.not_paged", "paged_decode", {"key": [T(8, 16, 128)] * 2,
                                          "value": [T(8, 16, 128)] * 2}),
    ("kvlist.no_left_padding", "kvlist", {"kv_padding_size": [0]}),
    # paged
    ("paged.kv_lengths_required", "paged_decode", {"actual_seq_lengths_kv": None}),
    ("paged.block_table_rank", "paged_decode", {"block_table": [0, 1, 2, 3]}),
    ("paged.block_table_rank", "paged_decode", {"block_table": [[0, 1, 2, 3], [4, 5, 6, 7, -1]]}),
    ("paged.block_table_batch", "paged_decode", {"block_table": [[0, 1, 2, 3]] * 3}),
    ("paged.block_table_width", "paged_decode", {"block_table": [[0, 1, 2], [4, 5, 6]],
                                                 "actual_seq_lengths_kv": [40, 64]}),
    ("paged.block_size_positive", "paged_decode", {"block_size": 0}),
    ("paged.block_size_max", "paged_decode", {"block_size": 1024, "key": T(8, 1024, 128),
                                              "value": T(8, 1024, 128)}),
    ("paged.block_size_align", "paged_decode", {"block_size": 24, "key": T(8, 24, 128),
                                                "value": T(8, 24, 128)}),
    ("paged.block_size_prefill", "paged_prefill",
     {"block_size": 64, "key": T(4, 2, 64, 64), "value": T(4, 2, 64, 64),
      "block_table": [[0, 1, 2, 3]]}),
    ("paged.kv_dtype", "paged_decode", {"key": T(8, 16, 128, dtype="int4"),
                                        "value": T(8, 16, 128, dtype="int4"),
                                        "key_antiquant_scale": T(1, 2, 64),
                                        "value_antiquant_scale": T(1, 2, 64)}),
    ("paged.int8_query", "paged_prefill",
     {"query": i8(1, 8, 4, 64), "key": i8(2, 2, 128, 64), "value": i8(2, 2, 128, 64),
      "dequant_scale1": f32(1), "quant_scale1": f32(1), "dequant_scale2": f32(1),
      "pse_shift": None}),
    ("paged.cache_rank", "paged_decode", {"key": T(8, 16, 2, 1, 64, 1),
                                          "value": T(8, 16, 2, 1, 64, 1)}),
    ("paged.cache_layout_query", "paged_decode",
     {"query": T(2, 1, 8, 64), "input_layout": "BSND", "key": T(8, 2, 16, 64),
      "value": T(8, 2, 16, 64)}),
    ("paged.kv_shape_match", "paged_decode", {"value": T(9, 16, 128)}),
    ("paged.cache_block_size", "paged_decode", {"key": T(8, 32, 128), "value": T(8, 32, 128)}),
    ("paged.cache_heads", "paged_prefill", {"key": T(2, 4, 128, 64), "value": T(2, 4, 128, 64)}),
    ("paged.cache_heads", "paged_decode", {"key": T(8, 16, 130), "value": T(8, 16, 130)}),
    ("paged.block_count", "paged_decode", {"key": T(6, 16, 128), "value": T(6, 16, 128)}),
    ("paged.bsh_kvn_d_max", "paged_decode",
     {"query": T(2, 256, 1, 256), "num_heads": 256, "num_key_value_heads": 256,
      "key": T(8, 16, 65536), "value": T(8, 16, 65536)}),
    ("paged.mask_last_dim", "paged_prefill", {"atten_mask": B(1, 1, 4, 200)}),
    ("paged.pse_last_dim", "paged_prefill", {"pse_shift": T(1, 8, 4, 200)}),
    # prefix
    ("prefix.both_or_neither", "prefix", {"value_shared_prefix": None}),
    ("prefix.both_or_neither", "prefill", {"actual_shared_prefix_len": [3]}),
    ("prefix.rank_dtype", "prefix", {"key_shared_prefix": bf(1, 4, 8, 64),
                                     "value_shared_prefix": bf(1, 4, 8, 64)}),
    ("prefix.batch_one", "prefix", {"key_shared_prefix": T(2, 4, 8, 64),
                                    "value_shared_prefix": T(2, 4, 8, 64)}),
    ("prefix.heads_dim", "prefix", {"key_shared_prefix": T(1, 2, 8, 64),
                                    "value_shared_prefix": T(1, 2, 8, 64)}),
    ("prefix.same_shape", "prefix", {"value_shared_prefix": T(1, 4, 9, 64)}),
    ("prefix.len_shape", "prefix", {"actual_shared_prefix_len": [5, 5]}),
    ("prefix.len_range", "prefix", {"actual_shared_prefix_len": [9]}),
    ("prefix.not_paged", "paged_decode", {"key_shared_prefix": T(1, 16, 128),
                                          "value_shared_prefix": T(1, 16, 128)}),
    ("prefix.no_left_padding", "prefix", {"kv_padding_size": [0]}),
    ("prefix.not_kv_list", "kvlist", {"key_shared_prefix": T(1, 8, 128),
                                      "value_shared_prefix": T(1, 8, 128)}),
    ("prefix.not_all_int8", "int8", {"key_shared_prefix": i8(1, 2, 8, 64),
                                     "value_shared_prefix": i8(1, 2, 8, 64)}),
    ("prefix.mask_covers", "prefix", {"atten_mask": B(4, 20)}),
    ("prefix.pse_covers", "prefix", {"pse_shift": T(1, 4, 4, 20)}),
    ("prefix.mask_covers", "decode", {"key_shared_prefix": T(1, 8, 128),
                                      "value_shared_prefix": T(1, 8, 128),
                                      "atten_mask": B(2, 20)}),
    # antiquant
    ("antiquant.needs_int_kv", "prefill", {"antiquant_scale": T(2, 2, 1, 64)}),
    ("antiquant.scale_needed", "aq_combined", {"antiquant_scale": None,
                                               "antiquant_offset": None}),
    ("antiquant.offset_needs_scale", "aq_combined", {"antiquant_scale": None}),
    ("antiquant.offset_matches_scale", "aq_combined", {"antiquant_offset": T(2, 2, 64)}),
    ("antiquant.offset_matches_scale", "aq_separate", {"value_antiquant_offset": bf(1, 2, 1, 64)}),
    ("antiquant.int4_separate_only", "int4", {"key_antiquant_scale": None,
                                              "value_antiquant_scale": None,
                                              "antiquant_scale": T(2, 2, 64)}),
    ("antiquant.combined_mode", "aq_combined", {"antiquant_mode": 2}),
    ("antiquant.combined_shape", "aq_combined", {"antiquant_scale": T(2, 3, 64),
                                                 "antiquant_offset": T(2, 3, 64)}),
    ("antiquant.combined_shape", "aq_combined",
     {"antiquant_mode": 1, "antiquant_scale": f32(2, 2, 8), "antiquant_offset": f32(2, 2, 8)}),
    ("antiquant.combined_dtype", "aq_combined", {"antiquant_scale": f32(2, 2, 1, 64),
                                                 "antiquant_offset": f32(2, 2, 1, 64)}),
    ("antiquant.combined_prefill_query", "aq_prefill",
     {"key_antiquant_scale": None, "value_antiquant_scale": None,
      "antiquant_scale": T(2, 2, 1, 64)}),
    ("antiquant.sep_scale_pair", "aq_separate", {"value_antiquant_scale": None,
                                                 "value_antiquant_offset": None,
                                                 "key_antiquant_offset": None}),
    ("antiquant.sep_offset_pair", "aq_separate", {"value_antiquant_offset": None}),
    ("antiquant.sep_mode_range", "aq_separate", {"key_antiquant_mode": 6,
                                                 "value_antiquant_mode": 6}),
    ("antiquant.sep_mode_range", "aq_prefill", {"key_antiquant_mode": 2,
                                                "value_antiquant_mode": 2}),
    ("antiquant.sep_mode_pair", "aq_separate", {"key_antiquant_mode": 1,
                                                "value_antiquant_mode": 0}),
    ("antiquant.sep_shape", "aq_separate",
     {"key_antiquant_scale": T(1, 2, 1, 32), "value_antiquant_scale": T(1, 2, 1, 32),
      "key_antiquant_offset": T(1, 2, 1, 32), "value_antiquant_offset": T(1, 2, 1, 32)}),
    ("antiquant.sep_shape", "aq_prefill", {"key_antiquant_scale": bf(1, 2, 1, 64),
                                           "value_antiquant_scale": bf(1, 2, 1, 64)}),
    ("antiquant.sep_dtype", "aq_separate",
     {"key_antiquant_scale": bf(1, 2, 1, 64), "value_antiquant_scale": bf(1, 2, 1, 64),
      "key_antiquant_offset": bf(1, 2, 1, 64), "value_antiquant_offset": bf(1, 2, 1, 64)}),
    ("antiquant.sep_shapes_match", "aq_separate",
     {"value_antiquant_scale": T(1, 2, 64), "value_antiquant_offset": T(1, 2, 64)}),
    ("antiquant.int8_only_forms", "int4", {"key_antiquant_scale": T(1),
                                           "value_antiquant_scale": T(1)}),
    ("antiquant.int4_modes", "int4", {"key_antiquant_mode": 2, "value_antiquant_mode": 2,
                                      "key_antiquant_scale": T(2), "value_antiquant_scale": T(2)}),
    ("antiquant.paged_modes", "aq_separate",
     {"key_antiquant_mode": 4, "value_antiquant_mode": 4, "key_antiquant_scale": f32(2, 16),
      "value_antiquant_scale": f32(2, 16), "key_antiquant_offset": f32(2, 16),
      "value_antiquant_offset": f32(2, 16)}),
    ("antiquant.mixed_query_fp16", "aq_separate",
     {"query": bf(2, 1, 256), "key_antiquant_mode": 0, "value_antiquant_mode": 1,
      "key_antiquant_scale": bf(1, 2, 1, 64), "value_antiquant_scale": f32(1, 2, 16),
      "key_antiquant_offset": None, "value_antiquant_offset": None}),
    ("antiquant.sep_prefill_dtypes", "aq_prefill",
     {"quant_scale2": f32(1)}),
    ("antiquant.sep_prefill_seq", "aq_prefill", {"query": bf(2, 2, 20, 64)}),
    ("antiquant.sep_prefill_features", "aq_prefill",
     {"actual_seq_lengths_kv": [8, 8], "kv_padding_size": [0]}),
    # quant
    ("quant.int8_query_needs_dequant", "int8", {"quant_scale1": None}),
    ("quant.float_query_forbids_dequant", "post_quant", {"dequant_scale1": f32(1)}),
    ("quant.dequant_dtype", "int8", {"quant_scale1": T(1, dtype="uint64")}),
    ("quant.dequant_per_tensor", "int8", {"dequant_scale2": f32(2)}),
    ("quant.offset2_needs_scale2", "int8", {"quant_scale2": None}),
    ("quant.scale2_dtype", "post_quant", {"quant_scale2": bf(1, 2, 1, 64),
                                          "quant_offset2": bf(1, 2, 1, 64)}),
    ("quant.scale2_shape", "post_quant", {"quant_scale2": f32(1, 2, 1, 32),
                                          "quant_offset2": f32(1, 2, 1, 32)}),
    ("quant.offset2_matches", "post_quant", {"quant_offset2": f32(2, 64)}),
    ("quant.per_channel_no_left_padding", "post_quant",
     {"actual_seq_lengths_kv": [10], "kv_padding_size": [0]}),
    ("quant.band_negative", "post_quant",
     {"quant_offset2": None, "sparse_mode": 4, "atten_mask": B(2048, 2048),
      "pre_tokens": -1, "next_tokens": 100}),
    ("quant.rows_not_computed", "post_quant", {"sparse_mode": 3, "atten_mask": B(2048, 2048),
                                               "actual_seq_lengths_kv": [2]}),
    ("quant.rows_not_computed", "post_quant", {"next_tokens": -1}),
    ("quant.rows_not_computed", "post_quant", {"actual_seq_lengths_kv": [1], "pre_tokens": 1}),
    ("quant.rows_not_computed", "post_quant",
     {"sparse_mode": 4, "atten_mask": B(2048, 2048), "pre_tokens": 10, "next_tokens": 0,
      "actual_seq_lengths_kv": [2]}),
    ("quant.int4_no_post", "int4", {"quant_scale2": f32(1)}),
    ("quant.dequant_scale_query", "int8", {"dequant_scale_query": f32(1, 2, 4)}),
    # rope / MLA
    ("rope.both_or_neither", "mla", {"key_rope": None}),
    ("rope.dim_64", "mla", {"query_rope": bf(2, 1, 8, 32), "key_rope": bf(4, 128, 32)}),
    ("rope.shapes", "mla", {"query_rope": bf(2, 1, 4, 64)}),
    ("rope.dtype", "mla", {"query_rope": T(2, 1, 8, 64)}),
    ("rope.query_d", "prefill", {"query_rope": T(2, 8, 4, 64), "key_rope": T(2, 2, 16, 64)}),
    ("mla.kv_heads_1", "mla", {"num_key_value_heads": 2, "key": bf(4, 128, 1024),
                               "value": bf(4, 128, 1024), "key_rope": bf(4, 128, 128)}),
    ("mla.num_heads", "mla", {"query": bf(2, 1, 6, 512), "query_rope": bf(2, 1, 6, 64),
                              "num_heads": 6}),
    ("mla.q_seq", "mla_nz", {"query": T(1, 20, 8, 512), "query_rope": T(1, 20, 8, 64),
                             "input_layout": "BSND"}),
    ("mla.layout", "mla_nz", {"input_layout": "BNSD_NBSD", "query": T(1, 8, 4, 512),
                              "query_rope": T(1, 8, 4, 64)}),
    ("mla.sparse", "mla", {"sparse_mode": 3, "atten_mask": B(2048, 2048)}),
    ("mla.actual_seq_lengths", "mla", {"actual_seq_lengths": [1, 1]}),
    ("mla.paged_required", "mla",
     {"block_table": None, "block_size": 0, "actual_seq_lengths_kv": None,
      "key": bf(2, 256, 1, 512), "value": bf(2, 256, 1, 512), "key_rope": bf(2, 256, 1, 64)}),
    ("mla.block_size_128", "mla", {"block_size": 256, "key": bf(4, 256, 512),
                                   "value": bf(4, 256, 512), "key_rope": bf(4, 256, 64)}),
    ("mla.full_quant_nz", "mla",
     {"query": i8(2, 1, 8, 512), "key": i8(4, 128, 512), "value": i8(4, 128, 512)}),
    ("mla.no_extras", "mla", {"softmax_lse_flag": True}),
    # packed layouts
    ("tnd.layout_by_d", "tnd", {"input_layout": "TND_NTD"}),
    ("tnd.layout_by_d", "tnd", {"input_layout": "NTD", "query": bf(8, 10, 128),
                                "key": bf(2, 20, 128), "value": bf(2, 20, 128)}),
    ("tnd.t_max", "tnd", {"query": bf(1048577, 8, 128), "actual_seq_lengths": [4, 1048577],
                          "key": bf(1048577, 2, 128), "value": bf(1048577, 2, 128),
                          "actual_seq_lengths_kv": [8, 1048577]}),
    ("tnd.sparse", "tnd", {"sparse_mode": 2, "atten_mask": B(2048, 2048)}),
    ("tnd.dtype_bf16", "tnd", {"query": T(10, 8, 128), "key": T(20, 2, 128),
                               "value": T(20, 2, 128)}),
    ("tnd.head_dims", "tnd", {"query": bf(10, 8, 64), "key": bf(20, 2, 64),
                              "value": bf(20, 2, 64)}),
    ("tnd.head_dims", "tnd", {"query": bf(10, 8, 192), "key": bf(20, 2, 192),
                              "value": bf(20, 2, 192)}),
    ("tnd.causal_lengths", "tnd", {"sparse_mode": 3, "atten_mask": B(2048, 2048),
                                   "actual_seq_lengths_kv": [4, 20]}),
    ("tnd.block_size", "tnd",
     {"key": bf(4, 256, 256), "value": bf(4, 256, 256), "block_table": [[0, 1], [2, 3]],
      "block_size": 256, "actual_seq_lengths_kv": [8, 12]}),
    ("tnd.rope_not_paged", "tnd_rope",
     {"input_layout": "TND", "query": bf(6, 4, 128), "query_rope": bf(6, 4, 64),
      "key": bf(4, 128, 512), "value": bf(4, 128, 512), "key_rope": bf(4, 128, 256),
      "block_table": [[0], [1]], "block_size": 128, "actual_seq_lengths_kv": [5, 7]}),
    ("tnd.d512_needs_rope", "tnd_rope",
     {"input_layout": "TND", "query": bf(6, 32, 512), "query_rope": None,
      "key": bf(4, 128, 512), "value": bf(4, 128, 512), "key_rope": None,
      "num_heads": 32, "num_key_value_heads": 1, "block_table": [[0], [1]], "block_size": 128,
      "actual_seq_lengths_kv": [5, 7]}),
    ("tnd.no_extras", "tnd", {"pse_shift": bf(2, 8, 6, 12)}),
    # 5-D NZ caches without rope
    ("nz.dtypes", "nz", {"query": T(1, 1, 1280)}),
    ("nz.dims", "nz", {"query": bf(1, 1, 10 * 256), "key": i8(2, 1, 8, 128, 32),
                       "value": i8(2, 1, 8, 128, 32), "key_antiquant_scale": bf(256),
                       "value_antiquant_scale": bf(256)}),
    ("nz.heads", "nz", {"query": bf(1, 1, 20 * 128), "num_heads": 20}),
    ("nz.layout", "nz", {"input_layout": "BNSD_BSND", "query": bf(1, 10, 2, 128),
                         "key_antiquant_scale": bf(1, 1, 128), "sparse_mode": 3,
                         "atten_mask": B(2048, 2048), "value_antiquant_scale": bf(1, 1, 128)}),
    ("nz.inner_precise", "nz", {"inner_precise": 0}),
    ("nz.mask", "nz", {"atten_mask": B(1, 256)}),
    ("nz.antiquant", "nz", {"key_antiquant_offset": bf(128), "value_antiquant_offset": bf(128)}),
    ("nz.scale_shape", "nz", {"key_antiquant_scale": bf(1, 128),
                              "value_antiquant_scale": bf(1, 128)}),
    ("nz.block_size", "nz", {"block_size": 256, "key": i8(2, 1, 4, 256, 32),
                             "value": i8(2, 1, 4, 256, 32), "block_table": [[0]]}),
    ("nz.no_extras", "nz", {"pse_shift": bf(1, 10, 1, 256)}),
    # outputs
    ("precise.range", "prefill", {"inner_precise": 4}),
    ("precise.decode_01", "decode", {"inner_precise": 2}),
    ("sink.shape", "sink", {"learnable_sink": f32(8)}),
    ("sink.dtype", "sink", {"learnable_sink": T(4, dtype="int32")}),
]


def violating(rule_id: str) -> list[dict[str, Any]]:
    """Calls that break exactly `rule_id` (empty for an unknown id)."""
    return [call(base, **over) for r, base, over in NEGATIVE if r == rule_id]
