"""What the torch composition cannot express, each with the reason (no torch needed)."""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.atlas_a2 import TREE_SPARSE


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

