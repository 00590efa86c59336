"""Breakers of the `layout.*` rules: layouts, ranks and the shapes they imply (rulebook/layout.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies.edits import (
    Change,
    bnsd,
    follow_dsq,
    layout,
    query_seq,
)
from fia_fuzz.strategies.illegal.breaker import FULL_QUANT_BNSD, PLAIN_BNSD, Breaker, follow_heads

#: Contiguous BNSD antiquant bases, for the changes written on BNSD shapes (`bnsd`).
ANTIQUANT_BNSD = {"antiquant": "combined:0", "layout": "BNSD", "paged": False}

#: A base of each family but gqa_nz, whose 5-D caches' own rule (nz.layout) also names a
#: layout they do not take.
NOT_NZ = ({"rope_d": "128"}, {"full_quant": True, "rope": False}, {"antiquant": "combined:0"},
          {"layout": "TND", "rope": False}, {"rope_d": "512", "cache": "BnBsH"})


def _layout_known(draw: st.DrawFn, case: Case) -> Change:
    return {"input_layout": draw(st.sampled_from(["BHSD", "SBH", "bnsd", "NSD"]))}


def off(draw: st.DrawFn, x: int, step: int = 1, lo: int = 1, hi: int | None = None) -> int:
    """`x` moved off by one or two `step`s, up or down, within [lo, hi]: both sides of an
    equality."""
    near = [y for y in (x + step, x + 2 * step, x - step, x - 2 * step)
            if y >= lo and (hi is None or y <= hi)]
    return draw(st.sampled_from(near))


def _query_rank(draw: st.DrawFn, case: Case) -> Change:
    """A 4-D BNSD query one axis longer (a trailing unit) or shorter (S and D merged)."""
    b, n, s1, d, *_ = bnsd(case)
    shape = (b, n, s1, d, 1) if draw(st.booleans()) else (b, n, s1 * d)
    return {"query": TensorSpec(shape, case.params["query"].dtype)}


def _bsh_h_divisible(draw: st.DrawFn, case: Case) -> Change:
    b, s1, h = case.params["query"].shape
    n = case.params["num_heads"]
    if n < 2:       # every H is a multiple of one head
        reject()
    return {"query": TensorSpec((b, s1, h + draw(st.integers(1, n - 1))),
                                case.params["query"].dtype)}


def _query_heads(draw: st.DrawFn, case: Case) -> Change:
    """The query's N axis a KV group or one head more or fewer than num_heads."""
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    return {"query": TensorSpec((b, off(draw, n, draw(st.sampled_from([1, kv_n]))), s1, d), dt)}


def _kv_rank(draw: st.DrawFn, case: Case) -> Change:
    """Key and value one axis shorter (N and S merged) or longer (a trailing unit)."""
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    kv = TensorSpec((b, kv_n * s2, d) if draw(st.booleans()) else (b, kv_n, s2, d, 1), dt)
    return {"key": kv, "value": kv}


def _kv_batch(draw: st.DrawFn, case: Case) -> Change:
    """Key and value batch 1 to 3 above or below the query's, each side as often: most
    bases have B=1, where below is the empty batch 0."""
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    kv_b = draw(st.integers(max(0, b - 3), b - 1) if draw(st.booleans()) else
                st.integers(b + 1, b + 3))
    kv = TensorSpec((kv_b, kv_n, s2, d), dt)
    return {"key": kv, "value": kv}


