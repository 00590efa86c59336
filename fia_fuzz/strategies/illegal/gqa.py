"""Breakers of the `gqa.*` rules: head counts and the GQA group (rulebook/gqa.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.strategies import production
from fia_fuzz.strategies.edits import (
    Change,
    bnsd,
    bnsd_qkv,
)
from fia_fuzz.strategies.illegal.breaker import (
    EVERY_FAMILY,
    FULL_QUANT_BNSD,
    PLAIN_BNSD,
    Breaker,
    follow_heads,
)


def _num_heads_positive(draw: st.DrawFn, case: Case) -> Change:
    return {"num_heads": draw(st.sampled_from([0, -1, -64]))}


def _kv_heads_nonneg(draw: st.DrawFn, case: Case) -> Change:
    return {"num_key_value_heads": draw(st.sampled_from([-1, -8, -65]))}


def _gqa_divisible(draw: st.DrawFn, case: Case) -> Change:
    b, _, s1, d, _, s2, dt = bnsd(case)
    kv_n = draw(st.sampled_from([3, 5, 7]))
    n = kv_n * 2 + 1
    return {**bnsd_qkv(b, n, s1, d, kv_n, s2, dt), **follow_heads(case, n=n)}


def _gqa_ratio(draw: st.DrawFn, case: Case) -> Change:
    """One KV head shared by more than 64 query heads: the first past (65), the production
    groups past 64 (MLA's 128 query heads over one latent head), and far (96, 256)."""
    b, _, s1, d, _, s2, dt = bnsd(case)
    n = draw(st.sampled_from([65, *production.past(production.GROUPS, lambda g: g <= 64),
                              96, 256]))
    return {**bnsd_qkv(b, n, s1, d, 1, s2, dt), **follow_heads(case, n=n)}


BREAKERS: dict[str, Breaker] = {
    "gqa.num_heads_positive": Breaker(_num_heads_positive, PLAIN_BNSD, alt=EVERY_FAMILY),
    "gqa.kv_heads_nonnegative": Breaker(_kv_heads_nonneg, PLAIN_BNSD, alt=EVERY_FAMILY),
    "gqa.divisible": Breaker(_gqa_divisible, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
    "gqa.ratio_max_64": Breaker(_gqa_ratio, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
}
