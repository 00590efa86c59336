"""MLA: the query D = 512 configuration with rope [V4 MLA场景, SEM §9]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import B, T, bf, f32, i8
from fia_fuzz.rules.rulebook.lengths import ordered
from fia_fuzz.rules.rulebook.mask import OPTIMIZED_SHAPES
from fia_fuzz.rules.rulebook.rope import rope_on

MLA_HEADS = (1, 2, 4, 8, 16, 32, 64, 128)
MLA_TND_HEADS = (32, 64, 128)
MLA_LAYOUTS = ("BSH", "BSND", "BNSD", "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD", "TND", "TND_NTD")


def _mla(c: CallView) -> bool:
    return rope_on(c) and c.D == 512


@rule("mla.kv_heads_1", "MLA D=512 needs num_key_value_heads 1",
      src("V4", "MLA场景 query d=512 (key K_N=1)"))
def mla_kv_heads_1(c: CallView) -> str | None:
    return f"MLA D=512 with KV_N={c.KV_N}" if _mla(c) and c.KV_N != 1 else None


@rule("mla.num_heads", "MLA D=512: num_heads in 1,2,4,...,128 (TND: 32, 64, 128)",
      src("V4", "MLA场景 query d=512 (Q_N=[1,2,4,8,16,32,64,128]); TND 综合限制 d=512 (32"
                "、64、128)"))
def mla_num_heads(c: CallView) -> str | None:
    if not _mla(c):
        return None
    ok = MLA_TND_HEADS if c.packed else MLA_HEADS
    return f"MLA D=512 with num_heads={c.N}, expected one of {list(ok)}" if c.N not in ok else None


@rule("mla.q_seq", "MLA D=512: query S (per batch for TND) is 1..16",
      src("V4", "MLA场景 query d=512 (Q_S [1,16]); TND d=512 (支持query每个batch的s为1-16)"))
def mla_q_seq(c: CallView) -> str | None:
    if not _mla(c):
        return None
    lens = ordered(c.act_q, "actual_seq_lengths") if c.packed else [c.S1]
    bad = [s for s in lens if not 1 <= s <= 16]
    return f"MLA D=512 with query lengths {bad[:4]} outside 1..16" if bad else None


@rule("mla.layout", "MLA D=512 layouts; 5-D caches not with BNSD/BNSD_NBSD",
      src("V4", "MLA场景 query d=512 inputLayout (其中key/value shape为五维时，不支持BNSD"
                "、BNSD_NBSD)"))
def mla_layout(c: CallView) -> str | None:
    if not _mla(c):
        return None
    lay = c.attrs["input_layout"]
    if lay not in MLA_LAYOUTS:
        return f"MLA D=512 with input_layout={lay!r}, expected one of {list(MLA_LAYOUTS)}"
    if c.nz and lay in ("BNSD", "BNSD_NBSD"):
        return f"MLA D=512 5-D key/value cache with input_layout={lay!r}"
    return None


@rule("mla.sparse", "MLA D=512 masks: Q_S=1 sparse 0 without mask or 4 with mask; "
      "Q_S>1 sparse 3 or 4 with the 2048 mask",
      src("V4", "MLA场景 query d=512 MASK sparseMode"))
def mla_sparse(c: CallView) -> str | None:
    if not _mla(c):
        return None
    mode, has = c.attr_int("sparse_mode"), c.has("atten_mask")
    if c.decode:
        ok = (mode == 0 and not has) or (mode == 4 and has)
    else:
        ok = mode in (3, 4) and has
    if not ok:
        return f"MLA D=512 with Q_S={c.S1}, sparse_mode={mode}, atten_mask " \
               f"{'given' if has else 'absent'}"
    m = c.spec("atten_mask")
    if m is not None and m.shape not in OPTIMIZED_SHAPES:
        return f"MLA D=512 atten_mask.shape={list(m.shape)} is not the 2048x2048 mask"
    return None


@rule("mla.actual_seq_lengths", "MLA D=512: actual_seq_lengths only with TND and Q_S > 1",
      src("V4", "MLA场景 query d=512 (actualSeqLengths 仅TND且Q_S>1时支持配置)"))
def mla_actual_seq_lengths(c: CallView) -> str | None:
    if _mla(c) and not c.packed and c.has("actual_seq_lengths"):
        return f"MLA D=512 with actual_seq_lengths and input_layout={c.attrs['input_layout']!r}"
    return None


@rule("mla.paged_required", "MLA D=512 (any layout, TND included) needs paged attention",
      src("V4", "MLA场景 query d=512 PagedAttention (PagedAttention必须开启); "
                "TND 综合限制 d等于512 (PagedAttention(必须开启))"))
def mla_paged_required(c: CallView) -> str | None:
    return "MLA D=512 without block_table" if _mla(c) and not c.paged else None


@rule("mla.block_size_128", "MLA D=512 needs block_size 128",
      src("V4", "MLA场景 query d=512 PagedAttention blockSize (128)"))
def mla_block_size_128(c: CallView) -> str | None:
    bs = c.attr_int("block_size")
    if _mla(c) and c.paged and bs != 128:
        return f"MLA D=512 with block_size={bs}, expected 128"
    return None


@rule("mla.full_quant_nz", "MLA full quant (int8 query) needs int8 5-D NZ caches",
      src("V4", "MLA场景 全量化 (key/value INT8，仅支持shape为五维)"))
def mla_full_quant_nz(c: CallView) -> str | None:
    if _mla(c) and c.need("query").dtype == "int8" and c.paged and not c.nz:
        return f"MLA int8 query with a {c.cache_layout} cache, expected 5-D NZ"
    return None


#: The three dequant scales of MLA full quant (v2 names dequant_scale_query/key/value).
FULL_QUANT_SCALES = ("dequant_scale_query", "key_antiquant_scale", "value_antiquant_scale")
#: Inputs the MLA full-quant path rejects (antiquant_scale/offset: see mla.no_extras).
FULL_QUANT_FORBIDDEN = ("key_antiquant_offset", "value_antiquant_offset", "dequant_scale1",
                        "quant_scale1", "dequant_scale2", "quant_offset2")


@rule("mla.full_quant_scales", "MLA full quant: float32 dequant_scale_query and per-tensor (1,) "
      "float32 key/value_antiquant_scale in mode 0; no offsets, no int8-flow scales",
      src("TNPU", "约束说明 query d=512 全量化 (dequant_scale_query、dequant_scale_key、"
                  "dequant_scale_value需要同时存在，且其数据类型仅支持FP32; 不支持传入"
                  "quant_scale_out、quant_offset_out、dequant_offset_key、dequant_offset_value; "
                  "key_quant_mode和value_quant_mode仅支持per-tensor模式)"))
def mla_full_quant_scales(c: CallView) -> str | None:
    if not c.mla_full_quant:
        return None
    missing = [n for n in FULL_QUANT_SCALES if not c.has(n)]
    if missing:
        return f"MLA int8 query without {missing}"
    bad = [f"{n}={c.spec(n)}" for n in FULL_QUANT_SCALES if c.need(n).dtype != "float32"]
    bad += [f"{n}.shape={list(c.need(n).shape)}" for n in FULL_QUANT_SCALES[1:]
            if tuple(c.need(n).shape) != (1,)]
    modes = (c.attr_int("key_antiquant_mode"), c.attr_int("value_antiquant_mode"))
    bad += [f"(key, value)_antiquant_mode={modes}"] if modes != (0, 0) else []
    bad += [f"{n} given" for n in FULL_QUANT_FORBIDDEN if c.has(n)]
    return f"MLA full quant with {bad}; expected float32 scales, K/V per-tensor (1,), " \
           "modes (0, 0)" if bad else None


@rule("mla.dequant_scale_query_shape", "MLA full quant: dequant_scale_query is (T, N, 1) for TND, "
      "(B*S1, N, 1) otherwise (one scale per token and head)",
      src("TNPU", "npu_mla_prolog dequant_scale_q_nope (全量化kv_cache量化场景下，"
                  "其shape为(T, N, 1)和(B*S, N, 1)); npu_fused_infer_attention_score_v2 "
                  "dequant_scale_query (仅支持per-token叠加per-head)"))
def mla_dequant_scale_query_shape(c: CallView) -> str | None:
    t = c.spec("dequant_scale_query")
    if t is None or not c.mla_full_quant:
        return None
    tokens = sum(c.act_q) if c.packed else c.B * c.S1
    want = (tokens, c.N, 1)
    if tuple(t.shape) != want:
        return f"dequant_scale_query.shape={list(t.shape)}, expected {list(want)}"
    return None


@rule("mla.no_extras", "MLA D=512: no softmax_lse, left padding, tensor list, pse, prefix, "
      "antiquant or post-quant",
      src("V4", "MLA场景 query d=512 (不支持开启SoftMaxLse、左padding、tensorlist、pse、pr"
                "efix、伪量化、后量化)"))
def mla_no_extras(c: CallView) -> str | None:
    if not _mla(c):
        return None
    bad = [n for n, on in (
        ("softmax_lse_flag", bool(c.attrs["softmax_lse_flag"])),
        ("left padding", c.left_padding), ("tensor list", c.is_kv_list),
        ("pse_shift", c.has("pse_shift")), ("shared prefix", c.has("key_shared_prefix")),
        ("antiquant", c.separate_antiquant or c.combined_antiquant),
        ("quant_scale2", c.has("quant_scale2"))) if on]
    return f"MLA D=512 with {bad}" if bad else None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("mla.kv_heads_1", "mla", {"num_key_value_heads": 2, "key": bf(4, 128, 1024),
                               "value": bf(4, 128, 1024), "key_rope": bf(4, 128, 128)}),
    ("mla.num_heads", "mla", {"query": bf(2, 1, 6, 512), "query_rope": bf(2, 1, 6, 64),
                              "num_heads": 6}),
    ("mla.q_seq", "mla_nz", {"query": T(1, 20, 8, 512), "query_rope": T(1, 20, 8, 64),
                             "input_layout": "BSND"}),
    ("mla.layout", "mla_nz", {"input_layout": "BNSD_NBSD", "query": T(1, 8, 4, 512),
                              "query_rope": T(1, 8, 4, 64)}),
    ("mla.sparse", "mla", {"sparse_mode": 3, "atten_mask": B(2048, 2048)}),
    ("mla.actual_seq_lengths", "mla", {"actual_seq_lengths": [1, 1]}),
    ("mla.paged_required", "mla",
     {"block_table": None, "block_size": 0, "actual_seq_lengths_kv": None,
      "key": bf(2, 256, 1, 512), "value": bf(2, 256, 1, 512), "key_rope": bf(2, 256, 1, 64)}),
    ("mla.block_size_128", "mla", {"block_size": 256, "key": bf(4, 256, 512),
                                   "value": bf(4, 256, 512), "key_rope": bf(4, 256, 64)}),
    ("mla.full_quant_nz", "mla",
     {"query": i8(2, 1, 8, 512), "key": i8(4, 128, 512), "value": i8(4, 128, 512),
      "dequant_scale_query": f32(2, 8, 1), "query_quant_mode": 3,
      "key_antiquant_scale": f32(1), "value_antiquant_scale": f32(1)}),
    ("mla.no_extras", "mla", {"softmax_lse_flag": True}),
    ("mla.full_quant_scales", "mla_int8", {"value_antiquant_scale": None}),
    ("mla.full_quant_scales", "mla_int8", {"key_antiquant_scale": f32(512),
                                           "value_antiquant_scale": f32(512)}),
    ("mla.full_quant_scales", "mla_int8", {"key_antiquant_offset": f32(1),
                                           "value_antiquant_offset": f32(1)}),
    ("mla.dequant_scale_query_shape", "mla_int8", {"dequant_scale_query": f32(2, 8)}),
]
