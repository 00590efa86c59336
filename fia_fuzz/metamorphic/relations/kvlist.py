"""Tensor-list KV vs one batched KV tensor [V4 key/value tensorList, fia-semantics.md §2].

The list form gives each batch its own (1, S_b, ...) tensor. Cut at the
batch's S2 the list is the batched tensor split apart (only base addresses
change: exact); cut at each batch's actual length it has its own S per
element (the kernel may tile by that S: tolerance). A list source becomes a
batched tensor zero-padded to the longest element, with the element lengths
as actual_seq_lengths_kv.
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
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS, from_bnsd, to_bnsd

SPLIT_EXACT = Tolerance(0, "the same shapes and data; only each batch's base address changes")
TRIM_TOLERANCE = Tolerance(2, "each list element has its own S, which the kernel may use for "
                              "its S2 tiling, reordering the fp32 accumulation")
#: Not allowed with a tensor list [SEM §2].
NOT_WITH_LIST = ("block_table", "query_padding_size", "kv_padding_size", "key_shared_prefix")


def _split(x: np.ndarray, layout: str, heads: int, cut: list[int]) -> list[np.ndarray]:
    bnsd = to_bnsd(x, layout, heads)
    return [from_bnsd(bnsd[b:b + 1, :, :n, :], layout) for b, n in enumerate(cut)]


@relation("kv_list", "a tensor list of per-batch KV equals the batched KV tensor",
          "V4 参数说明 key/value (tensorList); fia-semantics.md §2",
          (SPLIT_EXACT, TRIM_TOLERANCE,))
def list_vs_batched(case: Case, call: Call) -> list[Partner]:
    v = view_of(call)
    if v.in_layout not in DENSE_LAYOUTS:
        raise NotApplicable(f"{v.in_layout}: tensor lists need a dense layout")
    require_absent(call, NOT_WITH_LIST, "not allowed with a tensor list")
    require_absent(call, ("key_rope",), "rope KV lists not modelled")
    if v.is_kv_list:
        return keep_legal([_batched(call, v)], case.rules)
    if v.B > 256:
        raise NotApplicable(f"B = {v.B} > 256, the tensor-list limit")
    act_kv = list(v.act_kv)
    cuts = {"split": ([v.S2] * v.B, SPLIT_EXACT)}
    if call.get("actual_seq_lengths_kv") is not None and min(act_kv) < v.S2:
        cuts["trimmed"] = ([max(a, 1) for a in act_kv], TRIM_TOLERANCE)
    partners = []
    for label, (cut, tol) in cuts.items():
        new = dict(call)
        for name in ("key", "value"):
            new[name] = _split(call[name], v.in_layout, v.KV_N, cut)
        partners.append(Partner(label, new, tol))
    return keep_legal(partners, case.rules)


def _batched(call: Call, v: CallView) -> Partner:
    keys = [to_bnsd(k, v.in_layout, v.KV_N) for k in call["key"]]
    sizes = [k.shape[2] for k in keys]
    act = [min(a, s) for a, s in zip(v.act_kv, sizes,
                                     strict=True)]
    new = dict(call, actual_seq_lengths_kv=act)
    for name in ("key", "value"):
        parts = [to_bnsd(x, v.in_layout, v.KV_N) for x in call[name]]
        s = max(sizes)
        padded = [np.concatenate([p, np.zeros(p.shape[:2] + (s - p.shape[2], p.shape[3]),
                                              p.dtype)], axis=2) for p in parts]
        new[name] = from_bnsd(np.concatenate(padded, axis=0), v.in_layout)
    return Partner("batched", new, TRIM_TOLERANCE)
