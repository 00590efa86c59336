"""Breakers of the KV-source rules: paged caches, tensor lists and GQA 5-D NZ caches.

Each starts from a legal paged, list or NZ case and moves one quantity
consistently (case_edits), so only its rule fires. The nz.* rules govern the
GQA int8-antiquant NZ configuration [V4 GQA/MHA/MQA伪量化场景下key/value shape
为五维时的参数约束], which `cases()` draws as its gqa_nz family.
"""

from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.spec import Case, TensorSpec
from fia_fuzz.spec.rulebook.nz import NZ_D, NZ_HEADS, per_channel_shape
from fia_fuzz.strategies.breaker import Breaker
from fia_fuzz.strategies.case_edits import (
    SEQ_AXIS,
    grow_blocks,
    head_dim,
    layout,
    q_layout,
    repage,
    split_blocks,
    with_axis,
    with_dtype,
)
from fia_fuzz.strategies.draft import shape
from fia_fuzz.strategies.mutations import FILLS, Change, apply

NO_FULL_MASK = {"mask": "none", "pse": False}
#: Data of a tensor a breaker turns int8 (float fills do not materialise as int8).
INT8_FILL = {"dist": "int", "low": -128, "high": 127}


# ---- paged -------------------------------------------------------------------------------
def _bs(case: Case) -> int:
    return int(case.params["block_size"])


def _block_table_rank(draw: st.DrawFn, case: Case) -> Change:
    """Rows of unequal length: one row gets extra unused slots (B = 1: a short second row).

    A flat 1-D table breaks the rule too, but a Case stores block_table as rows.
    """
    rows = [list(r) for r in case.params["block_table"]]
    if len(rows) == 1:
        return {"block_table": [*rows, rows[0][:draw(st.integers(0, len(rows[0]) - 1))]]}
    rows[draw(st.integers(0, len(rows) - 1))] += [-1] * draw(st.integers(1, 2))
    return {"block_table": rows}


def _block_size_max(draw: st.DrawFn, case: Case) -> Change:
    """1024 slots (the packed layouts' own list allows it; the general limit is 512)."""
    return grow_blocks(case, 1024)


