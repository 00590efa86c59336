"""The prompt kernel (PFA, `PromptFlashAttentionTiling`): prefill calls the V3 and
split-fuse routes decline (quantised, post-quant, pse, prefix, padding, other D).

Blocks (`PromptFlashAttentionTiling` CV-diff factors, `GetMatMulType`'s caller
setting sOuterFactor/sInnerFactor): 128 query rows by 1024 keys; 512 keys where
the KV holds at most 1024 (`CVDIFF_SMALL_KV_THRESHOLDS`) and the query is not
int8, and 512 in bf16 or fp16 high precision (inner_precise 0/2) for D >= 32.
The (batch, head, row block) triples are split over the cores.
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes.source import PFA, cite
from fia_fuzz.rules.profiles.a2_routes.tiling import (
    AIC_CORES,
    Tiling,
    ceil_div,
    kv_lengths,
    paged_floor,
    q_lengths,
)

WHY = {
    "tiles": cite(PFA, "PromptFlashAttentionTiling (CVDIFF_SOUTER_FACTOR_DEFAULT, "
                       "CVDIFF_SINNER_FACTOR_*, high-precision/bf16 block adjustment)"),
    "units": cite(PFA, "PromptFlashAttentionTiling::RunBigKernelTilingWithParams "
                       "(B*N*S1 blocks over the cores)"),
}

S1_TILE, S2_TILE, SMALL_KV_TILE, SMALL_KV = 128, 1024, 512, 1024
#: inner_precise values PFA runs in high precision (0 and 2: the low bit clear)
HIGH_PRECISION = (0, 2)


def s2_tile(c: CallView) -> int:
    q = c.need("query").dtype
    if q != "int8" and max(kv_lengths(c)) <= SMALL_KV:
        return SMALL_KV_TILE
    high = q == "bfloat16" or (q == "float16" and c.attr_int("inner_precise") in HIGH_PRECISION)
    return SMALL_KV_TILE if high and c.D >= 32 else S2_TILE


def tiling(c: CallView) -> Tiling:
    units = sum(c.N * ceil_div(max(q, 1), S1_TILE) for q in q_lengths(c))
    return Tiling(S1_TILE, paged_floor(s2_tile(c), c), units, AIC_CORES[0], None, False)
