"""Kernel-edge sizes for every family: S1, S2, per-request lengths, B and block-table widths.

Each is drawn from a mix of free values and edge values (op/edges.py says
which edges count): a multiple of a kernel tile (16..2048) or one below or
above it; B with B*N next to an AI-core count; a KV of LONG_KV+ tokens while
B*N stays under SPLIT_BN; a block-table width on or next to a multiple of
WIDTH_TILE, or wider than the longest request needs. A `size_edge` or
`table_width` filter steers every draw to its kind ("free" steers lengths off
the edges), so the filters work in every family. Free draws shrink as the
plain integer draws they replace did.
"""

from __future__ import annotations

from fia_fuzz.op.edges import (
    CORE_COUNTS,
    EDGE_REMAINDERS,
    EDGE_TILE,
    LONG_KV,
    SPLIT_BN,
    WIDTH_TILE,
    edge_of,
    near_cores,
)
from fia_fuzz.rules.profiles.a2_routes import dispatch, fai, ifa, pfa, v3
from fia_fuzz.rules.profiles.a2_routes.sizes import LONG as KV_LONG_TILES
from fia_fuzz.rules.profiles.a2_routes.tiling import AIC_CORES
from fia_fuzz.strategies.choices import Chooser, Dead

#: Kernel tiles (query rows 32..128, keys 64..512, and their multiples) whose
#: multiples and one off them exercise tail handling [production-calls.md].
TILES = (16, 32, 64, 128, 256, 512, 1024, 2048)
#: With the Atlas A2 routes' S2 tiles the generic ones miss: the V3 and decode kernels'
#: short-query tiles by group size (v3.SHORT_Q_TILES, ifa.GROUP_TILES), for profiles that
#: aim at routes (Profile.route_aims).
ROUTE_TILES = TILES + tuple(sorted({*v3.SHORT_Q_TILES, *ifa.GROUP_TILES} - set(TILES)))
#: Work units (B x KV heads) the routes split on: one off the cube cores (V3, split-fuse,
#: PFA) and either side of the decode kernel's flash-decode thresholds, per template
#: (ifa.TEMPLATES: the cube ones share one; ifa.CheckCoreOkFlag).
CORE_UNITS = tuple(AIC_CORES[0] + d for d in (-1, 0, 1))
SPLIT_TOPS = {t: ifa.split_top(t) for t in ifa.TEMPLATES}
SPLIT_UNITS = tuple(sorted({t + d for t in SPLIT_TOPS.values() for d in (0, 1)}))
ROUTE_UNITS = tuple(sorted(CORE_UNITS + SPLIT_UNITS))


def units_aim(ch: Chooser) -> tuple[int, ...]:
    """The work units a draw aiming at a route's split threshold puts B x heads on
    (Chooser.aim ("units", targets), strategies/routes.py), () for other draws."""
    return ch.aim[1] if ch.aim is not None and ch.aim[0] == "units" else ()

#: The tiles a size_edge filter's edges are drawn on (the ones op/edges.py counts).
EDGE_TILES = tuple(t for t in TILES if t >= EDGE_TILE)
OFFSETS = dict(EDGE_REMAINDERS)
#: size_edge filters under which no KV may be long (the "long" kind would win).
SHORT_KV = ("free", "multiple", "below", "above")
#: How a length is drawn when no filter steers it (simplest first).
MIX = ("free", "edge", "edge", "top")


