"""Breakers of the `mla.*` rules: query D 512 with rope, float or fully quantised (rulebook/mla.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rulebook.mla import MLA_HEADS, MLA_TND_HEADS
from fia_fuzz.strategies import production
from fia_fuzz.strategies.edits import (
    DELETE,
    Change,
    follow_dsq,
    grow_blocks,
    layout,
    q_layout,
    query_seq,
    sided,
    split_blocks,
    with_axis,
)
from fia_fuzz.strategies.illegal.breaker import Breaker, searched

MLA_FULL_QUANT = {"rope_d": "512", "full_quant": True}
F32_1 = TensorSpec((1,), "float32")


def _mla_kv_heads(draw: st.DrawFn, case: Case) -> Change:
    """2, 4 or 8 KV heads: every cache holds them (num_heads stays, so G shrinks; N not a
    multiple rejected)."""
    k = draw(st.sampled_from([2, 4, 8]))
    if case.params["num_heads"] % k:
        reject()
    out: Change = {"num_key_value_heads": k}
    for n in ("key", "value", "key_rope"):
        t = case.params[n]
        out[n] = with_axis(t, -1, t.shape[-1] * k) if t.ndim == 3 else with_axis(t, 1, k)
    return out


def off_heads(ok: tuple[int, ...]) -> list[int]:
    """Head counts off the MLA list `ok`: next to each entry (one below, one above), between
    them (12, 48), and the production head counts it lacks."""
    near = {x for h in ok for x in (h - 1, h + 1) if x > 0}
    return sorted((near | {12, 48} | set(production.HEADS)) - set(ok))


def _mla_num_heads(draw: st.DrawFn, case: Case) -> Change:
    """num_heads off the MLA list (TND: off 32/64/128), query and query_rope alike."""
    ok = MLA_TND_HEADS if q_layout(case) == "TND" else MLA_HEADS
    return num_heads_to(case, draw(st.sampled_from(off_heads(ok))))


def num_heads_to(case: Case, n: int) -> Change:
    """An MLA call with `n` query heads over its one KV head: query, query_rope and a
    full-quant dequant_scale_query alike."""
    lay = q_layout(case)
    out: Change = {"num_heads": n, "num_key_value_heads": 1, **follow_dsq(case, n=n)}
    for name, d in (("query", 512), ("query_rope", 64)):
        t = case.params[name]
        if lay == "BSH":
            out[name] = with_axis(t, -1, n * d)
        else:
            out[name] = with_axis(t, {"BNSD": 1, "BSND": 2, "TND": 1}[lay], n)
    return out


def _mla_q_seq(draw: st.DrawFn, case: Case) -> Change:
    """MLA prefill with Q_S 0 (an empty query), just past 16 (17..32) or far (64 to 1024),
    BSH/BSND/BNSD, non-NBSD output; a full-quant dequant_scale_query follows the tokens."""
    s = draw(st.sampled_from([0, draw(st.integers(17, 32)), 64, 256, 1024]))
    return sided(q_seq_to(case, s), "below" if s == 0 else "above")


def q_seq_to(case: Case, s: int) -> Change:
    """An unpacked MLA call with query S `s`; a full-quant dequant_scale_query follows the
    tokens."""
    out = query_seq(case, s)
    dsq = case.params.get("dequant_scale_query")
    if dsq is not None:     # follow_dsq reads tokens=0 as "unchanged"
        out["dequant_scale_query"] = with_axis(dsq, 0, case.params["query"].shape[0] * s)
    return out


def _mla_layout(draw: st.DrawFn, case: Case) -> Change:
    """An NZ-cached MLA call with its query transposed to BNSD or BNSD_NBSD (5-D caches
    exclude both), or a BNSD prefill declared BNSD_BSND (no MLA layout; the device-only
    BSH_BNSD/BSND_BNSD break layout.known too, NTD the packed rule tnd.layout_by_d)."""
    lay = q_layout(case)
    if layout(case) == "BNSD":
        return {"input_layout": "BNSD_BSND"}
    out: Change = {"input_layout": "BNSD" + layout(case)[len(lay):]}
    for name, d in (("query", 512), ("query_rope", 64)):
        t = case.params[name]
        b, s = t.shape[0], t.shape[1]
        n = case.params["num_heads"]
        out[name] = TensorSpec((b, n, s, d), t.dtype)
    return out


def _mla_sparse(draw: st.DrawFn, case: Case) -> Change:
    """Off the MLA pairs (decode: 0 without a mask or 4 with the 2048 one; prefill: 3 or 4 with
    it): modes 0 and 1 with the 2048 mask or a full one, 2 (decode: 2 or 3) with the 2048
    mask, or a prefill in mode 0 without a mask (mode 1 without one, or 2-4 with a full one,
    break the general mask rules too). Packed layouts take only 0 without a mask or 3 with
    it (tnd.sparse): a packed decode gets 3, a packed prefill 0."""
    v = case.view()
    if v.packed:
        return {"sparse_mode": 3, "atten_mask": TensorSpec((2048, 2048), "bool")} if v.decode \
            else {"sparse_mode": 0, "atten_mask": DELETE}
    mode = draw(st.sampled_from([0, 1, 2, 3] if v.decode else [0, 1, 2]))
    forms = ["2048"] if mode >= 2 else ["2048", "full"] if v.decode or mode else \
        ["2048", "full", "none"]
    form = draw(st.sampled_from(forms))
    if form == "none":
        return {"sparse_mode": mode, "atten_mask": DELETE}
    shape = (2048, 2048) if form == "2048" else (v.B, 1, v.S1, v.S2)
    return {"sparse_mode": mode, "atten_mask": TensorSpec(shape, "bool")}


def _mla_extras(draw: st.DrawFn, case: Case) -> Change:
    """softmax_lse, and outside the packed layouts (tnd.no_extras rejects the rest there too)
    a pse (batch B or 1) or, in decode, post-quant (a prefill's int8 output has band rules of
    its own: quant.band_negative) and in a float decode combined antiquant params, each
    alone or next to the lse. Left padding, a tensor list and a shared prefix are the rule's
    too, but MLA is paged and paging excludes them (padding.not_paged, kvlist.not_paged,
    prefix.not_paged)."""
    v = case.view()
    q = case.params["query"]
    if v.packed:
        return {"softmax_lse_flag": True}
    pse = (draw(st.sampled_from([v.B, 1])), v.N, v.S1, v.S2)
    extras: dict[str, Change] = {
        "lse": {},
        "pse": {"pse_shift": TensorSpec(pse, "float16" if q.dtype == "int8" else q.dtype)}}
    if v.decode:
        extras["post-quant"] = {"quant_scale2": F32_1}
    if v.decode and q.dtype != "int8":
        extras["antiquant"] = {"antiquant_scale": TensorSpec((2,), q.dtype)}
    name = draw(st.sampled_from(sorted(extras)))
    if name == "lse" or draw(st.booleans()):
        return {**extras[name], "softmax_lse_flag": True}
    return extras[name]


def _mla_block_size(draw: st.DrawFn, case: Case) -> Change:
    """Larger blocks (256, 512; past 512 paged.block_size_max fires too), or in decode, where
    the general paged rules ask only 16 (int8: 32) alignment, smaller ones too (64 down to
    16)."""
    sizes = [256, 512]
    if case.view().decode:
        sizes = [64, 32, *sizes] if case.params["key"].dtype == "int8" else [64, 32, 16, *sizes]
    bs = draw(st.sampled_from(sizes))
    if bs < 128:
        return sided(split_blocks(case, 128 // bs), "below")
    return sided(grow_blocks(case, bs), "above")


def _not_nz(draw: st.DrawFn, case: Case) -> Change:
    """The same int8 caches (and bf16 rope cache) in the 3-D BnBsH form."""
    return {n: _nz_to_bnbsh(case.params[n]) for n in ("key", "value", "key_rope")}


def _nz_to_bnbsh(t: TensorSpec) -> TensorSpec:
    """A 5-D NZ cache (blocks, N, D/c0, bs, c0) as BnBsH (blocks, bs, N*D), same dtype."""
    blocks, n, d1, bs, d0 = t.shape
    return TensorSpec((blocks, bs, n * d1 * d0), t.dtype)


def _bad_scales(draw: st.DrawFn, case: Case) -> Change:
    """One way out of the documented scale set: a scale missing, per-channel K/V scales,
    K/V offsets, per-token modes, or a scale of the int8 (non-MLA) flow."""
    d = case.params["key"].shape[2] * case.params["key"].shape[4]
    return draw(st.sampled_from([
        {"value_antiquant_scale": DELETE},
        {"dequant_scale_query": DELETE, "query_quant_mode": DELETE},
        {"key_antiquant_scale": TensorSpec((d,), "float32"),
         "value_antiquant_scale": TensorSpec((d,), "float32")},
        {"key_antiquant_scale": TensorSpec((1,), "bfloat16")},
        {"key_antiquant_offset": F32_1, "value_antiquant_offset": F32_1},
        {"key_antiquant_mode": 2, "value_antiquant_mode": 2},
        {"dequant_scale1": F32_1},
    ]))


def _dsq_shape(draw: st.DrawFn, case: Case) -> Change:
    """Another rank ((T, N), (T*N,), (B, S, N, 1)), one scale for every head (T, 1, 1), or
    an axis past the expected (T, N, 1): a token more, or two scales per token and head."""
    tokens, n, _ = case.params["dequant_scale_query"].shape
    b = case.params["query"].shape[0]
    # (tokens, 1, 1) is the legal shape itself when N = 1
    shp = draw(st.sampled_from([x for x in ((tokens, n), (tokens * n,), (b, tokens // b, n, 1),
                                            (tokens, 1, 1), (tokens + 1, n, 1), (tokens, n, 2))
                                if x != (tokens, n, 1)]))
    return {"dequant_scale_query": TensorSpec(shp, "float32")}


BREAKERS: dict[str, Breaker] = {
    "mla.kv_heads_1": Breaker(_mla_kv_heads, {"rope_d": "512"}),
    "mla.num_heads": Breaker(_mla_num_heads, {"rope_d": "512"}),
    "mla.q_seq": Breaker(_mla_q_seq, {"rope_d": "512", "layout": "BSND", "q_seq": "2-16"},
                         alt=({"rope_d": "512", "layout": "BSH", "q_seq": "2-16"},
                              {"rope_d": "512", "layout": "BNSD", "q_seq": "2-16"})),
    "mla.layout": Breaker(_mla_layout, {"rope_d": "512", "cache": "NZ", "layout": "BSND"},
                          alt=({"rope_d": "512", "cache": "NZ", "layout": "BSND_NBSD"},
                               {"rope_d": "512", "cache": "NZ", "layout": "BSH"},
                               {"rope_d": "512", "layout": "BNSD", "q_seq": "2-16"})),
    "mla.block_size_128": Breaker(_mla_block_size, {"rope_d": "512"},
                                  alt=({"rope_d": "512", "q_seq": "1"},)),
    "mla.full_quant_nz": Breaker(_not_nz, MLA_FULL_QUANT),
    "mla.full_quant_scales": Breaker(_bad_scales, MLA_FULL_QUANT),
    "mla.dequant_scale_query_shape": Breaker(_dsq_shape, MLA_FULL_QUANT),
    "mla.sparse": Breaker(_mla_sparse, {"rope_d": "512"}),
    "mla.actual_seq_lengths": searched(
        {"rope_d": "512", "layout": "BNSD"}, "add:actual_seq_lengths"),
    # without its table a paged cache reads as dense only where it is 3-D (BnBsH) behind a
    # BSH query, one block per batch: elsewhere layout.kv_rank or layout.kv_batch fires too
    "mla.paged_required": searched(
        {"layout": "BSH_NBSD", "cache": "BnBsH"}, "drop:block_table",
        alt=({"rope_d": "512", "cache": "BnBsH", "branch": "decode", "layout": "BSH"},)),
    "mla.no_extras": Breaker(_mla_extras, {"rope_d": "512"}),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "mla.q_seq": ("below", "above"),
    "mla.block_size_128": ("below", "above"),
    "mla.dequant_scale_query_shape": ("below", "above"),
}
