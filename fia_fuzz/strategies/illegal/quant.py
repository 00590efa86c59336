"""Breakers of the `quant.*` rules: full int8 quantisation and post-quant (rulebook/quant.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.rulebook.quant import DEQUANT
from fia_fuzz.strategies.edits import (
    FILLS,
    Change,
    sided,
    with_axis,
    with_dtype,
)
from fia_fuzz.strategies.illegal.breaker import FAMILY_BASE, PAGED_DECODE, Breaker, searched

#: MLA with a float query: full-quant MLA carries its own scales (mla.full_quant_scales).
MLA_FLOAT = {"rope_d": "512", "full_quant": False}
#: Data for a scale a breaker gives an integer dtype.
INT_SCALE_FILLS = {"int32": {"dist": "int", "low": 1, "high": 4},
                   "uint64": {"dist": "u64_scale", "value": 1.0}}


def _scale2_dtype(draw: st.DrawFn, case: Case) -> Change:
    """A float16 (or, with a float16 query, bfloat16) or integer post-quant scale."""
    floats = ["float16"] if case.params["query"].dtype == "bfloat16" else ["bfloat16", "float16"]
    dt = draw(st.sampled_from([*floats, "int32", "uint64"]))
    names = [n for n in ("quant_scale2", "quant_offset2") if case.params.get(n) is not None]
    out: Change = {n: with_dtype(case.params[n], dt) for n in names}
    if dt in INT_SCALE_FILLS:       # a float recipe does not materialise as an integer
        out[FILLS] = {n: INT_SCALE_FILLS[dt] for n in names}
    return out


def _dequant_per_tensor(draw: st.DrawFn, case: Case) -> Change:
    """One full-quant scale holding 2, 3 or 64 values (a per-channel guess)."""
    name = draw(st.sampled_from([n for n in DEQUANT if case.params.get(n) is not None]))
    t = case.params[name]
    return {name: TensorSpec((draw(st.sampled_from([2, 3, 64])),), t.dtype)}


def _scale2_shape(draw: st.DrawFn, case: Case) -> Change:
    """A per-channel scale (and offset) short of N * D values (half the last axis, or one
    fewer) or past them (one more, twice the last axis, or a leading axis of 2)."""
    how = draw(st.sampled_from(["half", "-1", "+1", "x2", "lead2"]))
    out: Change = {}
    for n in ("quant_scale2", "quant_offset2"):
        t = case.params.get(n)
        if t is None:
            continue
        last = t.shape[-1]
        if how == "lead2":
            out[n] = TensorSpec((2, *t.shape), t.dtype)
        else:
            out[n] = with_axis(t, -1, {"half": last // 2, "-1": last - 1, "+1": last + 1,
                                       "x2": last * 2}[how])
    return sided(out, "below" if how in ("half", "-1") else "above")


def _band_negative(draw: st.DrawFn, case: Case) -> Change:
    side = draw(st.sampled_from(["pre_tokens", "next_tokens"]))
    return {side: -draw(st.integers(1, 4))}


def _rows_not_computed(draw: st.DrawFn, case: Case) -> Change:
    """sparse 0 with a mask and next_tokens < 0: row 0 sees no key."""
    return {"next_tokens": -draw(st.integers(1, 4))}


BREAKERS: dict[str, Breaker] = {
    "quant.scale2_dtype": Breaker(_scale2_dtype, {"post_quant": True, "q_dtype": "float16"},
                                  alt=({"post_quant": True, "q_dtype": "bfloat16"},
                                       {"post_quant": True, "full_quant": True})),
    "quant.scale2_shape": Breaker(_scale2_shape, {"post_quant_form": "per_channel"}),
    "quant.band_negative": Breaker(_band_negative, {"post_quant": True, "sparse_mode": 4,
                                                    "post_quant_offset": False,
                                                    "branch": "prefill"}),
    "quant.rows_not_computed": Breaker(_rows_not_computed, {"post_quant_offset": True,
                                                            "sparse_mode": 0, "mask": "bool",
                                                            "branch": "prefill"}),
    "quant.int8_query_needs_dequant": searched({"sparse_mode": 1}, "drop:dequant_scale1"),
    "quant.float_query_forbids_dequant": searched(
        {"plain": True, "layout": "BNSD"}, "add:dequant_scale1",
        alt=({"prefix": True, "branch": "prefill"},
             {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
             {"layout": "NTD_TND"},
             PAGED_DECODE,
             {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"},
             MLA_FLOAT, FAMILY_BASE["gqa_nz"])),
    "quant.dequant_dtype": searched(
        {"full_quant": True, "post_quant": True}, "dtype:dequant_scale1",
        alt=({"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},)),
    "quant.dequant_per_tensor": Breaker(_dequant_per_tensor, {"full_quant": True, "rope": False},
                                        alt=({"full_quant": True, "rope": False,
                                              "post_quant": True},)),
    "quant.offset2_needs_scale2": searched(
        {"plain": True, "layout": "BNSD"}, "add:quant_offset2",
        alt=({"prefix": True, "branch": "prefill"},
             {"sparse_mode": 2},
             {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
             {"layout": "NTD_TND"},
             {"sparse_mode": 4, "full_quant": False},
             {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"},
             {"full_quant": True, "rope": False, "post_quant": False},
             MLA_FLOAT, FAMILY_BASE["gqa_nz"])),
    "quant.offset2_matches": searched(
        {"kv_list": True}, "rank_up:quant_offset2",
        alt=({"full_quant": True, "post_quant": True},)),
    "quant.per_channel_no_left_padding": searched(
        {"post_quant_form": "per_channel", "layout": "BSH"}, "add:query_padding_size"),
    "quant.int4_no_post": searched({"antiquant": "separate:3/3"}, "add:quant_scale2"),
    "quant.dequant_scale_query": searched(
        {"plain": True, "layout": "BNSD"}, "add:dequant_scale_query",
        alt=({"prefix": True, "branch": "prefill"},
             {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},
             {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
             {"layout": "NTD_TND"},
             PAGED_DECODE,
             {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"},
             FAMILY_BASE["full_quant"], FAMILY_BASE["gqa_nz"], MLA_FLOAT)),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "quant.scale2_shape": ("below", "above"),
}
