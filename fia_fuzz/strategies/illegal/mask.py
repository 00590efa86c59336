"""Breakers of the `mask.*` rules: sparse modes and atten_mask forms (rulebook/mask.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "mask.sparse_mode_range": searched(
        {"full_quant": True, "post_quant": False}, "attr:sparse_mode"),  # 83%
    "mask.mode1_required": searched({"sparse_mode": 1}, "drop:atten_mask"),  # 100%
    "mask.optimized_required": searched({"sparse_mode": 2}, "drop:atten_mask"),  # 100%
    "mask.optimized_shape": searched(
        {"sparse_mode": 2}, "rank_up:atten_mask",
        alt=({"layout": "TND", "rope": False},
             {"layout": "NTD_TND"})),
    "mask.full_form": searched(
        {"kv_list": True}, "axis:atten_mask:0:=2048",
        alt=({"prefix": True, "branch": "decode"},
             {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"})),
    "mask.full_size": searched(
        {"prefix": True, "branch": "decode"}, "axis:atten_mask:-1:=1",
        alt=({"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},)),
}
