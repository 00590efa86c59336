"""Hand-built source cases, each chosen to exercise one relation's transformation."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import validate

SHAPES = {"BNSD": lambda b, n, s, d: (b, n, s, d), "BSND": lambda b, n, s, d: (b, s, n, d),
          "BSH": lambda b, n, s, d: (b, s, n * d)}


def make_case(layout: str = "BNSD", b: int = 2, n: int = 4, kv_n: int = 2, s1: int = 8,
              s2: int = 40, d: int = 16, dtype: str = "float16", lse: bool = True,
              seed: int = 3, fills: dict[str, dict[str, Any]] | None = None,
              **extra: Any) -> Case:
    """A small legal dense case; `extra` adds or overrides canonical parameters."""
    shape = SHAPES[layout]
    params: dict[str, Any] = {
        "query": TensorSpec(shape(b, n, s1, d), dtype),
        "key": TensorSpec(shape(b, kv_n, s2, d), dtype),
        "value": TensorSpec(shape(b, kv_n, s2, d), dtype),
        "num_heads": n, "num_key_value_heads": kv_n, "input_layout": layout,
        "scale": d ** -0.5, "softmax_lse_flag": lse, **extra,
    }
    case = Case(params=params, fills=fills or {}, seed=seed)
    broken = validate(**case.specs())
    assert not broken, broken
    return case


def packed_case(layout: str = "TND", paged: bool = False, seed: int = 4) -> Case:
    """A legal packed (TND/NTD_TND) bf16 D=128 case: 2 batches, 4 query heads, 2 KV heads."""
    q_len, kv_len = [5, 8], [40, 70]
    q = (13, 4, 128) if layout.startswith("TND") else (4, 13, 128)
    params: dict[str, Any] = {"num_heads": 4, "num_key_value_heads": 2, "input_layout": layout,
                              "scale": 128 ** -0.5, "softmax_lse_flag": True,
                              "query": TensorSpec(q, "bfloat16"), "actual_seq_lengths": [5, 13]}
    if paged:
        cache = TensorSpec((4, 128, 256), "bfloat16")
        params.update(key=cache, value=cache, block_table=[[2, -1], [0, -1]], block_size=128,
                      actual_seq_lengths_kv=kv_len)
    else:
        kv = (110, 2, 128) if layout.startswith("TND") else (2, 110, 128)
        params.update(key=TensorSpec(kv, "bfloat16"), value=TensorSpec(kv, "bfloat16"),
                      actual_seq_lengths_kv=[40, 110])
    assert sum(q_len) == 13
    case = Case(params=params, seed=seed)
    broken = validate(**case.specs())
    assert not broken, broken
    return case


def bool_mask(*shape: int) -> TensorSpec:
    return TensorSpec(shape, "bool")


#: The optimised 2048 x 2048 upper-triangular mask sparse modes 2/3/4 take [SEM §4].
CAUSAL = {"atten_mask": bool_mask(2048, 2048)}
CAUSAL_FILL = {"atten_mask": {"dist": "triu", "k": 1}}


def sink(n: int, dtype: str = "float16") -> TensorSpec:
    return TensorSpec((n,), dtype)


#: relation -> source cases that exercise it (a mix of layouts, dtypes, branches, G, and
#: the inputs each relation must carry: lengths, masks, sparse modes, pse, padding, prefix).
SOURCES: dict[str, list[Case]] = {
    "layout": [make_case("BNSD"), make_case("BSH", dtype="bfloat16", kv_n=1),
               make_case("BSND", s1=1, seed=5), make_case("BNSD", n=2, kv_n=2, s1=3, s2=7),
               make_case("BSH", b=3, actual_seq_lengths=[8, 3, 0],
                         actual_seq_lengths_kv=[40, 17, 5]),
               make_case("BNSD", atten_mask=bool_mask(2, 1, 8, 40)),
               packed_case("TND"), packed_case("NTD_TND"), packed_case("TND", paged=True)],
    "gqa_repeat": [make_case("BNSD", n=8, kv_n=2), make_case("BSH", n=6, kv_n=2, s1=1),
                   make_case("BSND", n=4, kv_n=1, dtype="bfloat16"),
                   make_case("BNSD", n=4, kv_n=2, actual_seq_lengths_kv=[12, 40],
                             atten_mask=bool_mask(8, 40))],
    "paged": [make_case("BNSD", s1=1, s2=70), make_case("BSH", s1=1, s2=33, b=3),
              make_case("BSND", s1=4, s2=300, n=2, kv_n=1),
              make_case("BNSD", s1=1, s2=70, actual_seq_lengths_kv=[70, 9],
                        atten_mask=bool_mask(2, 70)),
              packed_case("TND"), packed_case("TND", paged=True)],
    "kv_list": [make_case("BNSD", b=3, actual_seq_lengths_kv=[40, 3, 22]),
                make_case("BSH", s1=1, b=2),
                make_case("BSND", b=2, key=[TensorSpec((1, 9, 2, 16), "float16"),
                                            TensorSpec((1, 30, 2, 16), "float16")],
                          value=[TensorSpec((1, 9, 2, 16), "float16"),
                                 TensorSpec((1, 30, 2, 16), "float16")])],
    "padding": [make_case("BNSD", b=3, actual_seq_lengths=[8, 5, 1],
                          actual_seq_lengths_kv=[40, 20, 7]),
                make_case("BSH", s1=1, actual_seq_lengths_kv=[33, 40]),
                make_case("BSND", actual_seq_lengths=[6, 8], atten_mask=bool_mask(2, 8, 40),
                          pre_tokens=3, next_tokens=2),
                make_case("BNSD", sparse_mode=3, actual_seq_lengths=[8, 4],
                          actual_seq_lengths_kv=[30, 12], **CAUSAL, fills=CAUSAL_FILL)],
    "prefix": [make_case("BNSD", b=2, key_shared_prefix=TensorSpec((1, 2, 12, 16), "float16"),
                         value_shared_prefix=TensorSpec((1, 2, 12, 16), "float16"),
                         actual_shared_prefix_len=[9], actual_seq_lengths_kv=[40, 25]),
               make_case("BSH", b=1, s2=30),
               make_case("BNSD", b=1, s2=30, sparse_mode=3, **CAUSAL, fills=CAUSAL_FILL)],
    "sparse_mask": [make_case("BNSD", sparse_mode=2, **CAUSAL, fills=CAUSAL_FILL),
                    make_case("BSH", sparse_mode=3, actual_seq_lengths=[8, 5],
                              actual_seq_lengths_kv=[40, 3], **CAUSAL, fills=CAUSAL_FILL),
                    make_case("BSND", sparse_mode=4, pre_tokens=5, next_tokens=1, **CAUSAL,
                              fills=CAUSAL_FILL),
                    make_case("BNSD", sparse_mode=1, atten_mask=bool_mask(2, 1, 8, 40)),
                    make_case("BNSD", atten_mask=bool_mask(8, 40), pre_tokens=2,
                              next_tokens=4),
                    make_case("BNSD", s1=12, s2=6, sparse_mode=3, **CAUSAL,
                              fills=CAUSAL_FILL)],
    "decode_row": [make_case("BNSD", s1=6), make_case("BSH", s1=5, dtype="bfloat16", b=3),
                   make_case("BNSD", sparse_mode=3, actual_seq_lengths=[8, 2], **CAUSAL,
                             fills=CAUSAL_FILL),
                   make_case("BSND", atten_mask=bool_mask(2, 8, 40),
                             pse_shift=TensorSpec((1, 4, 8, 40), "float16")),
                   make_case("BNSD", actual_seq_lengths=[5, 0], query_padding_size=[2])],
    "sink_column": [make_case("BNSD", learnable_sink=sink(4)),
                    make_case("BSH", s1=1, learnable_sink=sink(4, "bfloat16"),
                              dtype="bfloat16", actual_seq_lengths_kv=[40, 13]),
                    make_case("BSND", learnable_sink=sink(4), atten_mask=bool_mask(8, 40))],
    "v1_v2": [make_case("BNSD"), make_case("BSH", kv_n=4, s1=1)],
    "eager_graph": [make_case("BNSD")],
    "wrapper_vs_aclnn": [make_case("BNSD"), make_case("BSH", s1=1)],
    "run_twice": [make_case("BNSD"), make_case("BSH", s1=1, dtype="bfloat16")],
    "mask_shape": [make_case("BNSD", atten_mask=bool_mask(2, 1, 8, 40)),
                   make_case("BSH", atten_mask=bool_mask(8, 40), dtype="bfloat16"),
                   make_case("BSND", s1=1, atten_mask=bool_mask(2, 40),
                             actual_seq_lengths_kv=[40, 21])],
    "mask_vs_lengths": [make_case("BNSD", actual_seq_lengths_kv=[40, 17]),
                        make_case("BSH", s1=1, actual_seq_lengths_kv=[33, 40]),
                        make_case("BSND", atten_mask=bool_mask(2, 1, 8, 40),
                                  actual_seq_lengths_kv=[30, 40])],
    "kv_tail": [make_case("BNSD", actual_seq_lengths_kv=[40, 17]),
                make_case("BSH", s1=1, b=3, actual_seq_lengths_kv=[5, 40, 1], dtype="bfloat16"),
                make_case("BSND", atten_mask=bool_mask(8, 40), actual_seq_lengths_kv=[12, 30])],
    "batch_perm": [make_case("BNSD", b=3), make_case("BSH", b=4, s1=1),
                   make_case("BSND", b=2, dtype="bfloat16"),
                   make_case("BNSD", b=3, actual_seq_lengths=[8, 2, 5],
                             actual_seq_lengths_kv=[1, 40, 30],
                             atten_mask=bool_mask(3, 1, 8, 40),
                             pse_shift=TensorSpec((3, 4, 8, 40), "float16")),
                   packed_case("NTD_TND"), packed_case("TND", paged=True)],
}
