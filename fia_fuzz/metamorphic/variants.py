"""API variants of a runner: the v2 entry point and TorchAir graph mode of the same backend.

A relation such as v1 vs v2 runs the partner on the variant of the runner
under test. The golden's v2 variant calls `npu_fused_infer_attention_score_v2`
with the call renamed to the v2 keywords (fia-semantics.md §1); the NPU
variants are the registered `npu-v2` and `torchair` runners. A runner with no
such variant gets a reason, never a stand-in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fia_fuzz.golden import npu_fused_infer_attention_score_v2
from fia_fuzz.runners import Runner, get_runner
from fia_fuzz.spec import Case
from fia_fuzz.spec.call import CallView
from fia_fuzz.spec.params import ATTR_DEFAULTS, CANONICAL_TO_V2


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


class GoldenV2Runner(Runner):
    """The golden behind its v2 entry point (device precision), a baseline like `golden`."""

    name = "golden-v2"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def supports(self, case: Case) -> tuple[bool, str]:
        return True, ""

    def run(self, call: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        kwargs = to_v2_kwargs(call)
        return npu_fused_infer_attention_score_v2(**kwargs, precision="device")


#: api -> runner name -> factory of the variant runner.
VARIANTS: dict[str, dict[str, Callable[[], Runner]]] = {
    "v2": {"golden": GoldenV2Runner, "npu": lambda: get_runner("npu-v2")},
    "graph": {"npu": lambda: get_runner("torchair"), "npu-v2": lambda: get_runner("torchair")},
}


def variant_of(runner: Runner, api: str) -> tuple[Runner | None, str]:
    """(the runner's `api` variant, "") or (None, why there is none usable here)."""
    factory = VARIANTS.get(api, {}).get(runner.name)
    if factory is None:
        return None, f"runner {runner.name!r} has no {api} variant"
    variant = factory()
    ok, why = variant.available()
    if not ok:
        return None, f"{api} variant {variant.name!r} unavailable: {why}"
    return variant, ""
