"""The cross-kind bound: what it allows (a few ulp of the output dtype at its scale, more
where the case's own rounding gap is larger) and what it refuses (another NaN or infinity
pattern, a difference past it), element by element and through a stored summary."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from fia_fuzz.numerics.cross_kind import bound, excess, scale_and_gap, summary, summary_excess


def test_the_bound_is_ulps_at_the_scale_plus_the_gap() -> None:
    assert bound(np.float16, 2.0, 0.0) == 4 * 2.0 ** -10 * 2.0
    assert bound(ml_dtypes.bfloat16, 1.0, 0.5) == 4 * 2.0 ** -7 + 1.0
    assert bound(np.int8, 100.0, 0.25) == 4 + 0.5
    assert bound(None, 1.0, 1.0) == 64 * 2.0 ** -52 + 2.0 ** -25
    t, d = np.array([1.0, -3.0, np.nan]), np.array([1.5, -3.0, 0.0])
    assert scale_and_gap(t, d) == (3.0, 0.5)


def test_elementwise_within_and_past_the_bound() -> None:
    ref = np.array([0.0, 1.0, np.nan, np.inf, -2.0])
    assert excess(ref + np.array([5e-4, -5e-4, 0, 0, 0]), ref, 1e-3) is None
    assert "differs by up to" in excess(ref + np.array([0, 2e-3, 0, 0, 0]), ref, 1e-3)
    assert excess(np.array([0.0, 1.0, 0.0, np.inf, -2.0]), ref, 1.0).startswith("NaN")
    assert excess(np.array([0.0, 1.0, np.nan, -np.inf, -2.0]), ref, 1.0).startswith("+inf")
    assert excess(ref[:4], ref, 1.0).startswith("shape")


def test_a_summary_checks_chunks_and_samples() -> None:
    x = np.random.default_rng(0).standard_normal(10_000)
    x[17] = np.nan
    ref = summary(x)
    assert summary_excess(x + 1e-9, ref, 1e-8) is None
    assert summary_excess(x + 1e-7, ref, 1e-8) is not None  # every chunk's sum moved
    y = x.copy()
    y[0] += 1e-6  # a sampled element
    assert summary_excess(y, ref, 1e-8) is not None
    y = x.copy()
    y[5000] = np.nan
    assert summary_excess(y, ref, 1.0) == "NaN or infinity counts differ"
    assert summary_excess(x[:-1], ref, 1.0).startswith("9999 elements")
