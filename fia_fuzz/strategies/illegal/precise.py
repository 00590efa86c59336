"""Breakers of the `precise.*` rules: inner_precise (rulebook/precise.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.strategies.edits import Change
from fia_fuzz.strategies.illegal.breaker import Breaker, searched


def _precise_range(draw: st.DrawFn, case: Case) -> Change:
    """Just past either end of 0..3 and far past."""
    return {"inner_precise": draw(st.sampled_from([-1, 4, 5, -16, 64]))}


BREAKERS: dict[str, Breaker] = {
    # cache none: gqa_nz's prefill (NZ caches) has its own inner_precise rule
    "precise.range": Breaker(_precise_range, {"antiquant": "separate:0/0", "branch": "prefill",
                                              "cache": "none"},
                             alt=({"plain": True}, {"full_quant": True},
                                  {"layout": "TND", "rope": False}, {"rope_d": "512"},
                                  {"rope_d": "128"})),
    "precise.decode_01": searched({"plain": True, "branch": "decode"}, "attr:inner_precise"),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "precise.range": ("below", "above"),
}
