"""pse_shift shape [V4 约束说明 pseShift, V2 pseShiftOptional, SEM §5]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T


@rule("pse.shape", "pse_shift is (B|1, N, >=Q_S, >=KV_S); with Q_S == 1 (B|1, N, 1, >=KV_S)",
      src("V4", "约束说明 pseShift (Q_S>1: (B,Q_N,Q_S,KV_S)、(1,Q_N,Q_S,KV_S), Q_S/KV_S 需大于"
                "等于; Q_S=1: (B,Q_N,1,KV_S)、(1,Q_N,1,KV_S)); V2 pseShiftOptional; IFA pseShift"))
def pse_shape(c: CallView) -> str | None:
    p = c.spec("pse_shift")
    if p is None:
        return None
    sh = p.shape
    rows_ok = p.ndim == 4 and (sh[2] == 1 if c.decode else sh[2] >= c.S1)
    if p.ndim != 4 or sh[0] not in (1, c.B) or sh[1] != c.N or not rows_ok \
            or (not c.paged and sh[3] < c.S2):
        rows = "1" if c.decode else ">=Q_S"
        return (f"pse_shift.shape={list(sh)}, expected (B|1, N, {rows}, >=KV_S) with "
                f"B={c.B}, N={c.N}, Q_S={c.S1}, KV_S={c.S2}")
    return None


@rule("pse.decode_d_align", "pse_shift with Q_S == 1 needs D % 16 == 0",
      src("V4", "约束说明 pseShift (Q_S=1 仅支持D轴对齐，即D轴可以被16整除)"))
def pse_decode_d_align(c: CallView) -> str | None:
    if c.has("pse_shift") and c.decode and c.D % 16:
        return f"pse_shift with Q_S=1 and D={c.D} (not a multiple of 16)"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("pse.shape", "masked", {"pse_shift": T(1, 8, 4, 8)}),
    ("pse.shape", "masked", {"pse_shift": T(3, 8, 4, 16)}),
    ("pse.shape", "decode", {"pse_shift": T(2, 8, 2, 16)}),
    ("pse.decode_d_align", "decode", {"query": T(2, 1, 8 * 40), "key": T(2, 16, 2 * 40),
                                      "value": T(2, 16, 2 * 40), "pse_shift": T(2, 8, 1, 16)}),
]
