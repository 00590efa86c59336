"""The golden model as a runner (device precision): a baseline, never a backend under test."""

from __future__ import annotations

import platform
from typing import Any

import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.runners.base import Runner, register
from fia_fuzz.spec import Case


@register("golden")
class GoldenRunner(Runner):
    name = "golden"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        return True, ""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        return npu_fused_infer_attention_score(**call, precision="device")

    def metadata(self) -> dict[str, str]:
        return {"runner": self.name, "numpy": np.__version__, "device": platform.machine()}
