"""Breakers of the `sink.*` rules: learnable_sink (rulebook/sink.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import PAGED_DECODE, Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "sink.shape": searched(
        PAGED_DECODE,
        "rank_up:learnable_sink"),
    "sink.dtype": searched({"kv_list": True}, "dtype:learnable_sink"),
}
