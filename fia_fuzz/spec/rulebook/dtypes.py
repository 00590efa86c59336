"""Input dtypes and their combinations [V2 REG_OP, V4 参数说明]."""

from __future__ import annotations

from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.rules import rule, src


@rule("dtype.query", "query is float16, bfloat16 or int8",
      src("V4", "参数说明 query"))
def _query(c: CallView) -> str | None:
    q = c.spec("query")
    if q is not None and q.dtype not in ("float16", "bfloat16", "int8"):
        return f"query.dtype={q.dtype!r}, expected float16, bfloat16 or int8"
    return None


@rule("dtype.kv_match", "key and value have the same dtype",
      src("V4", "参数说明 key/value"))
def _kv_match(c: CallView) -> str | None:
    k, v = c.spec("key"), c.spec("value")
    if k is not None and v is not None and k.dtype != v.dtype:
        return f"key.dtype={k.dtype!r} != value.dtype={v.dtype!r}"
    return None


@rule("dtype.kv_float_match_query", "float key/value have the query's dtype",
      src("V4", "约束说明 (query/key/value 数据类型一致, 伪量化除外)"))
def _kv_float(c: CallView) -> str | None:
    q, k = c.spec("query"), c.spec("key")
    if q is None or k is None:
        return None
    if k.dtype in ("float16", "bfloat16") and k.dtype != q.dtype:
        return f"key.dtype={k.dtype!r} differs from query.dtype={q.dtype!r}"
    return None


@rule("dtype.kv", "key/value are float16, bfloat16, int8, int4 or int32 (packed int4)",
      src("V4", "参数说明 key/value"))
def _kv(c: CallView) -> str | None:
    k = c.spec("key")
    if k is not None and k.dtype not in ("float16", "bfloat16", "int8", "int4", "int32"):
        return f"key.dtype={k.dtype!r}, expected float16, bfloat16, int8, int4 or int32"
    return None
