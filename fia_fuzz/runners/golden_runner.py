"""The golden model as a runner (device precision): a baseline, never a backend under test."""

from __future__ import annotations

import platform
from typing import Any

import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score
from fia_fuzz.runners.base import Runner, register
from fia_fuzz.spec import Case
from fia_fuzz.spec.profiles import DEFAULT


@register("golden")
class GoldenRunner(Runner):
    name = "golden"

    def available(self) -> tuple[bool, str]:
        return True, ""

    _rules: str = DEFAULT

    def supports(self, case: Case) -> tuple[bool, str]:
        self._rules = case.rules
        return True, ""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The golden output under the rule profile of the case last passed to `supports`
        (evaluate asks it right before running; a bare call is judged by the docs)."""
        return npu_fused_infer_attention_score(**call, precision="device", rules=self._rules)

    def metadata(self) -> dict[str, str]:
        return {"runner": self.name, "numpy": np.__version__, "device": platform.machine()}
