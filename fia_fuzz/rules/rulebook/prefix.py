"""Shared prefix: key_shared_prefix / value_shared_prefix / actual_shared_prefix_len
[V4 参数说明 keySharedPrefix, V2 prefix相关参数约束, SEM §6]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import B, T, bf, f32, i8
from fia_fuzz.rules.rulebook.mask import full_mask_mode

NAMES = ("key_shared_prefix", "value_shared_prefix")


def _on(c: CallView) -> bool:
    return c.has("key_shared_prefix") and c.has("value_shared_prefix")


@rule("prefix.both_or_neither", "key_shared_prefix and value_shared_prefix come together",
      src("V4", "参数说明 keySharedPrefix (要么都为空，要么都不为空)"))
def prefix_both_or_neither(c: CallView) -> str | None:
    given = [n for n in NAMES if c.has(n)]
    if len(given) == 1:
        return f"only {given[0]} given"
    if c.has("actual_shared_prefix_len") and not given:
        return "actual_shared_prefix_len without key_shared_prefix/value_shared_prefix"
    return None


@rule("prefix.rank_dtype", "prefixes have the rank and dtype of key/value",
      src("V4", "参数说明 keySharedPrefix (维度相同、dtype保持一致)"))
def prefix_rank_dtype(c: CallView) -> str | None:
    if not _on(c):
        return None
    k = c.need("key")
    for n in NAMES:
        p = c.need(n)
        if p.dtype != k.dtype or (not c.paged and p.ndim != k.ndim):
            return f"{n}={p} vs key={k}: rank and dtype must match"
    return None


@rule("prefix.batch_one", "prefixes have batch 1",
      src("V4", "参数说明 keySharedPrefix (shape第一维batch必须为1)"))
def prefix_batch_one(c: CallView) -> str | None:
    if not _on(c):
        return None
    for n in NAMES:
        p = c.need(n)
        if p.ndim and p.shape[0] != 1:
            return f"{n}.shape={list(p.shape)} has batch {p.shape[0]}, expected 1"
    return None


@rule("prefix.heads_dim", "prefixes have key's N and D (BSH: H)",
      src("V4", "参数说明 keySharedPrefix (BNSD和BSND情况下N、D轴要与key一致、BSH情况下H要"
                "与key一致)"))
def prefix_heads_dim(c: CallView) -> str | None:
    if not _on(c) or c.paged:
        return None
    kd = c.kv_dims
    for n in NAMES:
        pd = c.tensor_dims(n)
        if pd["N"] != kd["N"] or pd["D"] != kd["D"]:
            return f"{n}.shape={list(c.need(n).shape)}: N={pd['N']}, D={pd['D']} vs key " \
                   f"N={kd['N']}, D={kd['D']}"
    return None


@rule("prefix.same_shape", "key_shared_prefix and value_shared_prefix have the same shape",
      src("V4", "参数说明 keySharedPrefix (keySharedPrefix和valueSharedPrefix的S应相等)"))
def prefix_same_shape(c: CallView) -> str | None:
    if not _on(c):
        return None
    a, b = c.need("key_shared_prefix"), c.need("value_shared_prefix")
    if a.shape != b.shape:
        return (f"key_shared_prefix.shape={list(a.shape)} != "
                f"value_shared_prefix.shape={list(b.shape)}")
    return None


@rule("prefix.len_shape", "actual_shared_prefix_len holds one value",
      src("V4", "参数说明 keySharedPrefix (actualSharedPrefixLen的shape需要为[1])"))
def prefix_len_shape(c: CallView) -> str | None:
    a = c.values.get("actual_shared_prefix_len")
    t = c.value_specs.get("actual_shared_prefix_len")
    count = len(a) if a is not None else (t.numel if t is not None else None)
    if count is not None and count != 1:
        return f"actual_shared_prefix_len has {count} values, expected 1"
    return None


@rule("prefix.len_range", "0 <= actual_shared_prefix_len <= prefix S",
      src("V4", "参数说明 actualSharedPrefixLen (不大于keySharedPrefix/valueSharedPrefix中"
                "的Sequence Length)"))
def prefix_len_range(c: CallView) -> str | None:
    a = c.ints("actual_shared_prefix_len")
    if not _on(c) or a is None or len(a) != 1:
        return None
    if not 0 <= a[0] <= c.prefix_S:
        return f"actual_shared_prefix_len={a[0]} outside 0..prefix S={c.prefix_S}"
    return None


@rule("prefix.not_paged", "shared prefix is not supported with paged attention",
      src("V4", "当Q_S大于1时 prefix (不支持PagedAttention场景)"))
def prefix_not_paged(c: CallView) -> str | None:
    return "shared prefix with block_table" if c.has("key_shared_prefix") and c.paged else None


@rule("prefix.no_left_padding", "shared prefix is not supported with left padding",
      src("V4", "当Q_S大于1时 prefix (不支持左padding场景)"))
def prefix_no_left_padding(c: CallView) -> str | None:
    if c.has("key_shared_prefix") and c.left_padding:
        return "shared prefix with query_padding_size/kv_padding_size"
    return None


@rule("prefix.not_kv_list", "shared prefix is not supported with a key/value tensor list",
      src("V4", "当Q_S大于1时 prefix (不支持tensorlist场景)"))
def prefix_not_kv_list(c: CallView) -> str | None:
    return "shared prefix with a key/value tensor list" \
        if c.has("key_shared_prefix") and c.is_kv_list else None


@rule("prefix.not_all_int8", "shared prefix is not supported with int8 query, key and value",
      src("V4", "当Q_S大于1时 prefix (不支持输入query、key、value全部为int8的情况)"))
def prefix_not_all_int8(c: CallView) -> str | None:
    if c.has("key_shared_prefix") and c.need("query").dtype == "int8" \
            and c.need("key").dtype == "int8":
        return "shared prefix with int8 query, key and value"
    return None


#: Separate antiquant modes with per-token params [V2 keyAntiquantMode 1, 3, 4, 5].
PER_TOKEN_MODES = (1, 3, 4, 5)
#: Combined antiquant_mode with per-token params (Q_S = 1) [V2 antiquantMode 1].
COMBINED_PER_TOKEN_MODES = (1,)


@rule("prefix.per_token_antiquant", "shared prefix is not combined with per-token antiquant "
      "(decision: its scales have no entries for prefix tokens)",
      src("V4", "伪量化参数约束 per-token (shape (1, B, S) / (B, S)) with 参数说明 keySharedPrefix "
                "(batch 1, shared by every batch): where prefix tokens read their per-token "
                "scale is undocumented; fia-fuzz decision, docs/rules.md disagreement 30"))
def prefix_per_token_antiquant(c: CallView) -> str | None:
    if not c.has("key_shared_prefix"):
        return None
    if c.separate_antiquant:
        modes = (c.attr_int("key_antiquant_mode"), c.attr_int("value_antiquant_mode"))
        if any(m in PER_TOKEN_MODES for m in modes):
            return f"shared prefix with per-token antiquant modes (key, value)={modes}"
    elif (c.combined_antiquant and c.decode
          and c.attr_int("antiquant_mode") in COMBINED_PER_TOKEN_MODES):
        return "shared prefix with per-token combined antiquant (antiquant_mode=1, Q_S=1)"
    return None


@rule("prefix.mask_covers", "sparse 0/1 (or Q_S=1): the mask's KV_S >= prefix length + key S",
      src("V4", "当Q_S大于1时 prefix (sparse为0或1时 ... KV_S需大于等于actualSharedPrefixL"
                "en与key的S长度之和); SEM §6 (Masks ... count the prefix in S2; Q_S = 1)"))
def prefix_mask_covers(c: CallView) -> str | None:
    m = c.spec("atten_mask")
    if not _on(c) or m is None or not full_mask_mode(c) or m.ndim < 2:
        return None
    if c.S2 <= m.shape[-1] < c.prefix_len + c.S2:
        return f"atten_mask last dim {m.shape[-1]} < prefix {c.prefix_len} + KV_S {c.S2}"
    return None


@rule("prefix.pse_covers", "pse_shift's KV_S >= prefix length + key S",
      src("V4", "约束说明 pseShift (prefix场景KV_S需大于等于actualSharedPrefixLen与key的S"
                "长度之和); SEM §6 (the prefix counts in S2; Q_S = 1)"))
def prefix_pse_covers(c: CallView) -> str | None:
    p = c.spec("pse_shift")
    if not _on(c) or p is None or p.ndim != 4:
        return None
    if c.S2 <= p.shape[-1] < c.prefix_len + c.S2:
        return f"pse_shift last dim {p.shape[-1]} < prefix {c.prefix_len} + KV_S {c.S2}"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("prefix.both_or_neither", "prefix", {"value_shared_prefix": None}),
    ("prefix.both_or_neither", "prefill", {"actual_shared_prefix_len": [3]}),
    ("prefix.rank_dtype", "prefix", {"key_shared_prefix": bf(1, 4, 8, 64),
                                     "value_shared_prefix": bf(1, 4, 8, 64)}),
    ("prefix.batch_one", "prefix", {"key_shared_prefix": T(2, 4, 8, 64),
                                    "value_shared_prefix": T(2, 4, 8, 64)}),
    ("prefix.heads_dim", "prefix", {"key_shared_prefix": T(1, 2, 8, 64),
                                    "value_shared_prefix": T(1, 2, 8, 64)}),
    ("prefix.same_shape", "prefix", {"value_shared_prefix": T(1, 4, 9, 64)}),
    ("prefix.len_shape", "prefix", {"actual_shared_prefix_len": [5, 5]}),
    ("prefix.len_range", "prefix", {"actual_shared_prefix_len": [9]}),
    ("prefix.not_paged", "paged_decode", {"key_shared_prefix": T(1, 16, 128),
                                          "value_shared_prefix": T(1, 16, 128)}),
    ("prefix.no_left_padding", "prefix", {"kv_padding_size": [0]}),
    ("prefix.not_kv_list", "kvlist", {"key_shared_prefix": T(1, 8, 128),
                                      "value_shared_prefix": T(1, 8, 128)}),
    ("prefix.not_all_int8", "int8", {"key_shared_prefix": i8(1, 2, 8, 64),
                                     "value_shared_prefix": i8(1, 2, 8, 64)}),
    ("prefix.per_token_antiquant", "aq_prefix",
     {"key_antiquant_mode": 1, "value_antiquant_mode": 1,
      "key_antiquant_scale": f32(1, 2, 16), "value_antiquant_scale": f32(1, 2, 16)}),
    ("prefix.per_token_antiquant", "aq_prefix",
     {"key_antiquant_scale": None, "value_antiquant_scale": None, "antiquant_mode": 1,
      "antiquant_scale": f32(2, 2, 16)}),
    ("prefix.mask_covers", "prefix", {"atten_mask": B(4, 20)}),
    ("prefix.pse_covers", "prefix", {"pse_shift": T(1, 4, 4, 20)}),
    ("prefix.mask_covers", "decode", {"key_shared_prefix": T(1, 8, 128),
                                      "value_shared_prefix": T(1, 8, 128),
                                      "atten_mask": B(2, 20)}),
]
