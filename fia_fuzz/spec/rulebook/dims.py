"""Dimension limits and alignment [SEM §10, V4 约束说明]."""

from __future__ import annotations

from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.rules import rule, src


@rule("dims.d_align_float", "head dim D is a multiple of 16 for float16/bfloat16 inputs",
      src("V4", "约束说明 (D 16 对齐)"))
def _d_align(c: CallView) -> str | None:
    q = c.need("query")
    if q.dtype in ("float16", "bfloat16") and c.D % 16:
        return f"D={c.D} is not a multiple of 16 for {q.dtype} query"
    return None


@rule("dims.d_max", "head dim D is at most 512", src("SEM", "10. Limits"))
def _d_max(c: CallView) -> str | None:
    if c.D > 512 or c.D < 1:
        return f"D={c.D} outside 1..512"
    return None


@rule("dims.n_max", "num_heads is at most 256", src("SEM", "10. Limits"))
def _n_max(c: CallView) -> str | None:
    return f"num_heads={c.N} > 256" if c.N > 256 else None


@rule("dims.b_max", "batch B is at most 65536", src("SEM", "10. Limits"))
def _b_max(c: CallView) -> str | None:
    return f"B={c.B} > 65536" if c.B > 65536 else None
