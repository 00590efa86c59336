"""API variants of a runner: the v2 entry point and TorchAir graph mode of the same backend.

A relation such as v1 vs v2 runs the partner on the variant of the runner
under test: the registered `golden-v2` (the golden behind
`npu_fused_infer_attention_score_v2`, runners/golden_runner.py), `npu-v2` and
`torchair` runners. A runner with no such variant gets a reason, never a
stand-in.
"""

from __future__ import annotations

from collections.abc import Callable

from fia_fuzz.runners import Runner, get_runner

#: api -> runner name -> factory of the variant runner.
VARIANTS: dict[str, dict[str, Callable[[], Runner]]] = {
    "v2": {"golden": lambda: get_runner("golden-v2"), "npu": lambda: get_runner("npu-v2")},
    "graph": {"npu": lambda: get_runner("torchair"), "npu-v2": lambda: get_runner("torchair")},
    # the aclnn interface each torch_npu front door calls (wrapper vs kernel)
    "aclnn": {"npu": lambda: get_runner("aclnn-v4"), "npu-v2": lambda: get_runner("aclnn-v4")},
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
