"""Breakers of the `mask.*` rules: sparse modes and atten_mask forms (rulebook/mask.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.strategies.edits import Change
from fia_fuzz.strategies.illegal.breaker import FAMILY_BASE, Breaker, searched


def _sparse_mode_range(draw: st.DrawFn, case: Case) -> Change:
    """Just past either end of 0..4, the documented-unsupported 5..8, and far past."""
    return {"sparse_mode": draw(st.sampled_from([-1, 5, 6, 7, 8, 9, -64, 1024]))}


BREAKERS: dict[str, Breaker] = {
    "mask.sparse_mode_range": Breaker(_sparse_mode_range, {"full_quant": True, "rope": False,
                                                           "post_quant": False},
                                      # a prefill rule; MLA and packed have mask rules of
                                      # their own (mla.sparse, tnd.sparse) that fire too
                                      alt=({"plain": True, "branch": "prefill"},
                                           {"antiquant": "separate:1/1", "branch": "prefill",
                                            "cache": "none"})),
    "mask.mode1_required": searched(
        {"sparse_mode": 1}, "drop:atten_mask",
        alt=({**FAMILY_BASE["full_quant"], "sparse_mode": 1},)),
    "mask.optimized_required": searched(
        {"sparse_mode": 2}, "drop:atten_mask",
        alt=({**FAMILY_BASE["full_quant"], "sparse_mode": 2},)),
    "mask.optimized_shape": searched(
        {"sparse_mode": 2}, "rank_up:atten_mask",
        alt=({"layout": "TND", "rope": False},
             {"layout": "NTD_TND"}),
        also=("axis:atten_mask:-1:+1", "axis:atten_mask:-1:-1")),
    "mask.full_form": searched(
        {"kv_list": True}, "axis:atten_mask:0:=2048",
        alt=({"prefix": True, "branch": "decode"},
             {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"})),
    "mask.full_size": searched(
        {"prefix": True, "branch": "decode"}, "axis:atten_mask:-1:=1",
        alt=({"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},)),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "mask.optimized_shape": ("below", "above"),
    "mask.sparse_mode_range": ("below", "above"),
}
