"""Breakers of the `dims.*` rules: D alignment and the B/N/S/D limits (rulebook/dims.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rulebook.dims import S_MAX
from fia_fuzz.strategies import production
from fia_fuzz.strategies.edits import (
    Change,
    bnsd,
    bnsd_qkv,
    kv_dtype,
    sided,
)
from fia_fuzz.strategies.illegal.breaker import FQ_BNSD, PLAIN_BNSD, Breaker, searched


def _d_align(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, _, kv_n, s2, dt = bnsd(case)
    return bnsd_qkv(b, n, s1, draw(st.sampled_from([24, 40, 72, 100])), kv_n, s2, dt)


def _d_max(draw: st.DrawFn, case: Case) -> Change:
    """D 0 (empty heads, the base's other sizes kept), or past 512 (one head of S 2 at most,
    so the case stays small): 513 in decode, which no alignment rule reads, else the first
    aligned past it (528; int8 544, its 32: dims.d_align_int8); the production head dims
    past it (MLA's 576 with the rope half); far past."""
    b, n, s1, _, kv_n, s2, dt = bnsd(case)
    first = 513 if s1 == 1 else 544 if dt == "int8" else 528
    d = draw(st.sampled_from([0, first, *production.past(production.HEAD_DIMS,
                                                           lambda x: x <= 512), 1024, 4096]))
    if d == 0:
        return sided(bnsd_qkv(b, n, s1, 0, kv_n, s2, dt), "below")
    return sided(bnsd_qkv(1, 1, min(s1, 2), d, 1, min(s2, 2), dt), "above")


def _n_max(draw: st.DrawFn, case: Case) -> Change:
    b, _, _, _, _, _, dt = bnsd(case)
    n = draw(st.sampled_from([257, 1024, 4096]))    # just past 256 to far past
    kv_n = draw(st.sampled_from([k for k in (5, 8, 16, 64, 128) if -(-n // k) <= 64]))
    g = -(-n // kv_n)      # G stays <= 64 (gqa.ratio_max_64)
    return bnsd_qkv(1, kv_n * g, 2, 16, kv_n, 1, dt)


def _b_max(draw: st.DrawFn, case: Case) -> Change:
    _, _, _, _, _, _, dt = bnsd(case)
    return bnsd_qkv(draw(st.sampled_from([65537, 131072, 262144])), 1, 2, 16, 1, 1, dt)


def _d_align_int4(draw: st.DrawFn, case: Case) -> Change:
    """D 32 key/value turned int4 (or int32-packed int4)."""
    return kv_dtype(case, draw(st.sampled_from(["int4", "int32"])))


def _s_max(draw: st.DrawFn, case: Case) -> Change:
    """One head of D 16 with query S or key/value S above 20M (prefill, S_MAX): just past, or
    2^25 or 2^26."""
    dt = case.params["query"].dtype
    big = draw(st.sampled_from([S_MAX + draw(st.integers(1, 64)), 1 << 25, 1 << 26]))
    s1, s2 = (big, 16) if draw(st.booleans()) else (16, big)
    return {"query": TensorSpec((1, 1, s1, 16), dt), "key": TensorSpec((1, 1, s2, 16), dt),
            "value": TensorSpec((1, 1, s2, 16), dt), "num_heads": 1, "num_key_value_heads": 1}


#: Host-sized: S above 20M tokens.
NOT_MATERIALISABLE = {"dims.s_max"}

BREAKERS: dict[str, Breaker] = {
    "dims.d_align_float": Breaker(_d_align, {**PLAIN_BNSD, "branch": "prefill"}),
    "dims.d_max": Breaker(_d_max, PLAIN_BNSD, alt=(FQ_BNSD,)),
    "dims.n_max": Breaker(_n_max, PLAIN_BNSD),
    "dims.b_max": Breaker(_b_max, PLAIN_BNSD),
    "dims.d_align_int4": Breaker(_d_align_int4, {"antiquant": "separate:1/1", "paged": False,
                                                 "branch": "decode",
                                                 "kv_dtype": "int8", "d_class": "<64"}),
    "dims.s_max": Breaker(_s_max, {"plain": True, "layout": "BNSD"}),
    # a base per D class: each unaligned D (16 or 48 below 64, 80 in 64-128) is drawn
    "dims.d_align_int8": searched({"q_padding": True, "d_class": "<64"},
                                  "add:quant_scale2",
                                  alt=({"kv_padding": True, "d_class": "64-128"},
                                       {"kv_padding": True, "d_class": "<64"},
                                       {"q_padding": True, "d_class": "64-128"})),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "dims.d_max": ("below", "above"),
}
