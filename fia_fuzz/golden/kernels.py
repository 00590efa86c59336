"""The golden's compiled kernels (numba): the online softmax step of one KV block, row by
row; P's rounding; the output rows' normalisation; the float16 output cast; V's finiteness
check.

Between its two matmuls the golden turns a block of scores into P: the row max,
the running max and the rescale factor alpha, exp(s - max), the row sum, and
(device precision) P rounded to the input dtype. As NumPy calls these are seven
or more passes over the scores, each about as costly as the exp, and on
GQA-sized tiles they cost as much as the matmuls; here each row is read into L1
once and its steps run on it there (the rounding is one more pass over the block:
inside the row loop it stops the exp loop vectorising).

Each row is computed by the same compiled code whatever the thread count and the
row's position in a tile, so results are bit-identical run to run and across
thread counts, and GQA equals MHA bit for bit:

- exp is `exp_scalar` below, one polynomial per working type (no libm call, so it
  vectorises): within 1.5 ulp of the true exp in float32 and float64
  (tests/golden/test_golden_kernels.py), exp(-inf) = 0, exp(0) = 1 and
  exp(NaN) = NaN exactly, underflow to 0 below the smallest subnormal;
- the row sum is one compiled loop whose adds may be reassociated (its only
  fast-math flag), so it is vectorised; its order is the compiled loop's, the same
  for every row of one length on one machine (as NumPy's pairwise sum was);
- P's rounding to float16 or bfloat16 is round half to even on the bits,
  equal to a cast (float16's subnormals by the magic add (x + 1/2) - 1/2), and
  the float16 output cast is NumPy's bit for bit;
- no other fast-math flag (none assumes finite values): NaN and Inf follow IEEE
  arithmetic (docs/values.md).

The first call in a fresh process compiles the kernels (a few seconds) and
caches them beside this module (`cache=True`); later processes load them.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

#: Modes of P's rounding (`round_rows`): float16, bfloat16.
ROUND_F16, ROUND_BF16 = 1, 2

_F32 = np.float32
_F64 = np.float64
# float32 exp: n = round(x / ln 2) by the 1.5 * 2^23 add, r = x - n ln 2 in two parts
# (n * LN2_HI exact), e^r by Cephes' expf polynomial, 2^n from the exponent bits.
_MAGIC32 = _F32(12582912.0)
_LOG2E32 = _F32(1.44269504088896341)
_LN2_HI32 = _F32(0.693359375)
_LN2_LO32 = _F32(-2.12194440e-4)
_P32 = tuple(_F32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_LOW32 = _F32(-112.0)  # below -103.98 exp rounds to 0; the clamp keeps 2^n in range
_TINY32 = _F32(2.0 ** -64)
_ONE32 = _F32(1.0)
# float64 exp: the same reduction with fdlibm's ln 2 split, e^r by its Taylor series to
# r^13 (|r| <= ln 2 / 2: truncation below 1e-17 relative).
_MAGIC64 = _F64(6755399441055744.0)
_LOG2E64 = _F64(1.4426950408889634)
_LN2_HI64 = _F64(6.93147180369123816490e-01)
_LN2_LO64 = _F64(1.90821492927058770002e-10)
_LOW64 = _F64(-760.0)
_TINY64 = _F64(2.0 ** -200)
_ONE64 = _F64(1.0)
_INV_FACT = tuple(_F64(1.0 / float(np.prod(np.arange(1, k + 1, dtype=np.float64))))
                  for k in range(13, 1, -1))
_HALF32 = _F32(0.5)
_F16_MIN_NORMAL = _F32(2.0 ** -14)


@intrinsic
def _bits(typingctx, x):  # noqa: ARG001 (numba's signature)
    """The IEEE bits of a float32 (as int32) or float64 (as int64)."""
    width = {types.float32: 32, types.float64: 64}.get(x)
    if width is None:
        return None
    out = types.int32 if width == 32 else types.int64

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(width))
    return out(x), codegen


@intrinsic
def _float(typingctx, b):  # noqa: ARG001
    """The float32 (int32 b) or float64 (int64 b) with IEEE bits b."""
    width = {types.int32: 32, types.int64: 64}.get(b)
    if width is None:
        return None
    out = types.float32 if width == 32 else types.float64

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType() if width == 32 else ir.DoubleType())
    return out(b), codegen


@intrinsic
def _fma(typingctx, a, b, c):  # noqa: ARG001
    """a * b + c rounded once (llvm.fma: the same bits with or without an FMA unit)."""
    if not (a == b == c and a in (types.float32, types.float64)):
        return None

    def codegen(context, builder, sig, args):
        t = args[0].type
        fn = builder.module.declare_intrinsic("llvm.fma", [t], ir.FunctionType(t, [t, t, t]))
        return builder.call(fn, args)
    return a(a, b, c), codegen


def exp_scalar(x):  # pragma: no cover (replaced by the overloads in compiled code)
    """exp(x) for x <= 0, NaN or -inf, in x's float type (see the module docstring)."""
    raise NotImplementedError("exp_scalar runs only inside numba-compiled code")


