"""Layout permutations: the same data as BSH, BSND, BNSD, TND/NTD, and every output layout.

[V4 inputLayout, fia-semantics.md §2]. Dense layouts only change strides, so
the partner must be bit-identical. Packed layouts (TND/NTD) hold each
batch's valid rows back to back with cumulative lengths; rows a right-padded
source does not compute are 0 (lse +inf) on both sides [SEM §3].
"""

from __future__ import annotations

import numpy as np

from fia_fuzz.metamorphic.catalogue import (
    Call,
    NotApplicable,
    Outputs,
    Partner,
    keep_legal,
    relation,
    require_absent,
    view_of,
)
from fia_fuzz.metamorphic.equality import EXACT_ADDRESSING
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import (
    LAYOUTS,
    PACKED_LAYOUTS,
    cumulative,
    from_bnsd,
    pack,
    relayout,
    to_bnsd,
    unpack,
)

#: KV-side tensors laid out like key (fia-semantics.md §6, §9).
KV_LIKE = ("key", "value", "key_shared_prefix", "value_shared_prefix", "key_rope")
#: Inputs whose meaning under a packed layout this relation does not model.
NOT_PACKABLE = ("atten_mask", "pse_shift", "query_padding_size", "kv_padding_size",
                "key_shared_prefix", "query_rope", "antiquant_scale", "key_antiquant_scale",
                "dequant_scale_query")


def _dense_partner(call: Call, target: str) -> Partner:
    v = view_of(call)
    src_in, src_out = v.in_layout, v.out_layout
    dst_in, dst_out = LAYOUTS[target]
    new = dict(call, input_layout=target)
    new["query"] = relayout(call["query"], src_in, dst_in, v.N)
    if call.get("query_rope") is not None:
        new["query_rope"] = relayout(call["query_rope"], src_in, dst_in, v.N)
    for name in KV_LIKE:
        x = call.get(name)
        if x is None or (v.paged and name in ("key", "value", "key_rope")):
            continue
        if isinstance(x, list):
            new[name] = [relayout(e, src_in, dst_in, v.KV_N) for e in x]
        else:
            new[name] = relayout(x, src_in, dst_in, v.KV_N)
    heads = v.N

    def back(o: Outputs) -> Outputs:
        return relayout(o[0], dst_out, src_out, heads), o[1]

    return Partner(target, new, EXACT_ADDRESSING, partner_out=back)


def _packed_partner(call: Call, target: str) -> Partner:
    """A dense source as TND/NTD: each batch's valid rows back to back [V4 §TND]."""
    v = view_of(call)
    require_absent(call, NOT_PACKABLE, f"{target} partner does not model")
    if v.is_kv_list:
        raise NotApplicable("tensor-list KV has no packed form")
    dst_in, dst_out = LAYOUTS[target]
    s1, act_q, act_kv = v.S1, list(v.act_q), list(v.act_kv)
    if sum(act_q) == 0:
        raise NotApplicable("no valid query row to pack")
    q = to_bnsd(call["query"], v.in_layout, v.N)
    new = dict(call, input_layout=target, query=pack(q, dst_in, act_q),
               actual_seq_lengths=cumulative(act_q), actual_seq_lengths_kv=act_kv)
    if not v.paged:  # paged KV lengths stay per batch; contiguous ones become cumulative
        for name in ("key", "value"):
            new[name] = pack(to_bnsd(call[name], v.in_layout, v.KV_N), dst_in, act_kv)
        new["actual_seq_lengths_kv"] = cumulative(act_kv)
    src_out, flag = v.out_layout, bool(v.attrs["softmax_lse_flag"])

    def back(o: Outputs) -> Outputs:
        out = from_bnsd(unpack(o[0], dst_out, act_q, s1), src_out)
        lse = unpack(o[1], "TND", act_q, s1, fill=np.inf) if flag else o[1]
        return out, lse

    return Partner(target, new, EXACT_ADDRESSING, partner_out=back)


def _from_packed(call: Call, target: str) -> Partner:
    """A TND/NTD source in another packed layout, or unpacked into a dense one."""
    v = view_of(call)
    src_in, src_out = v.in_layout, v.out_layout
    dst_in, dst_out = LAYOUTS[target]
    act_q, act_kv = list(v.act_q), list(v.act_kv)
    new = dict(call, input_layout=target)
    if dst_in in PACKED_LAYOUTS:  # TND <-> NTD: rows keep their batch-relative positions
        names = ("query", "query_rope") + (() if v.paged else ("key", "value", "key_rope"))
        for name in names:
            x = call.get(name)
            if x is not None and dst_in != src_in:
                new[name] = np.ascontiguousarray(x.transpose(1, 0, 2))

        def back(o: Outputs) -> Outputs:
            out = o[0] if dst_out == src_out else np.ascontiguousarray(o[0].transpose(1, 0, 2))
            return out, o[1]

        return Partner(target, new, EXACT_ADDRESSING, partner_out=back)
    require_absent(call, NOT_PACKABLE, f"{target} partner does not model")
    s1 = max(act_q + [0])
    if s1 == 0:
        raise NotApplicable("no valid query row to unpack")
    new["query"] = from_bnsd(unpack(call["query"], src_in, act_q, s1), dst_in)
    new["actual_seq_lengths"] = act_q
    new["actual_seq_lengths_kv"] = act_kv
    if not v.paged:
        s2 = max(act_kv + [1])
        for name in ("key", "value"):
            new[name] = from_bnsd(unpack(call[name], src_in, act_kv, s2), dst_in)
    flag = bool(v.attrs["softmax_lse_flag"])

    def back_dense(o: Outputs) -> Outputs:
        out = pack(to_bnsd(o[0], dst_out, v.N), src_out, act_q)
        return out, (pack(o[1], "TND", act_q) if flag else o[1])

    return Partner(target, new, EXACT_ADDRESSING, partner_out=back_dense)


@relation("layout", "the same data in every other input/output layout gives the same output",
          "V4 参数说明 inputLayout; fia-semantics.md §2",
          (EXACT_ADDRESSING,))
def layout_permutations(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    own = call.get("input_layout", "BSH")
    candidates = []
    for target, (dst_in, _) in LAYOUTS.items():
        if target == own:
            continue
        try:
            if v.packed:
                candidates.append(_from_packed(call, target))
            elif dst_in in PACKED_LAYOUTS:
                candidates.append(_packed_partner(call, target))
            else:
                candidates.append(_dense_partner(call, target))
        except NotApplicable:
            continue
    return keep_legal(candidates, case.rules)
