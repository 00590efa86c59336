"""Dimension limits and alignment [V4 约束说明 当Q_S大于1时/当Q_S等于1时, SEM §10]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T, i8

S_MAX = 20971520


def _dtypes(c: CallView) -> set[str]:
    """dtypes of query, key, value and attention_out (the D-alignment inputs)."""
    return {c.need("query").dtype, c.need("key").dtype, c.out_dtype}


@rule("dims.d_align_float",
      "prefill: head dims are multiples of 16 when query/key/value/out are all float16/bfloat16",
      src("V4", "约束说明 当Q_S大于1时 (D轴限制: 类型全为FLOAT16、BFLOAT16时，D轴需16对齐)"))
def dims_d_align_float(c: CallView) -> str | None:
    if c.decode or not _dtypes(c) <= {"float16", "bfloat16"}:
        return None
    bad = {n: d for n, d in (("D", c.D), ("Dv", c.Dv)) if d % 16}
    if bad:
        return f"{bad} not multiples of 16 for float16/bfloat16 inputs with Q_S={c.S1}"
    return None


@rule("dims.d_align_int8", "prefill: head dims are multiples of 32 when any of q/k/v/out is int8",
      src("V4", "约束说明 当Q_S大于1时 (D轴限制: 类型包含INT8时，D轴需要32对齐)"))
def dims_d_align_int8(c: CallView) -> str | None:
    if c.decode or "int8" not in _dtypes(c):
        return None
    bad = {n: d for n, d in (("D", c.D), ("Dv", c.Dv)) if d % 32}
    if bad:
        return f"{bad} not multiples of 32 with int8 among query/key/value/out"
    return None


@rule("dims.d_align_int4", "int4 (or int32-packed int4) key/value need D % 64 == 0",
      src("V4", "约束说明 (类型包含INT4时 D轴需要64对齐; INT32 仅支持 D 8 对齐 = 打包后的 D/8)"))
def dims_d_align_int4(c: CallView) -> str | None:
    k = c.need("key")
    if k.dtype in ("int4", "int32") and c.D % 64:
        return f"D={c.D} is not a multiple of 64 for {k.dtype} key/value"
    return None


@rule("dims.d_max", "head dims D and Dv are 1..512", src("V4", "约束说明 (D轴小于等于512)"))
def dims_d_max(c: CallView) -> str | None:
    bad = {n: d for n, d in (("D", c.D), ("Dv", c.Dv)) if not 1 <= d <= 512}
    return f"{bad} outside 1..512" if bad else None


@rule("dims.n_max", "num_heads is at most 256", src("V4", "约束说明 (N轴小于等于256)"))
def dims_n_max(c: CallView) -> str | None:
    return f"num_heads={c.N} > 256" if c.N > 256 else None


@rule("dims.b_max", "batch B is at most 65536", src("V4", "约束说明 (B轴小于等于65536)"))
def dims_b_max(c: CallView) -> str | None:
    return f"B={c.B} > 65536" if c.B > 65536 else None


@rule("dims.s_max", "query and key/value sequence lengths (prefix included) are at most 20M",
      src("V4", "约束说明 当Q_S大于1时 (S 小于等于20971520); 参数说明 keySharedPrefix"))
def dims_s_max(c: CallView) -> str | None:
    s2 = c.S2 + c.prefix_S
    if c.S1 > S_MAX or s2 > S_MAX:
        return f"Q_S={c.S1}, KV_S+prefix={s2}: above {S_MAX}"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("dims.d_align_float", "prefill", {"query": T(2, 8, 4, 40), "key": T(2, 2, 16, 40),
                                       "value": T(2, 2, 16, 40)}),
    ("dims.d_align_int8", "int8", {"query": i8(1, 2, 4, 48), "key": i8(1, 2, 16, 48),
                                   "value": i8(1, 2, 16, 48)}),
    ("dims.d_align_int4", "int4", {"query": T(1, 1, 2 * 32), "key": T(1, 16, 8, dtype="int32"),
                                   "value": T(1, 16, 8, dtype="int32"),
                                   "key_antiquant_scale": T(1, 2, 32),
                                   "value_antiquant_scale": T(1, 2, 32)}),
    ("dims.d_max", "decode", {"query": T(2, 1, 8 * 640), "key": T(2, 16, 2 * 640),
                              "value": T(2, 16, 2 * 640)}),
    ("dims.n_max", "prefill", {"query": T(1, 320, 4, 64), "key": T(1, 20, 16, 64),
                               "value": T(1, 20, 16, 64), "num_heads": 320,
                               "num_key_value_heads": 20}),
    ("dims.b_max", "decode", {"query": T(65537, 1, 512), "key": T(65537, 1, 128),
                              "value": T(65537, 1, 128)}),
    ("dims.s_max", "prefill", {"query": T(1, 1, 20971530, 16), "key": T(1, 1, 16, 16),
                               "value": T(1, 1, 16, 16), "num_heads": 1,
                               "num_key_value_heads": 1}),
]
