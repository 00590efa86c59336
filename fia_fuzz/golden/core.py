"""The attention step itself, in the two precisions the differ needs [SEM §4-5].

`precision="fp64"` is the ideal reference: float64 throughout. `"device"`
follows the vendor flow for fp16/bf16 inputs: scores and softmax in fp32,
the unnormalised P cast to the input dtype before P·V with fp32
accumulation, division by the row sum in fp32 (the caller casts to the
output dtype).

Memory stays bounded by an online softmax over blocks of KV_BLOCK key
columns, on tiles of batches, heads of one KV group and query rows holding at
most TILE_ELEMENTS scores, so peak memory does not grow with S1*S2. In device
precision P is relative to the running row max of the blocks seen so far, as
in the device's flash-style kernel; for S2 <= KV_BLOCK that is the global
max. The scale multiplies q in the working type before Q·K^T (one rounding,
as scaling the scores would be). Between the matmuls (BLAS, through NumPy) the
softmax steps and P's rounding run in compiled kernels (golden/kernels.py),
which fix the exp and the row sum's order; a tile's scores fit in L2, so those
steps read them from cache.

A job with no bias and no quantised matmuls runs in one compiled call
(golden/job.py): the same steps and BLAS calls, without the GIL between them.

Jobs are (batch tile, KV heads) groups (several KV heads only while a tile
holds them all), so the G query heads of a group read their KV head once,
from cache, and a job's scores stay small; a job holding
one row tile (decode) converts its K/V to the working type block by block
(its tiles take as many batches as keep a block's K and V in L2, KV_TILE_BYTES),
one holding several converts its KV head once. Jobs run on the golden's own
threads (golden/threads.py) and write their own rows. A row tile holds
ROW_TILE_ELEMENTS scores of one head whatever the head count (larger, faster
matmuls than a share of TILE_ELEMENTS over all heads: the BLAS rounds each
score the same way only for the same rows, so this choice fixes the fp32
accumulation order). It depends only on S1 and S2, and each head's matmuls
are the same BLAS calls on the same rows whatever the job split, so results
do not depend on the thread count, and GQA equals MHA on repeated KV heads
bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import ml_dtypes
import numpy as np

from fia_fuzz.golden.job import AVAILABLE as JOB_AVAILABLE
from fia_fuzz.golden.job import run_job
from fia_fuzz.golden.kernels import (
    ROUND_BF16,
    ROUND_F16,
    finite_bits,
    float16_bits,
    normalise_rows,
    rescale_add,
    round_rows,
    softmax_block,
)
from fia_fuzz.golden.threads import run_all, tile_threads
from fia_fuzz.numerics.casts import as_work, cast_into, work_blocks
from fia_fuzz.numerics.narrow import nearest

PRECISIONS = ("device", "fp64")
WORK = {"device": np.dtype(np.float32), "fp64": np.dtype(np.float64)}
KV_BLOCK = 512
#: Scores of one head in a row tile (rows x KV_BLOCK): sets the rows of every matmul.
ROW_TILE_ELEMENTS = 1 << 16
#: Scores of a tile over its heads and batches (bounds the working set).
TILE_ELEMENTS = 1 << 17
#: Bytes of a tile's K and V block over its batches in the working type: a block converted
#: block by block (decode) stays in L2 for its two matmuls.
KV_TILE_BYTES = 1 << 20
#: The most (batch, row, key) pairs a job's excluded mask may hold for golden/job.py to take
#: it (64 MiB of bools); a larger job runs block by block here.
JOB_MASK_ELEMENTS = 1 << 26
#: P's dtypes rounded on the bits by the compiled kernel (golden/kernels.py).
ROUNDING = {np.dtype(np.float16): ROUND_F16, np.dtype(ml_dtypes.bfloat16): ROUND_BF16}


class Matmuls(Protocol):
    """The two matmuls of the attention step, replaceable by a quantised flow.

    golden/quant.py's FullQuant implements this for int8 q/k/v [SEM §8]:
    `scores` is Q·K^T before the softmax scale, `pv` is P·V on the
    unnormalised P (it rounds P itself).
    """

    def scores(self, q: np.ndarray, k: np.ndarray) -> np.ndarray: ...

    def pv(self, p: np.ndarray, v: np.ndarray) -> np.ndarray: ...


#: (batches, rows, cols) of a tile -> (pse bias (b|1, N, r, c) or None, excluded (b, r, c) or None)
ScoreMods = Callable[[slice, slice, slice], tuple["np.ndarray | None", "np.ndarray | None"]]


def round_p(p: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """p (fp32, in [0, 1]) rounded to `dtype` and kept as fp32, in place: float16 and
    bfloat16 on the bits (golden/kernels.py `round_rows`), other dtypes by a cast round trip."""
    mode = ROUNDING.get(np.dtype(dtype))
    if mode is None:
        p[...] = nearest(p, dtype)
    elif p.size:
        round_rows(p.reshape(-1, p.shape[-1]), mode)
    return p


def masked_pv(p: np.ndarray, v: np.ndarray, excluded: np.ndarray | None,
              finite: bool | None = None) -> np.ndarray:
    """p @ v, where a key a row does not attend contributes nothing, whatever its value.

    p (b, KV_N, G, r, c), v (b, KV_N, 1, c, Dv), excluded (b, r, c) or None. With finite v
    this is the one matmul. A NaN or Inf in v multiplies the row's weight in IEEE arithmetic
    where the row attends the key (0 x Inf = NaN for a weight that underflowed) and
    nowhere else: masked and padded keys are outside the flow, not weighted by 0
    (docs/values.md). The non-finite entries are taken out of the matmul and added back,
    column by column, where the key is attended. `finite`: v is known to be all finite
    (else it is checked).
    """
    if finite is None:
        finite = all_finite(v)
    if finite:
        return np.matmul(p, v)
    bad = ~np.isfinite(v)
    out = np.matmul(p, np.where(bad, 0, v))
    with np.errstate(invalid="ignore", over="ignore"):
        for j in np.flatnonzero(bad.any(axis=(0, 1, 2, 4))):
            part = p[..., j:j + 1] * v[..., j:j + 1, :]
            part = np.where(bad[..., j:j + 1, :], part, 0)
            if excluded is not None:
                part = np.where(excluded[:, None, None, :, j:j + 1], 0, part)
            out += part
    return out


#: Float dtype -> (integer view, exponent mask) for golden/kernels.py `finite_bits`.
_EXPONENTS = {np.dtype(np.float32): (np.int32, 0x7F800000),
              np.dtype(np.float64): (np.int64, 0x7FF0000000000000)}


def all_finite(x: np.ndarray) -> bool:
    """Whether x holds no NaN or Inf: by its bits (golden/kernels.py `finite_bits`) when x is
    a contiguous float32/float64 array, else one sum (finite unless x holds one, or
    overflows)."""
    if x.dtype in _EXPONENTS and x.flags.c_contiguous and x.size:
        view, exponent = _EXPONENTS[x.dtype]
        return bool(finite_bits(x.reshape(-1).view(view), exponent))
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.sum(x))) or bool(np.isfinite(x).all())


def to_output(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x rounded once to `dtype`: float32 -> float16 by golden/kernels.py `float16_bits`
    (numerics/narrow.py `nearest` bit for bit, faster), anything else by `nearest`."""
    if x.dtype != np.float32 or np.dtype(dtype) != np.float16:
        return nearest(x, dtype)
    bits = np.empty(x.shape, np.uint16)
    float16_bits(np.ascontiguousarray(x).reshape(-1), bits.reshape(-1))
    return bits.view(np.float16)


