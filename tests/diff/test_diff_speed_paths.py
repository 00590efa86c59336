"""The differ's fast paths give the numbers of their plain definitions."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from fia_fuzz.diff import scratch
from fia_fuzz.diff.metrics import FLOAT_FORMAT, _dot, _fa_noise, fa_noise_floor, ulp


def _ulp_by_frexp(x: np.ndarray, dtype: str) -> np.ndarray:
    bits, emin = FLOAT_FORMAT[dtype]
    _, e = np.frexp(x)
    e = np.where(np.isfinite(x) & (x != 0), e - 1, emin)
    return np.ldexp(1.0, np.maximum(e, emin) - bits)


@pytest.mark.parametrize("dtype", sorted(FLOAT_FORMAT))
def test_ulp_from_exponent_bits_matches_frexp(dtype: str) -> None:
    powers = np.ldexp(1.0, np.arange(-1074, 1024))
    x = np.concatenate([powers, np.nextafter(powers, 0), -powers, [0.0, -0.0, 5e-324,
                        np.inf, -np.inf, np.nan, 65504.0, 3.0e38]])
    x = np.concatenate([x, np.random.default_rng(0).standard_normal(10_000) * 1e3])
    assert np.array_equal(ulp(x, dtype), _ulp_by_frexp(x, dtype))
    assert ulp(np.float64(3.0), dtype).shape == ()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_fa_noise_floor_per_distinct_value_matches_per_element(dtype: str) -> None:
    rng = np.random.default_rng(1)
    g = np.concatenate([rng.standard_normal(50_000) * s for s in (1e-6, 1.0, 300.0)]
                       + [[7e4, -1e39, 65519.0, 0.0]])
    assert fa_noise_floor(g, dtype) == float(2 * _fa_noise(g, dtype).max()) > 0
    assert fa_noise_floor(g, "int8") == 0.0


def test_dot_is_numpys_pairwise_sum_not_blas() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(100_003), rng.standard_normal(100_003)
    assert _dot(x, y) == float(np.sum(x * y))
    assert _dot(x[:0], y[:0]) == 0.0


def test_scratch_lends_a_buffer_to_one_borrower_at_a_time(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setattr(scratch, "_local", threading.local())  # an empty pool
    a, b = scratch.take(1000), scratch.take(1000)
    assert not np.shares_memory(a, b)
    scratch.give(a.reshape(10, 100), None)
    c = scratch.take(500)
    assert np.shares_memory(a, c) and not np.shares_memory(b, c)
    scratch.give(a)  # given twice: kept once
    d, e = scratch.take(1000), scratch.take(1000)
    assert not np.shares_memory(d, e)
    big = scratch.take(scratch.KEEP_ELEMENTS + 1)
    scratch.give(big)  # too large to keep
    assert not any(np.shares_memory(big, scratch.take(10)) for _ in range(scratch.KEEP_BUFFERS))
