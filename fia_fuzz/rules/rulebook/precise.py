"""inner_precise: the precision/row-invalid switch of the output computation
[V4 约束说明 innerPrecise, SEM §5]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src


@rule("precise.range", "inner_precise is 0..3",
      src("V4", "约束说明 innerPrecise (Q_S>1: 0, 1, 2, 3)"))
def precise_range(c: CallView) -> str | None:
    ip = c.attr_int("inner_precise")
    return f"inner_precise={ip} not in 0..3" if not 0 <= ip <= 3 else None


@rule("precise.decode_01", "Q_S == 1 accepts inner_precise 0 or 1 only",
      src("V4", "当Q_S等于1时 innerPrecise (仅支持innerPrecise为0和1)"))
def precise_decode_01(c: CallView) -> str | None:
    ip = c.attr_int("inner_precise")
    if c.decode and ip in (2, 3):
        return f"inner_precise={ip} with Q_S=1"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("precise.range", "prefill", {"inner_precise": 4}),
    ("precise.decode_01", "decode", {"inner_precise": 2}),
]
