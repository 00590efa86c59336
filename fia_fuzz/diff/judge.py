"""From device and golden outputs to one flat, report-ready row of metrics and verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fia_fuzz.diff.metrics import compare
from fia_fuzz.diff.policies import (
    DEFAULT_POLICY,
    POLICIES,
    SEVERITY,
    benchmark_level,
    benchmark_ratios,
    fa_ratio,
    functional_failure,
)

#: Baseline metrics kept next to the device's so a reader can re-judge ratio policies.
BASE_KEYS = ("max_abs", "mean_abs", "mere", "mare", "rmse", "small_err_share", "ulp_max",
             "lsb_max")


def judge(actual: tuple[np.ndarray, np.ndarray], truth: tuple[np.ndarray, np.ndarray],
          baseline: tuple[np.ndarray, np.ndarray] | None, out_dtype: str,
          lse: bool, features: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Metrics (prefixed out_/lse_) and the verdicts of every policy.

    `truth` is the golden at fp64, `baseline` the golden at device precision
    (the same-dtype reference of the ratio policies). `features` is
    `case.features()` (the flash-attention rule allows 1e-5 more for masked,
    paged and split-KV variants). Columns: `<t>_verdict_<policy>` per tensor,
    `verdict_<policy>` the worse of the two, `reason_<policy>` why it is not a
    pass, `baseline_verdict_<policy>` what the same-dtype baseline itself
    gets (a policy that fails the baseline judges the dtype, not the
    kernel), `functional` the functional failure if any, `out_dtype`, and
    `verdict` the default policy's verdict.
    """
    feats = features or {}
    row: dict[str, Any] = {"out_dtype": out_dtype}
    parts = [("out", 0, out_dtype)] + ([("lse", 1, "float32")] if lse else [])
    reasons: dict[str, list[tuple[str, str, str]]] = {name: [] for name in POLICIES}
    calibration: dict[str, list[str]] = {name: [] for name in POLICIES}
    functional = []
    for prefix, i, dtype in parts:
        m = compare(actual[i], truth[i], dtype)
        b = compare(baseline[i], truth[i], dtype) if baseline is not None else None
        row.update({f"{prefix}_{k}": v for k, v in m.items()})
        if b is not None:
            row.update({f"{prefix}_base_{k}": b[k] for k in BASE_KEYS if k in b})
            if not (m.get("shape_mismatch") or b.get("shape_mismatch")) and "mare" in m:
                r = benchmark_ratios(m, b, dtype)
                row.update({f"{prefix}_bench_{k}": v for k, v in r.items()})
                row[f"{prefix}_bench_level"] = benchmark_level(r)
                row[f"{prefix}_fa_ratio"] = fa_ratio(m, b, dtype)
        why = functional_failure(m)
        if why:
            functional.append(f"{prefix}: {why}")
        for name, fn in POLICIES.items():
            verdict, reason = fn(m, b, dtype, feats)
            row[f"{prefix}_verdict_{name}"] = verdict
            reasons[name].append((verdict, prefix, reason))
            if b is not None:
                calibration[name].append(fn(b, b, dtype, feats)[0])
    for name in POLICIES:
        verdict, prefix, reason = max(reasons[name], key=lambda x: SEVERITY[x[0]])
        row[f"verdict_{name}"] = verdict
        row[f"reason_{name}"] = f"{prefix}: {reason}" if reason else ""
        if calibration[name]:
            row[f"baseline_verdict_{name}"] = max(calibration[name], key=SEVERITY.__getitem__)
    row["functional"] = "; ".join(functional)
    row["verdict"] = row[f"verdict_{DEFAULT_POLICY}"]
    return row
