"""Size classes against a call's route: where the route's host code branches, pads or splits.

Each class reads one number of the route's tiling (`tiling.py` `Tiling`, from `v3.py`,
`fai.py`, `ifa.py`, `pfa.py`) against the threshold its code compares it with:

- `units_class`: work units against the cores they are split over (below: some cores idle
  and the KV may be split over them, `split_core.cpp` SplitCore, `IFATiling::IsFlashDecode`;
  on: one unit a core; above; many: four or more units a core);
- `kv_tiles`: the longest valid KV against the route's S2 tile (within one tile, an exact
  multiple, one past a multiple: a one-key tail block, other multi-tile lengths, long: LONG
  tiles or more; `CalcInnerSize` of each route: `sInnerLoopTimes_`, `sInnerSizeTail_`);
- `q_rows`: the longest query against the route's query tile (one row: decode; 2..16 the
  speculative (MTP) lengths, `dispatch.MTP_Q_MAX` (IsGqaMtp, `gqaMtpFlag_`) and V3's short
  query (`v3.SHORT_Q`); within one tile; past one tile).
"""

from __future__ import annotations

from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes import dispatch, pfa
from fia_fuzz.rules.profiles.a2_routes.tiling import Tiling, kv_lengths, q_lengths

UNITS_CLASSES = ("below", "cores", "above", "many")
#: Units per core from which a call is "many"
MANY = 4
KV_TILE_CLASSES = ("within", "multiple", "past", "tiles", "long")
#: S2 tiles from which a KV is "long"
LONG = 4
Q_ROW_CLASSES = ("1", "spec", "tile", "past")


def units_class(t: Tiling) -> str:
    if t.units < t.cores:
        return "below"
    if t.units == t.cores:
        return "cores"
    return "many" if t.units >= MANY * t.cores else "above"


def kv_tiles(kv: int, tile: int) -> str:
    if kv < tile:
        return "within"
    if kv % tile == 0:
        return "multiple"
    if kv % tile == 1:
        return "past"
    return "long" if kv >= LONG * tile else "tiles"


def q_rows(q: int, rows_tile: int) -> str:
    if q <= 1:
        return "1"
    if q <= dispatch.MTP_Q_MAX:
        return "spec"
    return "tile" if q <= rows_tile else "past"


def rows_tile(c: CallView, route: str, t: Tiling) -> int:
    """Query rows one block of the route holds: V3 GQA blocks hold G x S1 rows
    (`FiaTilingNonQuant::CalcMBaseSize`), so S1 rows are its tile over G; the decode
    kernels and V3 MLA tile no query rows and are measured against the prompt kernel's
    (`pfa.S1_TILE`)."""
    if t.s1_tile is None:
        return pfa.S1_TILE
    if route == "v3.gqa":
        return max(t.s1_tile // max(c.G, 1), 1)
    return t.s1_tile


def size_classes(c: CallView, route: str, t: Tiling | None) -> dict[str, str | None]:
    """The route's size classes of a call (None for the empty call: no tiling)."""
    if t is None:
        return {"units_class": None, "kv_tiles": None, "q_rows": None}
    return {"units_class": units_class(t),
            "kv_tiles": kv_tiles(max(kv_lengths(c)), t.s2_tile),
            "q_rows": q_rows(max(q_lengths(c)), rows_tile(c, route, t))}
