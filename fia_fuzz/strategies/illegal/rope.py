"""Breakers of the `rope.*` rules: query_rope/key_rope (rulebook/rope.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import PAGED_DECODE, Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "rope.both_or_neither": searched(
        {"plain": True, "layout": "BNSD"}, "add:key_rope",
        alt=({"full_quant": True, "rope": False},
             {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},
             {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"},
             {"prefix": True, "branch": "prefill"},
             # a lone rope half makes TND's head dims rope's: 128 only (tnd.head_dims); paged
             # TND takes no rope (tnd.rope_not_paged)
             {"layout": "TND", "rope": False, "paged": False, "d_class": "64-128"},
             {"cache": "NZ", "rope": False})),
    "rope.dim_64": searched(
        PAGED_DECODE,
        "axis:query_rope:-1:+1",
        alt=({"layout": "NTD_TND"},),
        also=("axis:query_rope:-1:-1", "pair_axis:query_rope:-1:/8")),
    "rope.shapes": searched(
        PAGED_DECODE,
        "rank_down:query_rope",
        alt=({"layout": "NTD_TND"},),
        also=("axis:query_rope:0:+1", "axis:query_rope:0:-1")),
    "rope.dtype": searched(
        PAGED_DECODE,
        "dtype:query_rope",
        alt=({"layout": "NTD_TND"},)),
    "rope.query_d": searched(
        {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},
        "add:query_rope"),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "rope.dim_64": ("below", "above"),
    "rope.shapes": ("below", "above"),
}
