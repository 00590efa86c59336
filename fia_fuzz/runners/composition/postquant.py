"""Post-quantisation of attention_out to int8, applied after attention [SEM §8].

Two orders exist in the vendor's references (SEM §8): the decode reference
rounds x*scale first and adds the offset after, in fp16
(sat8(rne(rne(sat9(fp16(x)*fp16(scale))) + fp16(offset)))); the prefill
reference adds the offset before rounding, in fp32 (sat8(rne(x*scale +
offset))). They differ by at most 1 LSB for non-integer offsets. The runner
uses the order of the branch it runs unless told otherwise.
"""

from __future__ import annotations

import torch

ORDERS = ("round_then_offset", "offset_then_round")


def channel_shape(t: torch.Tensor, heads: int) -> torch.Tensor:
    """A per-tensor (1 element) or per-channel (N*Dv elements) parameter as (N|1, 1, Dv|1)."""
    if t.numel() == 1:
        return t.reshape(1, 1, 1)
    return t.reshape(heads, 1, -1)


def post_quantise(x: torch.Tensor, scale: torch.Tensor, offset: torch.Tensor | None,
                  order: str) -> torch.Tensor:
    """int8 of x (..., N, S, Dv) with scale/offset broadcastable to (N, 1, Dv)."""
    if order not in ORDERS:
        raise ValueError(f"post-quant order {order!r}, expected one of {ORDERS}")
    if order == "round_then_offset":
        y = x.to(torch.float16) * scale.to(torch.float16)
        y = torch.round(y.clamp(-256, 255))
        if offset is not None:
            y = torch.round(y + offset.to(torch.float16))
        return y.clamp(-128, 127).to(torch.int8)
    y = x.float() * scale.float()
    if offset is not None:
        y = y + offset.float()
    return torch.round(y).clamp(-128, 127).to(torch.int8)
