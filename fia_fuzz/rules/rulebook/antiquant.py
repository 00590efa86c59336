"""KV pseudo-quantisation ("antiquant"): int8/int4 key/value with a float query
[V4 约束说明 伪量化参数约束, V2 伪量化参数/kv伪量化参数分离, SEM §7].

Combined params (antiquant_scale/offset, leading 2 = key, value) and separate
params (key_/value_antiquant_scale/offset with per-side modes). Separate
params win when both are given. 5-D NZ caches have their own table (nz.py).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T, bf, f32

INT_KV = ("int8", "int4", "int32")
ALL_PARAMS = ("antiquant_scale", "antiquant_offset", "key_antiquant_scale",
              "key_antiquant_offset", "value_antiquant_scale", "value_antiquant_offset")
SIDES = ("key", "value")
#: (key, value) separate modes int4 KV takes [V2 INT4（INT32）伪量化].
INT4_MODES = ((0, 0), (1, 1), (3, 3), (0, 1))


def _modes(c: CallView) -> tuple[int, int]:
    return c.attr_int("key_antiquant_mode"), c.attr_int("value_antiquant_mode")


def _prefixes(c: CallView) -> tuple[str, ...]:
    """Param-name prefixes that are antiquant params here (MLA full quant owns key_/value_)."""
    return ("",) if c.mla_full_quant else ("", "key_", "value_")


def _shape(t: TensorSpec) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


@rule("antiquant.needs_int_kv", "antiquant parameters need int8/int4 key/value and a float query",
      src("V4", "伪量化参数约束 (当key、value数据类型为INT8、INT4(INT32)时支持)"))
def antiquant_needs_int_kv(c: CallView) -> str | None:
    given = [n for n in ALL_PARAMS if c.has(n)]
    if not given or c.rope:
        return None
    q, k = c.need("query"), c.need("key")
    if k.dtype not in INT_KV or q.dtype == "int8":
        return f"{given} given with query {q.dtype}, key/value {k.dtype}"
    return None


@rule("antiquant.scale_needed", "a float query with int8/int4 key/value needs antiquant scales",
      src("V4", "伪量化参数约束 (反量化因子); SEM §7 (Dequantised = (k_int + offset) * scale)"))
def antiquant_scale_needed(c: CallView) -> str | None:
    q, k = c.need("query"), c.need("key")
    if q.dtype in ("float16", "bfloat16") and k.dtype in INT_KV \
            and not any(c.has(n) for n in ALL_PARAMS):
        return f"query {q.dtype} with key/value {k.dtype} and no antiquant scale"
    return None


@rule("antiquant.offset_needs_scale", "an antiquant offset comes with its scale",
      src("V2", "伪量化参数 (非对称量化模式下 antiquantScale和antiquantOffset参数需同时存在)"))
def antiquant_offset_needs_scale(c: CallView) -> str | None:
    for prefix in _prefixes(c):
        if c.has(f"{prefix}antiquant_offset") and not c.has(f"{prefix}antiquant_scale"):
            return f"{prefix}antiquant_offset without {prefix}antiquant_scale"
    return None


@rule("antiquant.offset_matches_scale", "an antiquant offset has its scale's shape and dtype",
      src("V4", "参数说明 keyAntiquantOffset (数据类型与shape必须与keyAntiquantScale保持一致)"))
def antiquant_offset_matches_scale(c: CallView) -> str | None:
    for prefix in _prefixes(c):
        o, s = c.spec(f"{prefix}antiquant_offset"), c.spec(f"{prefix}antiquant_scale")
        if o is not None and s is not None and (o.shape != s.shape or o.dtype != s.dtype):
            return f"{prefix}antiquant_offset={o} vs {prefix}antiquant_scale={s}"
    return None


@rule("antiquant.int4_separate_only", "int4 key/value use separate antiquant params only",
      src("V2", "当Q_S等于1时 (INT4（INT32）伪量化场景仅支持KV伪量化参数分离)"))
def antiquant_int4_separate_only(c: CallView) -> str | None:
    k = c.need("key")
    if k.dtype in ("int4", "int32") and c.combined_antiquant:
        return f"key/value {k.dtype} with combined antiquant_scale/offset"
    return None


@rule("antiquant.combined_mode", "Q_S == 1: antiquant_mode is 0 (per-channel/tensor) or 1 (p"
                                 "er-token)",
      src("V4", "伪量化参数约束 Q_S=1 antiquantMode (传入0和1之外的其他值会执行异常)"))
def antiquant_combined_mode(c: CallView) -> str | None:
    mode = c.attr_int("antiquant_mode")
    if c.combined_antiquant and c.decode and mode not in (0, 1):
        return f"antiquant_mode={mode} with antiquant_scale and Q_S=1"
    return None


@rule("antiquant.combined_shape",
      "combined params: (2,KV_N,1,D), (2,KV_N,D), (2,H) or (2,); per-token (2,B,>=KV_S)",
      src("V2", "伪量化参数 antiquantScale和antiquantOffset约束"))
def antiquant_combined_shape(c: CallView) -> str | None:
    s = c.spec("antiquant_scale")
    if s is None or not c.combined_antiquant:
        return None
    sh = _shape(s)
    mode = c.attr_int("antiquant_mode") if c.decode else 0
    if mode == 1:
        ok = len(sh) == 3 and sh[:2] == (2, c.B) and sh[2] >= c.S2
        want = f"(2, B={c.B}, >= KV_S={c.S2})"
    else:
        kvn, d = c.KV_N, c.D
        ok = sh in ((2, kvn, 1, d), (2, kvn, d), (2, kvn * d), (2,))
        want = f"(2,{kvn},1,{d}), (2,{kvn},{d}), (2,{kvn * d}) or (2,)"
    if not ok:
        return f"antiquant_scale.shape={list(sh)} with antiquant_mode={mode}: expected {want}"
    return None


@rule("antiquant.combined_dtype",
      "combined params: query dtype (per-channel) or float32 (per-token); float16 in prefill",
      src("V4", "参数说明 antiquantScaleOptional (Q_S=1：FLOAT16、BFLOAT16、FLOAT32 Q_S>1"
                "：FLOAT16)"))
def antiquant_combined_dtype(c: CallView) -> str | None:
    s = c.spec("antiquant_scale")
    if s is None or not c.combined_antiquant:
        return None
    q = c.need("query")
    if not c.decode:
        want = "float16"
    else:
        want = "float32" if c.attr_int("antiquant_mode") == 1 else q.dtype
    if s.dtype != want:
        return f"antiquant_scale.dtype={s.dtype!r}, expected {want!r} (query {q.dtype}, Q_S={c.S1})"
    return None


@rule("antiquant.combined_prefill_query", "prefill combined antiquant needs a float16 query",
      src("V4", "当Q_S大于1时 INT8量化场景 (kvCache反量化的合成参数场景仅支持query为FLOAT16)"))
def antiquant_combined_prefill_query(c: CallView) -> str | None:
    q = c.need("query")
    if c.combined_antiquant and not c.decode and q.dtype != "float16":
        return f"combined antiquant_scale in prefill with query {q.dtype}"
    return None


@rule("antiquant.sep_scale_pair", "key_antiquant_scale and value_antiquant_scale come together",
      src("V4", "参数说明 keyAntiquantScale (要么都为空，要么都不为空)"))
def antiquant_sep_scale_pair(c: CallView) -> str | None:
    if c.mla_full_quant:
        return None
    a, b = c.has("key_antiquant_scale"), c.has("value_antiquant_scale")
    if a != b:
        return f"only {'key' if a else 'value'}_antiquant_scale given"
    return None


@rule("antiquant.sep_offset_pair", "key_antiquant_offset and value_antiquant_offset come together",
      src("V4", "伪量化参数约束 (keyAntiquantOffset 和 valueAntiquantOffset要么都为空，要"
                "么都不为空)"))
def antiquant_sep_offset_pair(c: CallView) -> str | None:
    if c.mla_full_quant:
        return None
    a, b = c.has("key_antiquant_offset"), c.has("value_antiquant_offset")
    if a != b:
        return f"only {'key' if a else 'value'}_antiquant_offset given"
    return None


def _sep_on(c: CallView) -> bool:
    return c.separate_antiquant and c.has("key_antiquant_scale") \
        and c.has("value_antiquant_scale")


@rule("antiquant.sep_mode_range", "separate modes: 0..5 when Q_S == 1, 0..1 in prefill",
      src("V2", "keyAntiquantMode (Q_S大于等于2时仅支持传入值为0、1 ... 0..5之外的其他值会"
                "执行异常)"))
def antiquant_sep_mode_range(c: CallView) -> str | None:
    if not _sep_on(c):
        return None
    top = 5 if c.decode else 1
    km, vm = _modes(c)
    if not (0 <= km <= top and 0 <= vm <= top):
        return f"key_antiquant_mode={km}, value_antiquant_mode={vm}: expected 0..{top} " \
               f"with Q_S={c.S1}"
    return None


@rule("antiquant.sep_mode_pair", "key and value modes are equal, except key 0 with value 1",
      src("V4", "参数说明 keyAntiquantMode (除了keyAntiquantMode为0并且valueAntiquantMode"
                "为1的场景外，需要一致)"))
def antiquant_sep_mode_pair(c: CallView) -> str | None:
    km, vm = _modes(c)
    if _sep_on(c) and km != vm and (km, vm) != (0, 1):
        return f"key_antiquant_mode={km} != value_antiquant_mode={vm} (only 0/1 may mix)"
    return None


def _checked_modes(c: CallView) -> tuple[int, int]:
    """The separate modes, Undetermined unless they are a legal pair for the branch/paging."""
    km, vm = _modes(c)
    top = 5 if c.decode else 1
    if not (0 <= km <= top and 0 <= vm <= top) or (km != vm and (km, vm) != (0, 1)):
        raise Undetermined("key_antiquant_mode")
    if not c.paged and (km in (4, 5) or vm in (4, 5)):
        raise Undetermined("key_antiquant_mode")
    return km, vm


def _sep_forms(c: CallView, mode: int) -> tuple[list[tuple[int, ...]] | None, str, str]:
    """Allowed shapes (None: checked by a predicate), their text, and the dtype for one mode."""
    q = c.need("query").dtype
    kvn, d, b = c.KV_N, c.D, c.B
    if not c.decode:
        if mode == 0:
            return [(kvn, d), (kvn, 1, d), (kvn * d,)], f"({kvn},{d}), ({kvn},1,{d}) or " \
                f"({kvn * d},)", "bfloat16"
        return None, f"(B={b}, >= KV_S={c.S2})", "float32"
    if mode == 0:
        return [(1, kvn, 1, d), (1, kvn, d), (1, kvn * d), (1,)], \
            f"(1,{kvn},1,{d}), (1,{kvn},{d}), (1,{kvn * d}) or (1,)", q
    if mode == 1:
        return None, f"(1, B={b}, >= KV_S={c.S2})", "float32"
    if mode == 2:
        return [(kvn,)], f"({kvn},)", q
    if mode == 3:
        return None, f"(B={b}, KV_N={kvn}, >= KV_S={c.S2})", "float32"
    d0 = c.cache_dims("key")
    bs = c.attr_int("block_size")
    if mode == 4:
        return [(d0["blocks"], bs)], f"({d0['blocks']},{bs})", "float32"
    return [(d0["blocks"], kvn, bs)], f"({d0['blocks']},{kvn},{bs})", "float32"


def _per_token_ok(c: CallView, mode: int, sh: tuple[int, ...]) -> bool:
    if not c.decode:
        return len(sh) == 2 and sh[0] == c.B and sh[1] >= c.S2
    if mode == 1:
        return len(sh) == 3 and sh[:2] == (1, c.B) and sh[2] >= c.S2
    return len(sh) == 3 and sh[:2] == (c.B, c.KV_N) and sh[2] >= c.S2


@rule("antiquant.sep_shape", "separate scale/offset shapes per mode and branch",
      src("V4", "伪量化参数约束 (Q_S>1: (N,D)/(N,1,D)/(H), (B,S); Q_S=1: modes 0-5); "
                "V2 kv伪量化参数分离"))
def antiquant_sep_shape(c: CallView) -> str | None:
    if not _sep_on(c) or c.nz:
        return None
    for side, mode in zip(SIDES, _checked_modes(c), strict=True):
        forms, text, _ = _sep_forms(c, mode)
        sh = _shape(c.need(f"{side}_antiquant_scale"))
        ok = _per_token_ok(c, mode, sh) if forms is None else sh in forms
        if not ok:
            return f"{side}_antiquant_scale.shape={list(sh)} with {side}_antiquant_mode={mode}" \
                   f", Q_S={c.S1}: expected {text}"
    return None


@rule("antiquant.sep_dtype", "separate scale dtype: query dtype (per-channel/tensor/head), "
      "float32 (per-token); bfloat16 per-channel in prefill",
      src("V4", "伪量化参数约束 (数据类型和query数据类型相同 / 数据类型固定为FLOAT32 / 固"
                "定为BF16)"))
def antiquant_sep_dtype(c: CallView) -> str | None:
    if not _sep_on(c) or c.nz:
        return None
    for side, mode in zip(SIDES, _checked_modes(c), strict=True):
        _, _, want = _sep_forms(c, mode)
        t = c.need(f"{side}_antiquant_scale")
        if t.dtype != want:
            return f"{side}_antiquant_scale.dtype={t.dtype!r} with {side}_antiquant_mode={mode}" \
                   f", Q_S={c.S1}: expected {want!r}"
    return None


@rule("antiquant.sep_shapes_match", "key and value scales have the same shape (except modes 0/1)",
      src("V4", "伪量化参数约束 (除了keyAntiquantMode为0并且valueAntiquantMode为1的场景外"
                "，其shape需要保持一致)"))
def antiquant_sep_shapes_match(c: CallView) -> str | None:
    if not _sep_on(c) or _modes(c) == (0, 1):
        return None
    a, b = c.need("key_antiquant_scale"), c.need("value_antiquant_scale")
    if a.shape != b.shape:
        return f"key_antiquant_scale.shape={list(a.shape)} != value_antiquant_scale.shape=" \
               f"{list(b.shape)}"
    return None


@rule("antiquant.int8_only_forms", "per-tensor (1,) scales need int8 KV (mode 2: see int4_modes)",
      src("V4", "伪量化参数约束 Q_S=1 (per-tensor / 模式2 当key、value数据类型为INT8时支持)"))
def antiquant_int8_only_forms(c: CallView) -> str | None:
    k = c.need("key")
    if not _sep_on(c) or k.dtype == "int8" or not c.decode:
        return None
    for side, mode in zip(SIDES, _modes(c), strict=True):
        sh = _shape(c.need(f"{side}_antiquant_scale"))
        if mode == 0 and sh == (1,):
            return f"{side}_antiquant_mode={mode}, shape={list(sh)} with key/value {k.dtype}"
    return None


@rule("antiquant.int4_modes", "int4 key/value modes: per-channel, per-token, per-token+head,"
                              " key0/value1",
      src("V2", "当Q_S等于1时 (INT4（INT32）伪量化场景仅支持KV伪量化参数分离，具体包括 ...)"))
def antiquant_int4_modes(c: CallView) -> str | None:
    k = c.need("key")
    if _sep_on(c) and k.dtype in ("int4", "int32") and _modes(c) not in INT4_MODES:
        return f"key/value {k.dtype} with modes {_modes(c)}"
    return None


@rule("antiquant.paged_modes", "modes 4 and 5 (PA-managed scales) need paged attention",
      src("V2", "keyAntiquantMode (4/5: 使用page attention模式管理scale/offset)"))
def antiquant_paged_modes(c: CallView) -> str | None:
    if _sep_on(c) and not c.paged and any(m in (4, 5) for m in _modes(c)):
        return f"antiquant modes {_modes(c)} without block_table"
    return None


@rule("antiquant.mixed_query_fp16", "key per-channel + value per-token with int8 KV: float16"
                                    " query and out",
      src("V4", "伪量化参数约束 Q_S=1 模式3 (当key、value数据类型为INT8时，仅支持query和at"
                "tentionOut的数据类型为FLOAT16)"))
def antiquant_mixed_query_fp16(c: CallView) -> str | None:
    if not _sep_on(c) or _modes(c) != (0, 1) or c.need("key").dtype != "int8":
        return None
    q = c.need("query")
    if q.dtype != "float16" or c.out_dtype != "float16":
        return f"key mode 0 / value mode 1 with int8 KV, query {q.dtype}, out {c.out_dtype}"
    return None


@rule("antiquant.sep_prefill_dtypes", "prefill separate antiquant: bfloat16 query, int8 KV, "
                                      "bfloat16 out",
      src("V4", "伪量化参数约束 Q_S>1 (要求query的数据类型为BFLOAT16,key、value的数据类型"
                "为INT8，输出的数据类型为BFLOAT16)"))
def antiquant_sep_prefill_dtypes(c: CallView) -> str | None:
    if not _sep_on(c) or c.decode:
        return None
    q, k = c.need("query"), c.need("key")
    if q.dtype != "bfloat16" or k.dtype != "int8" or c.out_dtype != "bfloat16":
        return f"separate antiquant with Q_S={c.S1}: query {q.dtype}, key {k.dtype}, " \
               f"out {c.out_dtype}"
    return None


@rule("antiquant.sep_prefill_seq", "prefill separate antiquant needs Q_S <= 16",
      src("V4", "伪量化参数约束 Q_S>1 (要求query的s小于等于16)"))
def antiquant_sep_prefill_seq(c: CallView) -> str | None:
    if _sep_on(c) and not c.decode and c.S1 > 16:
        return f"separate antiquant with Q_S={c.S1} > 16"
    return None


@rule("antiquant.sep_prefill_features",
      "prefill separate antiquant: no tensor list, left padding or (non-NZ) paged attention",
      src("V4", "伪量化参数约束 Q_S>1 (不支持tensorlist、左padding、PagedAttention特性)"))
def antiquant_sep_prefill_features(c: CallView) -> str | None:
    if not _sep_on(c) or c.decode:
        return None
    bad = [n for n, on in (("tensor list", c.is_kv_list), ("left padding", c.left_padding),
                           ("paged attention", c.paged and not c.nz)) if on]
    return f"separate antiquant with Q_S={c.S1} and {bad}" if bad else None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("antiquant.needs_int_kv", "prefill", {"antiquant_scale": T(2, 2, 1, 64)}),
    ("antiquant.scale_needed", "aq_combined", {"antiquant_scale": None,
                                               "antiquant_offset": None}),
    ("antiquant.offset_needs_scale", "aq_combined", {"antiquant_scale": None}),
    ("antiquant.offset_matches_scale", "aq_combined", {"antiquant_offset": T(2, 2, 64)}),
    ("antiquant.offset_matches_scale", "aq_separate", {"value_antiquant_offset": bf(1, 2, 1, 64)}),
    ("antiquant.int4_separate_only", "int4", {"key_antiquant_scale": None,
                                              "value_antiquant_scale": None,
                                              "antiquant_scale": T(2, 2, 64)}),
    ("antiquant.combined_mode", "aq_combined", {"antiquant_mode": 2}),
    ("antiquant.combined_shape", "aq_combined", {"antiquant_scale": T(2, 3, 64),
                                                 "antiquant_offset": T(2, 3, 64)}),
    ("antiquant.combined_shape", "aq_combined",
     {"antiquant_mode": 1, "antiquant_scale": f32(2, 2, 8), "antiquant_offset": f32(2, 2, 8)}),
    ("antiquant.combined_dtype", "aq_combined", {"antiquant_scale": f32(2, 2, 1, 64),
                                                 "antiquant_offset": f32(2, 2, 1, 64)}),
    ("antiquant.combined_prefill_query", "aq_prefill",
     {"key_antiquant_scale": None, "value_antiquant_scale": None,
      "antiquant_scale": T(2, 2, 1, 64)}),
    ("antiquant.sep_scale_pair", "aq_separate", {"value_antiquant_scale": None,
                                                 "value_antiquant_offset": None,
                                                 "key_antiquant_offset": None}),
    ("antiquant.sep_offset_pair", "aq_separate", {"value_antiquant_offset": None}),
    ("antiquant.sep_mode_range", "aq_separate", {"key_antiquant_mode": 6,
                                                 "value_antiquant_mode": 6}),
    ("antiquant.sep_mode_range", "aq_prefill", {"key_antiquant_mode": 2,
                                                "value_antiquant_mode": 2}),
    ("antiquant.sep_mode_pair", "aq_separate", {"key_antiquant_mode": 1,
                                                "value_antiquant_mode": 0}),
    ("antiquant.sep_shape", "aq_separate",
     {"key_antiquant_scale": T(1, 2, 1, 32), "value_antiquant_scale": T(1, 2, 1, 32),
      "key_antiquant_offset": T(1, 2, 1, 32), "value_antiquant_offset": T(1, 2, 1, 32)}),
    ("antiquant.sep_shape", "aq_prefill", {"key_antiquant_scale": bf(1, 2, 1, 64),
                                           "value_antiquant_scale": bf(1, 2, 1, 64)}),
    ("antiquant.sep_dtype", "aq_separate",
     {"key_antiquant_scale": bf(1, 2, 1, 64), "value_antiquant_scale": bf(1, 2, 1, 64),
      "key_antiquant_offset": bf(1, 2, 1, 64), "value_antiquant_offset": bf(1, 2, 1, 64)}),
    ("antiquant.sep_shapes_match", "aq_separate",
     {"value_antiquant_scale": T(1, 2, 64), "value_antiquant_offset": T(1, 2, 64)}),
    ("antiquant.int8_only_forms", "int4", {"key_antiquant_scale": T(1),
                                           "value_antiquant_scale": T(1)}),
    ("antiquant.int4_modes", "int4", {"key_antiquant_mode": 2, "value_antiquant_mode": 2,
                                      "key_antiquant_scale": T(2), "value_antiquant_scale": T(2)}),
    ("antiquant.paged_modes", "aq_separate",
     {"key_antiquant_mode": 4, "value_antiquant_mode": 4, "key_antiquant_scale": f32(2, 16),
      "value_antiquant_scale": f32(2, 16), "key_antiquant_offset": f32(2, 16),
      "value_antiquant_offset": f32(2, 16)}),
    ("antiquant.mixed_query_fp16", "aq_separate",
     {"query": bf(2, 1, 256), "key_antiquant_mode": 0, "value_antiquant_mode": 1,
      "key_antiquant_scale": bf(1, 2, 1, 64), "value_antiquant_scale": f32(1, 2, 16),
      "key_antiquant_offset": None, "value_antiquant_offset": None}),
    ("antiquant.sep_prefill_dtypes", "aq_prefill",
     {"quant_scale2": f32(1)}),
    ("antiquant.sep_prefill_seq", "aq_prefill", {"query": bf(2, 2, 20, 64)}),
    ("antiquant.sep_prefill_features", "aq_prefill",
     {"actual_seq_lengths_kv": [8, 8], "kv_padding_size": [0]}),
]
