"""The routes an Atlas A2 call takes through the vendor's host code, as case features.

`route_of(call)` names the kernel and template the A2 host code picks
(`dispatch.py`) and `tiling_of(call)` what that route's tiling computes
(`v3.py`, `fai.py`, `ifa.py`, `pfa.py`: tiles, work units over the cores, the
flash-decode split); `cell(call)` the (route, boundary) the call sits on: one
below, at or one above a multiple of the route's S1 or S2 tile, one work unit
below, at or above the core count, or the last value taking the KV split and the
first not taking it. Every decision cites its file and function (`WHY`).

`case.features()` reports `route` and `route_edge` through the op layer's
derived features (`fia_fuzz.op.features.DERIVED`), which this module fills when
`fia_fuzz.rules` is imported: the op layer cannot import the rules.
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op import features
from fia_fuzz.op.call import CallView
from fia_fuzz.rules.profiles.a2_routes import dispatch, fai, ifa, pfa, sizes, v3
from fia_fuzz.rules.profiles.a2_routes.tiling import Tiling, kv_lengths, q_lengths

#: The routes legal calls take. The model also names "ifa.full_quant" (an int8 query at
#: Q_S 1), which no documented draw takes (full quant is drawn in prefill only,
#: strategies/families.py full_quant), so it is no coverage target.
#: Antiquant templates of the decode kernel, named by the antiquant feature's mode
ANTIQUANT_MODES = ("0", "1", "0/0", "1/1", "2/2", "3/3", "4/4", "5/5", "0/1")
ROUTES: tuple[str, ...] = (
    "v3.gqa", "v3.mla", "fai",
    "ifa.float", *(f"ifa.antiquant.{m}" for m in ANTIQUANT_MODES), "ifa.mla_quant",
    "ifa.post_quant",
    "pfa.float", "pfa.antiquant", "pfa.full_quant", "pfa.post_quant",
    "empty")

#: Boundary kinds, each with its cells (one below/on/above, or either side of a threshold)
GROUPS: dict[str, tuple[str, ...]] = {
    "split": ("split_on", "split_off"),
    "cores": ("cores-1", "cores", "cores+1"),
    "s1": ("s1-1", "s1", "s1+1"),
    "s2": ("s2-1", "s2", "s2+1"),
}


def groups(route: str) -> tuple[str, ...]:
    """The boundary kinds of a route, in precedence order (a call takes the first it is on):
    V3 splits the KV from one unit below the cores, IFA at its B*KV_N threshold."""
    if route == "empty":
        return ()
    if route == "v3.mla":  # its split follows lcm(B*KV_N, cores), no one-off threshold
        return ("s2",)
    if route.startswith("v3."):
        return ("cores", "s2")
    if route.startswith("ifa."):
        return ("split", "s2")
    return ("cores", "s1", "s2")


def boundaries(route: str) -> tuple[str, ...]:
    """The boundary cells of a route."""
    return tuple(b for g in groups(route) for b in GROUPS[g])


def tiled_as(route: str) -> str:
    """The route whose tiling a route shares: the antiquant modes' templates dequantise
    differently over one tiling (`ifa.antiquant`)."""
    return "ifa.antiquant" if route.startswith("ifa.antiquant.") else route


#: Every (route, boundary) cell, as the route_edge feature names it ("route:boundary"),
#: the antiquant modes' routes counted once (tiled_as)
CELLS: tuple[str, ...] = tuple(dict.fromkeys(f"{tiled_as(r)}:{b}" for r in ROUTES
                                             for b in boundaries(r)))
FREE = "free"

WHY: dict[str, str] = {**{f"dispatch.{k}": v for k, v in dispatch.WHY.items()},
                       **{f"v3.{k}": v for k, v in v3.WHY.items()},
                       **{f"fai.{k}": v for k, v in fai.WHY.items()},
                       **{f"ifa.{k}": v for k, v in ifa.WHY.items()},
                       **{f"pfa.{k}": v for k, v in pfa.WHY.items()}}


def route_of(c: CallView) -> str:
    """The route (kernel.template) of a legal call on Atlas A2."""
    kernel = dispatch.kernel(c)
    if kernel in ("empty", "fai"):
        return kernel
    if kernel == "v3":
        return "v3.mla" if c.rope and c.D == 512 else "v3.gqa"
    tmpl = dispatch.template(c)
    if kernel == "ifa" and tmpl == "antiquant":
        return f"ifa.antiquant.{dispatch.antiquant_mode(c)}"
    if kernel == "pfa" and tmpl == "mla_quant":
        return "pfa.full_quant"
    return f"{kernel}.{tmpl}"


def tiling_of(c: CallView, route: str | None = None) -> Tiling | None:
    """The route's tiling of a call (None for an empty call)."""
    route = route or route_of(c)
    if route.startswith("v3."):
        return v3.tiling(c, mla=route == "v3.mla")
    if route == "fai":
        return fai.tiling(c)
    if route.startswith("ifa."):
        return ifa.tiling(c)
    if route.startswith("pfa."):
        return pfa.tiling(c)
    return None


def _near(values: list[int], tile: int, prefix: str) -> str | None:
    """`prefix-1`, `prefix` or `prefix+1` where a value sits one below, on or one above a
    positive multiple of tile."""
    for v in values:
        if v < tile - 1:
            continue
        r = v % tile
        if r == tile - 1:
            return f"{prefix}-1"
        if r == 0:
            return prefix
        if r == 1:
            return f"{prefix}+1"
    return None


def boundary(c: CallView, route: str, t: Tiling) -> str | None:
    """The first of the route's boundaries the call sits on, None when it is free."""
    for kind in groups(route):
        got = None
        if kind == "split" and t.split is not None:
            qty, top = t.split
            got = {0: "split_on", 1: "split_off"}.get(qty - top)
        elif kind == "cores":
            got = {-1: "cores-1", 0: "cores", 1: "cores+1"}.get(t.units - t.cores)
        elif kind == "s1" and t.s1_tile:
            got = _near(q_lengths(c), t.s1_tile, "s1")
        elif kind == "s2":
            got = _near(kv_lengths(c), t.s2_tile, "s2")
        if got is not None:
            return got
    return None


def cell(c: CallView) -> tuple[str, str]:
    """(route, route_edge) of a legal call: route_edge is "route:boundary" or "free"."""
    route, edge, _ = _cell(c)
    return route, edge


def _cell(c: CallView) -> tuple[str, str, Tiling | None]:
    route = route_of(c)
    t = tiling_of(c, route)
    b = boundary(c, route, t) if t is not None else None
    return route, (f"{tiled_as(route)}:{b}" if b else FREE), t


def route_features(case: Any) -> dict[str, Any]:
    """The `route` and `route_edge` features of a case, and its size classes against the
    route's tiling (`sizes.py`)."""
    v = case.view()
    route, edge, t = _cell(v)
    return {"route": route, "route_edge": edge, **sizes.size_classes(v, route, t)}


features.DERIVED["route"] = route_features
