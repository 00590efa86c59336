"""Runners for the real op on Ascend hardware: torch_npu eager v1/v2, TorchAir, MindSpore.

torch_npu cannot be imported without the Ascend toolkit (and installing it
breaks `import torch` there), so nothing here imports it at module import
time: `available()` looks for the package and a device first and says
plainly why not.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from fia_fuzz.runners.base import Runner, register
from fia_fuzz.spec import Case


class _AscendRunner(Runner):
    package = "torch_npu"

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec(self.package) is None:
            return False, (f"no NPU here: {self.package} is not installed "
                           "(pip install 'fia-fuzz[npu]' on an Ascend host)")
        return False, f"{self.name}: call mapping not implemented yet"

    def supports(self, case: Case) -> tuple[bool, str]:
        return True, ""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        ok, why = self.available()
        raise RuntimeError(why)


@register("npu")
class NpuRunner(_AscendRunner):
    name = "npu"


@register("npu-v2")
class NpuV2Runner(_AscendRunner):
    name = "npu-v2"


@register("torchair")
class TorchAirRunner(_AscendRunner):
    name = "torchair"


@register("mindspore")
class MindSporeRunner(_AscendRunner):
    name = "mindspore"
    package = "mindspore"
