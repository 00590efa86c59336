"""What a route's tiling computes for a call: tiles, work units and the flash-decode split.

Each route family's module (`v3.py`, `fai.py`, `ifa.py`, `pfa.py`) returns one
`Tiling`; `cells.py` turns it into the (route, boundary) cell the call sits on.
"""

from __future__ import annotations

from dataclasses import dataclass

from fia_fuzz.op.call import CallView
from fia_fuzz.op.undetermined import Undetermined

#: Cube (AIC) cores of an Atlas A2 die: 24 (Ascend 910B1/B2) or 20 (910B3/B4); the vector
#: (AIV) cores are twice as many (RouteToFia accepts only 1:1 or 1:2).
AIC_CORES = (24, 20)
#: The vector cores per cube core on A2
CV_RATIO = 2


@dataclass(frozen=True)
class Tiling:
    """One call's tiling on its route.

    `s1_tile`/`s2_tile`: query rows and keys per block (None where the route does not tile
    that axis); `units`: blocks of work split over `cores` (the core count the tiling
    uses for that split); `split`: (quantity, threshold) of the flash-decode (KV split)
    decision, the split taken while quantity <= threshold, or None where no threshold
    applies; `flash_decode`: whether the KV is split over cores.
    """

    s1_tile: int | None
    s2_tile: int
    units: int
    cores: int
    split: tuple[int, int] | None
    flash_decode: bool


def kv_lengths(c: CallView) -> list[int]:
    """Valid keys per batch: actual_seq_lengths_kv where given, else the KV tensor length."""
    try:
        lens = list(c.act_kv)
    except Undetermined:  # a paged view without lengths: its table's reach
        lens = []
    return lens or [c.S2]


def q_lengths(c: CallView) -> list[int]:
    """Valid query rows per batch."""
    try:
        lens = list(c.act_q)
    except Undetermined:
        lens = []
    return lens or [c.S1]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def paged_floor(tile: int, c: CallView) -> int:
    """A tile that a paged block does not divide is floored to a multiple of the block
    (CalcInnerSize of every route: "PA特性泛化场景 ... 向下对齐")."""
    bs = c.attr_int("block_size") if c.paged else 0
    if bs and tile > bs and tile % bs:
        return tile // bs * bs
    return tile
