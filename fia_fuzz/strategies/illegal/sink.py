"""Breakers of the `sink.*` rules: learnable_sink (rulebook/sink.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from fia_fuzz.strategies.illegal.breaker import PAGED_DECODE, Breaker, searched

BREAKERS: dict[str, Breaker] = {
    "sink.shape": searched(
        PAGED_DECODE,
        "rank_up:learnable_sink",
        also=("axis:learnable_sink:0:+1", "axis:learnable_sink:0:-1")),
    "sink.dtype": searched({"kv_list": True}, "dtype:learnable_sink"),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "sink.shape": ("below", "above"),
}
