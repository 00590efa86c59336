"""Exact conversion of stored tensors to a float working type (the golden's and the differ's).

Float16 and bfloat16 -> float32/float64 are exact, so any correct conversion
gives the same bits (but for signalling NaNs, which come out quiet here, as the
golden's first arithmetic on them would make them anyway). NumPy's cast costs
about 1.3 ns an element from float16 and 11 ns from bfloat16 to float64,
which on decode is more than the matmuls; `widen` below is one compiled loop
(numba: LLVM's half -> float conversion, F16C where the CPU has it) that also
tells whether the source held a NaN or Inf, so the golden need not read V again
to know. Everything else is NumPy's cast.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import ml_dtypes
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: Source dtypes `widen` converts, and its mode for each: float16 0, bfloat16 1.
HALF_MODES = {np.dtype(np.float16): 0, np.dtype(ml_dtypes.bfloat16): 1}
_WIDE = (np.dtype(np.float32), np.dtype(np.float64))
#: Contiguous runs shorter than this go through one contiguous copy instead.
_MIN_RUN = 1024


@intrinsic
def _half_to(typingctx, bits, like):  # noqa: ARG001 (numba's signature)
    """The float16 with IEEE bits `bits` (uint16), exactly, in like's type (float32/64)."""
    if bits != types.uint16 or like not in (types.float32, types.float64):
        return None

    def codegen(context, builder, sig, args):
        half = builder.bitcast(args[0], ir.HalfType())
        wide = ir.FloatType() if sig.return_type == types.float32 else ir.DoubleType()
        return builder.fpext(half, wide)
    return like(bits, like), codegen


@intrinsic
def _bf16_to(typingctx, bits, like):  # noqa: ARG001
    """The bfloat16 with IEEE bits `bits` (uint16), exactly, in like's type (float32/64)."""
    if bits != types.uint16 or like not in (types.float32, types.float64):
        return None

    def codegen(context, builder, sig, args):
        i16, i32 = ir.IntType(16), ir.IntType(32)
        # a NaN gets its quiet bit (0x40), as float16's conversion gives it
        nan = builder.icmp_unsigned(">", builder.and_(args[0], ir.Constant(i16, 0x7FFF)),
                                    ir.Constant(i16, 0x7F80))
        half = builder.select(nan, builder.or_(args[0], ir.Constant(i16, 0x40)), args[0])
        word = builder.shl(builder.zext(half, i32), ir.Constant(i32, 16))
        single = builder.bitcast(word, ir.FloatType())
        if sig.return_type == types.float32:
            return single
        return builder.fpext(single, ir.DoubleType())
    return like(bits, like), codegen


@njit(nogil=True, cache=True, fastmath={"reassoc"})
def widen(src: np.ndarray, dst: np.ndarray, mode: int) -> bool:
    """dst[j] = the float16 (mode 0) or bfloat16 (mode 1) with bits src[j] (uint16), 1-D
    contiguous both; returns whether every source value is finite: a sum of x * 0, which is
    0 for finite x and NaN for NaN or Inf whatever the order of the adds (the one fast-math
    flag lets it vectorise; an integer check on the bits does not, here)."""
    like = dst.dtype.type(0)
    seen = dst.dtype.type(0)
    if mode == 0:
        for j in range(src.size):
            x = _half_to(src[j], like)
            seen += x * like
            dst[j] = x
    else:
        for j in range(src.size):
            x = _bf16_to(src[j], like)
            seen += x * like
            dst[j] = x
    return seen == 0


def _runs(dst: np.ndarray, src: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """(dst, src) as pairs of 1-D C-contiguous views of their sub-arrays over the fewest
    leading axes, or None when those runs would be shorter than _MIN_RUN."""
    lead = max(_lead(dst), _lead(src))
    if not lead:
        return [(dst.reshape(-1), src.reshape(-1))]
    if src[(0,) * lead].size < _MIN_RUN:
        return None
    return [(dst[i].reshape(-1), src[i].reshape(-1))
            for i in itertools.product(*map(range, src.shape[:lead]))]


def _lead(x: np.ndarray) -> int:
    """The number of leading axes of x before its C-contiguous tail (size-1 axes aside)."""
    expected = x.itemsize
    for axis in range(x.ndim - 1, -1, -1):
        if x.shape[axis] != 1 and x.strides[axis] != expected:
            return axis + 1
        expected *= x.shape[axis]
    return 0


def cast_into(dst: np.ndarray, src: np.ndarray) -> bool | None:
    """dst[...] = src converted to dst's dtype (exact for float16/bfloat16 -> float32/float64).
    Returns whether src holds only finite values where the conversion learns it for free
    (float16 and bfloat16 sources), else None."""
    mode = HALF_MODES.get(src.dtype)
    if mode is None or dst.dtype not in _WIDE or not src.size:
        np.copyto(dst, src, casting="unsafe")
        return None
    runs = _runs(dst, src)
    if runs is None:
        tmp = np.empty(src.shape, dst.dtype)
        finite = widen(np.ascontiguousarray(src).view(np.uint16).reshape(-1),
                       tmp.reshape(-1), mode)
        dst[...] = tmp
        return finite
    finite = True
    for d, s in runs:
        finite = widen(s.view(np.uint16), d, mode) and finite
    return finite


def as_work(src: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """src as a `dtype` array: src itself (a view, maybe strided) when it already has that
    dtype, else a C-contiguous converted copy. The golden's matmuls take strided operands
    as they are (BLAS packs them anyway), so a block of a converted KV head costs no copy."""
    if src.dtype == dtype:
        return src
    dst = np.empty(src.shape, dtype)
    cast_into(dst, src)
    return dst


def work_blocks(src: np.ndarray, dtype: np.dtype, width: int
                ) -> Iterator[tuple[np.ndarray, bool | None]]:
    """(src[..., c0:c0 + width, :] in `dtype`, whether it is all finite or None when not
    known) for c0 = 0, width, ...: views of src when it already has that dtype, else
    converted into one buffer reused for every block (each block is valid until the next is
    drawn), so a block-by-block conversion allocates (and page faults) once instead of once
    a block."""
    cols = src.shape[-2]
    if src.dtype == dtype:
        for c0 in range(0, cols, width):
            yield src[..., c0:c0 + width, :], None
        return
    buf = np.empty((*src.shape[:-2], min(width, cols), src.shape[-1]), dtype)
    for c0 in range(0, cols, width):
        block = src[..., c0:c0 + width, :]
        dst = buf[..., :block.shape[-2], :]
        yield dst, cast_into(dst, block)
