"""What the torch composition cannot express, each with the reason (no torch needed)."""

from __future__ import annotations

from fia_fuzz.spec.call import CallView

#: Antiquant modes whose factor depends on the token position [SEM §7].
_PER_TOKEN_MODES = (1, 3, 4, 5)


def refusal(view: CallView) -> str | None:
    """Why the composition cannot run this call, or None when it can."""
    q = view.spec("query")
    if q is not None and q.dtype == "int8":
        return ("int8 full quantisation (int8 query with dequant_scale1/quant_scale1/"
                "dequant_scale2, SEM §8): the int32 Q·K^T and the int8-requantised P "
                "have no torch SDPA counterpart")
    if view.has("dequant_scale_query") or view.attrs["query_quant_mode"]:
        return ("query dequantisation (dequant_scale_query/query_quant_mode, full-quant "
                "MLA, SEM §8) needs an int8 query, which SDPA cannot take")
    if view.has("key_rope_antiquant_scale"):
        return "key_rope_antiquant_scale (quantised rope keys) is undocumented beyond its name"
    if view.packed and view.has("atten_mask") and view.attrs["sparse_mode"] in (0, 1):
        return ("a user atten_mask with a packed (TND/NTD) layout: its coordinates are "
                "undocumented (V4 §TND allows sparse_mode 0 without mask, or 3)")
    if view.packed and view.has("pse_shift"):
        return "pse_shift with a packed (TND/NTD) layout: undocumented (V4 §TND excludes pse)"
    if view.has("key_shared_prefix"):
        modes = _antiquant_modes(view)
        if any(m in _PER_TOKEN_MODES for m in modes):
            return ("per-token antiquant scales with a shared prefix: which scale the "
                    "prefix tokens take is undocumented (SEM §6, §7)")
    return None


def _antiquant_modes(view: CallView) -> list[int]:
    if view.has("key_antiquant_scale"):
        return [view.attr_int("key_antiquant_mode"), view.attr_int("value_antiquant_mode")]
    if view.has("antiquant_scale"):
        return [view.attr_int("antiquant_mode")]
    return []
