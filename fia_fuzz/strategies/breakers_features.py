"""Breakers of feature rules: dtypes, layouts, dims, pse, prefix, (anti)quant, MLA, packed.

Each starts from a legal case drawn where its rule applies and changes one
quantity everywhere it appears (case_edits), so only that rule fires. The
rules and their citations are in fia_fuzz/spec/rulebook/; the sizes a few of
them need (S > 20M, T > 1M) are host-sized, so illegal.NOT_MATERIALISABLE
lists those.
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.spec import Case, TensorSpec
from fia_fuzz.spec.case import VALUE_DTYPE_KEY
from fia_fuzz.spec.rulebook.dims import S_MAX
from fia_fuzz.spec.rulebook.mla import MLA_HEADS, MLA_TND_HEADS
from fia_fuzz.spec.rulebook.tnd import T_MAX
from fia_fuzz.strategies.breaker import Breaker
from fia_fuzz.strategies.case_edits import (
    SEP_SCALES,
    SEQ_AXIS,
    grow_blocks,
    head_dim,
    layout,
    q_layout,
    query_seq,
    split_blocks,
    with_axis,
    with_dtype,
)
from fia_fuzz.strategies.mutations import DELETE, FILLS, Change


def _kv_dtype(case: Case, dtype: str) -> Change:
    """key, value (and a shared prefix) in `dtype`; int32 packs 8 int4 values, so its last
    axis is 1/8."""
    out: Change = {}
    for n in ("key", "value", "key_shared_prefix", "value_shared_prefix"):
        t = case.params.get(n)
        if t is None:
            continue
        out[n] = with_axis(t, -1, t.shape[-1] // 8) if dtype == "int32" else t
        out[n] = with_dtype(out[n], dtype)
    return out


def _dsq(case: Case, tokens: int | None = None, n: int | None = None) -> Change:
    """MLA full quant's dequant_scale_query (tokens, N, 1) following a change of S or N."""
    t = case.params.get("dequant_scale_query")
    if t is None:
        return {}
    return {"dequant_scale_query": TensorSpec((tokens or t.shape[0], n or t.shape[1], 1),
                                              t.dtype)}


def _int4_d(case: Case) -> None:
    if case.view().D % 64:
        reject()    # int4 needs D % 64 == 0 (dims.d_align_int4): not this breaker's rule


# ---- dtypes ------------------------------------------------------------------------------
def _int8_query_kv(draw: st.DrawFn, case: Case) -> Change:
    dt = draw(st.sampled_from(["float16", "bfloat16"]))
    return {n: with_dtype(case.params[n], dt) for n in ("key", "value")}


def _all_int8_decode(draw: st.DrawFn, case: Case) -> Change:
    """The full-quant prefill with Q_S = 1.

    A prefill-only inner_precise (2/3) or output layout (BNSD_BSND) is set back to
    its decode form, so decode's own rules on those stay quiet.
    """
    out = query_seq(case, 1)
    if case.params.get("inner_precise") in (2, 3):
        out["inner_precise"] = case.params["inner_precise"] - 2
    if layout(case) == "BNSD_BSND":
        out["input_layout"] = "BNSD"
    return out


VALUE_LISTS = ("actual_seq_lengths", "actual_seq_lengths_kv", "query_padding_size",
               "kv_padding_size", "actual_shared_prefix_len")


def _block_table_dtype(draw: st.DrawFn, case: Case) -> Change:
    """block_table passed as an int64 array (the op takes int32) [Case.value_dtype]."""
    return {FILLS: {"block_table": {VALUE_DTYPE_KEY: "int64"}}}


def _int64_values(draw: st.DrawFn, case: Case) -> Change:
    """One length or padding argument passed as an int32 array (the op takes int64)."""
    name = draw(st.sampled_from([n for n in VALUE_LISTS if case.params.get(n) is not None]))
    return {FILLS: {name: {VALUE_DTYPE_KEY: "int32"}}}