def _kv_heads(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    kv = TensorSpec((b, off(draw, kv_n), s2, d), dt)
    return {"key": kv, "value": kv}


def _kv_seq(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    return {"value": TensorSpec((b, kv_n, off(draw, s2, draw(st.integers(1, 4))), d), dt)}


def _qk_d(draw: st.DrawFn, case: Case) -> Change:
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    return {"key": TensorSpec((b, kv_n, s2, off(draw, d, 16, 16, 512)), dt)}


def _v_d(draw: st.DrawFn, case: Case) -> Change:
    """Value D a step or two off the query's: 16, or 32 where an int8 value keeps prefill D
    32-aligned (dims.d_align_int8); a per-channel post-quant scale follows it."""
    b, n, s1, d, kv_n, s2, dt = bnsd(case)
    step = 32 if dt == "int8" else 16
    dv = off(draw, d, step, step, 512)
    return {"value": TensorSpec((b, kv_n, s2, dv), dt), **follow_heads(case, dv=dv)}


def _bnsd_bsnd(draw: st.DrawFn, case: Case) -> Change:
    return {"input_layout": "BNSD_BSND"}


def _nbsd_seq(draw: st.DrawFn, case: Case) -> Change:
    """MLA NBSD output, each of the three, with Q_S = 1 (sparse 3 becomes 4: decode MLA takes
    0 or 4); Q_S past 16 breaks mla.q_seq too (NBSD outputs are MLA's: layout.nbsd_rope)."""
    out = {**query_seq(case, 1), **follow_dsq(case, tokens=case.params["query"].shape[0])}
    if case.params.get("sparse_mode") == 3:
        out["sparse_mode"] = 4
    return out


def _nbsd_rope(draw: st.DrawFn, case: Case) -> Change:
    if layout(case) not in ("BSH", "BSND", "BNSD"):     # no NBSD form of it: layout.known
        reject()
    return {"input_layout": f"{layout(case)}_NBSD"}


BREAKERS: dict[str, Breaker] = {
    "layout.known": Breaker(_layout_known, PLAIN_BNSD, alt=NOT_NZ),
    "layout.query_rank": Breaker(_query_rank, PLAIN_BNSD, alt=(FULL_QUANT_BNSD, ANTIQUANT_BNSD)),
    "layout.bsh_h_divisible": Breaker(_bsh_h_divisible, {"plain": True, "layout": "BSH",
                                                          "gqa": "gqa"},
                                      alt=({"antiquant": "combined:0", "layout": "BSH"},
                                           {"full_quant": True, "rope": False, "layout": "BSH"},
                                           {"cache": "NZ", "rope": False, "layout": "BSH"},
                                           {"rope_d": "512", "layout": "BSH"})),
    "layout.query_heads": Breaker(_query_heads, PLAIN_BNSD, alt=(ANTIQUANT_BNSD, FULL_QUANT_BNSD)),
    "layout.kv_rank": Breaker(_kv_rank, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
    "layout.kv_batch": Breaker(_kv_batch, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
    "layout.kv_heads": Breaker(_kv_heads, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
    "layout.kv_seq_match": Breaker(_kv_seq, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
    "layout.qk_head_dim": Breaker(_qk_d, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
    "layout.value_head_dim": Breaker(_v_d, PLAIN_BNSD, alt=(FULL_QUANT_BNSD,)),
    "layout.bnsd_bsnd_prefill": Breaker(_bnsd_bsnd, {"plain": True, "layout": "BNSD",
                                                     "branch": "decode"},
                                        alt=({**ANTIQUANT_BNSD, "branch": "decode"},)),
    "layout.nbsd_seq": Breaker(_nbsd_seq, {"layout": "BSND_NBSD"},
                               alt=({"layout": "BSH_NBSD"}, {"layout": "BNSD_NBSD"})),
    "layout.nbsd_rope": Breaker(_nbsd_rope, {"plain": True, "q_seq": "2-16"},
                                alt=({"full_quant": True, "rope": False, "q_seq": "2-16"},)),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "layout.kv_batch": ("below", "above"),
    "layout.kv_heads": ("below", "above"),
    "layout.kv_rank": ("shorter", "longer"),
    "layout.kv_seq_match": ("below", "above"),
    "layout.qk_head_dim": ("below", "above"),
    "layout.query_heads": ("below", "above"),
    "layout.query_rank": ("shorter", "longer"),
    "layout.value_head_dim": ("below", "above"),
    # Q_S past 16 is shadowed: an NBSD layout needs rope (layout.nbsd_rope), rope outside
    # TND needs query D 512 (rope.query_d), and MLA D 512 caps Q_S at 16 too (mla.q_seq)
    "layout.nbsd_seq": ("below",),
}
