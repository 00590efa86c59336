"""Runners for the real op on Ascend hardware: torch_npu eager v1/v2, TorchAir, MindSpore.

torch_npu cannot be imported without the Ascend toolkit (and installing it
breaks `import torch` there), so nothing here imports it at module import
time: `available()` looks for the package, imports it, and looks for a
device, and says plainly which step failed. The argument mapping lives in
`npu_calls` (device-free, contract-tested against the real schemas); this
module only moves the mapped arguments to the device, calls, and brings the
results back as NumPy. Nothing here has been run on real hardware.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from typing import Any

import ml_dtypes
import numpy as np

from fia_fuzz.op.case import Case
from fia_fuzz.rules.profiles.atlas_a2 import DEVICE_MEMORY
from fia_fuzz.runners.base import Runner, bound_device, register
from fia_fuzz.runners.npu_calls import APIS, ApiCall, refusal, to_api
from fia_fuzz.runners.torch_convert import to_numpy, to_torch


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


class _AscendRunner(Runner):
    """One front door of the op; `device_index` pins the NPU it runs on."""

    package = "torch_npu"
    distribution = "torch-npu"
    device_memory = DEVICE_MEMORY

    def __init__(self, device_index: int = 0):
        self.device_index = device_index

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec(self.package) is None:
            return False, (f"{self.name}: {self.package} is not installed "
                           "(an Ascend host with the CANN toolkit and torch_npu is needed)")
        try:
            importlib.import_module(self.package)
        except Exception as exc:  # an Ascend stack without its toolkit fails in many ways
            return False, f"{self.name}: import {self.package} failed: {exc}"
        return self._device_check()

    def _device_check(self) -> tuple[bool, str]:
        import torch

        if not hasattr(torch, "npu") or not torch.npu.is_available():
            return False, f"{self.name}: torch_npu imports but sees no NPU device"
        if self.device_index >= torch.npu.device_count():
            return False, (f"{self.name}: device index {self.device_index} >= "
                           f"{torch.npu.device_count()} visible NPUs")
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        why = refusal(self.name, case.view())
        return (False, why) if why else (True, "")

    def metadata(self) -> dict[str, str]:
        meta = {"runner": self.name, "api": APIS[self.name],
                "torch": _version("torch"), "torch_npu": _version("torch-npu"),
                "device": f"npu:{self.device_index}", "bound_device": bound_device()}
        if self.available()[0]:
            import torch

            meta["device_name"] = torch.npu.get_device_name(self.device_index)
        return meta

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        ok, why = self.available()
        if not ok:
            raise RuntimeError(why)
        mapped = to_api(self.name, call)
        out, lse = self._call(mapped)
        return _back(out), _back(lse)

    def _call(self, mapped: ApiCall) -> tuple[Any, Any]:
        import torch
        import torch_npu

        fn = getattr(torch_npu, mapped.api.rsplit(".", 1)[1])
        args, kwargs = torch_args(mapped, f"npu:{self.device_index}")
        with torch.no_grad():
            out, lse = fn(*args, **kwargs)
        torch.npu.synchronize(self.device_index)
        return out, lse


def torch_args(mapped: ApiCall, device: str) -> tuple[list[Any], dict[str, Any]]:
    """The mapped arguments with every array (and list of arrays) a torch tensor on
    `device`: the NPU here, "meta" in the contract test against torch_npu's meta functions."""
    def move(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return to_torch(x, device)
        if isinstance(x, list) and x and isinstance(x[0], np.ndarray):
            return [move(t) for t in x]
        return x

    return [move(a) for a in mapped.args], {k: move(v) for k, v in mapped.kwargs.items()}


def _back(t: Any) -> np.ndarray:
    """A returned torch or MindSpore tensor as NumPy (bfloat16 as ml_dtypes)."""
    if type(t).__module__.startswith("torch"):
        return to_numpy(t)
    dtype = str(t.dtype)
    if dtype == "BFloat16":
        import mindspore

        return t.astype(mindspore.float32).asnumpy().astype(ml_dtypes.bfloat16)
    return t.asnumpy()


@register("npu")
class NpuRunner(_AscendRunner):
    name = "npu"


@register("npu-v2")
class NpuV2Runner(_AscendRunner):
    name = "npu-v2"


@register("torchair")
class TorchAirRunner(_AscendRunner):
    """The v2 op in TorchAir graph mode (max-autotune), lengths as device tensors (seed 004)."""

    name = "torchair"

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if not ok:
            return ok, why
        if importlib.util.find_spec("torchair") is None:
            return False, "torchair: torch_npu imports but torchair is not importable"
        return True, ""

    def _call(self, mapped: ApiCall) -> tuple[Any, Any]:
        import torch
        import torchair
        from torchair.configs.compiler_config import CompilerConfig

        backend = torchair.get_npu_backend(compiler_config=CompilerConfig())
        args, kwargs = torch_args(mapped, f"npu:{self.device_index}")

        def op(*a: Any, **kw: Any) -> Any:
            return torchair.ops.npu_fused_infer_attention_score_v2(*a, **kw)

        graph = torch.compile(op, backend=backend, fullgraph=True, dynamic=False)
        with torch.no_grad():
            out, lse = graph(*args, **kwargs)
        torch.npu.synchronize(self.device_index)
        return out, lse


@register("mindspore")
class MindSporeRunner(_AscendRunner):
    """mindspore.ops.fused_infer_attention_score on an Ascend device (seed 003)."""

    name = "mindspore"
    package = "mindspore"
    distribution = "mindspore"

    def _device_check(self) -> tuple[bool, str]:
        """MindSpore imports anywhere; only a tiny real call shows whether the kernel exists."""
        try:
            self._call(to_api(self.name, _PROBE))
        except Exception as exc:  # e.g. "kernel FusedInferAttentionScore unregistered" on CPU
            return False, f"mindspore: a probe call failed: {exc}"
        return True, ""

    def metadata(self) -> dict[str, str]:
        return {"runner": self.name, "api": APIS[self.name],
                "mindspore": _version("mindspore"), "device": f"Ascend:{self.device_index}",
                "bound_device": bound_device()}

    def _device(self, x: Any) -> Any:
        import mindspore

        if isinstance(x, np.ndarray):
            if x.dtype == np.dtype(ml_dtypes.bfloat16):
                return mindspore.Tensor(x.astype(np.float32)).astype(mindspore.bfloat16)
            return mindspore.Tensor(x)
        if isinstance(x, list) and x and isinstance(x[0], np.ndarray):
            return [self._device(t) for t in x]
        return x

    def _call(self, mapped: ApiCall) -> tuple[Any, Any]:
        import mindspore

        mindspore.set_device("Ascend", self.device_index)
        args = [self._device(a) for a in mapped.args]
        kwargs = {k: self._device(v) for k, v in mapped.kwargs.items()}
        return mindspore.ops.fused_infer_attention_score(*args, **kwargs)


#: The smallest legal call, used to ask MindSpore whether its kernel is registered here.
_PROBE: dict[str, Any] = {
    "query": np.zeros((1, 1, 16), np.float16), "key": np.zeros((1, 1, 16), np.float16),
    "value": np.zeros((1, 1, 16), np.float16), "num_heads": 1,
}
