"""The TND split-fuse kernel ("FAI", `FAInferTiling`): packed calls the legacy tiling
gives to `TilingProcess4SplitFuse`.

Query blocks of 128 rows (`Q_TILE_CEIL`, `GetQSBlockTile`), keys stacked 512 at a
time (`MAX_KV_STACK_LEN`); a block of heads takes (128 / q_S) rounded down to an
even count, at most G (`GetQNBlockTile`). The tasks (`FillSplitCoreTilingData`)
are per batch (head blocks x KV heads x query blocks), run by the cube cores
(`SetCoreNum(GetCoreNumAic)`); there is no KV split.
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes.source import FAI, TOP, cite
from fia_fuzz.rules.profiles.a2_routes.tiling import (
    AIC_CORES,
    Tiling,
    ceil_div,
    paged_floor,
    q_lengths,
)

WHY = {
    "s1_tile": cite(FAI, "FAInferTiling::GetQSBlockTile (Q_TILE_CEIL)"),
    "s2_tile": cite(FAI, "MAX_KV_STACK_LEN"),
    "units": cite(FAI, "FAInferTiling::FillSplitCoreTilingData, GetQNBlockTile"),
    "cores": cite(TOP, "TilingProcess4SplitFuse (SetCoreNum(GetCoreNumAic))"),
}

Q_TILE, KV_STACK = 128, 512


def head_block(q_s: int, g: int) -> int:
    """Heads per block for a batch of q_s query rows (GetQNBlockTile)."""
    n = (Q_TILE // q_s) // 2 * 2 if q_s else Q_TILE
    return max(min(n, g), 1)


def tiling(c: CallView) -> Tiling:
    tasks = sum(ceil_div(c.G, head_block(q, c.G)) * c.KV_N * ceil_div(q, Q_TILE)
                for q in q_lengths(c))
    return Tiling(Q_TILE, paged_floor(KV_STACK, c), tasks, AIC_CORES[0], None, False)
