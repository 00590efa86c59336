"""Breakers of the `paged.*` rules: block tables, block sizes and cache forms (rulebook/paged.py).

Each `BREAKERS` entry serves one rule: a written change, or a searched one
(`searched(base filters, mutation)`, from `python -m fia_fuzz.strategies.illegal.search`).
"""

from __future__ import annotations

import math

from hypothesis import reject
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import dense_shape
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.strategies.edits import (
    FILLS,
    Change,
    apply,
    block_size,
    grow_blocks,
    head_dim,
    modes,
    q_layout,
    repage,
    split_blocks,
    with_axis,
    with_dtype,
)
from fia_fuzz.strategies.illegal.breaker import (
    FAMILY_BASE,
    PAGED,
    PAGED_DECODE,
    PAGED_DENSE,
    Breaker,
    searched,
)

NO_FULL_MASK = {"mask": "none", "pse": False}
#: Data of a tensor a breaker turns int8 (float fills do not materialise as int8).
INT8_FILL = {"dist": "int", "low": -128, "high": 127}


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
    """Past 512 slots, just (544) to far (2048), 32-aligned so the alignment rules hold;
    packed layouts 1024, the one size past 512 their own list allows."""
    if case.view().packed:
        return grow_blocks(case, 1024)
    return grow_blocks(case, draw(st.sampled_from([544, 1024, 640, 2048])))


