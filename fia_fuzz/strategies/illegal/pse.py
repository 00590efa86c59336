"""Breakers of the `pse.*` rules: pse_shift shape and decode D alignment (rulebook/pse.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.strategies.edits import (
    Change,
    head_dim,
    q_layout,
)
from fia_fuzz.strategies.illegal.breaker import Breaker, searched


def _pse_d_align(draw: st.DrawFn, case: Case) -> Change:
    """Decode with pse: head dim moved off the 16 grid in query, key and value."""
    lay = q_layout(case)
    v = case.view()
    d = v.D + 8 if v.D < 512 else v.D - 8
    return {"query": head_dim(case.params["query"], lay, v.N, d),
            **{n: head_dim(case.params[n], lay, v.KV_N, d) for n in ("key", "value")}}


BREAKERS: dict[str, Breaker] = {
    "pse.decode_d_align": Breaker(_pse_d_align, {"pse": True, "branch": "decode",
                                                 "antiquant": "none", "paged": False,
                                                 "kv_list": False, "prefix": False,
                                                 "post_quant": False}),
    "pse.shape": searched(
        {"cache": "BnNBsD", "antiquant": "none", "rope": False}, "rank_down:pse_shift",
        alt=({"prefix": True, "branch": "prefill"},
             {"sparse_mode": 1}, {"full_quant": True, "rope": False, "pse": True}),
        also=("axis:pse_shift:1:+1", "axis:pse_shift:1:-1", "axis:pse_shift:0:+1")),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "pse.shape": ("below", "above"),
}