def _block_size_align(draw: st.DrawFn, case: Case) -> Change:
    """Decode: blocks of 8 (float KV) or 16 (int8 KV) slots, the table split to match."""
    unit = 16 if case.params["key"].dtype == "int8" else 8
    return split_blocks(case, _bs(case) // unit)


def _block_size_prefill(draw: st.DrawFn, case: Case) -> Change:
    """Prefill: blocks of 64 or 32 slots (16-aligned, not 128-aligned)."""
    return split_blocks(case, _bs(case) // draw(st.sampled_from([64, 32])))


def _paged_kv_dtype(draw: st.DrawFn, case: Case) -> Change:
    """int4 (true int4, the same shapes) in a paged cache behind a float query."""
    if case.view().D % 64:
        reject()    # int4 needs D % 64 == 0 (dims.d_align_int4)
    return {n: with_dtype(case.params[n], "int4") for n in ("key", "value")}


def _int8_query(draw: st.DrawFn, case: Case) -> Change:
    """A paged float prefill made full-quant: int8 q/k/v with per-tensor dequant scales."""
    if case.view().D % 32:
        reject()    # int8 needs D % 32 == 0 (dims.d_align_int8)
    f32 = TensorSpec((1,), "float32")
    qkv = ("query", "key", "value")
    return {**{n: with_dtype(case.params[n], "int8") for n in qkv},
            "dequant_scale1": f32, "quant_scale1": f32, "dequant_scale2": f32,
            FILLS: {n: INT8_FILL for n in qkv}}


def _cache_rank(draw: st.DrawFn, case: Case) -> Change:
    """Rank 6 or 7: trailing unit axes."""
    rank = draw(st.sampled_from([6, 7]))
    return {n: TensorSpec((*case.params[n].shape, *[1] * (rank - case.params[n].ndim)),
                          case.params[n].dtype) for n in ("key", "value")}


def _cache_layout_query(draw: st.DrawFn, case: Case) -> Change:
    """A BnNBsD cache behind a BSND or BSH query (same B, S, N, D)."""
    b, n, s, d = case.params["query"].shape
    lay = draw(st.sampled_from(["BSND", "BSH"]))
    return {"query": TensorSpec(shape(lay, b, n, s, d), case.params["query"].dtype),
            "input_layout": lay}


def _bsh_kvn_d_max(draw: st.DrawFn, case: Case) -> Change:
    """KV_N * D = 65536 (128 x 512 or 256 x 256) in a BnBsH cache; MHA so G stays 1.

    KV lengths are capped at one block and the table compacted to those blocks,
    which keeps the 65536-wide cache small enough to materialise.
    """
    kv_n, d = draw(st.sampled_from([(128, 512), (256, 256)]))
    q = case.params["query"]
    lay = q_layout(case)
    kv = [min(a, _bs(case)) for a in case.params["actual_seq_lengths_kv"]]
    short = apply(case, {"actual_seq_lengths_kv": kv})
    out: Change = {**repage(short), "actual_seq_lengths_kv": kv,
                   "query": head_dim(with_axis(q, 1 if lay == "BNSD" else 2, kv_n)
                                     if lay != "BSH" else q, lay, kv_n, d),
                   "num_heads": kv_n, "num_key_value_heads": kv_n}
    for n in ("key", "value"):
        out[n] = with_axis(out[n], 2, kv_n * d)
    return out


def _mask_last_dim(draw: st.DrawFn, case: Case) -> Change:
    """Prefill: a full mask covering the KV lengths but not maxBlockNumPerSeq * blockSize."""
    view = case.view()
    top = max(view.act_kv)
    need = view.max_blocks_per_seq * _bs(case)
    if not 0 < top < need:
        reject()
    return {"atten_mask": with_axis(case.params["atten_mask"], -1, draw(st.integers(top,
                                                                                     need - 1)))}


#: Paged bases; breakers whose change a 5-D NZ cache's own rules would also catch pin
#: the cache form (gqa_nz draws NZ without rope).
PAGED = {"paged": True, "rope": False}
PAGED_BREAKERS: dict[str, Breaker] = {
    "paged.block_table_rank": Breaker(_block_table_rank, {**PAGED, "branch": "decode"}),
    "paged.block_size_max": Breaker(_block_size_max, {**PAGED, **NO_FULL_MASK,
                                                      "antiquant": "none"}),
    "paged.block_size_align": Breaker(_block_size_align, {**PAGED, "branch": "decode",
                                                          "cache": "BnBsH"},
                                      alt=({**PAGED, "branch": "decode", "cache": "BnNBsD"},)),
    "paged.block_size_prefill": Breaker(_block_size_prefill, {**PAGED, "branch": "prefill",
                                                              "q_dtype": "float16"}),
    "paged.kv_dtype": Breaker(_paged_kv_dtype, {"cache": "BnBsH", "antiquant": "separate:1/1"},
                              alt=({"cache": "BnNBsD", "antiquant": "separate:1/1"},
                                   {"cache": "BnBsH", "antiquant": "separate:1/1",
                                    "d_class": "129-256"})),
    "paged.int8_query": Breaker(_int8_query, {**PAGED, "branch": "prefill", "pse": False,
                                              "q_dtype": "float16", "d_class": "64-128",
                                              "post_quant": False, "sink": False}),
    "paged.cache_rank": Breaker(_cache_rank, PAGED),
    "paged.cache_layout_query": Breaker(_cache_layout_query, {"cache": "BnNBsD",
                                                              "layout": "BNSD",
                                                              "antiquant": "none",
                                                              "rope": False,
                                                              "post_quant": False}),
    "paged.bsh_kvn_d_max": Breaker(_bsh_kvn_d_max, {**PAGED, "cache": "BnBsH", "sink": False,
                                                    "post_quant": False, **NO_FULL_MASK,
                                                    "block_edge": "min",
                                                    "antiquant": "none", "branch": "decode"}),
    "paged.mask_last_dim": Breaker(_mask_last_dim, {**PAGED, "mask": "bool", "sparse_mode": 0,
                                                    "branch": "prefill"}),
}


# ---- tensor lists ------------------------------------------------------------------------
def _batch_one(draw: st.DrawFn, case: Case) -> Change:
    b2 = draw(st.integers(2, 3))
    return {n: [with_axis(t, 0, b2) for t in case.params[n]] for n in ("key", "value")}


def _uniform(draw: st.DrawFn, case: Case) -> Change:
    """value[i] one token longer than key[i]."""
    vals = list(case.params["value"])
    i = draw(st.integers(0, len(vals) - 1))
    ax = SEQ_AXIS[q_layout(case)]
    vals[i] = with_axis(vals[i], ax, vals[i].shape[ax] + 1)
    return {"value": vals}


def _list_b_max(draw: st.DrawFn, case: Case) -> Change:
    """257 batches: the query's B and both lists (cycling the drawn tensors)."""
    b = draw(st.integers(257, 260))
    out: Change = {"query": with_axis(case.params["query"], 0, b)}
    for n in ("key", "value"):
        ts = case.params[n]
        out[n] = [ts[i % len(ts)] for i in range(b)]
    return out


def _not_paged(draw: st.DrawFn, case: Case) -> Change:
    """The paged caches passed as lists of B (batch-1 lists over a BNSD query)."""
    b = case.params["query"].shape[0]
    return {n: [case.params[n]] * b for n in ("key", "value")}


#: No B-shaped optional input; decode keeps the 257-batch query small.
LIST_FREE = {"mask": "none", "pse": False, "actual_q": "absent", "actual_kv": "absent",
             "branch": "decode"}
KVLIST_BREAKERS: dict[str, Breaker] = {
    "kvlist.batch_one": Breaker(_batch_one, {"kv_list": True}),
    "kvlist.uniform": Breaker(_uniform, {"kv_list": True}),
    "kvlist.b_max_256": Breaker(_list_b_max, {"kv_list": True, **LIST_FREE}),
    "kvlist.not_paged": Breaker(_not_paged, {**PAGED, "cache": "BnBsH",
                                             "layout": "BNSD"}),
}


# ---- GQA NZ caches -----------------------------------------------------------------------
NZ_C0 = 32


#: Legal GQA int8-antiquant NZ calls: the gqa_nz family of cases().
GQA_NZ = {"cache": "NZ", "rope": False}


def _nz_dtypes(draw: st.DrawFn, case: Case) -> Change:
    """Decode: a float16 query (prefill's own antiquant rule would fire too)."""
    return {"query": with_dtype(case.params["query"], "float16")}


def _nz_dims(draw: st.DrawFn, case: Case) -> Change:
    """D = 256: query, both caches and the per-channel scales together."""
    d = draw(st.sampled_from([64, 256]))
    lay = layout(case)
    n, kv_n = case.params["num_heads"], case.params["num_key_value_heads"]
    out: Change = {"query": head_dim(case.params["query"], lay, n, d)}
    for name in ("key", "value"):
        out[name] = with_axis(case.params[name], 2, d // NZ_C0)
    if not case.params.get("key_antiquant_mode"):
        for name in ("key_antiquant_scale", "value_antiquant_scale"):
            out[name] = TensorSpec(per_channel_shape(lay, kv_n, d), "bfloat16")
    return out


def _nz_heads(draw: st.DrawFn, case: Case) -> Change:
    """Same KV_N (so caches and scales stay), a query head count outside the table."""
    kv_n = case.params["num_key_value_heads"]
    n = draw(st.sampled_from([kv_n * g for g in (1, 2, 4) if (kv_n * g, kv_n) not in NZ_HEADS]))
    q = case.params["query"]
    lay = layout(case)
    q = with_axis(q, {"BNSD": 1, "BSND": 2}[lay], n) if lay != "BSH" else q
    return {"query": head_dim(q, lay, n, NZ_D), "num_heads": n}


def _nz_layout(draw: st.DrawFn, case: Case) -> Change:
    """The same BNSD prefill query declared BNSD_BSND."""
    return {"input_layout": "BNSD_BSND"}


def _nz_precise(draw: st.DrawFn, case: Case) -> Change:
    return {"inner_precise": 0}


def _nz_mask(draw: st.DrawFn, case: Case) -> Change:
    s1 = case.params["query"].shape[SEQ_AXIS[layout(case)]]
    if s1 == 1:
        b, s2 = case.params["query"].shape[0], len(case.params["block_table"][0]) * _bs(case)
        return {"atten_mask": TensorSpec(draw(st.sampled_from([(b, 1, s2), (b, 1, 1, s2)])),
                                         "bool")}
    return {"sparse_mode": draw(st.sampled_from([2, 4]))}


def _nz_antiquant(draw: st.DrawFn, case: Case) -> Change:
    """Asymmetric: offsets next to the scales."""
    return {"key_antiquant_offset": case.params["key_antiquant_scale"],
            "value_antiquant_offset": case.params["value_antiquant_scale"]}


def _nz_scale_shape(draw: st.DrawFn, case: Case) -> Change:
    s = case.params["key_antiquant_scale"]
    if case.params.get("key_antiquant_mode"):
        bad = TensorSpec((s.shape[0] + 1, s.shape[1]), s.dtype)
    else:
        bad = TensorSpec(draw(st.sampled_from([(s.numel, 1), (s.numel // 2,)])), s.dtype)
    return {"key_antiquant_scale": bad, "value_antiquant_scale": bad}


def _nz_block_size(draw: st.DrawFn, case: Case) -> Change:
    """256 slots: larger blocks from 128, or 512 blocks split in two."""
    if _bs(case) == 512:
        return split_blocks(case, 2)
    out = grow_blocks(case, 256)
    if case.params.get("key_antiquant_mode"):    # per-token scales span the grown S2
        s = case.params["key_antiquant_scale"]
        s = with_axis(s, 1, len(case.params["block_table"][0]) * 256)
        out.update(key_antiquant_scale=s, value_antiquant_scale=s)
    return out


def _nz_extras(draw: st.DrawFn, case: Case) -> Change:
    q = case.params["query"]
    lay = layout(case)
    s1 = q.shape[SEQ_AXIS[lay]]
    # int8 output breaks the prefill antiquant dtype rule too: post-quant in decode only
    if s1 == 1 and draw(st.booleans()):
        return {"quant_scale2": TensorSpec((1,), "float32")}
    b = q.shape[0]
    width = len(case.params["block_table"][0])
    return {"pse_shift": TensorSpec((b, case.params["num_heads"], s1, width * _bs(case)),
                                    "bfloat16")}


NZ_BREAKERS: dict[str, Breaker] = {
    "nz.dtypes": Breaker(_nz_dtypes, {**GQA_NZ, "q_seq": "1"}),
    "nz.layout": Breaker(_nz_layout, {**GQA_NZ, "layout": "BNSD", "q_seq": "2-16"}),
} | {
    rid: Breaker(fn, GQA_NZ) for rid, fn in (
        ("nz.dims", _nz_dims), ("nz.heads", _nz_heads),
        ("nz.inner_precise", _nz_precise), ("nz.mask", _nz_mask),
        ("nz.antiquant", _nz_antiquant), ("nz.scale_shape", _nz_scale_shape),
        ("nz.block_size", _nz_block_size), ("nz.no_extras", _nz_extras))
}

KV_BREAKERS: dict[str, Breaker] = {**PAGED_BREAKERS, **KVLIST_BREAKERS, **NZ_BREAKERS}
