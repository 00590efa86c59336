"""From device and golden outputs to one flat, report-ready row of metrics and verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fia_fuzz.diff.metrics import (
    FLOAT_FORMAT,
    INT_RANGE,
    NONFINITE_CLASSES,
    Reference,
    compare_all,
    invalid_rows,
    lsb_conditioning,
    ulp,
)
from fia_fuzz.diff.policies import (
    DEFAULT_POLICY,
    POLICIES,
    SEVERITY,
    UNIT_ROUNDOFF,
    benchmark_level,
    benchmark_ratios,
    fa_ratio,
    functional_failure,
    int_rounding_slack,
)

#: Baseline metrics kept next to the device's so a reader can re-judge ratio policies.
BASE_KEYS = ("max_abs", "mean_abs", "mere", "mare", "mere_normal", "mare_normal", "rmse",
             "small_err_share", "ulp_max", "lsb_max", "lsb_inconclusive")


def lse_tolerance_dtype(out_dtype: str, features: Mapping[str, Any]) -> str:
    """The dtype whose tolerances judge softmax_lse: the op's float dtype, not fp32.

    lse is stored as fp32 but carries no more than the fp16/bf16 scores it
    comes from; the vendor's tests check it "the same way" as the output
    (precision-standards.md §5). The same-dtype baseline computes it from exact
    products in fp32, so fp32 tolerances would demand a bit-faithful fp32
    reduction order. Int8 outputs take the query's float dtype, else fp16.
    """
    if out_dtype in FLOAT_FORMAT and out_dtype != "float32":
        return out_dtype
    q = features.get("q_dtype")
    return q if q in FLOAT_FORMAT else "float16"


def _fp32_spacing(golden: np.ndarray) -> float:
    """One fp32 ulp at the largest finite |golden| (0 when there is none)."""
    g = np.abs(np.asarray(golden, np.float64))
    g = g[np.isfinite(g)]
    return float(ulp(g.max(keepdims=True), "float32")[0]) if g.size else 0.0


#: The non-finite counts a fully explained mismatch clears (`_excuse_nonfinite`).
_NONFINITE_KEYS = ("nan_actual_only", "nan_golden_only", "inf_actual_only", "inf_golden_only",
                   "nonfinite_mismatch", *(f"nonfinite_{k}" for k in NONFINITE_CLASSES))


def _kind(x: np.ndarray) -> np.ndarray:
    """Per element: 0 finite, 1 NaN, 2 +Inf, 3 -Inf."""
    x = np.asarray(x, np.float64)
    return np.where(np.isnan(x), 1, np.where(x == np.inf, 2, np.where(x == -np.inf, 3, 0)))


def _excuse_nonfinite(m: dict[str, Any], actual: np.ndarray, baseline: np.ndarray,
                      truth: np.ndarray) -> None:
    """A finiteness that differs from the fp64 truth is no kernel failure where the golden
    in the device's own precision flow gives the same (a probability that underflows to 0
    in fp32 meets an Inf value: 0 * Inf = NaN there, while fp64 keeps it positive): when
    every such element of `actual` is NaN, the same Inf or finite exactly where `baseline`
    is, the counts move to `nonfinite_explained` and the row is judged on the rest."""
    a, g = _kind(actual), _kind(truth)
    if a.shape != g.shape or np.shape(baseline) != a.shape:
        return
    differs = a != g
    if not np.array_equal(a[differs], _kind(baseline)[differs]):
        return
    m["nonfinite_explained"] = int(np.count_nonzero(differs))
    for k in _NONFINITE_KEYS:
        if k in m:
            m[k] = 0
    m["nonfinite_class"] = ""
    m["nonfinite_index"] = ""


def judge(actual: tuple[np.ndarray, np.ndarray], truth: tuple[np.ndarray, np.ndarray],
          baseline: tuple[np.ndarray, np.ndarray] | None, out_dtype: str,
          lse: bool, features: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Metrics (prefixed out_/lse_) and the verdicts of every policy.

    `truth` is the golden at fp64, `baseline` the golden at device precision
    (the same-dtype reference of the ratio policies). `features` is
    `case.features()` (the flash-attention rule allows 1e-5 more for masked,
    paged and split-KV variants). softmax_lse is judged with the tolerances of
    `lse_tolerance_dtype`, and flash-attention allows it an absolute error of
    that dtype's unit roundoff (at least one fp32 ulp of the largest |lse|,
    its storage) on top of the 2x rule (`lse_abs_floor`); its
    relative errors are log-scale (`compare(log_scale=True)`).
    Invalid rows are the golden's (`invalid_rows`: all-zero output rows,
    +inf in the golden lse when the call returns it). An int8 output's misses
    explained by float-level error (`lsb_conditioning`, against the
    same-dtype baseline) make its verdict "inconclusive" rather than "fail".
    Columns: `<t>_verdict_<policy>` per tensor,
    `verdict_<policy>` the worse of the two, `reason_<policy>` why it is not a
    pass, `baseline_verdict_<policy>` what the same-dtype baseline itself
    gets (a policy that fails the baseline judges the dtype, not the
    kernel), `functional` the functional failure if any, `out_dtype`, and
    `verdict` the default policy's verdict.
    """
    feats = features or {}
    row: dict[str, Any] = {"out_dtype": out_dtype}
    parts = [("out", 0, out_dtype, out_dtype)]
    if lse:
        parts.append(("lse", 1, "float32", lse_tolerance_dtype(out_dtype, feats)))
    reasons: dict[str, list[tuple[str, str, str]]] = {name: [] for name in POLICIES}
    calibration: dict[str, list[str]] = {name: [] for name in POLICIES}
    functional = []
    dead = {"out": invalid_rows(truth[0], truth[1] if lse else None, feats.get("out_layout"),
                                feats.get("N")),
            "lse": np.asarray(truth[1]) == np.inf}
    for prefix, i, dtype, tol in parts:
        log = prefix == "lse"
        ref = Reference(truth[i], dtype, tol, dead[prefix], log_scale=log)
        m, *rest = compare_all([actual[i]] + ([baseline[i]] if baseline is not None else []),
                               ref)
        b = rest[0] if rest else None
        if b is not None and m.get("nonfinite_mismatch"):
            _excuse_nonfinite(m, actual[i], baseline[i], truth[i])
        if dtype in INT_RANGE:
            slack = int_rounding_slack(feats)
            for mm in (m, b):
                if mm is not None:
                    mm["lsb_slack"] = slack
            if b is not None:
                m_lsb, b_lsb = lsb_conditioning([actual[i], baseline[i]], baseline[i], truth[i],
                                                dtype, slack)
                m.update(m_lsb)
                b.update(b_lsb)
        if prefix == "lse":
            # an absolute lse error is a relative error of the softmax weights: the op
            # dtype's unit roundoff is what its outputs can resolve anyway; an lse of huge
            # logits (4e6) is not stored nearer than an fp32 ulp of it either
            floor = max(UNIT_ROUNDOFF.get(tol, 2.0 ** -11), _fp32_spacing(truth[i]))
            for mm in (m, b):
                if mm is not None:
                    mm["abs_floor"] = floor
        row.update({f"{prefix}_{k}": v for k, v in m.items()})
        if b is not None:
            row.update({f"{prefix}_base_{k}": b[k] for k in BASE_KEYS if k in b})
            if not (m.get("shape_mismatch") or b.get("shape_mismatch")) and "mare" in m:
                r = benchmark_ratios(m, b, tol)
                row.update({f"{prefix}_bench_{k}": v for k, v in r.items()})
                row[f"{prefix}_bench_level"] = benchmark_level(r)
                row[f"{prefix}_fa_ratio"] = fa_ratio(m, b, tol)
        why = functional_failure(m)
        if why:
            functional.append(f"{prefix}: {why}")
        for name, fn in POLICIES.items():
            verdict, reason = fn(m, b, tol, feats)
            row[f"{prefix}_verdict_{name}"] = verdict
            reasons[name].append((verdict, prefix, reason))
            if b is not None:
                calibration[name].append(fn(b, b, tol, feats)[0])
    for name in POLICIES:
        verdict, prefix, reason = max(reasons[name], key=lambda x: SEVERITY[x[0]])
        row[f"verdict_{name}"] = verdict
        row[f"reason_{name}"] = f"{prefix}: {reason}" if reason else ""
        if calibration[name]:
            row[f"baseline_verdict_{name}"] = max(calibration[name], key=SEVERITY.__getitem__)
    row["functional"] = "; ".join(functional)
    row["verdict"] = row[f"verdict_{DEFAULT_POLICY}"]
    return row
