"""From device and golden outputs to one flat, report-ready row of metrics and verdicts."""

from __future__ import annotations

from typing import Any

import numpy as np

from fia_fuzz.diff.metrics import compare
from fia_fuzz.diff.policies import DEFAULT_POLICY, POLICIES


def judge(actual: tuple[np.ndarray, np.ndarray], truth: tuple[np.ndarray, np.ndarray],
          baseline: tuple[np.ndarray, np.ndarray] | None, out_dtype: str,
          lse: bool) -> dict[str, Any]:
    """Metrics (prefixed out_/lse_) and one verdict per policy (verdict_<policy>).

    `truth` is the golden at fp64, `baseline` the golden at device precision.
    The overall `verdict` is the default policy's on attention_out, made worse
    by the lse verdict when lse was requested.
    """
    row: dict[str, Any] = {}
    parts = [("out", 0, out_dtype)] + ([("lse", 1, "float32")] if lse else [])
    for prefix, i, dtype in parts:
        m = compare(actual[i], truth[i], dtype)
        b = compare(baseline[i], truth[i], dtype) if baseline is not None else None
        row.update({f"{prefix}_{k}": v for k, v in m.items()})
        if b is not None:
            row.update({f"{prefix}_base_{k}": v for k, v in b.items()
                        if k in ("max_abs", "mere", "mare", "rmse")})
        for name, fn in POLICIES.items():
            row[f"{prefix}_verdict_{name}"] = fn(m, b, dtype)
    order = {"pass": 0, "warn": 1, "fail": 2}
    for name in POLICIES:
        worst = max((row[f"{p}_verdict_{name}"] for p, _, _ in parts), key=order.__getitem__)
        row[f"verdict_{name}"] = worst
    row["verdict"] = row[f"verdict_{DEFAULT_POLICY}"]
    return row