def attend_tile(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, precision: str,
                p_dtype: np.dtype, mods: Callable[[slice], tuple], sink: np.ndarray | None,
                col_start: int, scale: float = 1.0, matmuls: Matmuls | None = None,
                v_finite: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) of one tile: q (b, KV_N, G, r, D) in the working type, k/v (b, KV_N, L, D|Dv)
    (converted to the working type block by block unless they already are).

    The float flow gets q already scaled (scale 1 here); `matmuls` replaces
    both matmuls and then `scale` multiplies its scores.

    GQA: the G query heads of a group share one KV head, broadcast so each
    head's matmul is the one MHA would do (GQA == MHA bit for bit). Rows that attend no
    key get out 0 and lse +inf. `mods(cols)` gives the tile's pse bias and
    excluded pairs for a block of absolute key columns (k's column 0 is
    absolute column col_start). `v_finite`: v is known to hold no NaN or Inf (else each
    block is checked).
    """
    m, l_sum, hit, acc = _row_state(q.shape, v.shape[3], q.dtype, sink)
    k_blocks, v_blocks = (work_blocks(x[:, :, None], q.dtype, KV_BLOCK) for x in (k, v))
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf inputs: IEEE, silently
        _blocks(q, k_blocks, v_blocks, m, l_sum, hit, acc, k.shape[2], precision=precision,
                p_dtype=p_dtype, mods=mods, col_start=col_start, scale=scale,
                matmuls=matmuls, v_finite=v_finite)
    return _finish(m, l_sum, hit, acc)


def _row_state(shape: tuple[int, ...], dv: int, work: np.dtype, sink: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The online softmax's starting running max, row sum, hit flags and accumulator of a
    tile of q's shape (b, KV_N, G, r, D), with the sink counted."""
    b, kvn, g, r, _ = shape
    m = np.full((b, kvn, g, r, 1), -np.inf, work)
    l_sum = np.zeros((b, kvn, g, r, 1), work)
    if sink is not None:  # a key of score sink[n] and value 0 [SEM §5]
        m[...] = sink.reshape(1, kvn, g, 1, 1)
        l_sum += 1
    return m, l_sum, np.zeros((b, kvn, g, r, 1), bool), np.zeros((b, kvn, g, r, dv), work)