def length(ch: Chooser, lo: int, hi: int, top: bool = False,
           tiles: tuple[int, ...] = TILES, group: int = 1, role: str = "kv") -> int:
    """A length in [lo, hi]: free, hi, or a tile multiple or one below/above it.

    A size_edge filter naming an edge draws that edge (on tiles >= EDGE_TILE)
    and "free" draws off the edges. `top`: free values are a shortfall below
    hi, so they shrink toward the full length. A draw aiming at a route's boundary
    (Chooser.aim ("edge", (offset, tiles of the group size, role))) draws that edge of the
    route's tiles for its group size `group`; a query length (`role` "q") under a KV
    tile's aim is drawn free: on a query tile's edge it would put the call on that cell,
    which the route's boundaries check first (a2_routes.groups).
    """
    if hi <= lo:
        return max(lo, hi)
    pin = ch.pins.get("size_edge")
    offset = OFFSETS.get(pin)
    if pin is None and ch.aim is not None and ch.aim[0] == "edge":
        offset, by_group, aimed = ch.aim[1]
        kind, tiles = ("free", tiles) if aimed == "kv" and role == "q" else ("edge",
                                                                           by_group(group))
        if filtered_aim(ch) and kind == "edge":
            tiles, lo, hi = _widest(tiles, lo, hi, offset,
                                    ch.pins.get("kv_tiles") if role == "kv" else None)
    else:
        kind = "edge" if offset is not None else "free" if pin is not None else ch.one(MIX)
    if kind == "edge":
        x = _edge(ch, lo, hi, offset, tiles if offset is None else
                  tuple(t for t in tiles if t >= EDGE_TILE))
        if x is not None:
            return x
    if kind == "top":
        return hi
    x = hi - ch.int(0, hi - lo) if top else ch.int(lo, hi)
    return _off_edge(x, lo, hi) if pin == "free" else x


#: The longest query a draw aiming at a work-unit threshold takes: one query-row block of
#: the prompt and split-fuse kernels (their smallest past a short query: the prompt
#: kernel's paged and wide-head blocks, pfa.PAGED_ROWS, pfa.WIDE_D_ROWS; fai.Q_TILE), so
#: B x heads are the units
UNITS_Q_CAP = min(pfa.PAGED_ROWS, pfa.WIDE_D_ROWS, fai.Q_TILE)


#: The longest query each q_seq class takes
Q_SEQ_SPAN = {"0": (0, 0), "1": (1, 1), "2-16": (2, 16), "17-2048": (17, 2048),
              ">2048": (2049, 1 << 62)}
#: The longest query a q_rows class takes where the draw cannot know its route's rows tile
#: (a2_routes sizes.rows_tile): "tile" up to the prompt kernel's smallest block past a short
#: query (pfa.PAGED_ROWS; V3's 512 / G for G <= 8), "past" past V3's largest (512 rows)
Q_ROWS_SPAN = {"1": (1, 1), "spec": (2, dispatch.MTP_Q_MAX),
               "tile": (dispatch.MTP_Q_MAX + 1, pfa.PAGED_ROWS), "past": (513, 1 << 62)}


def query_span(ch: Chooser) -> tuple[int, int] | None:
    """(least, most) of the longest query that q_seq and q_rows filters allow, None where
    neither is pinned (the draw is then as it was)."""
    spans = [table[ch.pins[name]] for name, table in (("q_seq", Q_SEQ_SPAN),
                                                       ("q_rows", Q_ROWS_SPAN))
             if name in ch.pins]
    if not spans:
        return None
    return max(a for a, _ in spans), min(b for _, b in spans)


def narrow_query(ch: Chooser, lo: int, hi: int) -> tuple[int, int]:
    """[lo, hi] of a longest query narrowed to query_span (empty, lo > hi, where none
    fits)."""
    span = query_span(ch)
    return (lo, hi) if span is None else (max(lo, span[0]), min(hi, span[1]))


def query_length(ch: Chooser, lo: int, hi: int) -> int:
    """A query length as `length`; at most UNITS_Q_CAP in a draw aiming at a work-unit
    threshold (sizes.units_aim), so its units are B x heads."""
    if units_aim(ch):
        hi = max(lo, min(hi, UNITS_Q_CAP))
    return length(ch, lo, hi, role="q")


