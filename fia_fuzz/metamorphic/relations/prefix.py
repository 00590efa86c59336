"""Shared prefix vs concatenation [V2 prefix, fia-semantics.md §6].

key_shared_prefix/value_shared_prefix (batch 1) are prepended to every
batch's KV, and masks and mode-3/4 anchoring already count the prefix in S2,
so the partner concatenates them (actual_seq_lengths_kv grows by the prefix
length) and keeps every mask as it is. A single-batch source without a
prefix is split the other way: its first KV rows become the prefix, with a
prefix tensor longer than actual_shared_prefix_len (garbage past it).
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Partner,
    keep_legal,
    relation,
    require_absent,
    view_of,
)
from fia_fuzz.metamorphic.equality import Tolerance
from fia_fuzz.metamorphic.paging import garbage
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS, from_bnsd, to_bnsd
from fia_fuzz.op.tensors import dtype_name

PREFIX_TOLERANCE = Tolerance(2, "the kernel walks the prefix as a separate KV segment, so its "
                                "S2 tiles and the fp32 softmax accumulation differ from one "
                                "concatenated sequence")
#: Not allowed with a shared prefix [SEM §6] or not modelled here.
NOT_WITH_PREFIX = ("block_table", "query_padding_size", "kv_padding_size", "key_rope",
                   "antiquant_scale", "key_antiquant_scale")


def _concatenate(call: Call, v: CallView) -> Partner:
    p = v.prefix_len
    act_kv = list(v.act_kv)
    new = dict(call, actual_seq_lengths_kv=[p + a for a in act_kv])
    for name, pre in (("key", "key_shared_prefix"), ("value", "value_shared_prefix")):
        x = to_bnsd(call[name], v.in_layout, v.KV_N)
        head = to_bnsd(call[pre], v.in_layout, v.KV_N)[:, :, :p]
        head = np.broadcast_to(head, (x.shape[0],) + head.shape[1:])
        new[name] = from_bnsd(np.concatenate([head, x], axis=2), v.in_layout)
        new.pop(pre)
    new.pop("actual_shared_prefix_len", None)
    return Partner("concatenated", new, PREFIX_TOLERANCE)


def _split(case: Case, call: Call, v: CallView) -> list[Partner]:
    if v.B != 1:
        raise NotApplicable("only one batch can share its first KV rows as a prefix")
    act_kv = list(v.act_kv)[0]
    p = min(act_kv - 1, max(1, v.S2 // 2))
    if p < 1:
        raise NotApplicable("fewer than two valid KV rows to split")
    partners = []
    # Mask columns count the prefix first, so a split keeps them; with a prefix tensor
    # longer than actual_shared_prefix_len the docs do not say which count applies.
    spares = (("split", 0),) if call.get("atten_mask") is not None else \
        (("split", 0), ("split-longer-prefix", 3))
    for label, spare in spares:
        new = dict(call)
        for name, pre in (("key", "key_shared_prefix"), ("value", "value_shared_prefix")):
            x = to_bnsd(call[name], v.in_layout, v.KV_N)
            junk = garbage(x.shape[:2] + (spare, x.shape[3]), dtype_name(x.dtype), case.seed,
                           f"prefix.{name}")
            new[pre] = from_bnsd(np.concatenate([x[:, :, :p], junk], axis=2), v.in_layout)
            new[name] = from_bnsd(x[:, :, p:], v.in_layout)
        if call.get("actual_seq_lengths_kv") is not None:
            new["actual_seq_lengths_kv"] = [act_kv - p]
        if spare:
            new["actual_shared_prefix_len"] = [p]
        partners.append(Partner(label, new, PREFIX_TOLERANCE))
    return partners


@relation("prefix", "a shared KV prefix equals the prefix concatenated to every batch",
          "V2 参数说明 keySharedPrefix/actualSharedPrefixLen; fia-semantics.md §6",
          (PREFIX_TOLERANCE,))
def prefix_vs_concatenation(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if v.in_layout not in DENSE_LAYOUTS or v.is_kv_list:
        raise NotApplicable("a shared prefix needs dense, non-list KV")
    require_absent(call, NOT_WITH_PREFIX, "not allowed with (or not modelled for) a prefix")
    if call.get("key_shared_prefix") is not None:
        return keep_legal([_concatenate(call, v)], case.rules)
    if call.get("pse_shift") is not None:
        raise NotApplicable("the docs do not say whether pse_shift columns count the prefix")
    return keep_legal(_split(case, call, v), case.rules)
