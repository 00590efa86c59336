"""Narrowing to a stored dtype with the rounding decided here, not by a library.

Every value a case sends is computed in float64 (or int64) and narrowed once to
its tensor's dtype by `narrow`. NumPy, ml_dtypes and torch each convert with
their own code, and those codes have changed between releases (ml_dtypes 0.7
rounds float64 -> bfloat16 once; earlier releases went through float32 and
rounded twice), so a case's bits would depend on what pip resolved. Here the
rounding is integer arithmetic on the float64 bits, the same on every machine
and under any floating-point environment (flush-to-zero included):

- float16, float32: round to nearest, ties to even, in one rounding from the
  float64 value (IEEE 754 convertFormat; what NumPy's cast does);
- bfloat16: float64 -> float32 -> bfloat16, each to nearest even: two
  roundings, as ml_dtypes before 0.7 converted, so the pinned bits of cases
  written before this module stand. `nearest` rounds once instead: the
  golden and the differ round exact results with it (a device rounds the
  exact result of an operation once; the truth narrowed to the output dtype
  is its nearest value);
- float8_e4m3fn: to nearest even, a finite value past 448 after rounding (and
  Inf) is NaN (the format has no Inf), as ml_dtypes converts;
- values past the largest finite after rounding become Inf of their sign;
  NaN becomes the canonical quiet NaN of its sign; -0.0 stays -0.0;
- integers stored in a narrower integer dtype wrap, two's complement (int4 in
  [-8, 7]); integers to a float dtype go through their exact float64 value.

docs/values.md states the same; tests/numerics/test_narrow.py checks every
float16 and bfloat16 midpoint and boundary against a reference in fractions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: `mantissa` stored bits, `emin` its smallest normal exponent,
    `emax` its largest finite exponent field's exponent; `bits` its width. `finite_max` is
    the largest finite bit pattern (unsigned), `overflow` what a larger magnitude becomes."""

    mantissa: int
    emin: int
    bits: int
    finite_max: int
    overflow: int
    nan: int


F16 = FloatFormat(10, -14, 16, 0x7BFF, 0x7C00, 0x7E00)
F32 = FloatFormat(23, -126, 32, 0x7F7FFFFF, 0x7F800000, 0x7FC00000)
BF16 = FloatFormat(7, -126, 16, 0x7F7F, 0x7F80, 0x7FC0)
F8E4M3FN = FloatFormat(3, -6, 8, 0x7E, 0x7F, 0x7F)
#: dtype -> the format its bits are rounded to (bfloat16 goes through F32, then 16 bits).
_FORMATS: dict[np.dtype, FloatFormat] = {
    np.dtype(np.float16): F16,
    np.dtype(np.float32): F32,
    np.dtype(ml_dtypes.float8_e4m3fn): F8E4M3FN,
}
_BF16 = np.dtype(ml_dtypes.bfloat16)
_UINTS = {1: np.uint8, 2: np.uint16, 4: np.uint32}
_INT4 = np.dtype(ml_dtypes.int4)
_F64_FRAC = (1 << 52) - 1


