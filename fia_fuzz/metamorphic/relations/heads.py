"""GQA vs repeated KV heads [V4 参数说明 numKeyValueHeads, fia-semantics.md §5 GQA].

Query head n reads KV head n // G, so repeating every KV head G times (or r
times, leaving groups of G / r) and raising num_key_value_heads to match is
the same attention.
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
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import CACHE_FORM_OF_RANK, from_bnsd, to_bnsd

GQA_TOLERANCE = Tolerance(2, "the kernel may tile the G query heads of a group together and "
                             "pick its S2 tiles by G, which reorders the fp32 softmax and P·V "
                             "accumulation; every product is the same")
#: antiquant parameters and the attribute holding their mode [SEM §7].
ANTIQUANT = {"antiquant_scale": "antiquant_mode", "antiquant_offset": "antiquant_mode",
             "key_antiquant_scale": "key_antiquant_mode",
             "key_antiquant_offset": "key_antiquant_mode",
             "value_antiquant_scale": "value_antiquant_mode",
             "value_antiquant_offset": "value_antiquant_mode"}


def repeat_param(p: np.ndarray, combined: bool, mode: int, decode: bool, kv_n: int, d: int,
                 r: int, nz: bool = False) -> np.ndarray:
    """An antiquant scale/offset with every KV head's entries repeated r times [SEM §7].

    Per-channel forms after the key/value lead dim (2 combined, 1 separate
    decode, none separate prefill or over 5-D NZ caches, whose forms are
    rulebook/nz.per_channel_shape): (H,), (KV_N, D), (KV_N, 1, D); per-tensor
    and per-token forms have no head axis; mode 2 is (KV_N,), modes 3 and 5
    (B|block_num, KV_N, S2|block_size).
    """
    if mode in (2,):
        return np.repeat(p, r, axis=0)
    if mode in (3, 5):
        return np.repeat(p, r, axis=1)
    if mode != 0:
        return p
    lead = 1 if (combined or decode) and not nz else 0
    rest = p.shape[lead:]
    if len(rest) == 0 or p.size == (2 if combined else 1):
        return p
    if len(rest) == 1:
        y = p.reshape(p.shape[:lead] + (kv_n, d))
        return np.ascontiguousarray(np.repeat(y, r, axis=lead).reshape(
            p.shape[:lead] + (kv_n * r * d,)))
    return np.ascontiguousarray(np.repeat(p, r, axis=lead))


def repeat_heads(x: np.ndarray, form: str, layout: str, kv_n: int, r: int) -> np.ndarray:
    """Each KV head of `x` repeated r times in place (heads h*r .. h*r+r-1 = old head h).

    `form` is "dense" (x in `layout`), or the paged cache form "BnBsH",
    "BnNBsD" or "NZ" (fia-semantics.md §2).
    """
    if form == "dense":
        if layout == "TND":
            return np.ascontiguousarray(np.repeat(x, r, axis=1))
        if layout == "NTD":
            return np.ascontiguousarray(np.repeat(x, r, axis=0))
        return from_bnsd(np.repeat(to_bnsd(x, layout, kv_n), r, axis=1), layout)
    if form == "BnBsH":
        nb, bs, h = x.shape
        y = np.repeat(x.reshape(nb, bs, kv_n, h // kv_n), r, axis=2)
        return np.ascontiguousarray(y.reshape(nb, bs, kv_n * r * (h // kv_n)))
    return np.ascontiguousarray(np.repeat(x, r, axis=1))


@relation("gqa_repeat", "GQA equals MHA (or a smaller G) with each KV head repeated",
          "V4 参数说明 numKeyValueHeads; fia-semantics.md §5 (GQA)",
          (GQA_TOLERANCE,))
def gqa_repeat(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    g, kv_n = v.G, v.KV_N
    if g == 1:
        raise NotApplicable("G = 1: no KV head is shared")
    require_absent(call, ("key_rope_antiquant_scale",), "rope antiquant not modelled")
    factors = [g] + [r for r in range(2, g) if g % r == 0][:1]
    partners = []
    for r in factors:
        new = dict(call, num_key_value_heads=kv_n * r)
        for name in ("key", "value", "key_shared_prefix", "value_shared_prefix", "key_rope"):
            x = call.get(name)
            if x is None:
                continue
            paged = v.paged and name in ("key", "value", "key_rope")
            if isinstance(x, list):
                new[name] = [repeat_heads(e, "dense", v.in_layout, kv_n, r) for e in x]
            else:
                form = CACHE_FORM_OF_RANK[x.ndim] if paged else "dense"
                new[name] = repeat_heads(x, form, v.in_layout, kv_n, r)
        for name, mode_attr in ANTIQUANT.items():
            if call.get(name) is not None:
                new[name] = repeat_param(np.asarray(call[name]), name.startswith("antiquant"),
                                         int(v.attrs[mode_attr]), v.decode, kv_n,
                                         v.Dv if name.startswith("value") else v.Dk, r, v.nz)
        partners.append(Partner(f"G{g}->G{g // r}", new, GQA_TOLERANCE))
    return keep_legal(partners, case.rules)
