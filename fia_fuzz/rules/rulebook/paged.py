"""Paged attention: block_table, block_size and the KV cache forms
[V4 约束说明 PagedAttention, V4 当Q_S大于1时/等于1时 PagedAttention场景, V2, SEM §2]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import B, T, f32, i8
from fia_fuzz.rules.rulebook.mask import full_mask_mode

BLOCK_SIZE_MAX = 512
BSH_CACHE_MAX_H = 65535


@rule("paged.kv_lengths_required", "paged attention needs actual_seq_lengths_kv",
      src("V4", "约束说明 PagedAttention (必须传入actualSeqLengthsKv)"))
def paged_kv_lengths_required(c: CallView) -> str | None:
    if c.paged and not c.has("actual_seq_lengths_kv"):
        return "block_table given without actual_seq_lengths_kv"
    return None


@rule("paged.block_table_rank", "block_table is 2-D",
      src("V4", "约束说明 PagedAttention (blockTable必须为二维)"))
def paged_block_table_rank(c: CallView) -> str | None:
    if not c.paged:
        return None
    t = c.value_specs.get("block_table")
    if t is not None and t.ndim != 2:
        return f"block_table.shape={list(t.shape)} is not 2-D"
    rows = c.block_rows
    if t is None and (rows is None or len({len(r) for r in rows}) > 1):
        return "block_table is not a 2-D table (rows of equal length)"
    return None


def _bt_shape(c: CallView) -> tuple[int, int] | None:
    return c.block_table_shape if c.paged else None


@rule("paged.block_table_batch", "block_table's first dim equals B",
      src("V4", "约束说明 PagedAttention (第一维长度需等于B)"))
def paged_block_table_batch(c: CallView) -> str | None:
    shape = _bt_shape(c) if c.paged else None
    if shape is not None and shape[0] != c.B:
        return f"block_table.shape={list(shape)}: first dim != B={c.B}"
    return None


@rule("paged.block_table_width", "block_table's second dim is >= maxBlockNumPerSeq",
      src("V4", "约束说明 PagedAttention (第二维长度不能小于maxBlockNumPerSeq)"))
def paged_block_table_width(c: CallView) -> str | None:
    shape = _bt_shape(c) if c.paged else None
    if shape is not None and shape[1] < c.max_blocks_per_seq:
        return (f"block_table has {shape[1]} columns < maxBlockNumPerSeq="
                f"ceil(max(actual_seq_lengths_kv)={max(c.act_kv)}/block_size="
                f"{c.attr_int('block_size')})={c.max_blocks_per_seq}")
    return None


@rule("paged.block_size_positive", "paged attention needs block_size > 0",
      src("V4", "约束说明 PagedAttention (blockSize需要传入非0值)"))
def paged_block_size_positive(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    if c.paged and bs <= 0:
        return f"block_size={bs} with block_table"
    return None


@rule("paged.block_size_max", "block_size is at most 512",
      src("V4", "约束说明 PagedAttention (blocksize最大不超过512)"))
def paged_block_size_max(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    if c.paged and bs > BLOCK_SIZE_MAX:
        return f"block_size={bs} > {BLOCK_SIZE_MAX}"
    return None


@rule("paged.block_size_align", "block_size is a multiple of 16 (float16/bfloat16 KV) or 32 (int8)",
      src("V4", "当Q_S等于1时 PagedAttention场景 blockSize (16对齐 / INT8 32对齐)"))
def paged_block_size_align(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    if not c.paged or bs <= 0:
        return None
    k = c.need("key")
    align = 32 if k.dtype == "int8" else 16
    if bs % align:
        return f"block_size={bs} is not a multiple of {align} for {k.dtype} key/value"
    return None


@rule("paged.block_size_prefill", "prefill paged attention: block_size is 128..512, multip"
                                  "le of 128",
      src("V2", "当Q_S大于1时 page attention场景 (blockSize最小为128, 最大为512，且要求是1"
                "28的倍数)"))
def paged_block_size_prefill(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    if not c.paged or c.decode or bs <= 0 or bs > BLOCK_SIZE_MAX:
        return None
    if bs % 128:
        return f"block_size={bs} with Q_S={c.S1} is not a multiple of 128"
    return None


@rule("paged.kv_dtype", "paged key/value caches are float16, bfloat16 or int8",
      src("V4", "约束说明 PagedAttention 通用场景 (支持key、value dtype为FLOAT16/BFLOAT16/INT8)"))
def paged_kv_dtype(c: CallView) -> str | None:
    k = c.need("key")
    if c.paged and k.dtype not in ("float16", "bfloat16", "int8"):
        return f"key.dtype={k.dtype!r} with block_table"
    return None


@rule("paged.int8_query", "paged attention does not take an int8 query (except MLA full quant)",
      src("V4", "当Q_S大于1时 PagedAttention (全量化场景：不支持query dtype为INT8); MLA 全量化"))
def paged_int8_query(c: CallView) -> str | None:
    if c.paged and c.need("query").dtype == "int8" and not c.rope:
        return "int8 query with block_table outside MLA full quantisation"
    return None


@rule("paged.cache_rank", "paged key/value are 3-D (BnBsH), 4-D (BnNBsD) or 5-D (NZ)",
      src("V4", "约束说明 PagedAttention 通用场景; MLA场景 (shape为五维)"))
def paged_cache_rank(c: CallView) -> str | None:
    if not c.paged:
        return None
    for name in ("key", "value"):
        t = c.need(name)
        if t.ndim not in (3, 4, 5):
            return f"{name}.shape={list(t.shape)} with block_table: expected rank 3, 4 or 5"
    return None


@rule("paged.cache_layout_query", "the BnNBsD cache needs a BNSD or TND query; BSH/BSND take BnBsH",
      src("V4", "约束说明 PagedAttention (query为BNSD、TND时支持BnBsH和BnNBsD; BSH、BSND时"
                "仅支持BnBsH)"))
def paged_cache_layout_query(c: CallView) -> str | None:
    if c.paged and c.cache_layout == "BnNBsD" and c.in_layout not in ("BNSD", "TND"):
        return f"4-D BnNBsD key/value cache with input_layout={c.attrs['input_layout']!r}"
    return None


@rule("paged.kv_shape_match", "paged key and value caches have the same shape",
      src("V4", "约束说明 PagedAttention (key和value的shape需保证一致)"))
def paged_kv_shape_match(c: CallView) -> str | None:
    if not c.paged:
        return None
    k, v = c.need("key"), c.need("value")
    if k.shape != v.shape:
        return f"key.shape={list(k.shape)} != value.shape={list(v.shape)}"
    return None


@rule("paged.cache_block_size", "the cache's block axis equals block_size",
      src("V4", "约束说明 PagedAttention (blocknum, blocksize, H)/(blocknum, KV_N, blocksize, D)"))
def paged_cache_block_size(c: CallView) -> str | None:
    if not c.paged:
        return None
    d = c.cache_dims("key")
    bs = c.attr_int("block_size")
    if bs > 0 and d["bs"] != bs:
        return f"key cache shape={list(c.need('key').shape)} has block axis {d['bs']} != " \
               f"block_size={bs}"
    return None


@rule("paged.cache_heads", "the cache holds KV_N heads of the query's D (NZ: last axis 16,"
                           " int8 32)",
      src("V4", "约束说明 PagedAttention; MLA场景 ([blockNum, N, D/16, blockSize, 16])"))
def paged_cache_heads(c: CallView) -> str | None:
    if not c.paged:
        return None
    k = c.need("key")
    try:
        d = c.cache_dims("key")
    except Undetermined:
        if c.cache_layout == "BnBsH":
            return f"key cache H={k.shape[2]} is not a multiple of KV_N={c.KV_N}"
        raise
    if d["N"] != c.KV_N or d["D"] != c.D:
        return f"key cache shape={list(k.shape)} ({c.cache_layout}) has N={d['N']}, " \
               f"D={d['D']}; expected KV_N={c.KV_N}, D={c.D}"
    if c.cache_layout == "NZ":
        want = 32 if k.dtype == "int8" else 16
        if d["d0"] != want:
            return f"NZ key cache shape={list(k.shape)}: last axis {d['d0']}, expected {want}"
    return None


@rule("paged.block_count", "the cache has at least sum(ceil(actual_seq_lengths_kv/block_size"
                           ")) blocks",
      src("V4", "约束说明 PagedAttention (blocknum不能小于...每个batch的block数量之和)"))
def paged_block_count(c: CallView) -> str | None:
    if not c.paged:
        return None
    bs = c.attr_int("block_size")
    if bs <= 0:
        return None
    need = sum(-(-max(a, 0) // bs) for a in c.act_kv)
    have = c.cache_dims("key")["blocks"]
    if have < need:
        return f"key cache has {have} blocks, actual_seq_lengths_kv {c.act_kv[:8]} with " \
               f"block_size={bs} need {need}"
    return None


@rule("paged.bsh_kvn_d_max", "a BnBsH cache needs KV_N * D <= 65535",
      src("V4", "约束说明 PagedAttention (BnBsH 且 KV_N * D 超过65535时 ... 拦截报错)"))
def paged_bsh_kvn_d_max(c: CallView) -> str | None:
    if c.paged and c.cache_layout == "BnBsH" and c.KV_N * c.D > BSH_CACHE_MAX_H:
        return f"KV_N*D = {c.KV_N}*{c.D} = {c.KV_N * c.D} > {BSH_CACHE_MAX_H} with a BnBsH cache"
    return None


def _min_last_dim(c: CallView) -> int:
    """Prefill: maxBlockNumPerSeq*blockSize; decode: blockTable.shape[1]*blockSize [V4]."""
    if c.decode:
        return c.S2
    return c.max_blocks_per_seq * c.attr_int("block_size")


@rule("paged.mask_last_dim", "paged: a full atten_mask's last dim covers the block table",
      src("V4", "当Q_S大于1时 PagedAttention (Mask的最后一维需要大于等于maxBlockNumPerSeq "
                "* blockSize); "
                "当Q_S等于1时 (大于等于blockTable的第二维 * blockSize)"))
def paged_mask_last_dim(c: CallView) -> str | None:
    m = c.spec("atten_mask")
    if m is None or not c.paged or m.ndim < 1:
        return None
    if not full_mask_mode(c):
        return None
    need = _min_last_dim(c)
    if m.shape[-1] < need:
        return f"atten_mask.shape={list(m.shape)}: last dim {m.shape[-1]} < {need}"
    return None


@rule("paged.pse_last_dim", "paged: pse_shift's last dim covers the block table",
      src("V4", "当Q_S大于1时 PagedAttention (pseShift的最后一维需要大于等于maxBlockNumPer"
                "Seq * blockSize)"))
def paged_pse_last_dim(c: CallView) -> str | None:
    p = c.spec("pse_shift")
    if p is None or not c.paged or p.ndim < 1:
        return None
    need = _min_last_dim(c)
    if p.shape[-1] < need:
        return f"pse_shift.shape={list(p.shape)}: last dim {p.shape[-1]} < {need}"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("paged.kv_lengths_required", "paged_decode", {"actual_seq_lengths_kv": None}),
    ("paged.block_table_rank", "paged_decode", {"block_table": [0, 1, 2, 3]}),
    ("paged.block_table_rank", "paged_decode", {"block_table": [[0, 1, 2, 3], [4, 5, 6, 7, -1]]}),
    ("paged.block_table_batch", "paged_decode", {"block_table": [[0, 1, 2, 3]] * 3}),
    ("paged.block_table_width", "paged_decode", {"block_table": [[0, 1, 2], [4, 5, 6]],
                                                 "actual_seq_lengths_kv": [40, 64]}),
    ("paged.block_size_positive", "paged_decode", {"block_size": 0}),
    ("paged.block_size_max", "paged_decode", {"block_size": 1024, "key": T(8, 1024, 128),
                                              "value": T(8, 1024, 128)}),
    ("paged.block_size_align", "paged_decode", {"block_size": 24, "key": T(8, 24, 128),
                                                "value": T(8, 24, 128)}),
    ("paged.block_size_prefill", "paged_prefill",
     {"block_size": 64, "key": T(4, 2, 64, 64), "value": T(4, 2, 64, 64),
      "block_table": [[0, 1, 2, 3]]}),
    ("paged.kv_dtype", "paged_decode", {"key": T(8, 16, 128, dtype="int4"),
                                        "value": T(8, 16, 128, dtype="int4"),
                                        "key_antiquant_scale": T(1, 2, 64),
                                        "value_antiquant_scale": T(1, 2, 64)}),
    ("paged.int8_query", "paged_prefill",
     {"query": i8(1, 8, 4, 64), "key": i8(2, 2, 128, 64), "value": i8(2, 2, 128, 64),
      "dequant_scale1": f32(1), "quant_scale1": f32(1), "dequant_scale2": f32(1),
      "pse_shift": None}),
    ("paged.cache_rank", "paged_decode", {"key": T(8, 16, 2, 1, 64, 1),
                                          "value": T(8, 16, 2, 1, 64, 1)}),
    ("paged.cache_layout_query", "paged_decode",
     {"query": T(2, 1, 8, 64), "input_layout": "BSND", "key": T(8, 2, 16, 64),
      "value": T(8, 2, 16, 64)}),
    ("paged.kv_shape_match", "paged_decode", {"value": T(9, 16, 128)}),
    ("paged.cache_block_size", "paged_decode", {"key": T(8, 32, 128), "value": T(8, 32, 128)}),
    ("paged.cache_heads", "paged_prefill", {"key": T(2, 4, 128, 64), "value": T(2, 4, 128, 64)}),
    ("paged.cache_heads", "paged_decode", {"key": T(8, 16, 130), "value": T(8, 16, 130)}),
    ("paged.block_count", "paged_decode", {"key": T(6, 16, 128), "value": T(6, 16, 128)}),
    ("paged.bsh_kvn_d_max", "paged_decode",
     {"query": T(2, 256, 1, 256), "num_heads": 256, "num_key_value_heads": 256,
      "key": T(8, 16, 65536), "value": T(8, 16, 65536)}),
    ("paged.mask_last_dim", "paged_prefill", {"atten_mask": B(1, 1, 4, 200)}),
    ("paged.pse_last_dim", "paged_prefill", {"pse_shift": T(1, 8, 4, 200)}),
]