# ---- layouts -----------------------------------------------------------------------------
def _bnsd_bsnd(draw: st.DrawFn, case: Case) -> Change:
    return {"input_layout": "BNSD_BSND"}


def _nbsd_seq(draw: st.DrawFn, case: Case) -> Change:
    """MLA NBSD output with Q_S = 1 (sparse 3 becomes 4: decode MLA takes 0 or 4)."""
    out = {**query_seq(case, 1), **_dsq(case, tokens=case.params["query"].shape[0])}
    if case.params.get("sparse_mode") == 3:
        out["sparse_mode"] = 4
    return out


def _nbsd_rope(draw: st.DrawFn, case: Case) -> Change:
    return {"input_layout": f"{layout(case)}_NBSD"}


# ---- dims --------------------------------------------------------------------------------
def _d_align_int4(draw: st.DrawFn, case: Case) -> Change:
    """D 32 key/value turned int4 (or int32-packed int4)."""
    return _kv_dtype(case, draw(st.sampled_from(["int4", "int32"])))


def _s_max(draw: st.DrawFn, case: Case) -> Change:
    """One head of D 16 with query S or key/value S just above 20M (prefill, S_MAX)."""
    dt = case.params["query"].dtype
    big = S_MAX + draw(st.integers(1, 64))
    s1, s2 = (big, 16) if draw(st.booleans()) else (16, big)
    return {"query": TensorSpec((1, 1, s1, 16), dt), "key": TensorSpec((1, 1, s2, 16), dt),
            "value": TensorSpec((1, 1, s2, 16), dt), "num_heads": 1, "num_key_value_heads": 1}


def _pse_d_align(draw: st.DrawFn, case: Case) -> Change:
    """Decode with pse: head dim moved off the 16 grid in query, key and value."""
    lay = q_layout(case)
    v = case.view()
    d = v.D + 8 if v.D < 512 else v.D - 8
    return {"query": head_dim(case.params["query"], lay, v.N, d),
            **{n: head_dim(case.params[n], lay, v.KV_N, d) for n in ("key", "value")}}


# ---- prefix ------------------------------------------------------------------------------
def _prefix_int8(draw: st.DrawFn, case: Case) -> Change:
    """A batch-1 int8 shared prefix of key's layout next to int8 q/k/v."""
    k = case.params["key"]
    ax = SEQ_AXIS[q_layout(case)]
    p = with_axis(with_axis(k, 0, 1), ax, draw(st.integers(1, max(1, k.shape[ax]))))
    return {"key_shared_prefix": p, "value_shared_prefix": p}


# ---- antiquant ---------------------------------------------------------------------------
def _int4_combined(draw: st.DrawFn, case: Case) -> Change:
    _int4_d(case)
    return _kv_dtype(case, draw(st.sampled_from(["int4", "int32"])))


def _combined_prefill_query(draw: st.DrawFn, case: Case) -> Change:
    return {"query": with_dtype(case.params["query"], "bfloat16")}


def _sep_mode_range(draw: st.DrawFn, case: Case) -> Change:
    """Modes outside 0..5 (decode) or 0..1 (prefill), both sides alike."""
    top = 5 if case.view().decode else 1
    m = draw(st.sampled_from([top + 1, 6, -1]))
    return {"key_antiquant_mode": m, "value_antiquant_mode": m}


def _int8_only_forms(draw: st.DrawFn, case: Case) -> Change:
    """int4 KV with per-tensor (1,) scales and offsets."""
    return {n: TensorSpec((1,), case.params[n].dtype) for n in SEP_SCALES
            if case.params.get(n) is not None}


def _int4_modes(draw: st.DrawFn, case: Case) -> Change:
    """Mode 2 (per-tensor + per-head) scales are int8-only: the same call with int4 KV."""
    _int4_d(case)
    return _kv_dtype(case, draw(st.sampled_from(["int4", "int32"])))


