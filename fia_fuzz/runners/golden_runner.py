"""The golden model as a runner (device precision), behind its v1 and v2 entry points.

Baselines, never backends under test: `golden` and `golden-v2` (the v2
keywords, fia-semantics.md §1; the v1-vs-v2 relation's partner for the golden).
"""

from __future__ import annotations

import platform
from typing import Any

import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.params import ATTR_DEFAULTS, CANONICAL_TO_V2
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.runners.base import Runner, register


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


def to_v2_kwargs(call: dict[str, Any]) -> dict[str, Any]:
    """A canonical call under the v2 keyword names.

    The v2 signature defaults num_key_value_heads to 1 where v1's 0 means
    "= num_heads", and gives inner_precise no default [seed 004 函数原型], so
    both are always passed explicitly.
    """
    view = CallView(call)
    out = {CANONICAL_TO_V2.get(k, k): v for k, v in call.items() if k != "antiquant_mode"}
    out["num_key_value_heads"] = view.KV_N
    out["inner_precise"] = call.get("inner_precise", ATTR_DEFAULTS["inner_precise"])
    return out


@register("golden-v2")
class GoldenV2Runner(GoldenRunner):
    """The golden behind its v2 entry point (device precision), a baseline like `golden`."""

    name = "golden-v2"

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        return npu_fused_infer_attention_score_v2(**to_v2_kwargs(call), precision="device",
                                                  rules=self._rules)
