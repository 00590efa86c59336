"""`torch-math`: FIA composed around torch's unfused math attention, in the input dtype.

A second kernel behind the same composition as torch-sdpa (torch_composed.py),
so a disagreement between the two points at a kernel, not at the composition.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.runners.base import register
from fia_fuzz.runners.torch_composed import TorchComposition, in_dtype, lse_of


@register("torch-math")
class TorchMathRunner(TorchComposition):
    name = "torch-math"

    def _attend(self, q: Any, k: Any, v: Any, bias: Any, scale: float) -> tuple[Any, Any]:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.MATH]):
            out = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=in_dtype(bias, q), scale=scale)
        return out, lse_of(q, k, bias, scale)
