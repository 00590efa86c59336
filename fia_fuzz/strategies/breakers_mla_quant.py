"""Breakers of the MLA full-quant rules and of per-token antiquant with a shared prefix.

MLA full quant (int8 query with rope, query D 512) starts from
`cases(rope_d="512", full_quant=True)`: int8 NZ caches, bf16 rope, fp32
dequant_scale_query (B*S1, N, 1) and per-tensor key/value scales
[TNPU v2 约束说明 query d=512 全量化]. The prefix breaker adds an int8 shared
prefix to a per-token antiquant case (fia-semantics.md §6-7).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.spec import Case, TensorSpec
from fia_fuzz.strategies.breaker import Breaker
from fia_fuzz.strategies.case_edits import SEQ_AXIS, q_layout, with_axis
from fia_fuzz.strategies.mutations import DELETE, Change

MLA_FULL_QUANT = {"rope_d": "512", "full_quant": True}
F32_1 = TensorSpec((1,), "float32")


def _nz_to_bnbsh(t: TensorSpec) -> TensorSpec:
    """A 5-D NZ cache (blocks, N, D/c0, bs, c0) as BnBsH (blocks, bs, N*D), same dtype."""
    blocks, n, d1, bs, d0 = t.shape
    return TensorSpec((blocks, bs, n * d1 * d0), t.dtype)


def _not_nz(draw: st.DrawFn, case: Case) -> Change:
    """The same int8 caches (and bf16 rope cache) in the 3-D BnBsH form."""
    return {n: _nz_to_bnbsh(case.params[n]) for n in ("key", "value", "key_rope")}


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


def _prefix(draw: st.DrawFn, case: Case) -> Change:
    """An int8 shared prefix of 1..16 tokens, in the key's layout (batch 1)."""
    k = case.params["key"]
    p = with_axis(with_axis(k, 0, 1), SEQ_AXIS[q_layout(case)], draw(st.integers(1, 16)))
    return {"key_shared_prefix": p, "value_shared_prefix": p}


PER_TOKEN = {"paged": False, "mask": "none", "pse": False, "kv_dtype": "int8"}

MLA_QUANT_BREAKERS: dict[str, Breaker] = {
    "mla.full_quant_nz": Breaker(_not_nz, MLA_FULL_QUANT),
    "mla.full_quant_scales": Breaker(_bad_scales, MLA_FULL_QUANT),
    "mla.dequant_scale_query_shape": Breaker(_dsq_shape, MLA_FULL_QUANT),
    "prefix.per_token_antiquant": Breaker(
        _prefix, {"antiquant": "separate:1/1", **PER_TOKEN},
        alt=({"antiquant": "separate:3/3", **PER_TOKEN},
             {"antiquant": "combined:1", **PER_TOKEN})),
}