@overload(exp_scalar)
def _exp_scalar(x):
    if x == types.float32:
        def exp32(x):
            x = _LOW32 if x < _LOW32 else x  # NaN stays NaN
            t = _fma(x, _LOG2E32, _MAGIC32)
            n = t - _MAGIC32
            r = _fma(n, -_LN2_HI32, x)
            r = _fma(n, -_LN2_LO32, r)
            z = r * r
            p = _fma(_P32[0], r, _P32[1])
            p = _fma(p, r, _P32[2])
            p = _fma(p, r, _P32[3])
            p = _fma(p, r, _P32[4])
            p = _fma(p, r, _P32[5])
            p = _fma(p, z, r) + _ONE32
            # n as an integer (garbage for NaN: p is NaN); numba widens int32 sums, hence np.int32
            e = np.int32(_bits(t) - _bits(_MAGIC32))
            deep = e < -100
            e = np.int32(e + 64) if deep else e
            p = p * _float(np.int32((e + 127) << 23))
            return p * _TINY32 if deep else p
        return exp32
    if x == types.float64:
        def exp64(x):
            x = _LOW64 if x < _LOW64 else x
            t = _fma(x, _LOG2E64, _MAGIC64)
            n = t - _MAGIC64
            r = _fma(n, -_LN2_HI64, x)
            r = _fma(n, -_LN2_LO64, r)
            p = _INV_FACT[0]
            for c in _INV_FACT[1:]:
                p = _fma(p, r, c)
            p = _fma(p, r, _ONE64)
            p = _fma(p, r, _ONE64)
            e = np.int64(_bits(t) - _bits(_MAGIC64))
            deep = e < -1000
            e = np.int64(e + 200) if deep else e
            p = p * _float(np.int64((e + 1023) << 52))
            return p * _TINY64 if deep else p
        return exp64
    return None




def _limits(x):  # pragma: no cover
    raise NotImplementedError


@overload(_limits)
def _limits_of(x):
    """(0, -inf) in x's float type."""
    if x == types.float32:
        return lambda x: (_F32(0.0), _F32(-np.inf))
    if x == types.float64:
        return lambda x: (_F64(0.0), _F64(-np.inf))
    return None


def _flip(b):  # pragma: no cover
    raise NotImplementedError


@overload(_flip)
def _flip_of(b):
    """Float bits <-> an integer key of the float's order (-0 below +0, a NaN past the
    infinity of its sign): the magnitude bits flipped where the sign is set (an involution)."""
    if b == types.int32:
        return lambda b: np.int32(b ^ ((b >> 31) & 0x7FFFFFFF))
    if b == types.int64:
        return lambda b: np.int64(b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF))
    return None


@njit(nogil=True, cache=True)
def row_max(s: np.ndarray, i: int) -> float:
    """max(s[i]), NaN where the row holds one, by an integer max and min of the bits' keys
    (a float max reduction does not vectorise without fast-math). Rows by index, not as
    views: a view per row costs reference counting."""
    hi = lo = _flip(_bits(s[i, 0]))
    for j in range(s.shape[1]):
        k = _flip(_bits(s[i, j]))
        hi = max(hi, k)
        lo = min(lo, k)
    if lo < _flip(_bits(_limits(s[i, 0])[1])):  # a NaN with the sign bit set
        return _float(_flip(lo))
    return _float(_flip(hi))  # the max, or a NaN without the sign bit


@njit(nogil=True, cache=True, fastmath={"reassoc"})
def row_sum(s: np.ndarray, i: int) -> float:
    """sum(s[i]) in the working type, vectorised: reassociation is the only fast-math flag
    (no finite-math assumption), and the order it allows is the compiled loop's, the same
    for every row of a length."""
    total = _limits(s[i, 0])[0]
    for j in range(s.shape[1]):
        total += s[i, j]
    return total


@njit(nogil=True, cache=True)
def exp_shifted(s: np.ndarray, i: int, base: float) -> None:
    """s[i, j] = exp_scalar(s[i, j] - base) for every column j, in place."""
    for j in range(s.shape[1]):
        s[i, j] = exp_scalar(s[i, j] - base)


