"""A decode job of the golden in one compiled call: the same steps as core.py's block loop.

A decode row tile holds one query row per head, so each KV block is read for a
few rows only: the block loop is cheap in arithmetic and run thousands of times
a call. Driven from Python, each block costs about ten calls that release and
retake the GIL, and with two tile threads that contention cost more than the
work. Here one call runs a whole job without the GIL: per KV block and (batch,
KV head) it converts the float16/bfloat16 K and V block (numerics/casts.py
`widen`, into buffers that stay in L2), makes the BLAS calls NumPy's matmul
makes for a vector-matrix product (cblas gemv of the OpenBLAS NumPy loaded, by
address: numerics/blas.py), and runs golden/kernels.py's softmax steps, so the
result is core.py's bit for bit (tests/golden/test_golden_decode.py).

It takes only what that loop does with nothing to add: no bias, no excluded
pair, no quantised matmuls, one row per head, P rounded to float16 or bfloat16
(device) or not at all (fp64); and only where NumPy's matmul would call gemv:
not for a block of one key or a head dim of 1 (NumPy then calls dot, or its own
loop). A V block holding a NaN or Inf stops it (False):
core.py then runs the job, whose masked product keeps such values out of the
keys a row does not attend.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from fia_fuzz.golden.kernels import rescale_add, round_rows, softmax_block
from fia_fuzz.numerics.blas import gemv_addresses
from fia_fuzz.numerics.casts import widen

#: CBLAS enums: row-major storage, A or A^T.
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@intrinsic
def _gemv(typingctx, fn, trans, m, n, a, x, y, blas_int):  # noqa: ARG001 (numba's signature)
    """cblas_?gemv(RowMajor, trans, m, n, 1, a, lda=n, x, 1, 0, y, 1) at address fn, with
    the BLAS's integer type that of blas_int; a (m*n), x and y: 1-D C arrays of one float
    type."""
    if not (isinstance(a, types.Array) and a.dtype in (types.float32, types.float64)
            and x == y == a and isinstance(blas_int, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        fn_v, trans_v, m_v, n_v, a_v, x_v, y_v, _ = args
        flt = context.get_value_type(a.dtype)
        iw = ir.IntType(blas_int.bitwidth)
        i32, i8p = ir.IntType(32), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, iw, iw, flt, i8p, iw, i8p, iw, flt,
                                               i8p, iw])

        def data(ty, val):
            return builder.bitcast(context.make_array(ty)(context, builder, val).data, i8p)

        def width(ty, val):
            return context.cast(builder, val, ty, blas_int)
        callee = builder.inttoptr(fn_v, fnty.as_pointer())
        n_i = width(sig.args[3], n_v)
        builder.call(callee, [ir.Constant(i32, _ROW_MAJOR), builder.trunc(trans_v, i32),
                              width(sig.args[2], m_v), n_i, ir.Constant(flt, 1.0),
                              data(a, a_v), n_i, data(x, x_v), ir.Constant(iw, 1),
                              ir.Constant(flt, 0.0), data(y, y_v), ir.Constant(iw, 1)])
        return context.get_dummy_value()
    return types.none(fn, trans, m, n, a, x, y, blas_int), codegen


@intrinsic
def _pointer(typingctx, address, like):  # noqa: ARG001
    """The address as a pointer to like's element type (like: an array)."""
    if not isinstance(like, types.Array):
        return None

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))
    return types.CPointer(like.dtype)(address, like), codegen


@njit(nogil=True, cache=True)
def _widen_rows(src, dst, mode):
    """dst[:rows * cols] = src (rows, cols) widened row after row (numerics/casts.py `widen`,
    whether all finite returned); src's rows are contiguous, at any distance apart."""
    rows, cols = src.shape
    like = np.empty(0, np.uint16)
    if rows and src.strides[0] == 2 * cols:
        return widen(carray(_pointer(src.ctypes.data, like), rows * cols), dst[:rows * cols],
                     mode)
    finite = True
    for j in range(rows):
        row = carray(_pointer(src[j].ctypes.data, like), cols)
        finite = widen(row, dst[j * cols:(j + 1) * cols], mode) and finite
    return finite


