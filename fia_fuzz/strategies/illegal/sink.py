"""Breakers of the `sink.*` rules: learnable_sink (rulebook/sink.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "sink.shape": searched(
        {"paged": True, "layout": "BNSD", "antiquant": "none", "branch": "decode"},
        "rank_up:learnable_sink"),  # 100%
    "sink.dtype": searched({"kv_list": True}, "dtype:learnable_sink"),  # 75%
}
