"""Left padding: query_padding_size / kv_padding_size
[V4 参数说明 queryPaddingSize/kvPaddingSize, V4 当Q_S大于1时 query/kv左padding场景, SEM §3].

Padding without the matching actual lengths (or query padding with Q_S == 1)
is documented as ignored, not as an error, so it is legal here.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src

NAMES = ("query_padding_size", "kv_padding_size")


@rule("padding.shape", "padding sizes hold 1 or B values",
      src("V4", "参数说明 queryPaddingSize/kvPaddingSize ((B)); SEM §3 ((B) or (1))"))
def padding_shape(c: CallView) -> str | None:
    bad = []
    for n in NAMES:
        t = c.value_specs.get(n)
        a = c.values.get(n)
        count = len(a) if a is not None else (t.numel if t is not None else None)
        if t is not None and t.ndim > 1:
            bad.append(f"{n}.shape={list(t.shape)} is not 1-D")
        elif count is not None and count not in (1, c.B):
            bad.append(f"{n} has {count} values, expected 1 or B={c.B}")
    return "; ".join(bad) or None


@rule("padding.not_paged", "left padding is not supported with paged attention",
      src("V4", "约束说明 PagedAttention (不支持左padding场景); query/kv左padding场景"))
def padding_not_paged(c: CallView) -> str | None:
    if c.paged and c.left_padding:
        given = [n for n in NAMES if c.has(n)]
        return f"{given} given together with block_table"
    return None


@rule("padding.not_int4_kv", "left padding is not supported with a float query and int4 key/value",
      src("V4", "参数说明 kvPaddingSize; 当Q_S大于1时 query左padding场景 (不支持Q为BF16/FP"
                "16、KV为INT4)"))
def padding_not_int4_kv(c: CallView) -> str | None:
    q, k = c.need("query"), c.need("key")
    if c.left_padding and q.dtype in ("float16", "bfloat16") and k.dtype in ("int4", "int32"):
        return f"left padding with query {q.dtype} and key/value {k.dtype}"
    return None


def _pads(c: CallView, name: str) -> list[int] | None:
    a = c.ints(name)
    if not a:
        return None
    return [max(x, 0) for x in (a * c.B if len(a) == 1 else a[: c.B])]


@rule("padding.q_window", "prefill query left padding: Q_S - pad - actual >= 0 for every batch",
      src("V4", "参数说明 queryPaddingSize (搬运起点不能小于0 ... 否则结果将不符合预期)"))
def padding_q_window(c: CallView) -> str | None:
    pads = _pads(c, "query_padding_size")
    if pads is None or c.decode or c.packed or not c.has("actual_seq_lengths"):
        return None
    pairs = enumerate(zip(pads, c.act_q, strict=False))
    bad = [(b, p, a) for b, (p, a) in pairs if c.S1 - p - a < 0]
    if bad:
        return f"(batch, pad, actual) {bad[:4]}: Q_S={c.S1} - pad - actual < 0"
    return None


@rule("padding.kv_window", "prefill kv left padding: KV_S - pad - actual_kv >= 0 for every batch",
      src("V4", "参数说明 kvPaddingSize (搬运起点不能小于0 ... 否则结果将不符合预期)"))
def padding_kv_window(c: CallView) -> str | None:
    pads = _pads(c, "kv_padding_size")
    if pads is None or c.decode or c.packed or c.paged or not c.has("actual_seq_lengths_kv"):
        return None
    pairs = enumerate(zip(pads, c.act_kv, strict=False))
    bad = [(b, p, a) for b, (p, a) in pairs if c.kv_seq(b) - p - a < 0]
    if bad:
        return f"(batch, pad, actual_kv) {bad[:4]}: KV_S={c.S2} - pad - actual_kv < 0"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("padding.shape", "padded", {"query_padding_size": [1, 1, 1]}),
    ("padding.not_paged", "paged_prefill", {"kv_padding_size": [0]}),
    ("padding.not_int4_kv", "int4", {"kv_padding_size": [0], "actual_seq_lengths_kv": [8]}),
    ("padding.q_window", "padded", {"query_padding_size": [4]}),
    ("padding.kv_window", "padded", {"kv_padding_size": [5]}),
]
