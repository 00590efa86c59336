"""Route aims: what steers a draw onto one Atlas A2 route and boundary cell
(rules/profiles/a2_routes), which the families' own mix reaches rarely or never.

A profile that aims at routes (`Profile.route_aims`: nightly, stress) gives an
unfiltered draw an aim in AIMED draws of AIM_OF: a (route, boundary) cell, picked
evenly (AIM_WEIGHTS per route), whose route's pins join the draw's (each pin a feature
the construction picks, so the route comes from construction, not rejection) and whose
boundary the size draws aim at (`Chooser.aim`: lengths one below, on or one above a
tile multiple, or B x heads on the cell's work-unit count). Smoke makes no decision here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fia_fuzz.op.case import Case
from fia_fuzz.op.features import derived
from fia_fuzz.rules.profiles.a2_routes import (
    ANTIQUANT_MODES,
    CELLS,
    FREE,
    boundaries,
    fai,
    ifa,
    pfa,
    v3,
)
from fia_fuzz.rules.profiles.a2_routes.sizes import MANY
from fia_fuzz.rules.profiles.a2_routes.tiling import AIC_CORES, CV_RATIO
from fia_fuzz.strategies.choices import Chooser
from fia_fuzz.strategies.draft import Profile
from fia_fuzz.strategies.families import PLAIN_IMPLIED, PLAIN_PINS
from fia_fuzz.strategies.sizes import CORE_UNITS, SPLIT_TOPS


def _antiquant_value(mode: str) -> str:
    return f"separate:{mode}" if "/" in mode else f"combined:{mode}"


#: route -> the pins that steer a draw onto it
AIMS: dict[str, dict[str, Any]] = {
    "v3.gqa": {"q_dtype": "float16", "kv_dtype": "float16", "rope_d": "none"},
    "fai": {"layout": "TND", "rope_d": "none", "q_dtype": "bfloat16"},
    "ifa.float": {"branch": "decode", "q_dtype": "float16", "kv_dtype": "float16", "pse": True,
                  "post_quant": False},
    "pfa.float": {"branch": "prefill", "pse": True},
    "v3.mla": {"rope_d": "512", "q_dtype": "bfloat16"},
    **{f"ifa.antiquant.{m}": {"branch": "decode", "antiquant": _antiquant_value(m)}
       for m in ANTIQUANT_MODES},
    "ifa.mla_quant": {"rope_d": "512", "q_dtype": "int8"},
    "ifa.post_quant": {"branch": "decode", "post_quant": True, "q_dtype": "float16",
                       "q_padding": False, "kv_padding": False},
    "pfa.antiquant": {"branch": "prefill", "antiquant": "combined:0"},
    "pfa.full_quant": {"branch": "prefill", "q_dtype": "int8", "rope_d": "none"},
    "pfa.post_quant": {"branch": "prefill", "post_quant": True, "q_dtype": "float16",
                       "q_padding": False, "kv_padding": False},
}
#: route -> pins a route or route_edge filter's draws add to the route's AIMS: the
#: arguments that send a float call off its route (V3 takes no pse, padding, prefix or
#: post-quant, dispatch.V3_UNSUPPORTED; split-fuse needs equal head dims and inner_precise
#: 0 past MHA, atlas_a2.split_fuse_route). A filter's aim also pins the route itself, which
#: the draws steered for it read (families.dense head dims: V3 GQA takes D 64 and 128 only;
#: families.mla decode). Unfiltered aims keep AIMS alone, and their draws stay as they were.
FILTER_AIMS: dict[str, dict[str, Any]] = {
    "v3.gqa": {"pse": False, "q_padding": False, "kv_padding": False, "prefix": False,
               "post_quant": False},
    "fai": {"dv": "equal", "inner_precise": 0},
}
#: What a plain filter fixes (families.dense): an aim pin against it gives way
PLAIN_FIXED = {**PLAIN_PINS, **PLAIN_IMPLIED}
#: route -> the families that carry it (strategies/families.py), the others' paths die
AIM_FAMILIES: dict[str, tuple[str, ...]] = {
    "v3.gqa": ("dense",), "fai": ("packed",), "ifa.float": ("dense",), "pfa.float": ("dense",),
    "v3.mla": ("mla",), "ifa.mla_quant": ("mla",), "ifa.post_quant": ("dense",),
    "pfa.antiquant": ("antiquant",), "pfa.full_quant": ("full_quant",),
    "pfa.post_quant": ("dense",),
    **{f"ifa.antiquant.{m}": ("antiquant", "gqa_nz") for m in ANTIQUANT_MODES},
}
#: Routes whose cells are aimed at more often than once each: the antiquant cells carry
#: nine routes (one per mode); float and post-quant decode land on theirs least often
#: (their S2 tiles of 2048..8192 keys meet the budget)
AIM_WEIGHTS = {"ifa.antiquant": 4, "ifa.float": 2, "ifa.post_quant": 2}
#: Antiquant modes aimed at more often: their draws die most (combined per-token, mixed
#: modes, and the separate modes 3-5 that few layouts and dtypes carry)
MODE_WEIGHTS = {"ifa.antiquant.1": 2, "ifa.antiquant.0/1": 2, "ifa.antiquant.3/3": 3,
                "ifa.antiquant.4/4": 3, "ifa.antiquant.5/5": 3}
#: Cells aimed at more often: one unit off the cores needs an odd B x heads, which few
#: head counts allow
CELL_WEIGHTS = {"cores-1": 2, "cores+1": 2}
#: The decode templates (a2_routes ifa.perf_mode) a route's split aims target, by the
#: route's family: float decode the all-vector one (fp16, G 1, not paged) or the normal
#: one; post-quant (int8 out) the normal one; antiquant the normal one, or over NZ caches
#: the cube one; MLA its own. The cube-view template (long paged BNSD caches of D 128) is
#: left to the draws that reach it: a target the draw's template does not take misses.
SPLIT_TEMPLATES = {"float": ("all_vec", "normal"), "post_quant": ("normal",),
                   "antiquant": ("normal", "cube_dd"), "mla_quant": ("mla",)}
#: Draws an aim may take to land on its cell before the draw keeps what it got
AIM_TRIES = 5
#: AIMED unfiltered draws in AIM_OF take an aim
AIMED, AIM_OF = 1, 2


def _even(ch: Chooser, options: list[Any]) -> Any:
    """One of `options`, about evenly: Hypothesis draws integers unevenly (small values and
    bounds first), so a pick among many, as the aims' routes and cells, mixes two draws."""
    return options[(ch.int(0, 255) + 97 * ch.int(0, 255)) % len(options)]