def _paged_modes(draw: st.DrawFn, case: Case) -> Change:
    m = draw(st.sampled_from([4, 5]))
    return {"key_antiquant_mode": m, "value_antiquant_mode": m}


# ---- post-quant --------------------------------------------------------------------------
def _scale2_dtype(draw: st.DrawFn, case: Case) -> Change:
    dt = draw(st.sampled_from(["bfloat16", "float16"]))
    return {n: with_dtype(case.params[n], dt) for n in ("quant_scale2", "quant_offset2")
            if case.params.get(n) is not None}


def _scale2_shape(draw: st.DrawFn, case: Case) -> Change:
    """Per-channel scale (and offset) covering half the channels."""
    out: Change = {}
    for n in ("quant_scale2", "quant_offset2"):
        t = case.params.get(n)
        if t is not None:
            out[n] = with_axis(t, -1, t.shape[-1] // 2)
    return out


def _band_negative(draw: st.DrawFn, case: Case) -> Change:
    side = draw(st.sampled_from(["pre_tokens", "next_tokens"]))
    return {side: -draw(st.integers(1, 4))}


def _rows_not_computed(draw: st.DrawFn, case: Case) -> Change:
    """sparse 0 with a mask and next_tokens < 0: row 0 sees no key."""
    return {"next_tokens": -draw(st.integers(1, 4))}


# ---- MLA (query D 512) -------------------------------------------------------------------
def _mla_kv_heads(draw: st.DrawFn, case: Case) -> Change:
    """Two KV heads: every cache holds two (num_heads stays, so G halves; odd N rejected)."""
    if case.params["num_heads"] % 2:
        reject()
    out: Change = {"num_key_value_heads": 2}
    for n in ("key", "value", "key_rope"):
        t = case.params[n]
        out[n] = with_axis(t, -1, t.shape[-1] * 2) if t.ndim == 3 else with_axis(t, 1, 2)
    return out


def _mla_num_heads(draw: st.DrawFn, case: Case) -> Change:
    """num_heads off the MLA list (TND: off 32/64/128), query and query_rope alike."""
    lay = q_layout(case)
    ok = MLA_TND_HEADS if lay == "TND" else MLA_HEADS
    n = draw(st.sampled_from([x for x in (3, 6, 12, 24, 48, 16, 8) if x not in ok]))
    out: Change = {"num_heads": n, "num_key_value_heads": 1, **_dsq(case, n=n)}
    for name, d in (("query", 512), ("query_rope", 64)):
        t = case.params[name]
        if lay == "BSH":
            out[name] = with_axis(t, -1, n * d)
        else:
            out[name] = with_axis(t, {"BNSD": 1, "BSND": 2, "TND": 1}[lay], n)
    return out


def _mla_q_seq(draw: st.DrawFn, case: Case) -> Change:
    """MLA prefill with Q_S 17..64 (BSH/BSND/BNSD, non-NBSD output)."""
    s = draw(st.integers(17, 64))
    return {**query_seq(case, s), **_dsq(case, tokens=case.params["query"].shape[0] * s)}


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
    return grow_blocks(case, draw(st.sampled_from([256, 512])))


# ---- packed TND / NTD_TND ----------------------------------------------------------------
def _tnd_layout_by_d(draw: st.DrawFn, case: Case) -> Change:
    """D != 512: TND read as TND_NTD, or NTD_TND read as plain NTD (same tensors)."""
    return {"input_layout": "TND_NTD" if layout(case) == "TND" else "NTD"}


def _tnd_t_max(draw: st.DrawFn, case: Case) -> Change:
    """One batch of T just above 1M query tokens, one head, the drawn D and dtype."""
    q, v = case.params["query"], case.params["value"]
    d, dv = q.shape[-1], v.shape[-1]
    t = T_MAX + draw(st.integers(1, 64))
    s2 = draw(st.integers(t + 1, t + 16)) if case.params.get("sparse_mode") == 3 else 16
    lay = q_layout(case)
    out: Change = {"query": TensorSpec((t, 1, d) if lay == "TND" else (1, t, d), q.dtype),
                   "key": TensorSpec((s2, 1, d) if lay == "TND" else (1, s2, d), q.dtype),
                   "value": TensorSpec((s2, 1, dv) if lay == "TND" else (1, s2, dv), q.dtype),
                   "num_heads": 1, "num_key_value_heads": 1,
                   "actual_seq_lengths": [t], "actual_seq_lengths_kv": [s2]}
    return out


def _tnd_dtype(draw: st.DrawFn, case: Case) -> Change:
    return {n: with_dtype(case.params[n], "float16") for n in ("query", "key", "value")}


def _tnd_causal(draw: st.DrawFn, case: Case) -> Change:
    """Sparse 3: one batch's query 1 to 2x+1 tokens longer than its KV (act_q <= act_kv is
    required; paged KV lengths are per batch, others cumulative)."""
    cq = case.params["actual_seq_lengths"]
    ckv = case.params["actual_seq_lengths_kv"]
    q_lens = [b - a for a, b in zip([0, *cq], cq, strict=False)]
    kv_lens = list(ckv[:len(q_lens)]) if case.params.get("block_table") is not None \
        else [b - a for a, b in zip([0, *ckv], ckv, strict=False)]
    j = draw(st.integers(0, len(q_lens) - 1))
    q_lens[j] = kv_lens[j] + draw(st.integers(1, kv_lens[j] + 1))
    total, cum = 0, []
    for n in q_lens:
        total += n
        cum.append(total)
    return {**query_seq(case, total), "actual_seq_lengths": cum}


def _tnd_block_size(draw: st.DrawFn, case: Case) -> Change:
    """256 or 384 slots: larger blocks from 128, 512 split into 256."""
    if int(case.params["block_size"]) == 512:
        return split_blocks(case, 2)
    return grow_blocks(case, draw(st.sampled_from([256, 384])))


def _tnd_d512_rope(draw: st.DrawFn, case: Case) -> Change:
    """Rope dropped; MLA's N = 128 (G 128) would also break GQA's G <= 64, so not from it."""
    if case.params["num_heads"] > 64:
        reject()
    return {"query_rope": DELETE, "key_rope": DELETE}


FEATURE_BREAKERS: dict[str, Breaker] = {
    # rope: False keeps to the dense int8 family (MLA full quant has rules of its own)
    "dtype.int8_query_kv": Breaker(_int8_query_kv, {"full_quant": True, "rope": False}),
    "dtype.all_int8_decode": Breaker(_all_int8_decode, {"full_quant": True, "mask": "none",
                                                        "pse": False, "actual_q": "absent",
                                                        "rope": False}),
    "dtype.block_table": Breaker(_block_table_dtype, {"paged": True}),
    "dtype.int64_values": Breaker(_int64_values, {"actual_kv": "per_batch"},
                                  alt=({"q_padding": True}, {"prefix_len": "given"})),
    "layout.bnsd_bsnd_prefill": Breaker(_bnsd_bsnd, {"plain": True, "layout": "BNSD",
                                                     "branch": "decode"}),
    "layout.nbsd_seq": Breaker(_nbsd_seq, {"layout": "BSND_NBSD"},
                               alt=({"layout": "BSH_NBSD"},)),
    "layout.nbsd_rope": Breaker(_nbsd_rope, {"plain": True, "q_seq": "2-16"}),
    "dims.d_align_int4": Breaker(_d_align_int4, {"antiquant": "separate:1/1", "paged": False,
                                                 "branch": "decode",
                                                 "kv_dtype": "int8", "d_class": "<64"}),
    "dims.s_max": Breaker(_s_max, {"plain": True, "layout": "BNSD"}),
    "pse.decode_d_align": Breaker(_pse_d_align, {"pse": True, "branch": "decode",
                                                 "antiquant": "none", "paged": False,
                                                 "kv_list": False, "prefix": False,
                                                 "post_quant": False}),
    "prefix.not_all_int8": Breaker(_prefix_int8, {"full_quant": True, "mask": "none",
                                                  "pse": False, "rope": False}),
    "antiquant.int4_separate_only": Breaker(_int4_combined, {"antiquant": "combined:0",
                                                             "branch": "decode",
                                                             "paged": False},
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
                                         alt=({"antiquant": "separate:0/0",
                                               "kv_dtype": "int32"},)),
    "antiquant.int4_modes": Breaker(_int4_modes, {"antiquant": "separate:2/2",
                                                  "paged": False},
                                    alt=({"antiquant": "separate:2/2", "paged": False,
                                          "d_class": "129-256"},)),
    "antiquant.paged_modes": Breaker(_paged_modes, {"antiquant": "separate:1/1",
                                                    "paged": False, "kv_dtype": "int8",
                                                    "branch": "decode"}),
    "quant.scale2_dtype": Breaker(_scale2_dtype, {"post_quant": True, "q_dtype": "float16"}),
    "quant.scale2_shape": Breaker(_scale2_shape, {"post_quant_form": "per_channel"}),
    "quant.band_negative": Breaker(_band_negative, {"post_quant": True, "sparse_mode": 4,
                                                    "post_quant_offset": False,
                                                    "branch": "prefill"}),
    "quant.rows_not_computed": Breaker(_rows_not_computed, {"post_quant_offset": True,
                                                            "sparse_mode": 0, "mask": "bool",
                                                            "branch": "prefill"}),
    "mla.kv_heads_1": Breaker(_mla_kv_heads, {"rope_d": "512"}),
    "mla.num_heads": Breaker(_mla_num_heads, {"rope_d": "512"}),
    "mla.q_seq": Breaker(_mla_q_seq, {"rope_d": "512", "layout": "BSND", "q_seq": "2-16"},
                         alt=({"rope_d": "512", "layout": "BSH", "q_seq": "2-16"},
                              {"rope_d": "512", "layout": "BNSD", "q_seq": "2-16"})),
    "mla.layout": Breaker(_mla_layout, {"rope_d": "512", "cache": "NZ", "layout": "BSND"},
                          alt=({"rope_d": "512", "cache": "NZ", "layout": "BSND_NBSD"},)),
    "mla.block_size_128": Breaker(_mla_block_size, {"rope_d": "512"}),
    "tnd.layout_by_d": Breaker(_tnd_layout_by_d, {"layout": "TND", "rope_d": "none"},
                               alt=({"layout": "NTD_TND", "rope_d": "none"},)),
    "tnd.t_max": Breaker(_tnd_t_max, {"layout": "TND", "paged": False, "rope": False},
                         alt=({"layout": "NTD_TND", "paged": False, "rope": False},)),
    "tnd.dtype_bf16": Breaker(_tnd_dtype, {"layout": "TND", "rope_d": "none"},
                              alt=({"layout": "NTD_TND", "rope_d": "none"},)),
    "tnd.causal_lengths": Breaker(_tnd_causal, {"layout": "TND", "sparse_mode": 3,
                                                "rope_d": "none"},
                                  alt=({"layout": "NTD_TND", "sparse_mode": 3},)),
    "tnd.block_size": Breaker(_tnd_block_size, {"layout": "TND", "paged": True,
                                                "rope": False}),
    # without rope an NZ cache is the GQA NZ configuration, whose nz.* rules would fire
    "tnd.d512_needs_rope": Breaker(_tnd_d512_rope, {"rope_d": "512", "layout": "TND",
                                                    "cache": "BnBsH"},
                                   alt=({"rope_d": "512", "layout": "TND", "cache": "BnNBsD"},
                                        {"rope_d": "512", "layout": "TND_NTD",
                                         "cache": "BnBsH"})),
}
