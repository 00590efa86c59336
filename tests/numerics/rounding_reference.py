"""An independent reference for numerics/narrow.py: exact rational arithmetic, no ml_dtypes.

Each format's values are decoded from their bit patterns with `Fraction`; a value is
rounded by comparing its distance to the two grid points around it (ties to the even
significand). Slow and plain on purpose: it shares no step with the integer shifts of
the routine it checks.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

INF = float("inf")


class Format:
    """A binary float format: `p` stored mantissa bits, `emin`, `emax`, `width` bits;
    `fn`: no Inf, an overflow is NaN (float8_e4m3fn), whose largest finite is `max_bits`."""

    def __init__(self, p: int, emin: int, emax: int, width: int, fn: bool = False,
                 max_bits: int | None = None):
        self.p, self.emin, self.emax, self.width, self.fn = p, emin, emax, width, fn
        self.bias = 1 - emin
        if max_bits is None:
            self.max = (2 - Fraction(1, 2 ** p)) * Fraction(2) ** emax
        else:
            self.max = self.decode(max_bits)

    def decode(self, bits: int) -> Fraction:
        """The value of a finite, non-negative bit pattern."""
        field, frac = bits >> self.p, bits & ((1 << self.p) - 1)
        if field == 0:
            return Fraction(frac, 2 ** self.p) * Fraction(2) ** self.emin
        return (1 + Fraction(frac, 2 ** self.p)) * Fraction(2) ** (field - self.bias)

    def encode(self, v: Fraction) -> int:
        """The pattern of a representable non-negative value."""
        if v == 0:
            return 0
        e = _floor_log2(v)
        if e < self.emin:
            return int(v / Fraction(2) ** self.emin * 2 ** self.p)
        frac = (v / Fraction(2) ** e - 1) * 2 ** self.p
        assert frac.denominator == 1
        return ((e + self.bias) << self.p) | int(frac)

    def round(self, v: Fraction) -> Fraction | float:
        """The nearest value of the format to v >= 0, ties to even; INF past the range
        (NaN for an fn format: returned as NaN)."""
        if v == 0:
            return Fraction(0)
        k = max(_floor_log2(v), self.emin)
        quantum = Fraction(2) ** (k - self.p)
        lo = math.floor(v / quantum)
        below, above = v - lo * quantum, (lo + 1) * quantum - v
        n = lo + 1 if above < below or (above == below and lo % 2) else lo
        r = n * quantum
        if r > self.max:
            return math.nan if self.fn else INF
        return r


def _floor_log2(v: Fraction) -> int:
    e = v.numerator.bit_length() - v.denominator.bit_length()
    while Fraction(2) ** e > v:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    return e


F16 = Format(10, -14, 15, 16)
BF16 = Format(7, -126, 127, 16)
F32 = Format(23, -126, 127, 32)
F8E4M3FN = Format(3, -6, 8, 8, fn=True, max_bits=0x7E)
QUIET_NAN = {16: {F16.p: 0x7E00, BF16.p: 0x7FC0}, 32: {F32.p: 0x7FC00000}, 8: {F8E4M3FN.p: 0x7F}}
INF_BITS = {F16.p: 0x7C00, BF16.p: 0x7F80, F32.p: 0x7F800000}


def reference_bits(x: float, steps: tuple[Format, ...]) -> int:
    """The bit pattern of float64 x rounded through `steps` (the last is the target)."""
    target = steps[-1]
    sign = (1 << (target.width - 1)) if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | QUIET_NAN[target.width][target.p]
    if math.isinf(x):
        return sign | (QUIET_NAN[8][3] if target.fn else INF_BITS[target.p])
    v: Fraction | float = Fraction(abs(x))
    for fmt in steps:
        v = fmt.round(v) if isinstance(v, Fraction) else v
    if isinstance(v, float):  # overflow: Inf, or NaN in an fn format
        return sign | (QUIET_NAN[8][3] if math.isnan(v) else INF_BITS[target.p])
    return sign | target.encode(v)


def grid(fmt: Format) -> list[Fraction]:
    """Every finite non-negative value of the format, ascending."""
    top = fmt.encode(fmt.max)
    return [fmt.decode(b) for b in range(top + 1)]


# ---- a vectorised reference, for whole tensors -------------------------------------------
#: name -> the format's finite non-negative values ascending, and the first value past them
#: (the overflow threshold's far end): a searchsorted grid, decoded with Fraction above.
_GRIDS: dict[str, np.ndarray] = {}


def _grid_of(fmt: Format) -> np.ndarray:
    key = f"{fmt.p}/{fmt.emin}/{fmt.width}"
    if key not in _GRIDS:
        values = grid(fmt)
        past = values[-1] + (values[-1] - values[-2])
        _GRIDS[key] = np.array([float(v) for v in (*values, past)])
    return _GRIDS[key]


def grid_bits(x, fmt: Format):
    """Bit patterns (int64) of float64 array x rounded to `fmt` by searching the grid of its
    values for the two around |x| (ties to the even pattern): no bit arithmetic."""
    import numpy as np

    vals = _grid_of(fmt)
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    finite = np.isfinite(a)
    af = np.where(finite, a, 0.0)
    i = np.clip(np.searchsorted(vals, af, side="right") - 1, 0, vals.size - 2)
    below, above = af - vals[i], vals[i + 1] - af
    n = np.where((above < below) | ((above == below) & (i % 2 == 1)), i + 1, i)
    top = vals.size - 2                          # the largest finite pattern
    over = QUIET_NAN[8][3] if fmt.fn else INF_BITS[fmt.p]
    out = np.where(n > top, over, n)
    out = np.where(np.isinf(a), over, out)
    out = np.where(np.isnan(a), QUIET_NAN[fmt.width][fmt.p], out)
    return out | (np.signbit(x).astype(np.int64) << (fmt.width - 1))


def vector_bits(x, dtype_name: str):
    """The stated narrowing of float64 array x to float16 / bfloat16 / float32, by other
    means: float32 is the hardware's IEEE conversion (NumPy's C cast), float16 and bfloat16
    search their grids (bfloat16 from the float32 value: two roundings)."""
    x = np.asarray(x, np.float64)
    if dtype_name == "float32":
        with np.errstate(over="ignore"):
            f = x.astype(np.float32)
        bits = f.view(np.uint32).astype(np.int64)
        return np.where(np.isnan(x), QUIET_NAN[32][F32.p] | (np.signbit(x).astype(np.int64) << 31),
                        bits)
    if dtype_name == "bfloat16":
        with np.errstate(over="ignore"):
            x = x.astype(np.float32).astype(np.float64)
        return grid_bits(x, BF16)
    return grid_bits(x, F16)
