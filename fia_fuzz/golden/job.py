"""A job of the golden in one compiled call: core.py's block loop, bit for bit.

Driven from Python, each KV block of a tile costs about ten calls that release
and retake the GIL (the two matmuls, the softmax steps, P's rounding, the
rescale), and with two tile threads that contention costs as much as the
work; a decode block, read for a few rows only, is mostly that. Here one call
runs a whole job without the GIL: per row tile, (batch, KV head) pair and KV
block it makes the BLAS calls NumPy's matmul makes for each head's product
(cblas gemm, or gemv for a single row, of the OpenBLAS NumPy loaded, by
address: numerics/blas.py) and runs golden/kernels.py's softmax steps between
them, so each row gets core.py's result bit for bit
(tests/golden/test_golden_job.py). A job holding one row tile (decode) converts
its float16/bfloat16 K and V block by block (numerics/casts.py `widen`) into
buffers that stay in L2; one holding several gets them converted once.

It takes only what that loop does without a bias or quantised matmuls (the
pairs a row does not attend come as one array over the job), with V all finite
(else core.py's masked product keeps a NaN or Inf out of the keys a row does
not attend) and P rounded to float16 or bfloat16 (device) or not at all (fp64);
and only where NumPy calls gemm or gemv: not for a block of one key or a head
dim of 1 (NumPy then calls dot, or its own loop).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from fia_fuzz.golden.kernels import rescale_add, round_rows, softmax_block
from fia_fuzz.numerics.blas import blas_addresses
from fia_fuzz.numerics.casts import HALF_MODES, widen

#: CBLAS enums: row-major storage, A or A^T.
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def _cblas(context, builder, sig, args, like, blas_int, params):
    """Call the CBLAS function at address args[0]: `params` gives each C parameter as (kind,
    source), kind "i" a CBLAS enum (int), "n" a BLAS integer (blas_int's width), "f" a float
    of like's type, "p" a pointer from an address; source an argument index, or ("=", value)
    a constant."""
    flt = context.get_value_type(like)
    c_types = {"i": ir.IntType(32), "n": ir.IntType(blas_int.bitwidth), "f": flt,
               "p": ir.IntType(8).as_pointer()}
    values = []
    for kind, source in params:
        if isinstance(source, tuple):
            values.append(ir.Constant(c_types[kind], source[1]))
        elif kind == "p":
            values.append(builder.inttoptr(args[source], c_types["p"]))
        else:
            to = types.int32 if kind == "i" else blas_int
            values.append(context.cast(builder, args[source], sig.args[source], to))
    fnty = ir.FunctionType(ir.VoidType(), [c_types[kind] for kind, _ in params])
    builder.call(builder.inttoptr(args[0], fnty.as_pointer()), values)
    return context.get_dummy_value()


def _float_and_int(like, blas_int) -> bool:
    return like in (types.float32, types.float64) and isinstance(blas_int, types.Integer)


@intrinsic
def _gemm(typingctx, fn, trans_b, m, n, k, a, lda, b, ldb, c, like, blas_int):  # noqa: ARG001
    """cblas_?gemm(RowMajor, NoTrans, trans_b, m, n, k, 1, a, lda, b, ldb, 0, c, ldc=n) at
    address fn; a, b, c addresses of like's float type; integers of blas_int's type."""
    if not _float_and_int(like, blas_int):
        return None
    params = (("i", ("=", _ROW_MAJOR)), ("i", ("=", _NO_TRANS)), ("i", 1), ("n", 2), ("n", 3),
              ("n", 4), ("f", ("=", 1.0)), ("p", 5), ("n", 6), ("p", 7), ("n", 8),
              ("f", ("=", 0.0)), ("p", 9), ("n", 3))

    def codegen(context, builder, sig, args):
        return _cblas(context, builder, sig, args, like, blas_int, params)
    return types.none(fn, trans_b, m, n, k, a, lda, b, ldb, c, like, blas_int), codegen


@intrinsic
def _gemv(typingctx, fn, trans, m, n, a, lda, x, y, like, blas_int):  # noqa: ARG001
    """cblas_?gemv(RowMajor, trans, m, n, 1, a, lda, x, 1, 0, y, 1) at address fn; a, x, y
    addresses of like's float type; integers of blas_int's type."""
    if not _float_and_int(like, blas_int):
        return None
    params = (("i", ("=", _ROW_MAJOR)), ("i", 1), ("n", 2), ("n", 3), ("f", ("=", 1.0)),
              ("p", 4), ("n", 5), ("p", 6), ("n", ("=", 1)), ("f", ("=", 0.0)), ("p", 7),
              ("n", ("=", 1)))

    def codegen(context, builder, sig, args):
        return _cblas(context, builder, sig, args, like, blas_int, params)
    return types.none(fn, trans, m, n, a, lda, x, y, like, blas_int), codegen


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
def _step(q, k, ldk, v, ldv, w, ex, masked, p_round, blas, blas_int, m, l_sum, hit, acc, s,
          pv, alpha):
    """One head's rows q (r, d) against one KV block: k and v the addresses of its w rows
    (row strides ldk, ldv elements) in the working type, ex (r, w) the pairs a row does not
    attend where `masked`; core.py `_blocks`'s steps on the row state m, l_sum, hit (r) and
    acc (r, dv), with buffers s, pv, alpha."""
    r, d = q.shape
    dv = acc.shape[1]
    like = q.dtype.type(0)
    sv = s[:r * w].reshape(r, w)
    out = pv[:r * dv].reshape(r, dv)
    if r == 1:  # NumPy's vector-matrix product: gemv
        _gemv(blas[1], _NO_TRANS, w, d, k, ldk, q.ctypes.data, sv.ctypes.data, like, blas_int)
    else:
        _gemm(blas[0], _TRANS, r, w, d, q.ctypes.data, d, k, ldk, sv.ctypes.data, like,
              blas_int)
    if masked:
        for i in range(r):
            for j in range(w):
                if ex[i, j]:
                    sv[i, j] = -np.inf
    softmax_block(sv, m, l_sum, hit, alpha[:r])
    if p_round:
        round_rows(sv, p_round)
    if r == 1:
        _gemv(blas[1], _TRANS, w, dv, v, ldv, sv.ctypes.data, out.ctypes.data, like, blas_int)
    else:
        _gemm(blas[0], _NO_TRANS, r, dv, w, sv.ctypes.data, w, v, ldv, out.ctypes.data, like,
              blas_int)
    rescale_add(acc, alpha[:r], out)


@njit(nogil=True, cache=True)
def _run_widened(q, k, v, ex, masked, mode, p_round, blas, blas_int, width, m, l_sum, hit,
                 acc):
    """The job for q (pairs, g, r, d) (one row tile) and k (b, h, L, d), v (b, h, L, dv)
    (b * h = pairs, in that order) the uint16 bits of float16 (mode 0) or bfloat16 (mode 1),
    each block converted into L2-sized buffers; ex (b, r, L) the pairs a row does not attend
    where `masked`. m, l_sum, hit (rows) and acc (rows, dv), rows in q's order. False, the
    job undone, at a V block holding a NaN or Inf."""
    pairs, g, r, d = q.shape
    heads, length, dv = k.shape[1], k.shape[2], v.shape[3]
    kb = np.empty(width * d, q.dtype)
    vb = np.empty(width * dv, q.dtype)
    s = np.empty(r * width, q.dtype)
    pv = np.empty(r * dv, q.dtype)
    alpha = np.empty(r, q.dtype)
    for c0 in range(0, length, width):
        w = min(width, length - c0)
        for p in range(pairs):
            b, h = divmod(p, heads)
            _widen_rows(k[b, h, c0:c0 + w], kb, mode)
            if not _widen_rows(v[b, h, c0:c0 + w], vb, mode):
                return False
            for i in range(g):
                rows = slice((p * g + i) * r, (p * g + i + 1) * r)
                _step(q[p, i], kb.ctypes.data, d, vb.ctypes.data, dv, w,
                      ex[b if masked else 0, :, c0:c0 + w], masked, p_round, blas, blas_int,
                      m[rows], l_sum[rows], hit[rows], acc[rows], s, pv, alpha)
    return True


@njit(nogil=True, cache=True)
def _run_work(q, k, v, ex, masked, tiles, p_round, blas, blas_int, width, m, l_sum, hit,
              acc):
    """The job for q (pairs, g, R, d) and k (b, h, L, d), v (b, h, L, dv) (b * h = pairs, in
    that order) in the working type, rows contiguous, over row tiles [tiles[t, 0],
    tiles[t, 1]) of R; ex (b, R, L) the pairs a row does not attend where `masked`. m, l_sum,
    hit (rows) and acc (rows, dv), rows in q's order."""
    pairs, g, big_r, d = q.shape
    heads, length, dv = k.shape[1], k.shape[2], v.shape[3]
    r_max = 0
    for t in range(tiles.shape[0]):
        r_max = max(r_max, tiles[t, 1] - tiles[t, 0])
    s = np.empty(r_max * width, q.dtype)
    pv = np.empty(r_max * dv, q.dtype)
    alpha = np.empty(r_max, q.dtype)
    item = q.itemsize
    for t in range(tiles.shape[0]):
        r0, r1 = tiles[t, 0], tiles[t, 1]
        for p in range(pairs):
            b, h = divmod(p, heads)
            kh, vh = k[b, h], v[b, h]
            for c0 in range(0, length, width):
                w = min(width, length - c0)
                for i in range(g):
                    lo = (p * g + i) * big_r
                    rows = slice(lo + r0, lo + r1)
                    _step(q[p, i, r0:r1], kh[c0:].ctypes.data, kh.strides[0] // item,
                          vh[c0:].ctypes.data, vh.strides[0] // item, w,
                          ex[b if masked else 0, r0:r1 if masked else 0, c0:c0 + w], masked,
                          p_round, blas, blas_int, m[rows], l_sum[rows], hit[rows],
                          acc[rows], s, pv, alpha)


def _blas() -> tuple[dict[np.dtype, np.ndarray], np.integer] | None:
    """({working type: its (gemm, gemv) addresses}, the BLAS integer as a sample value), or
    None."""
    found = blas_addresses()
    if found is None:
        return None
    (sgemm, sgemv), (dgemm, dgemv), bits = found
    return ({np.dtype(np.float32): np.array([sgemm, sgemv], np.int64),
             np.dtype(np.float64): np.array([dgemm, dgemv], np.int64)},
            np.int64(0) if bits == 64 else np.int32(0))


_BLAS = _blas()
#: Whether compiled jobs can run in this process (core.py asks before building a job's mask).
AVAILABLE = _BLAS is not None


def _takes(q: np.ndarray, k: np.ndarray, v: np.ndarray, width: int) -> bool:
    """Whether the compiled job can run these arrays as NumPy would (see the module)."""
    return (_BLAS is not None and q.dtype in _BLAS[0] and q.flags.c_contiguous
            and k.strides[3] == v.strides[3] == k.itemsize and k.dtype == v.dtype
            and all(x.strides[2] >= x.shape[3] * x.itemsize for x in (k, v))  # BLAS's ld
            and k.shape[2] % width != 1 and min(q.shape[3], k.shape[3], v.shape[3]) > 1)


def run_job(q: np.ndarray, k: np.ndarray, v: np.ndarray, excluded: np.ndarray | None,
            tiles: list[slice], p_round: int, width: int, m: np.ndarray, l_sum: np.ndarray,
            hit: np.ndarray, acc: np.ndarray) -> bool:
    """Run core.py's block loop for q (pairs, g, R, d) (working type, scaled) over its row
    `tiles` of R and k (b, h, L, d), v (b, h, L, dv) (b * h = pairs): float16 or bfloat16
    converted block by block when there is one tile, else in q's type and all finite (the
    caller checks); `excluded` (b, R, L) the pairs a row does not attend, or None. Updates
    m, l_sum, hit (rows) and acc (rows, dv) in place; `p_round` is golden/kernels.py's
    rounding mode (0: none). False when it cannot (no such BLAS, other dtypes, strides or
    sizes) or met a non-finite V block: the arrays are then to be reset and the job run by
    core.py."""
    if not _takes(q, k, v, width):
        return False
    blas, blas_int = _BLAS[0][q.dtype], _BLAS[1]
    masked = excluded is not None
    ex = excluded if masked else np.zeros((1, 1, 1), bool)
    if len(tiles) == 1 and k.dtype in HALF_MODES:
        return bool(_run_widened(q, k.view(np.uint16), v.view(np.uint16), ex, masked,
                                 HALF_MODES[k.dtype], p_round, blas, blas_int, width, m, l_sum,
                                 hit, acc))
    if k.dtype != q.dtype:
        return False
    bounds = np.array([(t.start, t.stop) for t in tiles], np.int64) - tiles[0].start
    _run_work(q, k, v, ex, masked, bounds, p_round, blas, blas_int, width, m, l_sum, hit, acc)
    return True
