"""FIA composed around a torch attention kernel: the base of the torch runners.

`TorchComposition` wraps a kernel (`_attend`) in the composition of the op's
features (`fia_fuzz.runners.composition`), which is independent of the golden
model on purpose; torch_sdpa.py and torch_math.py each supply one kernel.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from fia_fuzz.op.case import Case
from fia_fuzz.runners.base import Runner, bound_device
from fia_fuzz.runners.composition.limits import refusal, working_bytes


def default_device() -> str:
    """CUDA when torch sees a GPU, else CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class TorchComposition(Runner):
    """A torch kernel wrapped in the op's composition; `device` as torch names it."""

    def __init__(self, device: str | None = None, post_quant_order: str | None = None):
        self._device = device
        self.post_quant_order = post_quant_order

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = default_device()
        return self._device

    @property
    def device_memory(self) -> int | None:  # type: ignore[override]
        """The memory of the device the kernel runs on, from the device itself (None on the
        CPU: a host backend)."""
        import torch

        dev = torch.device(self.device)
        if dev.type != "cuda":
            return None
        return int(torch.cuda.get_device_properties(dev).total_memory)

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("torch") is None:
            return False, "torch is not installed (pip install 'fia-fuzz[torch]')"
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        why = refusal(case.view()) or self._too_big(case)
        return (False, f"{self.name}: {why}") if why else (True, "")

    def working_bytes(self, case: Case) -> int:
        """The composition's gathered tensors and scores (composition/limits.py); 0 where
        the call's shapes are undetermined (it is refused before it runs)."""
        try:
            return working_bytes(case.view())
        except (LookupError, ValueError, TypeError):
            return 0

    def _too_big(self, case: Case) -> str:
        """Why the device cannot take the case now ("" when it can): its inputs and outputs
        (`device_bytes`: whole caches, however few blocks are read) and the composition's
        working memory over the device memory free to this process (the driver's free
        memory plus what torch holds cached)."""
        import torch

        dev = torch.device(self.device)
        if dev.type != "cuda":
            return ""
        need, work = case.device_bytes(), self.working_bytes(case)
        free, _ = torch.cuda.mem_get_info(dev)
        free += torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)
        if need + work <= free:
            return ""
        return (f"device memory: the case needs {(need + work) / 2**30:.2f} GiB (device_bytes "
                f"{need} + working {work}), {self.device} has {free / 2**30:.2f} GiB free")

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


def in_dtype(bias: Any, q: Any) -> Any:
    """The additive mask bias in the query dtype (torch SDPA wants them equal)."""
    return None if bias is None else bias.to(q.dtype)


def lse_of(q: Any, k: Any, bias: Any, scale: float) -> Any:
    """logsumexp of the fp32 biased scores, for kernels that do not return it."""
    import torch

    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    if bias is not None:
        scores = scores + bias
    return torch.logsumexp(scores, dim=-1)