def float_bits(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """The bit patterns (int64) of float64 `x` rounded to `fmt`, to nearest even.

    Values in the format's normal range take the short form of the same rounding (one
    shift for all, the exponent rebiased); zeros, subnormals, overflow and non-finite
    values go through `_float_bits`, which handles every exponent."""
    b = np.ascontiguousarray(x, np.float64).reshape(-1).view(np.int64)
    mag = b & np.int64(0x7FFFFFFFFFFFFFFF)
    shift = 52 - fmt.mantissa
    q = mag >> shift
    q &= 1
    q += mag
    q += (1 << (shift - 1)) - 1
    q >>= shift                                  # a carry moves into the exponent, as it must
    q -= (1023 + fmt.emin - 1) << fmt.mantissa   # rebias: the exponent fields differ
    low, high = (1023 + fmt.emin) << 52, fmt.finite_max
    other = q.view(np.uint64) > high             # past the range, non-finite (a NaN's
    other |= mag < low                           # payload may wrap q negative), or below
    if other.any():
        q[other] = _float_bits(b[other], fmt)
    sign = b >> 63                               # 0 or -1
    sign &= 1 << (fmt.bits - 1)
    q |= sign
    return q.reshape(np.shape(x))


def _float_bits(b: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """`float_bits` without the sign, for the float64 patterns `b` (int64) of any exponent."""
    mag = b & np.int64(0x7FFFFFFFFFFFFFFF)
    e = mag >> 52                                # biased float64 exponent, 0 .. 2047
    m = mag & _F64_FRAC
    m |= np.where(e > 0, np.int64(1 << 52), np.int64(0))  # the significand, 53 bits
    eu = np.maximum(e, 1)
    eu -= 1023                                   # value = m * 2^(eu - 52)
    k = np.maximum(eu, fmt.emin)                 # the exponent the result is counted in
    shift = k - eu
    shift += 52 - fmt.mantissa
    np.minimum(shift, 62, out=shift)             # m < 2^53: a 55+ shift rounds to 0 alike
    one = np.int64(1)
    q = m >> shift
    q &= one                                     # the kept part's last bit: ties to even
    q += m
    q += (one << (shift - one)) - one
    q >>= shift
    # exponent field k + bias, minus one: q's own 2^mantissa bit adds it back, and a
    # subnormal (k = emin, q < 2^mantissa) keeps field 0
    k += -fmt.emin
    k <<= fmt.mantissa
    k += q
    out = np.where(k > fmt.finite_max, np.int64(fmt.overflow), k)
    special = e == 2047
    if special.any():
        inf = np.int64(fmt.nan if fmt.overflow == fmt.nan else fmt.overflow)
        out[special] = np.where(m[special] == 1 << 52, inf, np.int64(fmt.nan))
    return out


def bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """The bfloat16 patterns (int64) of float64 `x`: to float32, then to bfloat16, each to
    nearest even; NaN the quiet NaN of its sign."""
    f = float_bits(x, F32)
    sign = f & np.int64(0x80000000)
    f ^= sign
    nan = f > 0x7F800000
    lsb = f >> 16
    lsb &= 1
    f += lsb
    f += 0x7FFF
    f >>= 16                                     # a carry past 0x7F7F gives Inf, as it must
    f[nan] = 0x7FC0
    f |= sign >> 16
    return f


def narrow(x: Any, dtype: Any) -> np.ndarray:
    """`x` (array or scalar) as a stored tensor of `dtype`: rounded or wrapped as this
    module states (bfloat16 through float32). Exact conversions (widening, bool, the same
    dtype) are NumPy's casts: no rounding to decide."""
    return _convert(x, dtype, twice=True)


def nearest(x: Any, dtype: Any) -> np.ndarray:
    """`x` in `dtype` rounded once to nearest even (bfloat16 too): the result of an
    arithmetic step done in `dtype` on exact operands, or a value's nearest in `dtype`."""
    return _convert(x, dtype, twice=False)


def _convert(x: Any, dtype: Any, twice: bool) -> np.ndarray:
    a = np.asarray(x)
    dt = np.dtype(dtype)
    if a.dtype == dt:
        return a
    if a.dtype.kind in "iu" and (dt.kind in "iu" or dt == _INT4):
        return _wrap(a, dt)
    if dt == _BF16 or dt in _FORMATS:
        if a.dtype.kind == "b" or a.dtype == _BF16 or (dt == np.float32 and a.dtype == np.float16):
            return a.astype(dt)                  # exact
        a64 = a.astype(np.float64)               # exact for floats and |ints| < 2^53
        if dt == _BF16:
            bits = bfloat16_bits(a64) if twice else float_bits(a64, BF16)
        else:
            bits = float_bits(a64, _FORMATS[dt])
        return bits.astype(_UINTS[dt.itemsize]).view(dt)
    return a.astype(dt)


def _wrap(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Integers in a narrower (or same-width) integer dtype, two's complement wrapped."""
    if dt == _INT4:
        w = (a.astype(np.int64) + 8) & 15
        w -= 8
        return w.astype(np.int8).astype(dt)      # in [-8, 7]: exact
    info = np.iinfo(dt)
    if info.bits >= 64 or (np.iinfo(a.dtype).min >= info.min and np.iinfo(a.dtype).max <= info.max):
        return a.astype(dt)                      # widening (or int64 <-> uint64 bits): exact
    mask = (1 << info.bits) - 1
    w = a.astype(np.int64) & mask
    if info.min < 0:
        w = np.where(w > info.max, w - (mask + 1), w)
    return w.astype(dt)
