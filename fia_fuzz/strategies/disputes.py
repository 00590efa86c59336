"""Rules whose current check contradicts the vendor docs, as the strategies read them.

`cases()` keeps drawing these documented-legal calls; the meta-tests accept
exactly these violations and pin each dispute with a strict xfail, so the
day the rule is fixed the xfail turns into a failure and the entry goes.
Each entry: rule id -> (doc citation and reasoning, a legal example case).
"""

from __future__ import annotations

from fia_fuzz.spec import Case, TensorSpec


def _int32_packed_kv() -> Case:
    """Decode, BNSD, float16 query D 64, int4 KV packed 8-per-int32 (last dim D/8)."""
    q = TensorSpec((1, 2, 1, 64), "float16")
    kv = TensorSpec((1, 2, 8, 8), "int32")
    scale = TensorSpec((1, 2, 1, 64), "float16")
    return Case(params={"query": q, "key": kv, "value": kv, "num_heads": 2,
                        "num_key_value_heads": 2, "input_layout": "BNSD",
                        "key_antiquant_scale": scale, "value_antiquant_scale": scale})


def _tnd_dv_128() -> Case:
    """TND, bfloat16, Q_D = K_D = 192 and V_D = 128 without rope."""
    return Case(params={"query": TensorSpec((5, 2, 192), "bfloat16"),
                        "key": TensorSpec((7, 2, 192), "bfloat16"),
                        "value": TensorSpec((7, 2, 128), "bfloat16"),
                        "num_heads": 2, "num_key_value_heads": 2, "input_layout": "TND",
                        "actual_seq_lengths": [2, 5], "actual_seq_lengths_kv": [3, 7]})


DISPUTES: dict[str, tuple[str, Case]] = {}
#: Settled: layout.qk_head_dim now reads int32 KV as 8 packed int4 (V2 §Q_S=1), and
#: layout.value_head_dim allows V_D != K_D in TND/NTD_TND (V4 §TND); the examples stay
#: as regression cases in tests/strategies.
SETTLED: dict[str, Case] = {"layout.qk_head_dim": _int32_packed_kv(),
                            "layout.value_head_dim": _tnd_dv_128()}
