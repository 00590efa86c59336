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
from fia_fuzz.metamorphic.layouts import from_bnsd, to_bnsd
from fia_fuzz.spec import Case

GQA_TOLERANCE = Tolerance(2, "the kernel may tile the G query heads of a group together and "
                             "pick its S2 tiles by G, which reorders the fp32 softmax and P·V "
                             "accumulation; every product is the same")
#: Per-KV-head quantisation parameters would need repeating too (not modelled).
PER_KV_HEAD = ("antiquant_scale", "antiquant_offset", "key_antiquant_scale",
               "key_antiquant_offset", "value_antiquant_scale", "value_antiquant_offset",
               "key_rope_antiquant_scale")


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


def cache_form(x: np.ndarray) -> str:
    return {3: "BnBsH", 4: "BnNBsD", 5: "NZ"}[x.ndim]


@relation("gqa_repeat", "GQA equals MHA (or a smaller G) with each KV head repeated",
          "V4 参数说明 numKeyValueHeads; fia-semantics.md §5 (GQA)",
          (GQA_TOLERANCE,))
def gqa_repeat(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    g, kv_n = v.G, v.KV_N
    if g == 1:
        raise NotApplicable("G = 1: no KV head is shared")
    require_absent(call, PER_KV_HEAD, "per-KV-head quantisation parameters are not repeated")
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
                form = cache_form(x) if paged else "dense"
                new[name] = repeat_heads(x, form, v.in_layout, kv_n, r)
        partners.append(Partner(f"G{g}->G{g // r}", new, GQA_TOLERANCE))
    return keep_legal(partners)