def kv_length(ch: Chooser, lo: int, hi: int, top: bool = False, long: bool = False,
              tiles: tuple[int, ...] = TILES, group: int = 1) -> int:
    """A KV length as `length`; a long-KV draw (`long`, or a "long" filter) keeps it at
    LONG_KV+ where hi allows, a length-edge or "free" filter below LONG_KV where lo allows."""
    pin = ch.pins.get("size_edge")
    if (long or pin == "long") and hi >= LONG_KV and ch.pinned("kv_tiles", "long"):
        lo = max(lo, LONG_KV, hi // 2)  # the top octave: four of the largest S2 tiles (8192)
    elif (long or pin == "long") and hi >= LONG_KV:
        # a long aim keeps the whole span: one octave may hold no edge of its tile
        lo, hi = (max(lo, LONG_KV), hi) if long_aim(ch) else _octave(ch, max(lo, LONG_KV), hi)
    elif pin in SHORT_KV and lo < LONG_KV:
        hi = min(hi, LONG_KV - 1)
    return length(ch, lo, hi, top, tiles, group)


def _octave(ch: Chooser, lo: int, hi: int) -> tuple[int, int]:
    """One doubling [lo * 2^k, lo * 2^(k+1)) of [lo, hi], each as likely (shortest first):
    production caches span 4K-128K keys, and a uniform draw would rarely leave the top one."""
    spans = []
    while lo <= hi:
        spans.append((lo, min(hi, 2 * lo - 1)))
        lo *= 2
    return ch.one(spans)


def heads_cap(ch: Chooser, max_n: int) -> int:
    """The most heads a draw may take: under a "long" filter (size_edge, a route_edge one
    that needs a long KV, long_aim, or kv_tiles: a long KV needs it) fewer than SPLIT_BN,
    under "cores" no more than the largest core count's edge."""
    pin = ch.pins.get("size_edge")
    if pin == "long" or long_aim(ch) or (pin is None and ch.pinned("kv_tiles", "long")):
        return min(max_n, SPLIT_BN - 1)
    return min(max_n, max(CORE_COUNTS) + 1) if pin == "cores" else max_n


#: Group sizes at which the routes' S2 tiles change (v3.SHORT_Q_TILES, ifa.GROUP_TILES)
AIM_GROUPS = (1, 5, 10)


def filtered_aim(ch: Chooser) -> bool:
    """Whether the draw aims at a cell a route_edge filter names (no size_edge filter
    steering the lengths instead): its lengths and heads may bend to the cell."""
    return ch.aim is not None and ch.pins.get("route_edge", "free") != "free" \
        and "size_edge" not in ch.pins


def long_aim(ch: Chooser) -> bool:
    """Whether a route_edge filter's aim needs a long KV: a "long" kv_tiles filter (LONG
    tiles of 512+ keys), or a KV aim whose tiles reach past 2048 keys (the V3 short-query
    and decode tiles), one past which lies beyond a profile's max_seq."""
    if not filtered_aim(ch):
        return False
    if ch.pinned("kv_tiles", "long"):
        return True
    return ch.aim[0] == "edge" and ch.aim[1][2] == "kv" \
        and max(t for g in AIM_GROUPS for t in ch.aim[1][1](g)) > LONG_KV // 2


def long_kv(ch: Chooser, n: int, lo: int = 1) -> bool:
    """Whether the draw reaches for a long KV (up to the profile's long_kv, B*N under
    SPLIT_BN with B >= `lo`): every "long"-filtered draw, a quarter of the unfiltered
    ones that can, half of those aiming at a KV tile's edge (Chooser.aim: the decode
    kernels' S2 tiles of 2048..8192 keys lie past the profile's max_seq), and every one
    under a route_edge filter whose tiles reach past 2048 keys (the V3 and decode ones)."""
    pin = ch.pins.get("size_edge")
    can = (SPLIT_BN - 1) // n >= lo
    if pin == "long" and not can:
        raise Dead(f"N={n}: no B >= {lo} keeps B*N under {SPLIT_BN} for a long KV")
    kv_aim = ch.aim is not None and ch.aim[0] == "edge" and ch.aim[1][2] == "kv"
    if can and long_aim(ch):
        return True
    odds = (False, True) if kv_aim else (False, False, False, True)
    # a kv_tiles "long" filter takes every long draw it can (LONG_KV+ keys: four of most
    # routes' S2 tiles)
    return pin == "long" or (pin is None and can and (ch.pinned("kv_tiles", "long")
                                                      or ch.one(odds)))


def batch(ch: Chooser, n: int, lo: int, hi: int, long: bool = False,
          kv_n: int | None = None, wide: int = 0) -> int:
    """B in [lo, hi] for N = `n` heads: free, or B*N next to an AI-core count.

    A long-KV draw keeps B*N under SPLIT_BN; a "cores" filter needs B*N next
    to a core count, the other size_edge filters away from them. Given `kv_n` (a
    profile that aims at routes), an unfiltered draw also puts B*KV_N or B*N on one of
    ROUTE_UNITS in some draws (every draw whose route aim is a split: Chooser.aim). Given
    `wide` past hi (the profile's core_batch within the budget), one such draw in WIDE_EVERY
    (and every batch_class filter for it) puts B on or past the cube cores, and a draw
    aiming at a work-unit count may take a B up to `wide` for it.
    """
    pin = ch.pins.get("size_edge")
    if ch.pins.get("empty_share") in SHARE_BATCHES:
        lo = max(lo, SHARE_BATCHES[ch.pins["empty_share"]])
        hi = max(lo, hi)
    if "batch_class" in ch.pins:  # B within the class, up to `wide` where it allows
        lo, hi = _class_batches(ch.pins["batch_class"], lo, max(hi, wide))
    elif kv_n is not None and wide > hi and not long:
        b = _wide_batch(ch, wide, pin is None)
        if b is not None:
            return b
    near = sorted({b for c in CORE_COUNTS for b in range((c - 1) // n, (c + 1) // n + 1)
                   if lo <= b <= hi and near_cores(b * n)})
    if kv_n is not None and pin is None:
        targets = units_aim(ch) or ROUTE_UNITS
        top = max(hi, wide) if units_aim(ch) else hi  # a work-unit aim may go wide
        units = [b for b in range(lo, top + 1) if b * kv_n in targets or b * n in targets]
        if long:
            units = [b for b in units if b * n < SPLIT_BN]
        aimed = bool(units_aim(ch))
        if units and (aimed or ch.one((False, False, True))):
            return ch.one(units)
    if long:  # long_kv saw to it that B = lo fits
        return ch.int(lo, max(lo, min(hi, (SPLIT_BN - 1) // n)))
    if pin == "cores" or (pin is None and near and ch.one((False, False, False, True))):
        if not near:
            raise Dead(f"no B in [{lo}, {hi}] puts B*N next to a core count for N={n}")
        return ch.one(near)
    b = ch.int(lo, hi)
    if pin is None or not near_cores(b * n):
        return b
    away = [x for d in (1, 2, 3) for x in (b + d, b - d) if lo <= x <= hi
            and not near_cores(x * n)]
    return away[0] if away else b


#: One in WIDE_EVERY unfiltered batch draws of a profile with core_batch goes wide
WIDE_EVERY = 8
#: The batch counts of batch_class's "cores" (either A2 die's cube cores, op/edges.py)
CORE_BATCHES = (min(CORE_COUNTS[:2]), max(CORE_COUNTS[:2]))


#: The least B an empty_share filter's share needs (op/edges.py empty_share): one empty batch
#: beside another, two empty ones under half of them
SHARE_BATCHES = {"one": 2, "few": 5, "half": 2}
#: The batch counts of each batch_class value (op/edges.py batch_class)
CLASS_BATCHES = {"1": (1, 1), "under": (2, CORE_BATCHES[0] - 1), "cores": CORE_BATCHES,
                 "over": (CORE_BATCHES[1] + 1, 1 << 62)}


def _class_batches(klass: str, lo: int, hi: int) -> tuple[int, int]:
    """[lo, hi] narrowed to a batch_class's counts, Dead where they do not meet."""
    a, b = CLASS_BATCHES[klass]
    if max(lo, a) > min(hi, b):
        raise Dead(f"batch_class={klass!r}: no B in [{lo}, {hi}] takes it")
    return max(lo, a), min(hi, b)


def _wide_batch(ch: Chooser, wide: int, free: bool) -> int | None:
    """B in [20, 24] ("cores") or past 24 ("over") up to `wide`, for a batch_class filter
    naming one or (`free`: no size_edge filter) one in WIDE_EVERY draws; None for the
    others."""
    pin = ch.pins.get("batch_class")
    if pin is None and ch.aim is not None:
        return None  # an aimed draw keeps its budget and its B for the aim
    if pin is None and not (free and ch.int(0, WIDE_EVERY - 1) == 0):
        return None
    if pin not in (None, "cores", "over"):
        return None
    klass = pin or ch.one(("cores", "over"))
    lo, hi = (CORE_BATCHES[0], min(CORE_BATCHES[1], wide)) if klass == "cores" \
        else (CORE_BATCHES[1] + 1, wide)
    if lo > hi:
        if pin is not None:
            raise Dead(f"batch_class={pin!r}: the budget allows B <= {wide}")
        return None
    return ch.int(lo, hi)


def table_width(ch: Chooser, need: int, cap: int, oversized: bool | None = None) -> int:
    """A block-table width from `need` (maxBlockNumPerSeq, the least the docs admit) to
    max(need, cap): exactly `need`, one or two spare columns, or on or next to a
    multiple of WIDTH_TILE. `oversized` True/False forces spare columns or none; a
    table_width filter names the edge (or "free": off the edges)."""
    pin = ch.pins.get("table_width")
    cap = max(need, cap)
    lo = need + 1 if oversized else need
    if oversized is False or cap < lo:
        return need
    offset = OFFSETS.get(pin)
    kinds = ("exact", "spare", "edge")[1 if oversized else 0:]
    kind = "edge" if offset is not None else ch.one(kinds[:-1] if pin == "free" else kinds)
    if kind == "edge":
        x = _edge(ch, lo, min(cap, lo + 4 * WIDTH_TILE), offset, (WIDTH_TILE,))
        if x is not None:
            return x
    x = need if kind == "exact" or cap == need else ch.int(need + 1, min(cap, need + 2))
    return _off_edge(x, lo, cap, WIDTH_TILE) if pin == "free" else x


def _widest(tiles: tuple[int, ...], lo: int, hi: int, offset: int, kv_tiles: str | None
            ) -> tuple[tuple[int, ...], int, int]:
    """The widest of `tiles` with an edge at `offset` in [lo, hi] (narrowed to a kv_tiles
    filter's class of that tile), and those bounds: the routes' tiles are powers of two,
    so its edge is every narrower tile's too, whichever the call takes."""
    for t in sorted(tiles, reverse=True):
        a, b = _tile_class_span(kv_tiles, t, lo, hi, tiles)
        if _edge_span(t, offset, a, b):
            return (t,), a, b
    return tiles, lo, hi


def _tile_class_span(kv_tiles: str | None, t: int, lo: int, hi: int, tiles: tuple[int, ...]
                     ) -> tuple[int, int]:
    """[lo, hi] narrowed to the lengths of kv_tiles class `kv_tiles` against tile `t`
    (a2_routes/sizes.py kv_tiles: within one tile, up to LONG tiles, or past them); within
    and long against whichever of `tiles` the call takes."""
    if kv_tiles == "within":
        return lo, min(hi, min(tiles) - 1)
    if kv_tiles == "long":
        return max(lo, KV_LONG_TILES * max(tiles)), hi
    if kv_tiles in ("multiple", "past", "tiles"):
        return max(lo, t), min(hi, KV_LONG_TILES * t - 1)
    return lo, hi


def _edge_span(t: int, off: int, lo: int, hi: int) -> bool:
    return max(1, -(-(lo - off) // t)) <= (hi - off) // t


def _edge(ch: Chooser, lo: int, hi: int, offset: int | None, tiles: tuple[int, ...]
          ) -> int | None:
    """tile * k + offset within [lo, hi] for one of `tiles` (offset -1, 0 or 1; None:
    any of them), or None when none fits."""
    opts = [(t, off, max(1, -(-(lo - off) // t)), (hi - off) // t)
            for t in tiles for off in ((-1, 0, 1) if offset is None else (offset,))]
    opts = [o for o in opts if o[2] <= o[3]]
    if not opts:
        return None
    t, off, k_lo, k_hi = ch.one(opts)
    return t * ch.int(k_lo, k_hi) + off


def _off_edge(x: int, lo: int, hi: int, tile: int = EDGE_TILE) -> int:
    """x moved two off the nearest tile edge when it sits on one (and room allows)."""
    if edge_of([x], tile) == "free":
        return x
    r = x % tile
    for y in (x - (r + 2) % tile, x + (2 - r) % tile):
        if lo <= y <= hi:
            return y
    return x