@njit(nogil=True, cache=True)
def round_rows(p: np.ndarray, mode: int) -> None:
    """float32 p (rows, cols; values in [0, 1] or NaN) rounded in place to float16 (mode
    ROUND_F16) or bfloat16 (ROUND_BF16), round half to even, kept as float32."""
    for i in range(p.shape[0]):
        if mode == ROUND_F16:
            for j in range(p.shape[1]):
                x = p[i, j]
                b = _bits(x)
                b = np.int32((b + 0xFFF + ((b >> 13) & 1)) & -0x2000)
                # below float16's smallest normal: to its subnormal grid 2^-24
                p[i, j] = _float(b) if x >= _F16_MIN_NORMAL else (x + _HALF32) - _HALF32
        elif mode == ROUND_BF16:
            for j in range(p.shape[1]):
                x = p[i, j]
                b = _bits(x)
                b = np.int32((b + 0x7FFF + ((b >> 16) & 1)) & -0x10000)
                p[i, j] = _float(b) if x == x else x


@njit(nogil=True, cache=True)
def softmax_block(s: np.ndarray, m: np.ndarray, l_sum: np.ndarray, hit: np.ndarray,
                  alpha: np.ndarray) -> None:
    """One block of the online softmax, per row i of s (rows, cols), in place: s becomes
    P = exp(s - base) for the new running max m (base 0 while it is -inf), alpha[i] the
    factor exp(m_old - base) that rescales the row's earlier sums, l_sum[i] the running row
    sum, hit[i] set where the row attends a key (a score above -inf or NaN). P's rounding
    is a pass of its own (`round_rows`): inside this loop it stops the exp vectorising."""
    if s.shape[0] == 0 or s.shape[1] == 0:
        return
    zero, neg_inf = _limits(s[0, 0])
    for i in range(s.shape[0]):
        s_max = row_max(s, i)
        if s_max != neg_inf:  # a NaN row attends (and is NaN), a row of -inf does not
            hit[i] = True
        m_old = m[i]
        m_new = m_old if m_old >= s_max else s_max
        if m_old != m_old or s_max != s_max:
            m_new = m_old + s_max  # NaN, as np.maximum
        base = zero if m_new == neg_inf else m_new
        a = exp_scalar(m_old - base)
        exp_shifted(s, i, base)
        l_sum[i] = l_sum[i] * a + row_sum(s, i)
        alpha[i] = a
        m[i] = m_new


@njit(nogil=True, cache=True)
def rescale_add(acc: np.ndarray, alpha: np.ndarray, pv: np.ndarray) -> None:
    """acc[i] = acc[i] * alpha[i] + pv[i] for the rows i of acc (rows, Dv), in place."""
    for i in range(acc.shape[0]):
        a = alpha[i]
        for j in range(acc.shape[1]):
            acc[i, j] = acc[i, j] * a + pv[i, j]


@njit(nogil=True, cache=True, error_model="numpy")  # x / 0 is IEEE's, not an exception
def normalise_rows(acc: np.ndarray, l_sum: np.ndarray, hit: np.ndarray) -> None:
    """acc[i] /= l_sum[i] where row i attends a key (hit[i]), else acc[i] = 0, for the rows i
    of acc (rows, Dv), in place: the output rows, one pass instead of NumPy's four."""
    for i in range(acc.shape[0]):
        if hit[i]:
            d = l_sum[i]
            for j in range(acc.shape[1]):
                acc[i, j] = acc[i, j] / d
        else:
            for j in range(acc.shape[1]):
                acc[i, j] = 0


@njit(nogil=True, cache=True)
def finite_bits(bits: np.ndarray, exponent: int) -> bool:
    """Whether the floats with these bits (int32 or int64, 1-D; `exponent` the mask of their
    exponent field) hold no NaN or Inf: an integer max over the exponent fields, vectorised
    (a float sum, the NumPy way, costs several times more)."""
    top = bits[0] & exponent
    for j in range(bits.size):
        top = max(top, bits[j] & exponent)
    return top != exponent


@njit(nogil=True, cache=True)
def float16_bits(x: np.ndarray, out: np.ndarray) -> None:
    """out[j] = the float16 bits of float32 x[j] (1-D both), round half to even: NumPy's
    cast bit for bit (NaN keeps its sign and top payload bits; overflow to Inf), without
    its per-element branches (NumPy casts float32 to float16 at about 5 ns an element)."""
    for j in range(x.size):
        u = _bits(x[j])
        sign = np.int32((u >> 16) & 0x8000)
        u = np.int32(u & 0x7FFFFFFF)
        # normal: drop 13 mantissa bits, round half to even, rebias the exponent
        normal = np.int32((u + (-112 << 23) + 0xFFF + ((u >> 13) & 1)) >> 13)
        # below 2^-14: |x| + 1/2 rounds to float16's subnormal grid 2^-24
        tiny = np.int32(_bits(_float(u) + _HALF32) - 0x3F000000)
        nan = np.int32(0x7C00 | max(1, (u & 0x7FFFFF) >> 13))
        o = tiny if u < 0x38800000 else normal
        o = 0x7C00 if u >= 0x47800000 else o
        o = nan if u > 0x7F800000 else o
        out[j] = np.uint16(o | sign)
