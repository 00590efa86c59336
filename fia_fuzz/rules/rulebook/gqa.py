"""Head counts and GQA [V4 参数说明 numKeyValueHeads, SEM §1]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T


@rule("gqa.num_heads_positive", "num_heads is at least 1",
      src("V4", "参数说明 numHeads"))
def gqa_num_heads_positive(c: CallView) -> str | None:
    n = c.attr_int("num_heads")
    return f"num_heads={n} must be >= 1" if n < 1 else None


@rule("gqa.kv_heads_nonnegative", "num_key_value_heads is >= 0 (0 means num_heads)",
      src("V4", "参数说明 numKeyValueHeads"))
def gqa_kv_heads_nonnegative(c: CallView) -> str | None:
    n = c.attr_int("num_key_value_heads")
    return f"num_key_value_heads={n} must be >= 0" if n < 0 else None


@rule("gqa.divisible", "num_heads is a multiple of num_key_value_heads",
      src("V4", "参数说明 numKeyValueHeads"))
def gqa_divisible(c: CallView) -> str | None:
    if c.N % c.KV_N:
        return f"num_heads={c.N} is not a multiple of num_key_value_heads={c.KV_N}"
    return None


@rule("gqa.ratio_max_64", "the GQA group G = num_heads / num_key_value_heads is at most 64 "
      "(MLA D=512: up to 128 heads on its one KV head)",
      src("V4", "约束说明 (num_heads/num_key_value_heads <= 64); MLA场景 query d=512 (Q_N=[1,2,4,"
                "8,16,32,64,128], K_N=1)"))
def gqa_ratio_max_64(c: CallView) -> str | None:
    if c.G > 64 and not c.mla512:
        return f"G = num_heads/num_key_value_heads = {c.N}/{c.KV_N} = {c.G} > 64"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("gqa.num_heads_positive", "prefill", {"num_heads": 0}),
    ("gqa.kv_heads_nonnegative", "prefill", {"num_key_value_heads": -2}),
    ("gqa.divisible", "prefill", {"num_key_value_heads": 3, "key": T(2, 3, 16, 64),
                                  "value": T(2, 3, 16, 64)}),
    ("gqa.ratio_max_64", "prefill", {"query": T(2, 130, 4, 64), "num_heads": 130}),
]