def _finish(m: np.ndarray, l_sum: np.ndarray, hit: np.ndarray, acc: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) of a tile from its online softmax state: rows divided by their sums, out 0
    and lse +inf where a row attends no key."""
    with np.errstate(invalid="ignore", over="ignore"):
        normalise_rows(acc.reshape(-1, acc.shape[-1]), l_sum.reshape(-1), hit.reshape(-1))
        lse = np.where(hit, np.log(np.where(hit, l_sum, 1)) + m, np.inf)[..., 0]
    return acc, lse


def _blocks(q: np.ndarray, k_blocks: Any, v_blocks: Any, m: np.ndarray, l_sum: np.ndarray,
            hit: np.ndarray, acc: np.ndarray, length: int, *, precision: str,
            p_dtype: np.dtype, mods: Callable[[slice], tuple], col_start: int, scale: float,
            matmuls: Matmuls | None, v_finite: bool | None) -> None:
    """The online softmax over KV blocks of `attend_tile`, updating the running max m, row
    sum l_sum, `hit` and the output accumulator acc in place (all C-contiguous)."""
    work = q.dtype
    b, kvn, g, r, d = q.shape
    alpha = np.empty(m.size, work)
    rows = (m.reshape(-1), l_sum.reshape(-1), hit.reshape(-1), alpha)
    acc_rows = acc.reshape(-1, acc.shape[-1])
    for c0, (kb, _), (vb, vb_finite) in zip(range(0, length, KV_BLOCK), k_blocks, v_blocks,
                                            strict=True):
        c1 = c0 + kb.shape[-2]
        if matmuls is None:
            s = np.matmul(q, kb.swapaxes(-1, -2))
        else:
            s = matmuls.scores(q, kb).astype(work)
            s *= work.type(scale)
        bias, excluded = mods(slice(col_start + c0, col_start + c1))
        if bias is not None:
            s += bias.astype(work).reshape(bias.shape[0], kvn, g, r, -1)
        if excluded is not None:
            np.copyto(s, -np.inf, where=excluded[:, None, None])
        softmax_block(s.reshape(-1, s.shape[-1]), *rows)  # s becomes P, in place
        if matmuls is not None:  # a quantised flow's pv rounds P itself
            pv = matmuls.pv(s, vb).astype(work)
        else:
            if precision == "device":
                round_p(s, p_dtype)
            pv = masked_pv(s, vb, excluded, vb_finite if v_finite is None else v_finite)
        rescale_add(acc_rows, alpha, pv.reshape(-1, pv.shape[-1]))


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float, precision: str,
              p_dtype: np.dtype, mods: ScoreMods, sink: np.ndarray | None,
              row_span: tuple[np.ndarray, np.ndarray], col_span: tuple[np.ndarray, np.ndarray],
              matmuls: Matmuls | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(out (B, N, S1, Dv), lse (B, N, S1)) in the working float type, for BNSD q/k/v.

    Only rows in [row_span[0][b], row_span[1][b]) and columns in
    [col_span[0][b], col_span[1][b]) can be valid for batch b; the rest are
    never computed (out 0, lse +inf). `matmuls` swaps in a quantised flow's
    Q·K^T and P·V (see Matmuls).
    """
    work = WORK[precision]
    bsz, n, s1, d = q.shape
    kvn, dv = k.shape[1], v.shape[3]
    g = n // kvn
    out = np.zeros((bsz, n, s1, dv), work)
    lse = np.full((bsz, n, s1), np.inf, work)
    if bsz == 0 or k.shape[2] == 0:
        return out, lse
    sink_w = None if sink is None else np.asarray(sink).astype(work).reshape(n)
    # golden/job.py's P rounding mode, where it can run this call's jobs
    p_round = (None if matmuls is not None or not JOB_AVAILABLE
               else 0 if precision == "fp64" else ROUNDING.get(np.dtype(p_dtype)))
    cols = max(1, min(KV_BLOCK, int(col_span[1].max()) - int(col_span[0].min())))
    rc = min(max(s1, 1), max(1, ROW_TILE_ELEMENTS // cols))
    hc = max(1, min(g, TILE_ELEMENTS // (rc * cols)))
    bc = max(1, min(TILE_ELEMENTS // (hc * rc * cols),
                    KV_TILE_BYTES // (cols * (d + dv) * work.itemsize)))
    # small heads share a job (their matmuls are the same calls either way), leaving
    # at least two jobs per thread
    kc = 1 if hc < g else max(1, min(kvn, TILE_ELEMENTS // (min(bc, bsz) * g * rc * cols),
                                     -(-bsz // bc) * kvn // (2 * tile_threads())))
    groups = []
    for b0 in range(0, bsz, bc):
        bsl = slice(b0, min(b0 + bc, bsz))
        r_lo, r_hi = int(row_span[0][bsl].min()), int(row_span[1][bsl].max())
        rows = [slice(r0, min(r0 + rc, r_hi)) for r0 in range(r_lo, r_hi, rc)]
        groups += [(bsl, slice(h, min(h + kc, kvn)), rows) for h in range(0, kvn, kc) if rows]
    # a group's row tiles are split over several jobs only when groups are too few for the threads
    chunks = -(-2 * tile_threads() // max(1, len(groups)))
    jobs = []
    for bsl, hs, rows in groups:
        size = -(-len(rows) // min(len(rows), chunks))
        jobs += [(bsl, hs, rows[i:i + size]) for i in range(0, len(rows), size)]

    def job(task: tuple[slice, slice, list[slice]]) -> None:
        bsl, hs, row_tiles = task
        c_lo, c_hi = int(col_span[0][bsl].min()), int(col_span[1][bsl].max())
        kh, vh = k[bsl, hs, c_lo:c_hi], v[bsl, hs, c_lo:c_hi]
        heads = slice(hs.start * g, hs.stop * g)
        span = slice(row_tiles[0].start, row_tiles[-1].stop)
        excluded = None
        plain = (p_round is not None  # the job's excluded pairs fit in memory at once
                 and (bsl.stop - bsl.start) * (span.stop - span.start) * (c_hi - c_lo)
                 <= JOB_MASK_ELEMENTS)
        if plain:
            bias, excluded = mods(bsl, span, slice(c_lo, c_hi))
            plain = bias is None
        once = len(row_tiles) > 1 or hc < g  # K/V shared by several tiles: convert once
        if (plain and not once and (vh.dtype != work or all_finite(vh))  # else checked there
                and compiled(bsl, heads, row_tiles, kh, vh, excluded)):
            return
        v_finite = None
        if once:
            kh, vh = as_work(kh, work), as_work(vh, work)
            v_finite = all_finite(vh) or None  # checked once, not per tile and block
            if plain and v_finite and compiled(bsl, heads, row_tiles, kh, vh, excluded):
                return
        for rows in row_tiles:
            for h0 in range(hs.start * g, hs.stop * g, hc if hc < g else (hs.stop - hs.start) * g):
                heads = slice(h0, min(h0 + hc, hs.stop * g) if hc < g else hs.stop * g)
                tile(bsl, heads, rows, kh, vh, c_lo, v_finite)

    def compiled(bsl: slice, heads: slice, row_tiles: list[slice], kh: np.ndarray,
                 vh: np.ndarray, excluded: np.ndarray | None) -> bool:
        """Whether golden/job.py ran this job (and wrote its rows); `excluded` (b, rows,
        cols) over the job, or None."""
        rows = slice(row_tiles[0].start, row_tiles[-1].stop)
        qt = q_tile(bsl, heads, rows, kh.shape[1])
        state = _row_state(qt.shape, dv, work, None if sink_w is None else sink_w[heads])
        if not run_job(qt.reshape(-1, *qt.shape[2:]), kh, vh, excluded, row_tiles, p_round,
                       KV_BLOCK, *(x.reshape(-1) for x in state[:3]),
                       state[3].reshape(-1, dv)):
            return False
        o, ls = _finish(*state)
        out[bsl, heads, rows] = o.reshape(o.shape[0], -1, o.shape[3], dv)
        lse[bsl, heads, rows] = ls.reshape(ls.shape[0], -1, ls.shape[3])
        return True

    def q_tile(bsl: slice, heads: slice, rows: slice, kv_heads: int) -> np.ndarray:
        """q's tile in the working type, scaled for the float flow, (b, KV_N, G, r, D)."""
        part = q[bsl, heads, rows]
        qt = np.empty(part.shape, work)  # a copy (scaled in place below), cast fast when fp16
        cast_into(qt, part)
        if matmuls is None:
            qt *= work.type(scale)
        return qt.reshape(qt.shape[0], kv_heads, -1, qt.shape[2], d)

    def tile(bsl: slice, heads: slice, rows: slice, kh: np.ndarray, vh: np.ndarray,
             c_lo: int, v_finite: bool | None) -> None:
        qt = q_tile(bsl, heads, rows, kh.shape[1])

        def tile_mods(cols: slice) -> tuple:
            bias, excluded = mods(bsl, rows, cols)
            return (None if bias is None else bias[:, heads]), excluded

        o, ls = attend_tile(qt, kh, vh, precision=precision, p_dtype=p_dtype, mods=tile_mods,
                            sink=None if sink_w is None else sink_w[heads], col_start=c_lo,
                            scale=scale, matmuls=matmuls, v_finite=v_finite)
        out[bsl, heads, rows] = o.reshape(o.shape[0], -1, o.shape[3], dv)
        lse[bsl, heads, rows] = ls.reshape(ls.shape[0], -1, ls.shape[3])

    run_all(job, jobs)
    return out, lse
