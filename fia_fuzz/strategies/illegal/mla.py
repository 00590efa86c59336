"""Breakers of the `mla.*` rules: query D 512 with rope, float or fully quantised (rulebook/mla.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.spec import Case, TensorSpec
from fia_fuzz.spec.rulebook.mla import MLA_HEADS, MLA_TND_HEADS
from fia_fuzz.strategies.edits import (
    DELETE,
    Change,
    follow_dsq,
    grow_blocks,
    layout,
    q_layout,
    query_seq,
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


def _mla_num_heads(draw: st.DrawFn, case: Case) -> Change:
    """num_heads off the MLA list (TND: off 32/64/128), query and query_rope alike."""
    lay = q_layout(case)
    ok = MLA_TND_HEADS if lay == "TND" else MLA_HEADS
    n = draw(st.sampled_from([x for x in (3, 6, 12, 24, 48, 16, 8) if x not in ok]))
    out: Change = {"num_heads": n, "num_key_value_heads": 1, **follow_dsq(case, n=n)}
    for name, d in (("query", 512), ("query_rope", 64)):
        t = case.params[name]
        if lay == "BSH":
            out[name] = with_axis(t, -1, n * d)
        else:
            out[name] = with_axis(t, {"BNSD": 1, "BSND": 2, "TND": 1}[lay], n)
    return out


def _mla_q_seq(draw: st.DrawFn, case: Case) -> Change:
    """MLA prefill with Q_S just past 16 (17..32) or far (64 to 1024), BSH/BSND/BNSD,
    non-NBSD output."""
    s = draw(st.sampled_from([draw(st.integers(17, 32)), 64, 256, 1024]))
    return {**query_seq(case, s), **follow_dsq(case, tokens=case.params["query"].shape[0] * s)}


def _mla_layout(draw: st.DrawFn, case: Case) -> Change:
    """An NZ-cached MLA call with its query transposed to BNSD (5-D caches exclude BNSD)."""
    lay = q_layout(case)
    out: Change = {"input_layout": "BNSD" + layout(case)[len(lay):]}
    for name, d in (("query", 512), ("query_rope", 64)):
        t = case.params[name]
        b, s = t.shape[0], t.shape[1]
        n = case.params["num_heads"]
        out[name] = TensorSpec((b, n, s, d), t.dtype)
    return out


def _mla_block_size(draw: st.DrawFn, case: Case) -> Change:
    """Larger blocks (256, 512; past 512 paged.block_size_max fires too), or in decode, where
    the general paged rules ask only 16 (int8: 32) alignment, smaller ones (64 down to 16)."""
    if case.view().decode and draw(st.booleans()):
        small = [64, 32] if case.params["key"].dtype == "int8" else [64, 32, 16]
        return split_blocks(case, 128 // draw(st.sampled_from(small)))
    return grow_blocks(case, draw(st.sampled_from([256, 512])))


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
    tokens, n, _ = case.params["dequant_scale_query"].shape
    b = case.params["query"].shape[0]
    shp = draw(st.sampled_from([(tokens, n), (tokens * n,), (b, tokens // b, n, 1),
                                (tokens, 1, 1)]))
    return {"dequant_scale_query": TensorSpec(shp, "float32")}


BREAKERS: dict[str, Breaker] = {
    "mla.kv_heads_1": Breaker(_mla_kv_heads, {"rope_d": "512"}),
    "mla.num_heads": Breaker(_mla_num_heads, {"rope_d": "512"}),
    "mla.q_seq": Breaker(_mla_q_seq, {"rope_d": "512", "layout": "BSND", "q_seq": "2-16"},
                         alt=({"rope_d": "512", "layout": "BSH", "q_seq": "2-16"},
                              {"rope_d": "512", "layout": "BNSD", "q_seq": "2-16"})),
    "mla.layout": Breaker(_mla_layout, {"rope_d": "512", "cache": "NZ", "layout": "BSND"},
                          alt=({"rope_d": "512", "cache": "NZ", "layout": "BSND_NBSD"},)),
    "mla.block_size_128": Breaker(_mla_block_size, {"rope_d": "512"}),
    "mla.full_quant_nz": Breaker(_not_nz, MLA_FULL_QUANT),
    "mla.full_quant_scales": Breaker(_bad_scales, MLA_FULL_QUANT),
    "mla.dequant_scale_query_shape": Breaker(_dsq_shape, MLA_FULL_QUANT),
    "mla.sparse": searched({"rope_d": "512", "layout": "BNSD"}, "add:atten_mask"),  # 100%
    "mla.actual_seq_lengths": searched(
        {"rope_d": "512", "layout": "BNSD"}, "add:actual_seq_lengths"),  # 100%
    "mla.paged_required": searched({"layout": "BSH_NBSD"}, "drop:block_table"),  # 33%
    "mla.no_extras": searched({"rope_d": "512", "layout": "BNSD"}, "attr:softmax_lse_flag"),  # 100%
}
