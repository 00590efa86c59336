"""FIA composed around torch's scaled_dot_product_attention: real kernels we can run here.

`torch-sdpa` calls the fused kernel: on CPU
`aten._scaled_dot_product_flash_attention_for_cpu`, the kernel the public SDPA
dispatches to for these inputs, called directly because it also returns the
logsumexp; on CUDA the public SDPA (flash/memory-efficient) with the lse
computed beside it. `torch-math` forces torch's unfused math backend in the
input dtype, as a second implementation. Both share the composition of the
op's features around the kernel (`fia_fuzz.runners.composition`), which is
independent of the golden model on purpose.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from fia_fuzz.runners.base import Runner, bound_device, register
from fia_fuzz.runners.composition.limits import refusal
from fia_fuzz.spec import Case


def default_device() -> str:
    """CUDA when torch sees a GPU, else CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class _TorchComposition(Runner):
    """A torch kernel wrapped in the op's composition; `device` as torch names it."""

    def __init__(self, device: str | None = None, post_quant_order: str | None = None):
        self._device = device
        self.post_quant_order = post_quant_order

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = default_device()
        return self._device

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("torch") is None:
            return False, "torch is not installed (pip install 'fia-fuzz[torch]')"
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        why = refusal(case.view())
        return (False, f"{self.name}: {why}") if why else (True, "")

    def metadata(self) -> dict[str, str]:
        import torch

        meta = {"runner": self.name, "torch": torch.__version__, "device": self.device,
                "bound_device": bound_device()}
        if self.device.startswith("cuda"):
            meta["device_name"] = torch.cuda.get_device_name(torch.device(self.device))
        else:
            import platform

            meta["device_name"] = platform.processor() or platform.machine()
        return meta

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        import torch

        from fia_fuzz.runners.composition.attend import compose

        with torch.no_grad():
            return compose(call, self._attend, self.device, self.post_quant_order)

    def _attend(self, q: Any, k: Any, v: Any, bias: Any, scale: float) -> tuple[Any, Any]:
        raise NotImplementedError


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
class TorchSdpaRunner(_TorchComposition):
    name = "torch-sdpa"

    def _attend(self, q: Any, k: Any, v: Any, bias: Any, scale: float) -> tuple[Any, Any]:
        import torch

        if q.device.type == "cpu":
            q, k, v, dv = _same_head_dim(q, k, v)
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, attn_mask=bias, scale=scale)
            return out[..., :dv], lse
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=_in_dtype(bias, q), scale=scale)
        return out, _lse(q, k, bias, scale)


@register("torch-math")
class TorchMathRunner(_TorchComposition):
    name = "torch-math"

    def _attend(self, q: Any, k: Any, v: Any, bias: Any, scale: float) -> tuple[Any, Any]:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.MATH]):
            out = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=_in_dtype(bias, q), scale=scale)
        return out, _lse(q, k, bias, scale)


def _in_dtype(bias: Any, q: Any) -> Any:
    return None if bias is None else bias.to(q.dtype)


def _lse(q: Any, k: Any, bias: Any, scale: float) -> Any:
    """logsumexp of the fp32 biased scores, for kernels that do not return it."""
    import torch

    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    if bias is not None:
        scores = scores + bias
    return torch.logsumexp(scores, dim=-1)
