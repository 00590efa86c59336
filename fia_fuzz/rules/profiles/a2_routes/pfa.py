"""The prompt kernel (PFA, `PromptFlashAttentionTiling`): prefill calls the V3 and
split-fuse routes decline (quantised, post-quant, pse, prefix, padding, other D).

Blocks (`AdjustCVTilingCVDiff`: sOuterFactor rows by sInnerFactor keys): 128 query
rows by 1024 keys by default; 512 keys where the KV tensor holds at most 1024
(`CVDIFF_SMALL_KV_THRESHOLDS`) and the query is not int8; in bf16 or fp16 high
precision (inner_precise 0/2) 512 keys, and 64 rows from an aligned D of 200; 64
rows paged; a query of at most 16 rows (`CVDIFF_SMALL_QS_THRESHOLDS`) takes 16-row
blocks, and without a mask over more than 2048 keys 2048-key blocks (1024 with
separate antiquant scales, the MSD path); int8 KV under an fp16 query (the
kv-antiquant path) at most 256K / aligned D keys. `AdjustBasicBlock` then halves
the rows where N divides the vector cores and the longest query fills exactly one
block per core of its head. Not modelled: `FindOptimalTilingBasicBLock`, which
shrinks both factors further where the buffers do not fit the UB, and the cube
split modes of long unmasked 128-D queries (`SetSplitCoreMode`).
The (batch, head, row block) triples are split over the cores.
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes.source import PFA, cite
from fia_fuzz.rules.profiles.a2_routes.tiling import (
    AIC_CORES,
    CV_RATIO,
    Tiling,
    ceil_div,
    paged_floor,
    q_lengths,
)

WHY = {
    "tiles": cite(PFA, "PromptFlashAttentionTiling::AdjustCVTilingCVDiff (CVDIFF_SOUTER_"
                       "FACTOR_DEFAULT, CVDIFF_SINNER_FACTOR_*, high-precision/bf16 block "
                       "adjustment, enablePA, CVDIFF_SMALL_QS_THRESHOLDS, enableKvAntiquant)"),
    "rows_halved": cite(PFA, "PromptFlashAttentionTiling::AdjustBasicBlock"),
    "antiquant": cite(PFA, "PromptFlashAttentionTiling::CheckIOType, "
                           "RunBigKernelTilingWithParams (enableKvAntiquant, enableMsd)"),
    "units": cite(PFA, "PromptFlashAttentionTiling::RunBigKernelTilingWithParams "
                       "(B*N*S1 blocks over the cores)"),
}

S1_TILE, S2_TILE, SMALL_KV_TILE, SMALL_KV = 128, 1024, 512, 1024
#: inner_precise values PFA runs in high precision (0 and 2: the low bit clear)
HIGH_PRECISION = (0, 2)
#: Rows of a high-precision/bf16 block from an aligned D of WIDE_D; of a paged call
WIDE_D, WIDE_D_ROWS, PAGED_ROWS = 200, 64, 64
#: A query of at most SMALL_Q rows: SMALL_Q-row blocks, and over more than SMALL_Q_KV keys
#: without a mask SMALL_Q_KV-key blocks
SMALL_Q, SMALL_Q_KV = 16, 2048
#: The kv-antiquant path's keys per block: at most ANTIQUANT_SPAN / aligned D, to 32
ANTIQUANT_SPAN, ALIGN = 1024 * 256, 32
#: Bytes per alignment block (BYTE_BLOCK): D is aligned to it, halved rows to its elements
BYTE_BLOCK = 32


def _itemsize(dtype: str) -> int:
    return 1 if dtype == "int8" else 2


def _aligned_d(c: CallView) -> int:
    per = BYTE_BLOCK // _itemsize(c.need("query").dtype)
    return ceil_div(c.D, per) * per


def _high_precision(c: CallView) -> bool:
    q = c.need("query").dtype
    return q == "bfloat16" or (q == "float16" and c.attr_int("inner_precise") in HIGH_PRECISION)


def _separate_scales(c: CallView) -> bool:
    return c.has("key_antiquant_scale") or c.has("value_antiquant_scale")


def _kv_antiquant(c: CallView) -> bool:
    """enableKvAntiquant: an fp16 query over int8 KV, without separate scales unless the
    query holds more than SMALL_Q rows."""
    if c.need("query").dtype != "float16" or c.spec_list("key")[0].dtype != "int8":
        return False
    return not _separate_scales(c) or c.S1 > SMALL_Q


def factors(c: CallView) -> tuple[int, int]:
    """(rows, keys) of a block before AdjustBasicBlock (AdjustCVTilingCVDiff)."""
    q = c.need("query").dtype
    rows, keys = S1_TILE, S2_TILE
    if c.S2 <= SMALL_KV and q != "int8":
        keys = SMALL_KV_TILE
    if _high_precision(c):
        keys = SMALL_KV_TILE
        if _aligned_d(c) >= WIDE_D:
            rows = WIDE_D_ROWS
    if c.paged:
        rows = PAGED_ROWS
    if c.S1 <= SMALL_Q:
        rows = SMALL_Q
        if c.S2 > SMALL_Q_KV and not c.has("atten_mask"):
            msd = _separate_scales(c) and not _kv_antiquant(c)
            keys = S2_TILE if msd else SMALL_Q_KV
    if _kv_antiquant(c):
        keys = min(keys, ceil_div(ANTIQUANT_SPAN // _aligned_d(c), ALIGN) * ALIGN)
    return rows, keys


def s1_tile(c: CallView, rows: int) -> int:
    """AdjustBasicBlock: rows halved (to whole alignment blocks) where N divides the vector
    cores into more than one share and the longest query takes exactly one block a share."""
    cores = AIC_CORES[0] * CV_RATIO
    share = cores // c.N
    if cores % c.N == 0 and share > 1 and ceil_div(max(q_lengths(c)), rows) == share:
        per = BYTE_BLOCK // _itemsize(c.need("query").dtype)
        return ceil_div(rows // 2, per) * per
    return rows


def s2_tile(c: CallView) -> int:
    return factors(c)[1]


def tiling(c: CallView) -> Tiling:
    rows, keys = factors(c)
    s1 = s1_tile(c, rows)
    units = sum(c.N * ceil_div(max(q, 1), s1) for q in q_lengths(c))
    return Tiling(s1, paged_floor(keys, c), units, AIC_CORES[0], None, False)
