"""Breakers of the `antiquant.*` rules: int8/int4 KV with a float query (rulebook/antiquant.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies.edits import (
    SEP_SCALES,
    Change,
    kv_dtype,
    modes,
    query_seq,
    with_dtype,
)
from fia_fuzz.strategies.illegal.breaker import FAMILY_BASE, Breaker, searched


def _int4_kv(draw: st.DrawFn, case: Case) -> Change:
    """The same call with int4 (or int32-packed) KV: combined params (int4 takes separate
    ones only) or mode 2 (per-tensor + per-head) scales, which are int8-only."""
    if case.view().D % 64:
        reject()    # int4 needs D % 64 == 0 (dims.d_align_int4): not this breaker's rule
    return kv_dtype(case, draw(st.sampled_from(["int4", "int32"])))


def _combined_prefill_query(draw: st.DrawFn, case: Case) -> Change:
    return {"query": with_dtype(case.params["query"], "bfloat16")}


def _sep_mode_range(draw: st.DrawFn, case: Case) -> Change:
    """Modes outside 0..5 (decode) or 0..1 (prefill), both sides alike."""
    top = 5 if case.view().decode else 1
    m = draw(st.sampled_from([top + 1, 6, -1]))
    return {"key_antiquant_mode": m, "value_antiquant_mode": m}


def _combined_mode(draw: st.DrawFn, case: Case) -> Change:
    """Decode combined antiquant in mode 2 or 3 (documented for prefill only) or out of
    range (4, -1, 64)."""
    return {"antiquant_mode": draw(st.sampled_from([2, 3, 4, -1, 64]))}


#: Separate-antiquant prefill without inputs sized by Q_S (mask, pse, query lengths).
PREFILL_SEQ = {"branch": "prefill", "mask": "none", "pse": False, "actual_q": "absent"}


def _sep_prefill_seq(draw: st.DrawFn, case: Case) -> Change:
    """Q_S past 16: just (17, 24) or far (128, 1024)."""
    return query_seq(case, draw(st.sampled_from([17, 24, 128, 1024])))


def _int8_only_forms(draw: st.DrawFn, case: Case) -> Change:
    """int4 KV with per-tensor (1,) scales and offsets: both sides in modes (0, 0), the key's
    in (0, 1) (the value's own alone breaks sep_shapes_match or is per-token)."""
    names = SEP_SCALES if modes(case) == (0, 0) else ("key_antiquant_scale",
                                                      "key_antiquant_offset")
    return {n: TensorSpec((1,), case.params[n].dtype) for n in names
            if case.params.get(n) is not None}


def _mixed_query_fp16(draw: st.DrawFn, case: Case) -> Change:
    """Off float16 in and out: a bfloat16 query (the key's per-channel scale and offset and a
    pse follow it), an int8 post-quant output, or both."""
    form = draw(st.sampled_from(["bfloat16 query", "int8 out", "both"]))
    out: Change = {}
    if form != "int8 out":
        for n in ("query", "key_antiquant_scale", "key_antiquant_offset", "pse_shift"):
            if case.params.get(n) is not None:
                out[n] = with_dtype(case.params[n], "bfloat16")
    if form != "bfloat16 query":
        out["quant_scale2"] = TensorSpec((1,), "float32")
    return out


def _paged_modes(draw: st.DrawFn, case: Case) -> Change:
    m = draw(st.sampled_from([4, 5]))
    return {"key_antiquant_mode": m, "value_antiquant_mode": m}


BREAKERS: dict[str, Breaker] = {
    "antiquant.int4_separate_only": Breaker(_int4_kv, {"antiquant": "combined:0",
                                                       "branch": "decode", "paged": False},
                                            alt=({"antiquant": "combined:0",
                                                  "branch": "decode", "paged": False,
                                                  "d_class": "129-256"},)),
    "antiquant.combined_prefill_query": Breaker(_combined_prefill_query,
                                                {"antiquant": "combined:0",
                                                 "branch": "prefill", "pse": False}),
    "antiquant.sep_mode_range": Breaker(_sep_mode_range, {"antiquant": "separate:0/0",
                                                          "kv_dtype": "int8", "paged": False},
                                        alt=({"antiquant": "separate:0/0", "kv_dtype": "int8",
                                              "cache": "BnBsH"},)),
    "antiquant.int8_only_forms": Breaker(_int8_only_forms, {"antiquant": "separate:0/0",
                                                            "kv_dtype": "int4"},
                                         alt=({"antiquant": "separate:0/0", "kv_dtype": "int32"},
                                              {"antiquant": "separate:0/1", "kv_dtype": "int4"},
                                              {"antiquant": "separate:0/1",
                                               "kv_dtype": "int32"})),
    "antiquant.int4_modes": Breaker(_int4_kv, {"antiquant": "separate:2/2",
                                              "paged": False},
                                 alt=({"antiquant": "separate:2/2", "paged": False,
                                       "d_class": "129-256"},)),
    "antiquant.paged_modes": Breaker(_paged_modes, {"antiquant": "separate:1/1",
                                                    "paged": False, "kv_dtype": "int8",
                                                    "branch": "decode"}),
    "antiquant.needs_int_kv": searched(
        {"plain": True, "branch": "decode"}, "add:antiquant_scale"),
    "antiquant.scale_needed": searched(
        {"antiquant": "combined:0", "branch": "decode"}, "drop:antiquant_scale",
        alt=({"sparse_mode": 4, "full_quant": False},)),
    "antiquant.offset_needs_scale": searched(
        {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"},
        "add:antiquant_offset"),
    "antiquant.offset_matches_scale": searched(
        {"pse": True, "branch": "decode"}, "dtype:key_antiquant_offset"),
    # from mode 0: mode 1's per-token scale shape is its own (combined_shape fires too)
    "antiquant.combined_mode": Breaker(_combined_mode, {"antiquant": "combined:0",
                                                        "branch": "decode"}),
    "antiquant.combined_shape": searched(
        {"antiquant": "combined:0", "branch": "decode"}, "rank_up:antiquant_scale",
        alt=({"sparse_mode": 4, "full_quant": False},)),
    "antiquant.combined_dtype": searched(
        {"antiquant": "combined:0", "branch": "decode"}, "dtype:antiquant_scale",
        alt=({"sparse_mode": 4, "full_quant": False},)),
    "antiquant.sep_scale_pair": searched(
        {"mask": "bool", "branch": "decode"}, "drop:key_antiquant_scale",
        alt=({"sparse_mode": 1, "antiquant": "separate:0/0", "cache": "none"},
             {"antiquant": "separate:1/1", "kv_quant_sym": "sym"}, FAMILY_BASE["gqa_nz"])),
    "antiquant.sep_offset_pair": searched(
        {"pse": True, "branch": "decode"}, "drop:key_antiquant_offset"),
    "antiquant.sep_mode_pair": searched(
        {"antiquant": "separate:5/5"}, "attr:value_antiquant_mode",
        alt=({"antiquant": "separate:4/4"},)),
    "antiquant.sep_shape": searched(
        {"mask": "bool", "branch": "decode"}, "pair_axis:key_antiquant_scale:0:+1",
        alt=({"sparse_mode": 1, "antiquant": "separate:0/0", "cache": "none"},)),
    "antiquant.sep_dtype": searched(
        {"mask": "bool", "branch": "decode"}, "dtype:key_antiquant_scale",
        alt=({"sparse_mode": 1, "antiquant": "separate:0/0", "cache": "none"},)),
    # NZ caches' per-channel scales have one shape per layout (nz.scale_shape): per-token there
    "antiquant.sep_shapes_match": searched(
        {"antiquant": "separate:3/3"}, "axis:key_antiquant_scale:-1:+1",
        alt=({**FAMILY_BASE["gqa_nz"], "antiquant": "separate:1/1"},)),
    "antiquant.mixed_query_fp16": Breaker(_mixed_query_fp16, {"antiquant": "separate:0/1",
                                                              "kv_dtype": "int8"}),
    "antiquant.sep_prefill_dtypes": searched(
        {"antiquant": "separate:1/1", "branch": "prefill"}, "add:quant_scale2"),
    "antiquant.sep_prefill_seq": Breaker(_sep_prefill_seq, {**PREFILL_SEQ,
                                                            "antiquant": "separate:0/0"},
                                         alt=({**PREFILL_SEQ, "antiquant": "separate:1/1"},)),
    "antiquant.sep_prefill_features": searched(
        {"antiquant": "separate:1/1", "branch": "prefill"}, "add:query_padding_size"),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "antiquant.combined_mode": ("below", "above"),
    "antiquant.sep_mode_range": ("below", "above"),
}
