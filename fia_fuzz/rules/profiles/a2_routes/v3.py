"""The V3 kernels (`RouteToFia`): non-quantised GQA (`FiaTilingNonQuant`) and MLA
(`FiaTilingNonQuantMla`), split over the cube cores by the cost-balanced `SplitCore`.

S2 tile (`CalcInnerSize`): 512 for TND/NTD and for queries longer than 16 rows;
8192/4096/2048 for queries of at most 16 rows by group size (G < 5, < 10, else);
at most 1024 with a compressed mask (sparse 2, 3, 4); floored to a multiple of a
paged block that does not divide it. Query rows per block (`CalcMBaseSize`): 512
for TND/NTD and long queries, else 512..32 as the S2 tile grows. MLA: S2 tile
512 (its flash-decode halving for 256..512 keys is not modelled). The work is
(batch, KV head, row block) triples over the cube cores. `SplitCore` costs each
(row, S2 block) 6 x ceil(rows / 16) + 10 x ceil(keys / 64) (`CalcCost`), tries
every core count from sqrt(blocks) to min(cores, blocks) and keeps the plan of the
least maximum cost, each core taking whole batches, then whole rows, then S2
blocks of one row up to its share (`CalcSplitPlan`: AssignByBatch, AssignByRow,
AssignByBlock); a row whose blocks land on two cores is a flash-decode head
(`IsFlashDecode` reads their count). Here a call with fewer triples than cores and
more than one S2 tile is taken to split its KV: a row needs two S2 blocks to be
split, and with fewer rows than cores splitting one lowers the maximum cost; the
search's choice around the core count (a row or two past it may be split too, for a
lower maximum cost) is not modelled: it needs the whole plan search per call. The
MLA kernel sizes its row blocks so that B x KV_N x blocks fills the cores where it
can (`FiaTilingNonQuantMla::CalcMBaseSize`, least common multiple with the core
count), so it has no one-unit threshold here.
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes.source import SPLIT, V3_GQA, V3_MLA, cite
from fia_fuzz.rules.profiles.a2_routes.tiling import (
    AIC_CORES,
    Tiling,
    ceil_div,
    kv_lengths,
    paged_floor,
    q_lengths,
)

WHY = {
    "s2_tile": cite(V3_GQA, "FiaTilingNonQuant::CalcInnerSize"),
    "s1_tile": cite(V3_GQA, "FiaTilingNonQuant::CalcMBaseSize"),
    "mla_s2_tile": cite(V3_MLA, "FiaTilingNonQuantMla::CalcInnerSize"),
    "split": cite(SPLIT, "SplitCore") + "; " + cite(V3_GQA, "FiaTilingNonQuant::Split, "
                                                         "IsFlashDecode")
    + " (the KV split starts one unit below the core count: the cores cells)",
}

#: S2 tiles of short queries by group size: index min(G // 5, 2) (CalcInnerSize)
SHORT_Q_TILES = (8192, 4096, 2048)
#: Longest query that takes the short-query tiles
SHORT_Q = 16
#: S2 tile of TND/NTD and long queries; the cap with a compressed mask
LONG_Q_TILE, MASKED_CAP = 512, 1024
#: Query-row blocks by S2 tile for short queries (CalcMBaseSize): (tile <=, rows)
M_BASE = ((512, 512), (1024, 256), (2048, 128), (4096, 64), (8192, 32))
#: MLA S2 tile
MLA_TILE = 512


def _packed_tiles(c: CallView) -> bool:
    return c.attrs["input_layout"] in ("TND", "NTD", "NTD_TND", "TND_NTD")


def gqa_s2_tile(c: CallView) -> int:
    if _packed_tiles(c) or c.S1 > SHORT_Q:
        tile = LONG_Q_TILE
    else:
        tile = SHORT_Q_TILES[min(c.G // 5, 2)]
    if c.has("atten_mask") and c.attr_int("sparse_mode") in (2, 3, 4):
        tile = min(tile, MASKED_CAP)
    return paged_floor(tile, c)


def gqa_s1_tile(c: CallView, s2_tile: int) -> int:
    if _packed_tiles(c) or c.S1 > SHORT_Q:
        return 512
    return next(rows for top, rows in M_BASE if s2_tile <= top)


def tiling(c: CallView, mla: bool) -> Tiling:
    """The V3 tiling of a call (`mla`: the MLA kernel)."""
    cores = AIC_CORES[0]
    kv = kv_lengths(c)
    if mla:
        s2 = MLA_TILE
        s1 = None
        units = c.B * c.KV_N
    else:
        s2 = gqa_s2_tile(c)
        s1 = gqa_s1_tile(c, s2)
        units = sum(c.KV_N * ceil_div(max(c.G * q, 1), s1) for q in q_lengths(c))
    fd = units < cores and max(kv) > s2
    return Tiling(s1, s2, units, cores, None, fd)