def _boundary_aim(ch: Chooser, route: str, boundary: str | None) -> tuple[str, Any]:
    """Chooser.aim for a boundary cell of the route (drawn among its cells when None)."""
    boundary = boundary or _even(ch, list(boundaries(route)))
    offset = -1 if boundary.endswith("-1") else 1 if boundary.endswith("+1") else 0
    if boundary.startswith("cores"):
        return ("units", (CORE_UNITS[offset + 1],))
    if boundary.startswith("split"):
        off = boundary == "split_off"
        return ("units", tuple(SPLIT_TOPS[t] + off for t in SPLIT_TEMPLATES[route.split(".")[1]]))
    return ("edge", (offset, aim_tiles(route, boundary), "q" if boundary.startswith("s1")
                     else "kv"))


def aim_tiles(route: str, boundary: str) -> Callable[[int], tuple[int, ...]]:
    """The tiles, by the draw's group size G, that a length aiming at the route's S1 or S2
    boundary lands next to: the ones that route's tiling takes (a2_routes: v3, fai, ifa,
    pfa)."""
    if boundary.startswith("s1"):
        return lambda g: (fai.Q_TILE,) if route == "fai" else (pfa.S1_TILE,)
    if route == "v3.mla":
        return lambda g: (v3.MLA_TILE,)
    if route.startswith("v3."):
        return lambda g: (v3.SHORT_Q_TILES[min(g // 5, 2)], v3.LONG_Q_TILE, v3.MASKED_CAP)
    if route == "fai":
        return lambda g: (fai.KV_STACK,)
    if route == "ifa.mla_quant":
        return lambda g: (ifa.ROPE_TILE,)
    if route.startswith("ifa.antiquant"):
        return lambda g: (ifa.ANTIQUANT_GQA_TILE if g > 1 else ifa.FULL_TILE,)
    if route.startswith("ifa."):
        return lambda g: (ifa.GROUP_TILES[min(g // 5, 2)],)
    if route == "pfa.full_quant":  # an int8 query takes the long tile, or a short one's
        return lambda g: (pfa.S2_TILE, pfa.SMALL_Q_KV)
    return lambda g: (pfa.SMALL_KV_TILE, pfa.S2_TILE, pfa.SMALL_Q_KV)


def _pinned_route(ch: Chooser, pins: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(route, boundary) a route or route_edge filter names, None when neither does."""
    if "route" in pins:
        route, boundary = pins["route"], None
    elif pins.get("route_edge", FREE) != FREE:
        route, boundary = pins["route_edge"].split(":")
    else:
        return None
    if route == "ifa.antiquant":  # a cell of the modes' shared tiling: any mode
        route = _even(ch, [r for r in AIMS if r.startswith("ifa.antiquant.")
                           for _ in range(MODE_WEIGHTS.get(r, 1))])
    return route, boundary


@dataclass(frozen=True)
class Aim:
    """Where a draw aims: the route's pins, the families that carry it, and the
    route_edge cell ("" where a route filter leaves the boundary to the draw)."""

    pins: dict[str, Any]
    families: tuple[str, ...]
    cell: str


def aim(ch: Chooser, prof: Profile, pins: Mapping[str, Any]) -> Aim | None:
    """The aim of this draw, its boundary in `ch.aim`: the route a route or route_edge
    filter names, else AIMED in AIM_OF unfiltered draws of a profile with route aims
    (None for the others; smoke draws nothing here)."""
    pinned = _pinned_route(ch, pins)
    if pinned is not None:
        route, boundary = pinned
        if boundary is not None or route in AIMS:
            ch.aim = _boundary_aim(ch, route, boundary)
        if boundary is None:  # a route_edge filter's cell keeps its own aim
            _size_aim(ch, pins, route)
        aimed = {**_pins(route, boundary), "route": route, **FILTER_AIMS.get(route, {})}
        if pins.get("plain"):
            aimed = {k: v for k, v in aimed.items() if PLAIN_FIXED.get(k, v) == v}
        return Aim(aimed, AIM_FAMILIES.get(route, ()), "")
    if not prof.route_aims or pins:
        _size_aim(ch, pins, None)
        return None
    if ch.int(0, AIM_OF - 1) < AIM_OF - AIMED:  # shrinks toward the families' own mix
        return None
    weights = AIM_WEIGHTS
    # route, then its cell, each about even (_even)
    tiled = list(dict.fromkeys(c.split(":")[0] for c in CELLS))
    route = _even(ch, [r for r in tiled for _ in range(weights.get(r, 1))])
    boundary = _even(ch, [b for b in boundaries(route if route != "ifa.antiquant"
                                                else "ifa.antiquant.0")
                          for _ in range(CELL_WEIGHTS.get(b, 1))])
    cell = f"{route}:{boundary}"
    route = _pinned_route(ch, {"route": route})[0]
    ch.aim = _boundary_aim(ch, route, boundary)
    return Aim(_pins(route, boundary), AIM_FAMILIES[route], cell)


#: The work units (B x heads) a units_class filter aims at, good for the routes that split
#: over the cube cores (AIC_CORES[0]) and for the decode kernel's vector templates, which
#: split over twice as many (a2_routes ifa.tiling): "above" is above both and under four a
#: core of either, "many" four a vector core or more
UNITS_AIMS: dict[str, tuple[int, ...]] = {
    "below": tuple(range(1, AIC_CORES[0])),
    "cores": (AIC_CORES[0], AIC_CORES[0] * CV_RATIO),
    "above": tuple(range(AIC_CORES[0] * CV_RATIO + 1, MANY * AIC_CORES[0])),
    "many": tuple(range(MANY * AIC_CORES[0] * CV_RATIO, 2 * MANY * AIC_CORES[0] * CV_RATIO)),
}
#: The offset from a tile multiple each kv_tiles filter's KV lengths aim at
KV_TILE_OFFSETS = {"multiple": 0, "past": 1}
#: The S2 tiles of every route, for a kv_tiles aim whose route the draw decides
ALL_S2_TILES = tuple(sorted({*v3.SHORT_Q_TILES, v3.LONG_Q_TILE, v3.MASKED_CAP, v3.MLA_TILE,
                             fai.KV_STACK, *ifa.GROUP_TILES, ifa.FULL_TILE,
                             ifa.ANTIQUANT_GQA_TILE, ifa.ROPE_TILE, pfa.S2_TILE,
                             pfa.SMALL_KV_TILE, pfa.SMALL_Q_KV}))


def _size_aim(ch: Chooser, pins: Mapping[str, Any], route: str | None) -> None:
    """Chooser.aim for a units_class or kv_tiles filter: B x heads on the class's work
    units, or KV lengths on (or one past) a multiple of the route's S2 tile (any route's
    where none is pinned); the classes read the finished case's route, which a filter on
    them alone leaves to the draw. Nothing is drawn, and nothing set without those filters."""
    if "units_class" in pins:
        ch.aim = ("units", UNITS_AIMS[pins["units_class"]])
    elif pins.get("kv_tiles") in KV_TILE_OFFSETS:
        tiles = aim_tiles(route, "s2") if route in AIMS else lambda g: ALL_S2_TILES
        ch.aim = ("edge", (KV_TILE_OFFSETS[pins["kv_tiles"]], tiles, "kv"))
    elif "kv_tiles" in pins and ch.aim is not None and ch.aim[0] == "edge":
        ch.aim = None  # a route filter's drawn cell would put the KV on a tile multiple


def landed(case: Case, cell: str) -> bool:
    """Whether `case` sits on the route_edge `cell`, by the route model alone (most aimed
    paths miss: the rest of `case.features()` is left to the one kept)."""
    return derived(case, "route").get("route_edge") == cell


def _pins(route: str, boundary: str | None) -> dict[str, Any]:
    """The route's pins; a flash-decode split also needs a decode call whose batches share
    one KV length (ragged MLA batches take the balanced split, ifa.balanced)."""
    pins = dict(AIMS.get(route, {}))
    if boundary in ("split_on", "split_off"):
        pins.update(branch="decode", actual_kv="one")
    return pins
