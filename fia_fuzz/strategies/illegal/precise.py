"""Breakers of the `precise.*` rules: inner_precise (rulebook/precise.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.strategies.edits import Change
from fia_fuzz.strategies.illegal.breaker import FAMILY_BASE, Breaker


def _precise_range(draw: st.DrawFn, case: Case) -> Change:
    """Just past either end of 0..3 and far past."""
    return {"inner_precise": draw(st.sampled_from([-1, 4, 5, -16, 64]))}


def _decode_01(draw: st.DrawFn, case: Case) -> Change:
    """A decode with the prefill-only precisions 2 or 3 (in 0..3, so only this rule; an NZ
    cache's inner_precise has its own rule, nz.inner_precise)."""
    if case.features().get("cache") == "NZ":
        reject()
    return {"inner_precise": draw(st.sampled_from([2, 3]))}


def over_decode() -> tuple[dict, tuple[dict, ...]]:
    """(base, alt): a decode base of every family that decodes (full quant and the packed
    layouts do not) and whose inner_precise has no rule of its own (NZ caches)."""
    bases = [{**f, "branch": "decode"} for name, f in FAMILY_BASE.items()
             if name not in ("full_quant", "gqa_nz", "packed", "packed_mla")]
    return bases[0], tuple(bases[1:])


BREAKERS: dict[str, Breaker] = {
    # cache none: gqa_nz's prefill (NZ caches) has its own inner_precise rule
    "precise.range": Breaker(_precise_range, {"antiquant": "separate:0/0", "branch": "prefill",
                                              "cache": "none"},
                             alt=({"plain": True}, {"full_quant": True},
                                  {"layout": "TND", "rope": False}, {"rope_d": "512"},
                                  {"rope_d": "128"})),
    "precise.decode_01": Breaker(_decode_01, *over_decode()),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "precise.range": ("below", "above"),
}
