"""Breakers of the `precise.*` rules: inner_precise (rulebook/precise.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "precise.range": searched(
        {"antiquant": "separate:0/0", "branch": "prefill"}, "attr:inner_precise",
        alt=({"kv_dtype": "int32"},)),
    "precise.decode_01": searched({"plain": True, "branch": "decode"}, "attr:inner_precise"),  # 83%
}
