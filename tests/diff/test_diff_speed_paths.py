"""The differ's fast paths give the numbers of their plain definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fia_fuzz.diff import chunks
from fia_fuzz.diff.metrics import FLOAT_FORMAT, _fa_noise, compare, fa_noise_floor, ulp
from fia_fuzz.numerics import blas


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


@pytest.mark.parametrize("n", [0, 1, 7, 129, 32768, 32769, 100_003])
def test_chunks_cover_the_array_and_their_total_is_the_exact_sum_rounded(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) * np.exp(rng.standard_normal(n) * 8)
    for chunk in (128, 1000, chunks.CHUNK):
        parts = chunks.split(n, chunk)
        assert [s for s, _ in parts] == [0, *(e for _, e in parts)][:len(parts)]
        assert (parts[-1][1] if parts else 0) == n
        assert max((e - s for s, e in parts), default=0) <= chunk
        sums = [float(np.sum(x[s:e])) for s, e in parts]
        assert chunks.total(sums) == chunks.total(sums[::-1]) == math.fsum(sums)


def test_chunk_totals_of_infinite_or_huge_partials_are_what_a_sum_gives() -> None:
    inf = float("inf")
    assert chunks.total([inf, 1.0]) == inf
    assert np.isnan(chunks.total([inf, -inf]))
    assert chunks.total([1e308, 1e308]) == inf


def test_an_actual_infinite_with_both_signs_in_two_chunks_is_judged() -> None:
    """Its sum of products with the truth has partials +inf and -inf (fsum raises there)."""
    g = np.random.default_rng(0).standard_normal(3 * chunks.CHUNK)
    g[5] = g[chunks.CHUNK + 5] = 1.0
    a = g.astype(np.float16)
    a[5], a[chunks.CHUNK + 5] = np.inf, -np.inf
    m = compare(a, g, "float16")
    assert m["inf_actual_only"] == m["nonfinite_mismatch"] == 2
    assert 0 < m["max_abs"] < 1e-2  # over the elements finite on both sides


def test_metrics_do_not_depend_on_the_blas_thread_count() -> None:
    """OpenBLAS splits a long dot product over its threads (other partial sums, other
    bits); the differ holds it to one thread, so the caller's setting does not matter."""
    if blas._BLAS is None:
        pytest.skip("no OpenBLAS loaded")
    set_threads, get_threads, _ = blas._BLAS
    rng = np.random.default_rng(5)
    g = rng.standard_normal(3 * chunks.CHUNK + 11) * 3
    a = (g * (1 + rng.standard_normal(g.size) * 1e-3)).astype(np.float16)
    before = int(get_threads())
    try:
        got = []
        for n in (1, 2, 4):
            set_threads(n)
            got.append(compare(a, g, "float16"))
    finally:
        set_threads(before)
    assert got[0] == got[1] == got[2]


def _plain_metrics(a: np.ndarray, g: np.ndarray, dtype: str) -> dict[str, float]:
    """The definitions of the summed and counted metrics, over whole arrays."""
    a64 = a.astype(np.float64)
    err = np.abs(a64 - g)
    denom = np.abs(g) + 1e-12
    rel = err / denom
    normal = np.abs(g) >= 2.0 ** -10
    u = err / ulp(g, dtype)
    return {"rmse": float(np.sqrt(np.sum(err * err) / err.size)), "mean_abs": float(err.mean()),
            "mere": float(rel.mean()), "mere_normal": float(np.mean(rel, where=normal)),
            "cosine": float(np.sum(a64 * g)
                            / (np.sqrt(np.sum(a64 * a64)) * np.sqrt(np.sum(g * g)))),
            "ulp_mean": float(u.mean()), "max_abs": float(err.max()),
            "thousandth_share": float((np.count_nonzero((rel > 1e-3) & normal)
                                       + np.count_nonzero(err[~normal] > 2.0 ** -16)) / err.size),
            "golden_rms": float(np.sqrt(np.sum(g * g) / g.size)),
            "worst_index": str(tuple(int(i) for i in np.unravel_index(int(np.argmax(err)),
                                                                      g.shape)))}


@pytest.mark.parametrize("shape", [(3, 5), (4, 7, 1000, 11), (70_001,)])
def test_chunked_metrics_equal_their_whole_array_definitions(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    g = rng.standard_normal(shape) * np.exp(rng.standard_normal(shape) * 2)
    g.reshape(-1)[::7] *= 1e-5
    a = (g * (1 + rng.standard_normal(shape) * 1e-3)).astype(np.float16)
    m = compare(a, g, "float16")
    assert m["small_count"] > 0  # the masked mean over the normal elements is exercised
    sums = ("rmse", "mean_abs", "mere", "mere_normal", "cosine", "ulp_mean", "golden_rms")
    for key, value in _plain_metrics(a, g, "float16").items():
        # sums are chunk dot products added exactly: within a few ulps of np.sum's
        assert m[key] == (pytest.approx(value, rel=1e-13, abs=0) if key in sums else value), key
