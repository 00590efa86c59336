"""Tensor-list ("non-contiguous") key/value [V4 参数说明 key/value, SEM §2]."""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T

LIST_MAX_BATCH = 256


@rule("kvlist.count", "key and value lists hold exactly B tensors each",
      src("V4", "参数说明 key (tensorlist中的batch只能为1，个数等于query的B)"))
def kvlist_count(c: CallView) -> str | None:
    if not c.is_kv_list:
        return None
    nk, nv = len(c.spec_list("key")), len(c.spec_list("value"))
    if nk == 0:
        return None
    if not isinstance(c.specs.get("value"), list) or nk != c.B or nv != c.B:
        return f"key list of {nk}, value {'list of ' + str(nv) if nv else 'not a list'}, B={c.B}"
    return None


@rule("kvlist.batch_one", "every tensor of a key/value list has batch 1",
      src("V4", "参数说明 key (tensorlist中的batch只能为1)"))
def kvlist_batch_one(c: CallView) -> str | None:
    if not c.is_kv_list:
        return None
    for name in ("key", "value"):
        for i, t in enumerate(c.spec_list(name)):
            if t.ndim == len(c.in_layout) and t.shape[0] != 1:
                return f"{name}[{i}].shape={list(t.shape)} has batch {t.shape[0]}, expected 1"
    return None


@rule("kvlist.uniform", "list tensors agree on everything but S, and key[i] matches value[i]",
      src("V4", "参数说明 key (key、value中对应tensor的shape需要完全一致; N和D需要相等)"))
def kvlist_uniform(c: CallView) -> str | None:
    if not c.is_kv_list:
        return None
    keys, values = c.spec_list("key"), c.spec_list("value")
    if not keys:
        return None
    s_axis = {"BSH": 1, "BSND": 1, "BNSD": 2}.get(c.in_layout)
    if s_axis is None:
        return None
    first = keys[0]
    for i, k in enumerate(keys):
        if i < len(values) and values[i].shape != k.shape:
            return f"key[{i}].shape={list(k.shape)} != value[{i}].shape={list(values[i].shape)}"
        drop = [d for j, d in enumerate(k.shape) if j != s_axis]
        if k.ndim != first.ndim or drop != [d for j, d in enumerate(first.shape) if j != s_axis]:
            return f"key[{i}].shape={list(k.shape)} differs from key[0].shape=" \
                   f"{list(first.shape)} outside the S axis"
    return None


@rule("kvlist.b_max_256", "a key/value tensor list allows B <= 256",
      src("V4", "参数说明 key (非连续场景下B不能大于256)"))
def kvlist_b_max_256(c: CallView) -> str | None:
    if c.is_kv_list and c.B > LIST_MAX_BATCH:
        return f"B={c.B} > {LIST_MAX_BATCH} with a key/value tensor list"
    return None


@rule("kvlist.not_paged", "tensor-list key/value is not supported with paged attention",
      src("V4", "约束说明 PagedAttention (不支持tensorlist场景)"))
def kvlist_not_paged(c: CallView) -> str | None:
    if c.is_kv_list and c.paged:
        return "key/value tensor list together with block_table"
    return None


@rule("kvlist.no_left_padding", "tensor-list key/value is not supported with left padding",
      src("V4", "当Q_S等于1时 kv左padding场景 (不支持PagedAttention、tensorlist); SEM §2"))
def kvlist_no_left_padding(c: CallView) -> str | None:
    if c.is_kv_list and c.left_padding:
        return "key/value tensor list together with query_padding_size/kv_padding_size"
    return None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("kvlist.count", "kvlist", {"key": [T(1, 16, 128)] * 3, "value": [T(1, 16, 128)] * 3}),
    ("kvlist.batch_one", "kvlist", {"key": [T(2, 16, 128)] * 2, "value": [T(2, 16, 128)] * 2}),
    ("kvlist.uniform", "kvlist", {"value": [T(1, 16, 128), T(1, 20, 128)]}),
    ("kvlist.b_max_256", "kvlist", {"query": T(257, 1, 256), "key": [T(1, 16, 128)] * 257,
                                    "value": [T(1, 16, 128)] * 257}),
    ("kvlist.not_paged", "paged_decode", {"key": [T(8, 16, 128)] * 2,
                                          "value": [T(8, 16, 128)] * 2}),
    ("kvlist.no_left_padding", "kvlist", {"kv_padding_size": [0]}),
]