@njit(nogil=True, cache=True)
def _run(q, k, v, mode, p_round, gemv, blas_int, width, m, l_sum, hit, acc):
    """The block loop of core.py `_blocks` for q (pairs, g, d) in the working type (scaled)
    and k (b, h, L, d), v (b, h, L, dv) (b * h = pairs, in that order): the uint16 bits of
    float16 (mode 0) or bfloat16 (mode 1), each row contiguous. m, l_sum,
    hit (pairs * g) and acc (pairs * g, dv) as core.py keeps them. False, the job undone,
    at a V block holding a NaN or Inf."""
    pairs, g, d = q.shape
    heads, length, dv = k.shape[1], k.shape[2], v.shape[3]
    kb = np.empty(width * d, q.dtype)
    vb = np.empty(width * dv, q.dtype)
    s = np.empty(g * width, q.dtype)
    pv = np.empty((g, dv), q.dtype)
    alpha = np.empty(g, q.dtype)
    for c0 in range(0, length, width):
        w = min(width, length - c0)
        sv = s[:g * w].reshape(g, w)
        for p in range(pairs):
            rows = slice(p * g, p * g + g)
            b, h = divmod(p, heads)
            _widen_rows(k[b, h, c0:c0 + w], kb, mode)
            if not _widen_rows(v[b, h, c0:c0 + w], vb, mode):
                return False
            for i in range(g):
                _gemv(gemv, _NO_TRANS, w, d, kb[:w * d], q[p, i], sv[i], blas_int)
            softmax_block(sv, m[rows], l_sum[rows], hit[rows], alpha)
            if p_round:
                round_rows(sv, p_round)
            for i in range(g):
                _gemv(gemv, _TRANS, w, dv, vb[:w * dv], sv[i], pv[i], blas_int)
            rescale_add(acc[rows], alpha, pv)
    return True


def _gemvs() -> tuple[dict[np.dtype, int], np.integer] | None:
    """({working type: its gemv's address}, the BLAS integer as a sample value), or None."""
    found = gemv_addresses()
    if found is None:
        return None
    return ({np.dtype(np.float32): found[0], np.dtype(np.float64): found[1]},
            np.int64(0) if found[2] == 64 else np.int32(0))


_GEMVS = _gemvs()
#: Stored K/V dtypes `widen` converts, and its mode for each.
_MODES = {np.dtype(np.float16): 0, np.dtype(ml_dtypes.bfloat16): 1}


def decode_job(q: np.ndarray, k: np.ndarray, v: np.ndarray, p_round: int, width: int,
               m: np.ndarray, l_sum: np.ndarray, hit: np.ndarray, acc: np.ndarray) -> bool:
    """Run core.py's block loop for q (pairs, g, d) (working type, scaled) and k (b, h, L, d),
    v (b, h, L, dv) float16 or bfloat16 (b * h = pairs), updating m, l_sum, hit (pairs * g)
    and acc (pairs * g, dv) in place; `p_round` is golden/kernels.py's rounding mode (0:
    none). False when it cannot (no such BLAS, other dtypes, strides or sizes) or met a V block
    holding a NaN or Inf: the arrays are then to be reset and the job run by core.py."""
    if (_GEMVS is None or k.dtype != v.dtype or k.dtype not in _MODES
            or q.dtype not in _GEMVS[0] or not q.flags.c_contiguous
            or k.strides[3] != 2 or v.strides[3] != 2
            or k.shape[2] % width == 1 or min(k.shape[3], v.shape[3]) < 2):
        return False
    return bool(_run(q, k.view(np.uint16), v.view(np.uint16), _MODES[k.dtype], p_round,
                     _GEMVS[0][q.dtype], _GEMVS[1], width, m, l_sum, hit, acc))
