"""Breakers of the `padding.*` rules: left padding (rulebook/padding.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import PAGED_DENSE, Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "padding.shape": searched(
        {"q_padding": True}, "values:query_padding_size:count",
        also=("values:query_padding_size:empty", "values:kv_padding_size:empty",
              "values:query_padding_size:extra", "values:kv_padding_size:extra")),
    "padding.not_paged": searched({"antiquant": "separate:4/4"}, "add:query_padding_size",
                                  alt=(PAGED_DENSE,)),
    "padding.not_int4_kv": searched(
        {"antiquant": "separate:3/3"}, "add:query_padding_size"),
    "padding.q_window": searched({"q_padding": True}, "values:query_padding_size:big"),
    "padding.kv_window": searched({"q_padding": True}, "values:kv_padding_size:big"),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "padding.kv_window": ("first", "last"),
    "padding.q_window": ("first", "last"),
    "padding.shape": ("shorter", "longer"),
}
