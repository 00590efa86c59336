"""What the torch composition cannot express, each with the reason (no torch needed)."""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.atlas_a2 import TREE_SPARSE
from fia_fuzz.runners.composition.geometry import windows

#: Bytes of a working element: the gathered q/k/v, the bias and the scores are at most fp32.
_ITEM = 4
#: Score-sized fp32 tensors alive at once: the bias, its rows-attend test and where-copy, and
#: a math kernel's scores and softmax (a fused kernel holds fewer).
_SCORE_COPIES = 4


def refusal(view: CallView) -> str | None:
    """Why the composition cannot run this call, or None when it can."""
    q = view.spec("query")
    if q is not None and q.dtype == "int8" and not view.mla_full_quant:
        return ("int8 full quantisation (int8 query with dequant_scale1/quant_scale1/"
                "dequant_scale2, SEM §8): the int32 Q·K^T and the int8-requantised P "
                "have no torch SDPA counterpart")
    if view.has("key_rope_antiquant_scale"):
        return "key_rope_antiquant_scale (quantised rope keys) is undocumented beyond its name"
    if view.packed and view.has("atten_mask") and view.attrs["sparse_mode"] in (0, 1):
        return ("a user atten_mask with a packed (TND/NTD) layout: its coordinates are "
                "undocumented (V4 §TND allows sparse_mode 0 without mask, or 3)")
    if view.attrs["sparse_mode"] == TREE_SPARSE:
        return "sparse_mode 9 (the A2 tree mask, device-a2.md row 3): no documented arithmetic"
    return None



def working_bytes(view: CallView) -> int:
    """Device memory the composition allocates beyond the call's inputs and outputs (an upper
    bound): every batch's query rows and KV tokens gathered into (B, heads, rows|keys, D)
    tensors, plus _SCORE_COPIES tensors of (B, N, rows, keys) scores. A far case's K/V
    gathered per batch, or its scores, can outgrow the cache it was read from."""
    wins = windows(view)
    rows = max((w.rows for w in wins), default=0)
    keys = max((w.keys for w in wins), default=0) + (1 if view.has("learnable_sink") else 0)
    if not rows or not keys:
        return 0
    rope = view.spec("query_rope")
    dq = view.D + (rope.shape[-1] if rope is not None else 0)
    gathered = view.N * rows * dq + view.KV_N * keys * (dq + view.Dv)
    return len(wins) * _ITEM * (gathered + _SCORE_COPIES * view.N * rows * keys)
