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
from numba import njit


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
    """The bit patterns (int64) of float64 `x` rounded to `fmt`, to nearest even."""
    b = np.ascontiguousarray(x, np.float64).reshape(-1).view(np.int64)
    out = np.empty(b.size, np.int64)
    _round_bits(b, out, fmt.mantissa, fmt.emin, fmt.bits, fmt.finite_max, fmt.overflow,
                fmt.nan, False)
    return out.reshape(np.shape(x))


def bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """The bfloat16 patterns (int64) of float64 `x`: to float32, then to bfloat16, each to
    nearest even; NaN the quiet NaN of its sign."""
    b = np.ascontiguousarray(x, np.float64).reshape(-1).view(np.int64)
    out = np.empty(b.size, np.int64)
    _round_bits(b, out, F32.mantissa, F32.emin, F32.bits, F32.finite_max, F32.overflow,
                F32.nan, True)
    return out.reshape(np.shape(x))


@njit(nogil=True, cache=True)
def _round_bits(b: np.ndarray, out: np.ndarray, mantissa: int, emin: int, width: int,
                finite_max: int, overflow: int, nan: int, to_bf16: bool) -> None:
    """out[j] = the bits of the float64 with bits b[j] rounded to the format (its fields as
    FloatFormat's), to nearest even, in integer arithmetic alone (one compiled loop: as
    NumPy calls the same steps were a dozen passes over the array). `to_bf16`: the
    float32 result rounded on to bfloat16, to nearest even (NaN its sign's quiet NaN)."""
    one = np.int64(1)
    frac = np.int64(_F64_FRAC)
    hidden = one << 52
    sign_bit = one << (width - 1)
    special = overflow if overflow != nan else nan   # what Inf becomes
    for j in range(b.size):
        mag = b[j] & np.int64(0x7FFFFFFFFFFFFFFF)
        e = mag >> 52                            # biased float64 exponent, 0 .. 2047
        m = mag & frac
        if e > 0:
            m |= hidden                          # the significand, 53 bits
        eu = max(e, one) - 1023                  # value = m * 2^(eu - 52)
        k = max(eu, np.int64(emin))              # the exponent the result is counted in
        shift = min(k - eu + 52 - mantissa, np.int64(62))  # a 55+ shift rounds to 0 alike
        q = (m >> shift) & one                   # the kept part's last bit: ties to even
        q += m + (one << (shift - one)) - one
        q >>= shift
        # exponent field k + bias, minus one: q's own 2^mantissa bit adds it back, and a
        # subnormal (k = emin, q < 2^mantissa) keeps field 0; a carry moves into it
        r = ((k - emin) << mantissa) + q
        if r > finite_max:
            r = overflow
        if e == 2047:
            r = special if m == hidden else nan
        if b[j] < 0:
            r |= sign_bit
        if to_bf16:
            sign = r & np.int64(0x80000000)
            r ^= sign
            if r > 0x7F800000:
                r = np.int64(0x7FC0)
            else:
                r = (r + ((r >> 16) & one) + 0x7FFF) >> 16  # past 0x7F7F: Inf, as it must
            r |= sign >> 16
        out[j] = r


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
        a64 = a.astype(np.float64, copy=False)   # exact for floats and |ints| < 2^53
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
