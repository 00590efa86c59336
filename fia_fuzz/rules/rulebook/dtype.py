"""Input dtypes and their combinations [V2 REG_OP, V4 参数说明, V4 int8量化场景]."""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T, bf, f32, i8

INT_KV = ("int8", "int4", "int32")


@rule("dtype.query", "query is float16, bfloat16 or int8",
      src("V4", "参数说明 query"))
def dtype_query(c: CallView) -> str | None:
    q = c.spec("query")
    if q is not None and q.dtype not in ("float16", "bfloat16", "int8"):
        return f"query.dtype={q.dtype!r}, expected float16, bfloat16 or int8"
    return None


@rule("dtype.kv_match", "key and value have the same dtype",
      src("V4", "参数说明 key/value"))
def dtype_kv_match(c: CallView) -> str | None:
    k, v = c.spec("key"), c.spec("value")
    if k is not None and v is not None and k.dtype != v.dtype:
        return f"key.dtype={k.dtype!r} != value.dtype={v.dtype!r}"
    return None


@rule("dtype.kv_float_match_query", "float key/value have the query's dtype",
      src("V4", "约束说明 (query/key/value 数据类型一致, 伪量化除外)"))
def dtype_kv_float_match_query(c: CallView) -> str | None:
    q, k = c.spec("query"), c.spec("key")
    if q is None or k is None or q.dtype not in ("float16", "bfloat16"):
        return None
    if k.dtype in ("float16", "bfloat16") and k.dtype != q.dtype:
        return f"key.dtype={k.dtype!r} differs from query.dtype={q.dtype!r}"
    return None


@rule("dtype.kv", "key/value are float16, bfloat16, int8, int4 or int32 (packed int4)",
      src("V4", "参数说明 key/value"))
def dtype_kv(c: CallView) -> str | None:
    k = c.spec("key")
    if k is not None and k.dtype not in ("float16", "bfloat16") + INT_KV:
        return f"key.dtype={k.dtype!r}, expected float16, bfloat16, int8, int4 or int32"
    return None


@rule("dtype.int8_query_kv", "an int8 query (full quantisation) needs int8 key/value",
      src("V4", "约束说明 int8量化场景 (输入INT8: query/key/value 类型为INT8)"))
def dtype_int8_query_kv(c: CallView) -> str | None:
    q, k = c.spec("query"), c.spec("key")
    if q is not None and k is not None and q.dtype == "int8" and k.dtype != "int8":
        return f"query.dtype='int8' needs int8 key/value, got key.dtype={k.dtype!r}"
    return None


@rule("dtype.all_int8_decode", "query, key and value all int8 is not supported when Q_S == 1",
      src("V4", "约束说明 当Q_S等于1时 (query、key、value输入类型均为INT8的场景暂不支持)"))
def dtype_all_int8_decode(c: CallView) -> str | None:
    q, k = c.need("query"), c.need("key")
    if q.dtype == "int8" and k.dtype == "int8" and c.decode and not c.rope:
        return f"query, key and value are all int8 with Q_S={c.S1}"
    return None


@rule("dtype.mask", "atten_mask is bool, int8 or uint8",
      src("V4", "参数说明 attenMaskOptional"))
def dtype_mask(c: CallView) -> str | None:
    m = c.spec("atten_mask")
    if m is not None and m.dtype not in ("bool", "int8", "uint8"):
        return f"atten_mask.dtype={m.dtype!r}, expected bool, int8 or uint8"
    return None


@rule("dtype.pse", "pse_shift is float16 for a float16/int8 query, bfloat16 for a bfloat16 query",
      src("V4", "约束说明 pseShift (数据类型约束)"))
def dtype_pse(c: CallView) -> str | None:
    p, q = c.spec("pse_shift"), c.spec("query")
    if p is None or q is None:
        return None
    want = "bfloat16" if q.dtype == "bfloat16" else "float16"
    if p.dtype != want:
        return f"pse_shift.dtype={p.dtype!r} with query.dtype={q.dtype!r}, expected {want!r}"
    return None


@rule("dtype.block_table", "block_table is int32",
      src("V4", "参数说明 blockTableOptional"))
def dtype_block_table(c: CallView) -> str | None:
    t = c.value_specs.get("block_table")
    if t is not None and t.dtype != "int32":
        return f"block_table.dtype={t.dtype!r}, expected 'int32'"
    return None


@rule("dtype.int64_values", "actual lengths, padding sizes and prefix length tensors are int64",
      src("V4", "参数说明 actualSeqLengths/queryPaddingSize/kvPaddingSize/actualSharedPrefixLen"))
def dtype_int64_values(c: CallView) -> str | None:
    bad = []
    for name in ("actual_seq_lengths", "actual_seq_lengths_kv", "query_padding_size",
                 "kv_padding_size", "actual_shared_prefix_len"):
        t = c.value_specs.get(name)
        if t is not None and t.dtype != "int64":
            bad.append(f"{name}.dtype={t.dtype!r}")
    return ", ".join(bad) + ", expected 'int64'" if bad else None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("dtype.query", "prefill", {"query": T(2, 8, 4, 64, dtype="float32")}),
    ("dtype.kv_match", "aq_combined", {"value": T(2, 16, 128, dtype="int4")}),
    ("dtype.kv_float_match_query", "prefill",
     {"key": bf(2, 2, 16, 64), "value": bf(2, 2, 16, 64)}),
    ("dtype.kv", "prefill", {"key": f32(2, 2, 16, 64), "value": f32(2, 2, 16, 64)}),
    ("dtype.int8_query_kv", "int8", {"key": T(1, 2, 16, 64), "value": T(1, 2, 16, 64)}),
    ("dtype.all_int8_decode", "int8", {"query": i8(1, 2, 1, 64), "quant_scale2": None,
                                       "quant_offset2": None}),
    ("dtype.mask", "masked", {"atten_mask": T(2, 1, 4, 16)}),
    ("dtype.pse", "masked", {"pse_shift": bf(1, 8, 4, 16)}),
    ("dtype.block_table", "paged_decode",
     {"block_table": np.array([[0, 1, 2, 3], [4, 5, 6, 7]], np.int64)}),
    ("dtype.int64_values", "padded", {"kv_padding_size": np.array([2], np.int32)}),
]
