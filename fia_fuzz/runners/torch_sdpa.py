"""FIA composed from torch's scaled_dot_product_attention: real kernels we can run here.

`torch-sdpa` calls the fused kernel (on CPU `_scaled_dot_product_flash_attention_for_cpu`,
the kernel the public SDPA dispatches to for these inputs, called directly because
it also returns the logsumexp); `torch-math` forces torch's unfused math backend
in the input dtype, as a second implementation. Both compose the op's features
around the attention call: layouts by permute, GQA by repeating KV heads.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from fia_fuzz.runners.base import Runner, register
from fia_fuzz.runners.torch_convert import to_numpy, to_torch
from fia_fuzz.spec import Case, output_specs
from fia_fuzz.spec.call import CallView

#: Optional inputs this composition does not express yet.
UNSUPPORTED = ("pse_shift", "atten_mask", "actual_seq_lengths", "actual_seq_lengths_kv",
               "block_table", "query_padding_size", "kv_padding_size", "key_shared_prefix",
               "query_rope", "learnable_sink", "antiquant_scale", "key_antiquant_scale",
               "dequant_scale1", "quant_scale2", "dequant_scale_query")


def _to_bnsd(t: Any, layout: str, heads: int) -> Any:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    b, s, h = t.shape
    return t.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3)


def _from_bnsd(t: Any, layout: str) -> Any:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    if layout == "NBSD":
        return t.permute(1, 0, 2, 3)
    b, n, s, d = t.shape
    return t.permute(0, 2, 1, 3).reshape(b, s, n * d)


class _TorchComposition(Runner):
    fused: bool = True

    def __init__(self, device: str = "cpu"):
        self.device = device

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("torch") is None:
            return False, "torch is not installed (pip install 'fia-fuzz[torch]')"
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        used = [n for n in UNSUPPORTED if case.params.get(n) is not None]
        if used:
            return False, f"{self.name} does not express {used} yet"
        if isinstance(case.params.get("key"), list):
            return False, f"{self.name} does not express tensor-list KV yet"
        if case.view().in_layout not in ("BSH", "BSND", "BNSD"):
            return False, f"{self.name} does not express layout {case.view().in_layout} yet"
        return True, ""

    def metadata(self) -> dict[str, str]:
        import torch

        return {"runner": self.name, "torch": torch.__version__, "device": self.device}

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        import torch

        view = CallView(call)
        layout = view.in_layout
        q = _to_bnsd(to_torch(call["query"], self.device), layout, view.N)
        k = _to_bnsd(to_torch(call["key"], self.device), layout, view.KV_N)
        v = _to_bnsd(to_torch(call["value"], self.device), layout, view.KV_N)
        g = view.N // view.KV_N
        if g > 1:
            k = k.repeat_interleave(g, dim=1)
            v = v.repeat_interleave(g, dim=1)
        scale = float(view.attrs["scale"])
        with torch.no_grad():
            out, lse = self._attend(q, k, v, scale)
        out_spec, lse_spec = output_specs(view)
        out = _from_bnsd(out, view.out_layout)
        if not view.attrs["softmax_lse_flag"]:
            return to_numpy(out), np.zeros(lse_spec.shape, np.float32)
        return to_numpy(out), to_numpy(lse.float().unsqueeze(-1))

    def _attend(self, q: Any, k: Any, v: Any, scale: float) -> tuple[Any, Any]:
        raise NotImplementedError


@register("torch-sdpa")
class TorchSdpaRunner(_TorchComposition):
    name = "torch-sdpa"

    def _attend(self, q: Any, k: Any, v: Any, scale: float) -> tuple[Any, Any]:
        import torch

        if q.device.type == "cpu":
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, scale=scale)
            return out, lse
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
        return out, _lse(q, k, scale)


@register("torch-math")
class TorchMathRunner(_TorchComposition):
    name = "torch-math"

    def _attend(self, q: Any, k: Any, v: Any, scale: float) -> tuple[Any, Any]:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.MATH]):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
        return out, _lse(q, k, scale)


def _lse(q: Any, k: Any, scale: float) -> Any:
    """logsumexp of the fp32 scores, for backends whose kernel does not return it."""
    import torch

    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    return torch.logsumexp(scores, dim=-1)
