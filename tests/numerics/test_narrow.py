"""numerics/narrow.py against references that use no ml_dtypes and none of its steps.

Every midpoint of adjacent float16 and bfloat16 values (and of float8_e4m3fn), the
values themselves and their float64 neighbours are checked against what the stated
rounding must give there by definition (the even neighbour on a tie, the nearer one
otherwise; bfloat16 through float32 first). Boundaries (the largest finite, the
overflow threshold, subnormals, +-0, Inf, NaN) and random float64 values of every
magnitude go through the exact rational reference (`rounding_reference.py`).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.numerics.narrow import narrow, nearest
from tests.numerics.rounding_reference import BF16, F8E4M3FN, F16, F32, grid, reference_bits

BF16_DT = np.dtype(ml_dtypes.bfloat16)
F8_DT = np.dtype(ml_dtypes.float8_e4m3fn)
#: name -> (dtype, narrow or nearest, the reference's rounding steps)
ROUNDINGS = {
    "float16": (np.dtype(np.float16), narrow, (F16,)),
    "float16 nearest": (np.dtype(np.float16), nearest, (F16,)),
    "bfloat16": (BF16_DT, narrow, (F32, BF16)),
    "bfloat16 nearest": (BF16_DT, nearest, (BF16,)),
    "float32": (np.dtype(np.float32), narrow, (F32,)),
    "float8_e4m3fn": (F8_DT, narrow, (F8E4M3FN,)),
}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _bits(x: np.ndarray, dtype: np.dtype, fn) -> np.ndarray:
    with np.errstate(all="ignore"):
        return fn(x, dtype).view(_UINT[dtype.itemsize]).astype(np.int64)


def _grid(fmt) -> np.ndarray:
    return np.array([float(v) for v in grid(fmt)])


@pytest.mark.parametrize("name", ["float16", "float16 nearest", "bfloat16", "bfloat16 nearest",
                                  "float8_e4m3fn"])
def test_every_midpoint_and_its_neighbours_round_as_stated(name: str) -> None:
    dtype, fn, steps = ROUNDINGS[name]
    values = _grid(steps[-1])                   # every finite value >= 0, pattern i at i
    lo = np.arange(values.size - 1)
    mid = (values[:-1] + values[1:]) / 2        # exact in float64
    even = np.where(lo % 2 == 0, lo, lo + 1)
    up, down = np.nextafter(mid, np.inf), np.nextafter(mid, 0)
    twice = len(steps) == 2
    expect = {
        "values": (values, np.arange(values.size)),
        "midpoints": (mid, even),
        # through float32 first, a float64 neighbour of a midpoint is the midpoint again
        "above midpoints": (up, even if twice else lo + 1),
        "below midpoints": (down, even if twice else lo),
    }
    if twice:
        ulp32 = np.spacing(mid.astype(np.float32)).astype(np.float64)
        expect["a float32 ulp above"] = (mid + ulp32, lo + 1)
        expect["a float32 ulp below"] = (mid - ulp32, lo)
        expect["a float32 tie above"] = (mid + ulp32 / 2, even)  # ties to the midpoint: even
    for label, (x, want) in expect.items():
        for sign in (1.0, -1.0):
            got = _bits(sign * x, dtype, fn)
            signed = want | (0 if sign > 0 else 1 << (8 * dtype.itemsize - 1))
            bad = np.flatnonzero(got != signed)
            assert not bad.size, (f"{name} {label} {'+' if sign > 0 else '-'}: "
                                  f"{sign * x[bad[:3]]} -> {got[bad[:3]]}, want {signed[bad[:3]]}")


def _boundaries(fmt) -> list[float]:
    top = float(fmt.max)
    half_ulp = float(fmt.max - fmt.decode(fmt.encode(fmt.max) - 1)) / 2
    tiny = float(fmt.decode(1))                 # the smallest subnormal
    smallest_normal = float(fmt.decode(1 << fmt.p))
    points = [0.0, top, top + half_ulp, np.nextafter(top + half_ulp, 0),
              np.nextafter(top + half_ulp, np.inf), 2 * top, 1e300, tiny, tiny / 2,
              np.nextafter(tiny / 2, 1), np.nextafter(tiny / 2, 0), tiny * 1.5, tiny / 4,
              smallest_normal, np.nextafter(smallest_normal, 0),
              smallest_normal - tiny / 2, 5e-324, 1e-300, 1.0, math.inf, math.nan]
    return [s * p for p in points for s in (1.0, -1.0)]


@pytest.mark.parametrize("name", sorted(ROUNDINGS))
def test_boundaries_match_the_rational_reference(name: str) -> None:
    dtype, fn, steps = ROUNDINGS[name]
    xs = _boundaries(steps[-1])
    got = _bits(np.array(xs), dtype, fn)
    want = [reference_bits(x, steps) for x in xs]
    assert [(x, g) for x, g, w in zip(xs, got, want, strict=True) if g != w] == []


@pytest.mark.parametrize("name", sorted(ROUNDINGS))
def test_float64_values_of_every_magnitude_match_the_rational_reference(name: str) -> None:
    dtype, fn, steps = ROUNDINGS[name]
    rng = np.random.default_rng(20261206)
    n = 3000
    xs = rng.standard_normal(n) * np.exp2(rng.integers(-160, 140, n).astype(np.float64))
    got = _bits(xs, dtype, fn)
    want = np.array([reference_bits(float(x), steps) for x in xs])
    bad = np.flatnonzero(got != want)
    assert not bad.size, f"{xs[bad[:3]]} -> {got[bad[:3]]}, want {want[bad[:3]]}"


def test_bfloat16_rounds_twice_and_nearest_once() -> None:
    """1 + 2^-8 + 2^-30 lies just above a bfloat16 midpoint: float32 first rounds it onto
    the midpoint, which ties to even (1.0); one rounding goes up."""
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -30])
    assert narrow(x, BF16_DT).astype(np.float64)[0] == 1.0
    assert nearest(x, BF16_DT).astype(np.float64)[0] == 1 + 2.0 ** -7


def test_nan_is_the_quiet_nan_of_its_sign() -> None:
    x = np.array([np.nan, -np.nan, np.float64(np.frombuffer(
        np.uint64(0x7FF0000000000001).tobytes(), np.float64)[0])])
    assert list(_bits(x, np.dtype(np.float16), narrow)) == [0x7E00, 0xFE00, 0x7E00]
    assert list(_bits(x, BF16_DT, narrow)) == [0x7FC0, 0xFFC0, 0x7FC0]
    assert list(_bits(x, np.dtype(np.float32), narrow)) == [0x7FC00000, 0xFFC00000, 0x7FC00000]


@pytest.mark.parametrize("dtype, lo, hi", [(np.int8, -128, 127), (np.uint8, 0, 255),
                                           (ml_dtypes.int4, -8, 7), (np.int32, -2**31, 2**31 - 1),
                                           (np.int16, -2**15, 2**15 - 1)])
def test_integers_wrap_twos_complement(dtype, lo: int, hi: int) -> None:
    span = hi - lo + 1
    ints = np.array([lo - 1, lo, -1, 0, 1, hi, hi + 1, 3 * span + 5, -3 * span - 5], np.int64)
    got = narrow(ints, dtype).astype(np.int64)
    assert list(got) == [(int(v) - lo) % span + lo for v in ints]


def test_exact_conversions_keep_their_values() -> None:
    x16 = np.arange(-2048, 2049, dtype=np.int64)
    assert (narrow(x16, np.float16).astype(np.int64) == x16).all()
    b = np.array([True, False])
    assert narrow(b, BF16_DT).astype(np.float64).tolist() == [1.0, 0.0]
    h = narrow(np.linspace(-3, 3, 101), np.float16)
    assert narrow(h, np.float32).astype(np.float64).tolist() == h.astype(np.float64).tolist()
    assert narrow(-0.0, np.float16).tobytes() == np.float16(-0.0).tobytes()
