"""Worked examples of `atlas-a2`, per row of device-a2.md: legal calls and broken ones.

`POSITIVE`: (row, call, the documented rules the call breaks) for calls the
device accepts; an empty set marks a call legal under both profiles that
exercises the row's device rule. `NEGATIVE`: (row, rule id, call) for calls
the device rejects with that rule. TensorSpecs only, nothing allocates.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.tensors import TensorSpec


def _h(*shape: int) -> TensorSpec:
    return TensorSpec(shape, "float16")


def _bf(*shape: int) -> TensorSpec:
    return TensorSpec(shape, "bfloat16")


def _mask(*shape: int) -> TensorSpec:
    return TensorSpec(shape, "bool")


M2048 = _mask(2048, 2048)
#: the 2048 template with a leading 1: what rope or unequal D need (row 6 rejects 2-D masks)
M3 = _mask(1, 2048, 2048)
#: BNSD fp16 prefill, GQA 8/2, D 128
PREFILL: dict[str, Any] = {"query": _h(2, 8, 4, 128), "key": _h(2, 2, 16, 128),
                           "value": _h(2, 2, 16, 128), "num_heads": 8,
                           "num_key_value_heads": 2, "input_layout": "BNSD"}
#: BSH fp16 decode, GQA 8/2, D 128
DECODE: dict[str, Any] = {"query": _h(2, 1, 8 * 128), "key": _h(2, 16, 2 * 128),
                          "value": _h(2, 16, 2 * 128), "num_heads": 8,
                          "num_key_value_heads": 2, "input_layout": "BSH"}
#: packed TND bf16, D 128, GQA 8/2, inner_precise 0: on the split-fuse route
TND: dict[str, Any] = {"query": _bf(10, 8, 128), "key": _bf(20, 2, 128), "value": _bf(20, 2, 128),
                       "num_heads": 8, "num_key_value_heads": 2, "input_layout": "TND",
                       "actual_seq_lengths": [4, 10], "actual_seq_lengths_kv": [8, 20],
                       "inner_precise": 0}
#: non-quantised MLA D 512, BSND, unpaged, Q_S 64, causal
MLA: dict[str, Any] = {"query": _bf(1, 64, 8, 512), "query_rope": _bf(1, 64, 8, 64),
                       "key": _bf(1, 128, 1, 512), "key_rope": _bf(1, 128, 1, 64),
                       "value": _bf(1, 128, 1, 512), "num_heads": 8, "num_key_value_heads": 1,
                       "input_layout": "BSND", "sparse_mode": 3, "atten_mask": M3}
#: packed MLA D 512 (TND), unpaged, N 8
MLA_TND: dict[str, Any] = {"query": _bf(8, 8, 512), "query_rope": _bf(8, 8, 64),
                           "key": _bf(32, 1, 512), "key_rope": _bf(32, 1, 64),
                           "value": _bf(32, 1, 512), "num_heads": 8, "num_key_value_heads": 1,
                           "input_layout": "TND", "actual_seq_lengths": [4, 8],
                           "actual_seq_lengths_kv": [16, 32], "sparse_mode": 3,
                           "atten_mask": M3}
#: paged prefill BNSD, BnNBsD cache, D 128, one block of 1024
PAGED: dict[str, Any] = {"query": _h(1, 8, 4, 128), "key": _h(1, 2, 1024, 128),
                         "value": _h(1, 2, 1024, 128), "num_heads": 8, "num_key_value_heads": 2,
                         "input_layout": "BNSD", "block_table": [[0]], "block_size": 1024,
                         "actual_seq_lengths_kv": [1000]}
#: unequal head dims 192/128, BNSD
UNEQUAL: dict[str, Any] = {**PREFILL, "query": _h(2, 8, 4, 192), "key": _h(2, 2, 16, 192)}


def call(base: dict[str, Any], **over: Any) -> dict[str, Any]:
    """A copy of `base` with some arguments replaced (None removes one)."""
    out = {**base, **over}
    return {k: v for k, v in out.items() if v is not None}


POSITIVE: list[tuple[int, dict[str, Any], frozenset[str]]] = [
    (1, call(DECODE, inner_precise=2), frozenset({"precise.decode_01"})),
    (1, call(DECODE, inner_precise=3), frozenset({"precise.decode_01"})),
    (2, call(PREFILL, learnable_sink=_bf(8)), frozenset()),
    (2, call(TND, learnable_sink=_bf(8)), frozenset()),
    (3, call(MLA, sparse_mode=9, atten_mask=_mask(1, 64, 128)),
     frozenset({"mask.sparse_mode_range", "mla.q_seq", "mla.paged_required", "mla.sparse"})),
    (4, call(PREFILL, query=_h(2, 4, 8 * 128), key=_h(2, 16, 2 * 128),
             value=_h(2, 16, 2 * 128), input_layout="BSH_BNSD"), frozenset({"layout.known"})),
    (4, call(PREFILL, query=_h(2, 4, 8, 64), key=_h(2, 16, 2, 64), value=_h(2, 16, 2, 64),
             input_layout="BSND_BNSD"), frozenset({"layout.known"})),
    (4, call(TND, query=_bf(8, 10, 128), key=_bf(2, 20, 128), value=_bf(2, 20, 128),
             input_layout="NTD"), frozenset({"tnd.layout_by_d"})),
    (5, call(TND, query=_bf(10, 8, 64), key=_bf(20, 2, 64), value=_bf(20, 2, 64)),
     frozenset({"tnd.head_dims"})),
    (5, call(TND, query=_bf(8, 10, 64), key=_bf(2, 20, 64), value=_bf(2, 20, 64),
             input_layout="NTD_TND"), frozenset({"tnd.head_dims"})),
    (6, call(UNEQUAL, atten_mask=_mask(2, 1, 4, 16)), frozenset({"layout.value_head_dim"})),
    (7, call(PREFILL, sparse_mode=4, atten_mask=M2048, pre_tokens=-2, next_tokens=5),
     frozenset()),
    (8, call(UNEQUAL), frozenset({"layout.value_head_dim"})),
    (8, call(UNEQUAL, sparse_mode=3, atten_mask=M3), frozenset({"layout.value_head_dim"})),
    (8, call(UNEQUAL, query=_h(2, 4, 8 * 192), key=_h(2, 16, 2 * 192), value=_h(2, 16, 2 * 128),
             input_layout="BSH", sparse_mode=2, atten_mask=M3),
     frozenset({"layout.value_head_dim"})),
    (9, call(MLA), frozenset({"mla.q_seq", "mla.paged_required"})),
    (9, call(MLA, query=_bf(1, 1, 8, 512), query_rope=_bf(1, 1, 8, 64), sparse_mode=0,
             atten_mask=None), frozenset({"mla.paged_required"})),
    (10, call(MLA_TND), frozenset({"mla.num_heads", "mla.paged_required"})),
    (11, call(DECODE, key=_h(2, 0, 2 * 128), value=_h(2, 0, 2 * 128), sparse_mode=6,
              inner_precise=7), frozenset({"precise.range"})),
    (12, call(TND, sparse_mode=4, atten_mask=M2048, pre_tokens=8, next_tokens=0),
     frozenset({"tnd.sparse"})),
    (13, call(TND, sparse_mode=3, atten_mask=M2048, actual_seq_lengths_kv=[2, 20]),
     frozenset({"tnd.causal_lengths"})),
    (13, call(TND, sparse_mode=3, atten_mask=M2048, actual_seq_lengths_kv=[3, 8],
              key=_bf(8, 2, 128), value=_bf(8, 2, 128)),
     frozenset({"tnd.causal_lengths"})),
    (14, call(TND, pse_shift=_bf(1, 8, 6, 12)), frozenset({"tnd.no_extras"})),
    (15, call(TND, quant_scale2=TensorSpec((1,), "float32")), frozenset({"tnd.no_extras"})),
    (15, call(TND, quant_scale2=TensorSpec((8, 128), "float32")), frozenset({"tnd.no_extras"})),
    (16, call(PAGED), frozenset({"paged.block_size_max"})),
    (16, call(PAGED, key=_h(16, 2, 64, 128), value=_h(16, 2, 64, 128), block_size=64,
              block_table=[list(range(16))]), frozenset({"paged.block_size_prefill"})),
    (16, call(TND, key=_bf(2, 64, 256), value=_bf(2, 64, 256), block_table=[[0], [1]],
              block_size=64, actual_seq_lengths_kv=[30, 50]),
     frozenset({"tnd.block_size", "paged.block_size_prefill"})),
]

NEGATIVE: list[tuple[int, str, dict[str, Any]]] = [
    (1, "a2.precise_decode", call(DECODE, query=_h(2, 1, 4 * 256), key=_h(2, 16, 4 * 256),
                                  value=_h(2, 16, 4 * 256), num_heads=4, num_key_value_heads=4,
                                  inner_precise=2)),
    (2, "a2.sink_dtype", call(PREFILL, learnable_sink=TensorSpec((8,), "float32"))),
    (2, "a2.sink_dtype", call(TND, learnable_sink=_bf(8), inner_precise=1,
                              num_key_value_heads=8, key=_bf(20, 8, 128),
                              value=_bf(20, 8, 128))),
    (3, "a2.sparse9", call(PREFILL, sparse_mode=9, atten_mask=_mask(2, 4, 16))),
    (3, "a2.sparse_range", call(PREFILL, sparse_mode=7)),
    (4, "a2.tnd_layouts", call(TND, query=_bf(10, 8, 128), input_layout="TND_NTD")),
    (4, "a2.layout_known", call(PREFILL, input_layout="BNSD_BNSD")),
    (5, "a2.head_dims", call(PREFILL, query=_h(2, 4, 8 * 192), key=_h(2, 16, 2 * 192),
                             value=_h(2, 16, 2 * 192), input_layout="BSH_BNSD")),
    (5, "a2.head_dims", call(TND, query=_bf(8, 10, 192), key=_bf(2, 20, 192),
                             value=_bf(2, 20, 128), input_layout="NTD_TND")),
    (6, "a2.mask_2d", call(UNEQUAL, atten_mask=_mask(4, 16))),
    (6, "a2.mask_2d", call(MLA, atten_mask=M2048)),
    (7, "a2.band_sum", call(PREFILL, sparse_mode=4, atten_mask=M2048, pre_tokens=-5,
                            next_tokens=2)),
    (8, "a2.value_head_dim", call(UNEQUAL, sparse_mode=4, atten_mask=M3)),
    (9, "a2.mla_q_seq", call(MLA, query=_bf(1, 129, 8, 512), query_rope=_bf(1, 129, 8, 64),
                             key=_bf(1, 256, 1, 512), key_rope=_bf(1, 256, 1, 64),
                             value=_bf(1, 256, 1, 512))),
    (9, "a2.mla_sparse", call(MLA, sparse_mode=2)),
    (10, "a2.mla_num_heads", call(MLA_TND, num_heads=12, query=_bf(8, 12, 512),
                                  query_rope=_bf(8, 12, 64))),
    (11, "args.unknown_keyword", call(DECODE, key=_h(2, 0, 2 * 128), value=_h(2, 0, 2 * 128),
                                      not_an_argument=1)),
    (11, "precise.range", call(DECODE, inner_precise=7)),
    (12, "a2.tnd_sparse", call(TND, sparse_mode=2, atten_mask=M2048)),
    (12, "a2.tnd_sparse", call(TND, query=_bf(8, 10, 128), key=_bf(2, 20, 128),
                               value=_bf(2, 20, 128), input_layout="NTD", sparse_mode=4,
                               atten_mask=M2048)),
    (13, "lengths.packed_total", call(TND, query=_bf(12, 8, 128))),
    (14, "a2.tnd_extras", call(TND, pse_shift=_bf(1, 8, 6, 12), inner_precise=1)),
    (15, "a2.tnd_post_quant", call(TND, quant_scale2=TensorSpec((8 * 128,), "float32"))),
    (16, "a2.block_size", call(PAGED, query=_h(1, 8, 4, 256), key=_h(16, 2, 64, 256),
                               value=_h(16, 2, 64, 256), block_size=64,
                               block_table=[list(range(16))])),
    (16, "a2.block_size", call(TND, key=_bf(2, 1024, 256), value=_bf(2, 1024, 256),
                               block_table=[[0], [1]], block_size=1024,
                               actual_seq_lengths_kv=[30, 50])),
]
