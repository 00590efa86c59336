"""`torch-sdpa`: FIA composed around torch's fused scaled_dot_product_attention kernel.

On CPU it calls `aten._scaled_dot_product_flash_attention_for_cpu`, the kernel
the public SDPA dispatches to for these inputs, directly because it also
returns the logsumexp; on CUDA the public SDPA (flash/memory-efficient) with
the lse computed beside it. The op's features around the kernel:
torch_composed.py.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.runners.base import register
from fia_fuzz.runners.torch_composed import TorchComposition, in_dtype, lse_of


def _same_head_dim(q: Any, k: Any, v: Any) -> tuple[Any, Any, Any, int]:
    """Zero-pad q/k or v so the fused CPU kernel gets one head size; exact (zeros add 0)."""
    import torch.nn.functional as F

    dq, dv = q.shape[-1], v.shape[-1]
    if dq < dv:
        q, k = F.pad(q, (0, dv - dq)), F.pad(k, (0, dv - dq))
    elif dv < dq:
        v = F.pad(v, (0, dq - dv))
    return q, k, v, dv


@register("torch-sdpa")
class TorchSdpaRunner(TorchComposition):
    name = "torch-sdpa"

    def _attend(self, q: Any, k: Any, v: Any, bias: Any, scale: float) -> tuple[Any, Any]:
        import torch

        if q.device.type == "cpu":
            q, k, v, dv = _same_head_dim(q, k, v)
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, attn_mask=bias, scale=scale)
            return out[..., :dv], lse
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=in_dtype(bias, q), scale=scale)
        return out, lse_of(q, k, bias, scale)
