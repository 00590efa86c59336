"""Full int8 quantisation and post-quantisation (int8 output)
[V4 约束说明 int8量化场景, V4 当Q_S大于1时 INT8量化场景, V2 int8量化相关入参, SEM §8]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import B, T, bf, f32

DEQUANT = ("dequant_scale1", "quant_scale1", "dequant_scale2")


@rule("quant.int8_query_needs_dequant", "an int8 query needs dequant_scale1, quant_scale1, d"
                                        "equant_scale2",
      src("V4", "int8量化场景 (输入INT8: deqScale1、quantScale1、deqScale2 需要同时存在)"))
def quant_int8_query_needs_dequant(c: CallView) -> str | None:
    if c.need("query").dtype != "int8" or c.rope:
        return None
    missing = [n for n in DEQUANT if not c.has(n)]
    return f"int8 query without {missing}" if missing else None


@rule("quant.float_query_forbids_dequant", "a float query takes no dequant_scale1/quant_scal"
                                           "e1/dequant_scale2",
      src("V4", "int8量化场景 (输入FLOAT16或BFLOAT16: 存在入参deqScale1/quantScale1/deqSca"
                "le2则报错)"))
def quant_float_query_forbids_dequant(c: CallView) -> str | None:
    q = c.need("query")
    given = [n for n in DEQUANT if c.has(n)]
    if q.dtype != "int8" and given:
        return f"{given} given with query {q.dtype}"
    return None


@rule("quant.dequant_dtype", "dequant_scale1/2 are uint64 or float32, quant_scale1 float32",
      src("V4", "参数说明 deqScale1/quantScale1/deqScale2"))
def quant_dequant_dtype(c: CallView) -> str | None:
    for n in DEQUANT:
        t = c.spec(n)
        want = ("float32",) if n == "quant_scale1" else ("uint64", "float32")
        if t is not None and t.dtype not in want:
            return f"{n}.dtype={t.dtype!r}, expected one of {list(want)}"
    return None


@rule("quant.dequant_per_tensor", "dequant_scale1, quant_scale1, dequant_scale2 are per-tens"
                                  "or (one value)",
      src("V4", "参数说明 deqScale1/quantScale1/deqScale2 (支持per-tensor)"))
def quant_dequant_per_tensor(c: CallView) -> str | None:
    for n in DEQUANT:
        t = c.spec(n)
        if t is not None and t.numel != 1:
            return f"{n}.shape={list(t.shape)} holds {t.numel} values, expected 1"
    return None


@rule("quant.offset2_needs_scale2", "quant_offset2 needs quant_scale2",
      src("V4", "int8量化场景 (输入INT8输出FLOAT16: 存在入参quantOffset2则报错; quantOffse"
                "t2 与 quantScale2 一致)"))
def quant_offset2_needs_scale2(c: CallView) -> str | None:
    if c.has("quant_offset2") and not c.has("quant_scale2"):
        return "quant_offset2 without quant_scale2"
    return None


@rule("quant.scale2_dtype", "quant_scale2 is float32 (or bfloat16 with a bfloat16 query)",
      src("V4", "int8量化场景 (当输入为BFLOAT16时，同时支持FLOAT32和BFLOAT16，否则仅支持FLOAT32)"))
def quant_scale2_dtype(c: CallView) -> str | None:
    t = c.spec("quant_scale2")
    if t is None:
        return None
    q = c.need("query")
    ok = ("float32", "bfloat16") if q.dtype == "bfloat16" else ("float32",)
    if t.dtype not in ok:
        return f"quant_scale2.dtype={t.dtype!r} with query {q.dtype}, expected one of {list(ok)}"
    return None


@rule("quant.scale2_shape", "quant_scale2 is per-tensor (one value) or per-channel (N*D values)",
      src("V4", "int8量化场景 (per-channel 格式：BSH 乘积等于H；其他layout要求乘积等于N*D)"))
def quant_scale2_shape(c: CallView) -> str | None:
    t = c.spec("quant_scale2")
    if t is None:
        return None
    h = c.N * c.Dv
    if t.numel not in (1, h):
        return f"quant_scale2.shape={list(t.shape)} holds {t.numel} values, expected 1 or " \
               f"N*D={c.N}*{c.Dv}={h}"
    return None


@rule("quant.offset2_matches", "quant_offset2 has quant_scale2's shape and dtype",
      src("V4", "int8量化场景 (若传入 quantOffset2 ，需保证其类型和shape信息与quantScale2 一致)"))
def quant_offset2_matches(c: CallView) -> str | None:
    o, s = c.spec("quant_offset2"), c.spec("quant_scale2")
    if o is not None and s is not None and (o.shape != s.shape or o.dtype != s.dtype):
        return f"quant_offset2={o} vs quant_scale2={s}"
    return None


def _per_channel(c: CallView) -> bool:
    t = c.spec("quant_scale2")
    return t is not None and t.numel > 1


@rule("quant.per_channel_no_left_padding", "per-channel post-quant is not supported with lef"
                                           "t padding",
      src("V4", "当Q_S大于1时 INT8量化场景 (per-channel 时，暂不支持左padding)"))
def quant_per_channel_no_left_padding(c: CallView) -> str | None:
    if _per_channel(c) and c.left_padding and not c.decode:
        return "per-channel quant_scale2 with query_padding_size/kv_padding_size"
    return None


@rule("quant.band_negative", "int8 output with sparse_mode 4 needs pre_tokens, next_tokens >= 0",
      src("V4", "当Q_S大于1时 INT8量化场景 (输出为int8时，暂不支持sparse为band且preTokens/"
                "nextTokens为负数)"))
def quant_band_negative(c: CallView) -> str | None:
    if c.decode or not c.has("quant_scale2") or c.attr_int("sparse_mode") != 4:
        return None
    pre, nxt = c.attr_int("pre_tokens"), c.attr_int("next_tokens")
    if pre < 0 or nxt < 0:
        return f"int8 output, sparse_mode=4, pre_tokens={pre}, next_tokens={nxt}"
    return None


@rule("quant.rows_not_computed",
      "int8 output with quant_offset2 is rejected when some rows cannot be computed",
      src("V4", "当Q_S大于1时 INT8量化场景 sparseMode (矩阵会存在某几行不参与计算的情况 .."
                ". 该场景会拦截)"))
def quant_rows_not_computed(c: CallView) -> str | None:
    if c.decode or not c.has("quant_scale2") or not c.has("quant_offset2"):
        return None
    mode = c.attr_int("sparse_mode")
    pre, nxt = c.attr_int("pre_tokens"), c.attr_int("next_tokens")
    p = c.prefix_len
    pairs = list(zip(c.act_q, c.act_kv, strict=False))
    if mode == 0 and c.has("atten_mask"):
        bad = [(b, q, kv) for b, (q, kv) in enumerate(pairs) if q - kv - p - pre > 0]
        parts = [f"(batch, act_q, act_kv) {bad[:4]} have act_q - act_kv - prefix({p}) - "
                 f"pre_tokens({pre}) > 0"] if bad else []
        parts += [f"next_tokens={nxt} < 0"] if nxt < 0 else []
        if parts:
            return "int8 output, sparse_mode=0 with mask: " + "; ".join(parts)
    elif mode == 3:
        bad = [(b, q, kv) for b, (q, kv) in enumerate(pairs) if kv + p - q < 0]
        if bad:
            return f"int8 output, sparse_mode=3: (batch, act_q, act_kv) {bad[:4]} have " \
                   f"act_kv + prefix({p}) - act_q < 0"
    elif mode == 4:
        bad = [(b, q, kv) for b, (q, kv) in enumerate(pairs) if nxt + kv + p - q < 0]
        parts = [f"pre_tokens={pre} < 0"] if pre < 0 else []
        parts += [f"(batch, act_q, act_kv) {bad[:4]} have next_tokens({nxt}) + act_kv + "
                  f"prefix({p}) - act_q < 0"] if bad else []
        if parts:
            return "int8 output, sparse_mode=4: " + "; ".join(parts)
    return None


@rule("quant.int4_no_post", "int4 key/value do not support post-quant (quant_scale2)",
      src("V2", "当Q_S等于1时 (INT4（INT32）伪量化场景不支持后量化)"))
def quant_int4_no_post(c: CallView) -> str | None:
    k = c.need("key")
    if k.dtype in ("int4", "int32") and c.has("quant_scale2"):
        return f"quant_scale2 with key/value {k.dtype}"
    return None


@rule("quant.dequant_scale_query", "dequant_scale_query is float32, for an int8 query, with "
                                   "query_quant_mode 3",
      src("V4", "参数说明 dequantScaleQueryOptional (FLOAT32, 全量化场景); queryQuantMode "
                "(当前版本仅支持传入3)"))
def quant_dequant_scale_query(c: CallView) -> str | None:
    t = c.spec("dequant_scale_query")
    if t is None:
        return None
    q = c.need("query")
    mode = c.attr_int("query_quant_mode")
    if t.dtype != "float32" or q.dtype != "int8" or mode != 3:
        return f"dequant_scale_query={t} with query {q.dtype}, query_quant_mode={mode}"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("quant.int8_query_needs_dequant", "int8", {"quant_scale1": None}),
    ("quant.float_query_forbids_dequant", "post_quant", {"dequant_scale1": f32(1)}),
    ("quant.dequant_dtype", "int8", {"quant_scale1": T(1, dtype="uint64")}),
    ("quant.dequant_per_tensor", "int8", {"dequant_scale2": f32(2)}),
    ("quant.offset2_needs_scale2", "int8", {"quant_scale2": None}),
    ("quant.scale2_dtype", "post_quant", {"quant_scale2": bf(1, 2, 1, 64),
                                          "quant_offset2": bf(1, 2, 1, 64)}),
    ("quant.scale2_shape", "post_quant", {"quant_scale2": f32(1, 2, 1, 32),
                                          "quant_offset2": f32(1, 2, 1, 32)}),
    ("quant.offset2_matches", "post_quant", {"quant_offset2": f32(2, 64)}),
    ("quant.per_channel_no_left_padding", "post_quant",
     {"actual_seq_lengths_kv": [10], "kv_padding_size": [0]}),
    ("quant.band_negative", "post_quant",
     {"quant_offset2": None, "sparse_mode": 4, "atten_mask": B(2048, 2048),
      "pre_tokens": -1, "next_tokens": 100}),
    ("quant.rows_not_computed", "post_quant", {"sparse_mode": 3, "atten_mask": B(2048, 2048),
                                               "actual_seq_lengths_kv": [2]}),
    ("quant.rows_not_computed", "post_quant", {"next_tokens": -1}),
    ("quant.rows_not_computed", "post_quant", {"actual_seq_lengths_kv": [1], "pre_tokens": 1}),
    ("quant.rows_not_computed", "post_quant",
     {"sparse_mode": 4, "atten_mask": B(2048, 2048), "pre_tokens": 10, "next_tokens": 0,
      "actual_seq_lengths_kv": [2]}),
    ("quant.int4_no_post", "int4", {"quant_scale2": f32(1)}),
    ("quant.dequant_scale_query", "int8", {"dequant_scale_query": f32(1, 2, 4)}),
]