def _block_size_align(draw: st.DrawFn, case: Case) -> Change:
    """Decode: blocks of 8 (float KV) or 16 (int8 KV) slots, the table split to match."""
    unit = 16 if case.params["key"].dtype == "int8" else 8
    return split_blocks(case, block_size(case) // unit)


def _block_size_prefill(draw: st.DrawFn, case: Case) -> Change:
    """Prefill: blocks of 64 or 32 slots (16-aligned, not 128-aligned)."""
    return split_blocks(case, block_size(case) // draw(st.sampled_from([64, 32])))


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
    """Rank 1 or 2 (the cache flattened, whole or per block) or 6 or 7 (trailing unit axes)."""
    rank = draw(st.sampled_from([1, 2, 6, 7]))
    out: Change = {}
    for n in ("key", "value"):
        shape = case.params[n].shape
        if rank == 1:
            shape = (math.prod(shape),)
        elif rank == 2:
            shape = (shape[0], math.prod(shape[1:]))
        else:
            shape = (*shape, *[1] * (rank - len(shape)))
        out[n] = TensorSpec(shape, case.params[n].dtype)
    return out


def _cache_layout_query(draw: st.DrawFn, case: Case) -> Change:
    """A BnNBsD cache behind a BSND or BSH query (same B, S, N, D)."""
    b, n, s, d = case.params["query"].shape
    lay = draw(st.sampled_from(["BSND", "BSH"]))
    return {"query": TensorSpec(dense_shape(lay, b, n, s, d), case.params["query"].dtype),
            "input_layout": lay}


def _block_size_positive(draw: st.DrawFn, case: Case) -> Change:
    """block_size 0 or negative (-1, minus the case's size, INT32_MIN) behind the same table
    and caches."""
    if any(m in (4, 5) for m in modes(case)):
        reject()    # PA-managed scales are shaped by the block size: antiquant.sep_shape fires
    return {"block_size": draw(st.sampled_from([0, -1, -block_size(case), -(1 << 31)]))}


#: (KV_N, D) past 65535 in a BnBsH cache: just past (65536 = 128 x 512 or 256 x 256) to far
#: (256 x 512), head counts within dims.n_max's 256 and 16-aligned D within dims.d_max's 512.
KVN_D_PAST = ((128, 512), (256, 256), (136, 496), (192, 352), (240, 480), (256, 512))


#: A BnBsH decode without mask, pse, sink or post-quant on the smallest blocks.
BSH_DECODE_SMALL = {**PAGED, "cache": "BnBsH", "sink": False, "post_quant": False,
                    **NO_FULL_MASK, "block_edge": "min", "branch": "decode"}


def _bsh_kvn_d_max(draw: st.DrawFn, case: Case) -> Change:
    """KV_N * D past 65535 (`KVN_D_PAST`) in a BnBsH cache; MHA so G stays 1.

    KV lengths are capped at one block and the table compacted to those blocks,
    which keeps the 65536-wide cache small enough to materialise.
    """
    kv_n, d = draw(st.sampled_from(KVN_D_PAST))
    q = case.params["query"]
    lay = q_layout(case)
    kv = [min(a, block_size(case)) for a in case.params["actual_seq_lengths_kv"]]
    short = apply(case, {"actual_seq_lengths_kv": kv})
    out: Change = {**repage(short), "actual_seq_lengths_kv": kv,
                   "query": head_dim(with_axis(q, 1 if lay == "BNSD" else 2, kv_n)
                                     if lay != "BSH" else q, lay, kv_n, d),
                   "num_heads": kv_n, "num_key_value_heads": kv_n}
    for n in ("key", "value"):
        out[n] = with_axis(out[n], 2, kv_n * d)
    return out


def _mask_last_dim(draw: st.DrawFn, case: Case) -> Change:
    """A full mask covering the KV lengths but not what the table spans: maxBlockNumPerSeq *
    blockSize in prefill, the table's width * blockSize in decode."""
    view = case.view()
    top = max(view.act_kv)
    need = view.S2 if view.decode else view.max_blocks_per_seq * block_size(case)
    if not 0 < top < need:
        reject()
    return {"atten_mask": with_axis(case.params["atten_mask"], -1, draw(st.integers(top,
                                                                                     need - 1)))}


#: A ragged block_table, which no tensor can hold.
NOT_MATERIALISABLE = {"paged.block_table_rank"}

BREAKERS: dict[str, Breaker] = {
    "paged.block_table_rank": Breaker(_block_table_rank, {**PAGED, "branch": "decode"},
                                      alt=(FAMILY_BASE["mla"],
                                           {"layout": "TND", "rope": False, "paged": True},
                                           FAMILY_BASE["gqa_nz"])),
    "paged.block_size_max": Breaker(_block_size_max, {**PAGED, **NO_FULL_MASK,
                                                      "antiquant": "none"},
                                    alt=({"layout": "TND", "paged": True, "rope": False},
                                         {**PAGED, **NO_FULL_MASK, "antiquant": "separate:0/0",
                                          "cache": "BnBsH"},
                                         {**PAGED, **NO_FULL_MASK, "antiquant": "combined:0",
                                          "cache": "BnNBsD"},
                                         {**PAGED, "layout": "BSH", "sparse_mode": 3,
                                          "cache": "BnBsH", "pse": False})),
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
    "paged.cache_rank": Breaker(_cache_rank, PAGED_DENSE, alt=(
        PAGED, {**PAGED, "antiquant": "separate:0/0"}, {**FAMILY_BASE["packed"], "paged": True},
        FAMILY_BASE["gqa_nz"])),
    "paged.cache_layout_query": Breaker(_cache_layout_query, {"cache": "BnNBsD",
                                                              "layout": "BNSD",
                                                              "antiquant": "none",
                                                              "rope": False,
                                                              "post_quant": False}),
    # int8 KV with per-token scales too: their shape does not follow KV_N or D
    "paged.bsh_kvn_d_max": Breaker(_bsh_kvn_d_max, {**BSH_DECODE_SMALL, "antiquant": "none"},
                                   alt=({**BSH_DECODE_SMALL, "antiquant": "separate:1/1"},)),
    "paged.mask_last_dim": Breaker(_mask_last_dim, {**PAGED, "mask": "bool", "sparse_mode": 0,
                                                    "branch": "prefill"},
                                   alt=({**PAGED, "mask": "bool", "branch": "decode"},)),
    "paged.kv_lengths_required": searched(
        PAGED_DECODE,
        "drop:actual_seq_lengths_kv",
        alt=({"antiquant": "separate:4/4"}, FAMILY_BASE["gqa_nz"])),
    "paged.block_table_batch": searched(
        PAGED_DECODE,
        "table:extra_row",
        alt=({"pse": True, "branch": "decode"},
             {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
             {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"},
             FAMILY_BASE["gqa_nz"], FAMILY_BASE["mla"]),
        also=("table:drop_row",)),
    "paged.block_table_width": searched(
        {"cache": "BnNBsD", "antiquant": "none", "rope": False}, "table:narrow",
        alt=({"mask": "bool", "branch": "decode", "paged": True},
             {"layout": "NTD_TND", "paged": True},
             {"antiquant": "separate:1/1", "branch": "prefill", "paged": True},
             {"antiquant": "separate:0/0", "paged": True, "cache": "BnBsH"},
             FAMILY_BASE["mla"],
             # one column fewer only breaks a table without spare columns
             {**FAMILY_BASE["gqa_nz"], "block_table_size": "decode:exact"})),
    # packed layouts list their sizes (tnd.block_size), MLA and NZ caches theirs: not here
    "paged.block_size_positive": Breaker(_block_size_positive,
                                         {**PAGED, "cache": "BnNBsD", "layout": "BNSD"},
                                         alt=tuple({**PAGED, "cache": "BnBsH", "layout": lay}
                                                   for lay in ("BSH", "BSND", "BNSD"))),
    "paged.kv_shape_match": searched(
        PAGED_DECODE, "rank_up:value",
        alt=({"antiquant": "separate:4/4"},
             {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
             FAMILY_BASE["gqa_nz"]),
        also=("axis:value:0:+1", "axis:value:0:-1", "axis:value:-1:+16")),
    "paged.cache_block_size": searched(
        {"paged": True, "branch": "prefill", "mask": "none", "pse": False}, "pair_axis:key:1:+1",
        alt=({"sink": True, "paged": True},
             {"antiquant": "combined:1", "paged": True}, FAMILY_BASE["gqa_nz"]),
        also=("pair_axis:key:1:/8", "pair_axis:key:-2:/8", "pair_axis:key:-2:+1")),
    "paged.cache_heads": searched(
        PAGED_DECODE,
        "pair_axis:key:-1:=1",
        alt=({"antiquant": "separate:4/4"}, FAMILY_BASE["gqa_nz"],
             {"rope_d": "512", "cache": "NZ"}),
        also=("pair_axis:key:-1:x2",)),
    "paged.block_count": searched(
        {"cache": "BnNBsD", "antiquant": "none", "rope": False}, "pair_axis:key:0:=1",
        alt=({"antiquant": "combined:1", "paged": True},
             {**FAMILY_BASE["gqa_nz"], "actual_kv": "per_batch"},
             {"layout": "TND", "rope": False, "paged": True})),
    "paged.pse_last_dim": searched(
        {"cache": "BnNBsD", "antiquant": "none", "rope": False}, "axis:pse_shift:-1:=1",
        alt=({"antiquant": "separate:4/4"},)),
}

#: The sides of each bound rule's illegal range its breaker reaches (illegal.BOUNDS).
BOUNDS: dict[str, tuple[str, ...]] = {
    "paged.block_table_batch": ("shorter", "longer"),
    "paged.cache_block_size": ("below", "above"),
    "paged.cache_heads": ("below", "above"),
    "paged.cache_rank": ("shorter", "longer"),
    "paged.kv_shape_match": ("below", "above"),
}
