"""Named verdict policies over the metrics (../shared/precision-standards.md).

Each policy maps (metrics of the device output, metrics of the same-dtype
baseline) to "pass", "warn" or "fail". NaN where the golden has none is a
failure under every policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fia_fuzz.diff.metrics import THOUSANDTH

Metrics = dict[str, Any]
Policy = Callable[[Metrics, "Metrics | None", str], str]
POLICIES: dict[str, Policy] = {}
DEFAULT_POLICY = "ascend-thousandth"


def policy(name: str) -> Callable[[Policy], Policy]:
    def deco(fn: Policy) -> Policy:
        POLICIES[name] = fn
        return fn
    return deco


def _broken(m: Metrics) -> bool:
    return bool(m.get("shape_mismatch") or m.get("nonfinite_mismatch") or m.get("nan_actual_only"))


@policy("ascend-thousandth")
def ascend_thousandth(m: Metrics, base: Metrics | None, dtype: str) -> str:
    """Standards §1: share of elements with rel err > t below t (t = 1e-3, fp32 1e-4);
    the hundredth rule (t = 1e-2) failing is a fail, thousandth failing a warn;
    cosine must exceed 0.99; max abs err < 0.001 passes outright."""
    if _broken(m):
        return "fail"
    if m["max_abs"] < 1e-3:
        return "pass"
    t = THOUSANDTH.get(dtype, 1e-3)
    if m["cosine"] <= 0.99:
        return "fail"
    if m["thousandth_share"] < t:
        return "pass"
    return "warn"
