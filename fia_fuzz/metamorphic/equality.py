"""The expected equality between a case's output and its partner's, and its measurement.

A relation either demands bit-identical outputs (`EXACT`: only the
addressing of the data changed, so the kernel's arithmetic need not) or a
normwise tolerance in units of the output dtype's precision, with the reason
the kernel may legitimately reorder its arithmetic. Invalid rows (output 0,
lse +inf) and NaN positions are compared exactly under every tolerance:
precision-standards.md "Notes" makes a difference there a functional bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Unit roundoff-sized step of each output dtype at magnitude 1 (its ulp at 1.0).
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23}
#: lse is float32 and sums S2 exponentials: a reordered sum moves it by a few
#: float32 ulps of its magnitude; 2^-20 per tolerance unit covers sums of ~1000s of terms.
LSE_EPS = 2.0 ** -20


@dataclass(frozen=True)
class Tolerance:
    """`units` = 0: exact. Otherwise |a - b| <= units * eps(dtype) * max|b| (normwise)."""

    units: float
    reason: str
    #: lse units where they differ from `units` (None: the same)
    lse_units: float | None = None

    @property
    def exact(self) -> bool:
        return self.units == 0

    @property
    def effective_lse_units(self) -> float:
        """The lse tolerance units: `lse_units` where given, else `units`."""
        return self.units if self.lse_units is None else self.lse_units

    def describe(self) -> str:
        if self.exact:
            return "exact"
        return (f"out: <= {self.units:g} eps(out dtype) x max abs(out); "
                f"lse: <= {self.effective_lse_units:g} x 2^-20 x max(abs(lse), 1)")

    def out_allowance(self, reference: np.ndarray, dtype: str) -> float:
        if self.exact:
            return 0.0
        if dtype not in EPS:  # int8 output: an element may flip by one LSB per unit
            return float(self.units)
        finite = reference[np.isfinite(reference)]
        scale = float(np.abs(finite).max()) if finite.size else 0.0
        return self.units * EPS[dtype] * max(scale, 2.0 ** -14)

    def lse_allowance(self, reference: np.ndarray) -> float:
        if self.exact:
            return 0.0
        finite = reference[np.isfinite(reference)]
        scale = float(np.abs(finite).max()) if finite.size else 0.0
        return self.effective_lse_units * LSE_EPS * max(scale, 1.0)


EXACT_ADDRESSING = Tolerance(0, "only the addressing of the same data changes; every "
                                "output element is computed from the same operands in the "
                                "same order")


def _measure(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """(max |a-b| over elements finite on both sides, count of non-finite mismatches)."""
    a = np.asarray(a).astype(np.float64)
    b = np.asarray(b).astype(np.float64)
    a_bad, b_bad = ~np.isfinite(a), ~np.isfinite(b)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    mismatch = (a_bad != b_bad) | (nan_a != nan_b) | (a_bad & b_bad & ~nan_a & (a != b))
    both = ~(a_bad | b_bad)
    diff = float(np.abs(a[both] - b[both]).max()) if both.any() else 0.0
    return diff, int(np.count_nonzero(mismatch))


def compare(source: tuple[np.ndarray, np.ndarray], partner: tuple[np.ndarray, np.ndarray],
            tolerance: Tolerance, out_dtype: str, lse: bool) -> dict[str, Any]:
    """Measured differences and the outcome ("pass"/"fail") of one relation instance."""
    row: dict[str, Any] = {"expected": tolerance.describe(), "tolerance_reason": tolerance.reason}
    so, po = np.asarray(source[0]), np.asarray(partner[0])
    if so.shape != po.shape:
        row.update(outcome="fail", detail=f"output shapes differ: {so.shape} vs {po.shape}",
                   out_max_abs_diff=float("nan"), out_allowed=0.0, nonfinite_mismatch=0)
        return row
    out_diff, bad = _measure(po, so)
    row.update(out_max_abs_diff=out_diff, out_allowed=tolerance.out_allowance(
        so.astype(np.float64), out_dtype))
    ok = out_diff <= row["out_allowed"]
    detail = []
    if lse:
        sl, pl = np.asarray(source[1]), np.asarray(partner[1])
        if sl.shape != pl.shape:
            row.update(outcome="fail", detail=f"lse shapes differ: {sl.shape} vs {pl.shape}",
                       nonfinite_mismatch=bad)
            return row
        lse_diff, lse_bad = _measure(pl, sl)
        bad += lse_bad
        row.update(lse_max_abs_diff=lse_diff, lse_allowed=tolerance.lse_allowance(
            sl.astype(np.float64)))
        if lse_diff > row["lse_allowed"]:
            ok = False
            detail.append(f"lse differs by {lse_diff:.3g} > {row['lse_allowed']:.3g}")
    if not out_diff <= row["out_allowed"]:
        detail.append(f"output differs by {out_diff:.3g} > {row['out_allowed']:.3g}")
    if bad:
        ok = False
        detail.append(f"{bad} element(s) finite on one side only (or NaN vs inf)")
    row.update(nonfinite_mismatch=bad, outcome="pass" if ok else "fail",
               detail="; ".join(detail))
    return row
