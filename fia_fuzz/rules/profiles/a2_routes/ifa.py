"""The incremental decode kernel (IFA, `IFATiling`): decode, MTP and MLA-decode calls
the V3 route declines (quantised, antiquant, post-quant, pse, prefix, padding, D off
the V3 table).

Templates (`SetupPerfMode`, `perf_mode`): rope takes the MLA template
(CUBE_VIEW_MM_MLA), other 5-D NZ caches CUBE_VIEW_MM_DD; the others the all-vector template where
`EnableAllVec` holds (fp16 in and out, G = 1, D <= 512, not paged, no shared
prefix), else the cube-view template where `EnableCubeViewMM` holds (paged BNSD,
D = 128, G <= 16, not high precision, not int4, B x KV_N x ceil(KV / 2048) past
128), else the normal (vector) template. The cube templates split over the cube
cores, the others over the vector cores (`SetCoreNum`).

S2 tile (`CalcInnerSize`): antiquant with G > 1 2048 under the cube-view template,
else 1024; antiquant with G = 1 1024 over NZ, else 8192; non-quantised
8192/4096/2048 by group size (G < 5, < 10, else); rope 512 (1024 with antiquant);
floored to a multiple of a paged block that does not divide it.

Flash decode (`IsFlashDecode`, `CheckCoreOkFlag`): B x KV_N at most half the cube
cores (cube templates), under half the vector cores (all-vector template) or under
0.4 of them (normal template); with G > 1 only when the longest KV holds 2048+ keys;
never for paged non-MLA calls of at most 1024 keys, MLA with Q_S > 1 or G > 128, or
MTP over NZ. MLA over TND, and over
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
    "template": cite(IFA, "IFATiling::SetupPerfMode") + "; " + cite(
        IFA_CHECK, "IFATiling::EnableAllVec, EnableCubeViewMM, CheckConstraints, "
                   "CheckDataCopyNd2Nz"),
    "cores": cite(IFA, "IFATiling::SetCoreNum"),
    "s2_tile": cite(IFA, "IFATiling::CalcInnerSize"),
    "flash_decode": cite(IFA_CHECK, "IFATiling::IsFlashDecode, CheckCoreOkFlag"),
    "balance": cite(IFA, "IFATiling::IsBalanceSplitCore, SplitBalanced"),
}

#: S2 tiles of non-quantised templates by group size: index min(G // 5, 2)
GROUP_TILES = (8192, 4096, 2048)
FULL_TILE, ANTIQUANT_GQA_TILE, ROPE_TILE, ROPE_ANTIQUANT_TILE = 8192, 1024, 512, 1024
#: Flash decode engages while B*KV_N <= CUBE_RATIO * cube cores (cube templates),
#: B*KV_N < ALL_VEC_RATIO * vector cores (all-vector template) or B*KV_N < VEC_RATIO *
#: vector cores (normal template)
CUBE_RATIO, ALL_VEC_RATIO, VEC_RATIO = 0.5, 0.5, 0.4
#: Templates (IfaPerfMode) by name, the cube ones first
CUBE_TEMPLATES = ("cube_dd", "mla", "cube_view")
TEMPLATES = (*CUBE_TEMPLATES, "all_vec", "normal")
#: EnableCubeViewMM: the one D it takes, the largest group, the KV chunk and the
#: B x KV_N x chunks it needs to exceed; CheckDataCopyNd2Nz: the row stride (D x KV_N of
#: BSH/BSND) the ND2NZ copy cannot take
CUBE_VIEW_D, CUBE_VIEW_G, CUBE_VIEW_CHUNK, CUBE_VIEW_WORK = 128, 16, 2048, 128
ND2NZ_STRIDE = 65536
#: The all-vector template's largest D
ALL_VEC_D = 512
#: inner_precise 0: high precision (IFA_HIGH_PRECISION), which the cube-view copy refuses
HIGH_PRECISION = 0
#: Per-channel antiquant modes (2, per-tensor-head, is read as per-channel:
#: CheckKVAntiQuantMode)
PER_CHANNEL = (0, 2)
#: The antiquant S2 tile with G > 1 under the cube-view template
CUBE_VIEW_ANTIQUANT_TILE = 2048
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


def _prefix(c: CallView) -> bool:
    return c.has("key_shared_prefix")


def all_vec(c: CallView) -> bool:
    """EnableAllVec: fp16 query, KV and output, G = 1, D <= 512, not paged, no prefix."""
    if c.paged or _prefix(c) or c.G > 1 or c.D > ALL_VEC_D:
        return False
    return c.need("query").dtype == c.spec_list("key")[0].dtype == c.out_dtype == "float16"


def cube_view(c: CallView) -> bool:
    """EnableCubeViewMM (with CheckConstraints, CheckDataCopyNd2Nz): paged BNSD with D 128,
    G <= 16, no prefix, not high precision, and more than CUBE_VIEW_WORK chunks of work;
    float KV of the query's dtype, or per-channel int8 antiquant."""
    layout = c.attrs["input_layout"]
    if _prefix(c) or c.G > CUBE_VIEW_G or c.D != CUBE_VIEW_D:
        return False
    if c.attr_int("inner_precise") == HIGH_PRECISION:
        return False
    if layout in ("BSH", "BSND") and c.D * c.KV_N >= ND2NZ_STRIDE:
        return False
    chunks = -(-max(kv_lengths(c)) // CUBE_VIEW_CHUNK)
    if c.B * c.KV_N * chunks <= CUBE_VIEW_WORK or not c.paged or layout != "BNSD":
        return False
    q, k = c.need("query").dtype, c.spec_list("key")[0].dtype
    if _antiquant(c):
        return k == "int8" and _key_mode(c) in PER_CHANNEL
    return q == k and q in ("float16", "bfloat16")


def _key_mode(c: CallView) -> int:
    """The antiquant mode the template reads: the combined mode, or the key's (mixed 0/1
    is its own per-channel-token mode)."""
    if c.separate_antiquant:
        key, value = c.attr_int("key_antiquant_mode"), c.attr_int("value_antiquant_mode")
        return -1 if (key, value) == (0, 1) else key
    return c.attr_int("antiquant_mode")


def perf_mode(c: CallView) -> str:
    """The template SetupPerfMode picks (one of TEMPLATES): with rope the MLA one, also
    over NZ caches (gqaKvNZFlag_ is set without rope only)."""
    if c.rope:
        return "mla"
    if _nz(c):
        return "cube_dd"
    if all_vec(c):
        return "all_vec"
    return "cube_view" if cube_view(c) else "normal"


def cube_template(c: CallView) -> bool:
    return perf_mode(c) in CUBE_TEMPLATES


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
    elif _antiquant(c) and c.G > 1:
        tile = CUBE_VIEW_ANTIQUANT_TILE if perf_mode(c) == "cube_view" else ANTIQUANT_GQA_TILE
    elif _antiquant(c):
        tile = ANTIQUANT_GQA_TILE if _nz(c) else FULL_TILE
    else:
        tile = GROUP_TILES[min(c.G // 5, 2)]
    return paged_floor(tile, c)


def split_top(template: str) -> int:
    """The largest B*KV_N a template splits the KV for (CheckCoreOkFlag): at most
    CUBE_RATIO of the cube cores, under ALL_VEC_RATIO or VEC_RATIO of the vector cores."""
    if template in CUBE_TEMPLATES:
        return int(CUBE_RATIO * AIC_CORES[0])
    limit = (ALL_VEC_RATIO if template == "all_vec" else VEC_RATIO) * AIC_CORES[0] * CV_RATIO
    return int(limit) if limit != int(limit) else int(limit) - 1


def split_threshold(c: CallView) -> int:
    """The largest B*KV_N that still takes the KV split for the call's template."""
    return split_top(perf_mode(c))


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
    mode = perf_mode(c)
    cores = AIC_CORES[0] if mode in CUBE_TEMPLATES else AIC_CORES[0] * CV_RATIO
    bn = c.B * c.KV_N
    if balanced(c):
        return Tiling(None, s2_tile(c), bn, AIC_CORES[0], None, bn < AIC_CORES[0])
    threshold = split_top(mode)
    split = (bn, threshold) if split_allowed(c) else None
    return Tiling(None, s2_tile(c), bn, cores, split, split is not None and bn <= threshold)
