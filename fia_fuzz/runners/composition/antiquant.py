"""KV pseudo-quantisation: int8/int4 key/value dequantised before attention [SEM §7].

dequantised = (kv + offset) * scale, in fp32 for high precision and in the
query dtype for high performance (inner_precise bit0 = 1, float16 only, not
with pse_shift [SEM §5]), then cast to the query dtype. Separate
key_/value_ parameters win over the combined ones (first dim 2: key, value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fia_fuzz.runners.composition.kv import paged_coordinates
from fia_fuzz.runners.torch_convert import to_torch

#: Modes whose factor does not depend on the token position (usable for prefix tokens).
POSITION_FREE = (0, 2)


@dataclass
class Dequant:
    """Scale and optional offset of one of key/value, in one of the modes 0-5."""

    scale: torch.Tensor
    offset: torch.Tensor | None
    mode: int
    kv_heads: int
    block_table: np.ndarray | None
    block_size: int

    def factor(self, t: torch.Tensor, b: int, lo: int, hi: int) -> torch.Tensor:
        """`t` (scale or offset) broadcastable to (KV_N, hi - lo, d) for batch b."""
        mode = self.mode
        if mode == 0:
            if t.numel() == 1:
                return t.reshape(1, 1, 1)
            return t.reshape(self.kv_heads, 1, -1)
        if mode == 1:
            per_token = t.reshape(t.shape[-2], t.shape[-1])
            return per_token[b, lo:hi].reshape(1, -1, 1)
        if mode == 2:
            return t.reshape(self.kv_heads, 1, 1)
        if mode == 3:
            return t[b, :, lo:hi].unsqueeze(-1)
        blocks, offsets = paged_coordinates(self.block_table, self.block_size, b, lo, hi)
        if mode == 4:
            return t[blocks, offsets].reshape(1, -1, 1)
        return t[blocks, :, offsets].permute(1, 0).unsqueeze(-1)

    def apply(self, kv: torch.Tensor, b: int, lo: int, hi: int, work: torch.dtype,
              out: torch.dtype) -> torch.Tensor:
        x = kv.to(work)
        if self.offset is not None:
            x = x + self.factor(self.offset, b, lo, hi).to(work)
        return (x * self.factor(self.scale, b, lo, hi).to(work)).to(out)


def dequantisers(call: dict[str, Any], kv_heads: int, device: str
                 ) -> dict[str, Dequant] | None:
    """{"key": ..., "value": ...} for an int KV call, None when KV is float."""
    table = call.get("block_table")
    table = None if table is None else np.asarray(table)
    block_size = int(call.get("block_size") or 0)

    def make(scale: Any, offset: Any, mode: int) -> Dequant:
        return Dequant(to_torch(np.asarray(scale), device),
                       None if offset is None else to_torch(np.asarray(offset), device),
                       mode, kv_heads, table, block_size)

    if call.get("key_antiquant_scale") is not None:
        return {
            "key": make(call["key_antiquant_scale"], call.get("key_antiquant_offset"),
                        int(call.get("key_antiquant_mode") or 0)),
            "value": make(call["value_antiquant_scale"], call.get("value_antiquant_offset"),
                          int(call.get("value_antiquant_mode") or 0)),
        }
    if call.get("antiquant_scale") is not None:
        scale = np.asarray(call["antiquant_scale"])
        offset = call.get("antiquant_offset")
        offset = None if offset is None else np.asarray(offset)
        mode = int(call.get("antiquant_mode") or 0)
        return {name: make(scale[i], None if offset is None else offset[i], mode)
                for i, name in enumerate(("key", "value"))}
    return None
