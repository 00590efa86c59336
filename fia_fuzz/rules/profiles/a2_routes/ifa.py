"""The incremental decode kernel (IFA, `IFATiling`): decode, MTP and MLA-decode calls
the V3 route declines (quantised, antiquant, post-quant, pse, prefix, padding, D off
the V3 table).

Templates (`SetupPerfMode`): 5-D NZ caches take CUBE_VIEW_MM_DD, rope the MLA
template (CUBE_VIEW_MM_MLA), antiquant with G > 1 the cube-view template; the
others are vector templates (their EnableAllVec/EnableCubeViewMM choice is not
modelled). Cube templates split over the cube cores, vector templates over the
vector cores (`SetCoreNum`).

S2 tile (`CalcInnerSize`): antiquant 1024 with G > 1 (also for NZ), else 8192;
non-quantised 8192/4096/2048 by group size (G < 5, < 10, else); rope 512 (1024
with antiquant); floored to a multiple of a paged block that does not divide it.

Flash decode (`IsFlashDecode`, `CheckCoreOkFlag`): B x KV_N at most half the cube
cores (cube templates) or under 0.4 of the vector cores (vector templates); with
G > 1 only when the longest KV holds 2048+ keys; never for paged non-MLA calls of at
most 1024 keys, MLA with Q_S > 1 or G > 128, or MTP over NZ. MLA over TND, and over
other layouts whose per-batch lengths differ, takes the balanced split
(`IsBalanceSplitCore`, `SplitBalanced`), whose split is decided per core, not by a
threshold.
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes.source import IFA, IFA_CHECK, cite
from fia_fuzz.rules.profiles.a2_routes.tiling import (
    AIC_CORES,
    CV_RATIO,
    Tiling,
    kv_lengths,
    paged_floor,
)

WHY = {
    "template": cite(IFA, "IFATiling::SetupPerfMode"),
    "cores": cite(IFA, "IFATiling::SetCoreNum"),
    "s2_tile": cite(IFA, "IFATiling::CalcInnerSize"),
    "flash_decode": cite(IFA_CHECK, "IFATiling::IsFlashDecode, CheckCoreOkFlag"),
    "balance": cite(IFA, "IFATiling::IsBalanceSplitCore, SplitBalanced"),
}

#: S2 tiles of non-quantised templates by group size: index min(G // 5, 2)
GROUP_TILES = (8192, 4096, 2048)
FULL_TILE, ANTIQUANT_GQA_TILE, ROPE_TILE, ROPE_ANTIQUANT_TILE = 8192, 1024, 512, 1024
#: Flash decode engages while B*KV_N <= CUBE_RATIO * cube cores (cube templates) or
#: B*KV_N < VEC_RATIO * vector cores (vector templates)
CUBE_RATIO, VEC_RATIO = 0.5, 0.4
#: Longest KV from which a GQA (G > 1) call splits its KV; paged non-MLA calls of at most
#: PAGED_NO_SPLIT keys never do
GQA_SPLIT_KV, PAGED_NO_SPLIT = 2048, 1024
#: The largest group the MLA template splits the KV for
MLA_SPLIT_G = 128


def _antiquant(c: CallView) -> bool:
    q, k = c.need("query").dtype, c.spec_list("key")[0].dtype
    return q != "int8" and k != q


def _nz(c: CallView) -> bool:
    return c.spec_list("key")[0].ndim == 5


def cube_template(c: CallView) -> bool:
    return _nz(c) or c.rope or (_antiquant(c) and c.G > 1)


def balanced(c: CallView) -> bool:
    """IsBalanceSplitCore: the MLA template over TND, or over BSH/BSND with ragged lengths."""
    if not c.rope:
        return False
    if c.attrs["input_layout"] in ("TND", "TND_NTD"):
        return True
    if _antiquant(c) or c.attrs["input_layout"].startswith("BNSD"):
        return False
    return len(set(kv_lengths(c))) > 1


def s2_tile(c: CallView) -> int:
    if c.rope:
        tile = ROPE_ANTIQUANT_TILE if _antiquant(c) else ROPE_TILE
    elif _antiquant(c):
        tile = ANTIQUANT_GQA_TILE if c.G > 1 or _nz(c) else FULL_TILE
    else:
        tile = GROUP_TILES[min(c.G // 5, 2)]
    return paged_floor(tile, c)


def split_threshold_vector() -> int:
    """The largest B*KV_N a vector template splits the KV for: under 0.4 of the vector
    cores."""
    limit = VEC_RATIO * AIC_CORES[0] * CV_RATIO
    return int(limit) if limit != int(limit) else int(limit) - 1


def split_threshold(c: CallView) -> int:
    """The largest B*KV_N that still takes the KV split (CheckCoreOkFlag)."""
    if cube_template(c):
        return int(CUBE_RATIO * AIC_CORES[0])
    return split_threshold_vector()


def split_allowed(c: CallView) -> bool:
    """Every condition of IsFlashDecode other than the B*KV_N threshold."""
    kv = max(kv_lengths(c))
    if c.paged and not c.rope and kv <= PAGED_NO_SPLIT:
        return False
    if c.rope and (c.S1 > 1 or c.G > MLA_SPLIT_G):
        return False
    if _nz(c) and c.S1 > 1:
        return False
    return c.G == 1 or kv >= GQA_SPLIT_KV


def tiling(c: CallView) -> Tiling:
    cores = AIC_CORES[0] if cube_template(c) else AIC_CORES[0] * CV_RATIO
    bn = c.B * c.KV_N
    if balanced(c):
        return Tiling(None, s2_tile(c), bn, AIC_CORES[0], None, bn < AIC_CORES[0])
    threshold = split_threshold(c)
    split = (bn, threshold) if split_allowed(c) else None
    return Tiling(None, s2_tile(c), bn, cores, split, split is not None and bn <= threshold)
