"""Route aims: the feature pins that steer a draw onto each Atlas A2 route
(rules/profiles/a2_routes) that the families' own mix reaches rarely.

A profile that aims at routes (`Profile.route_aims`: nightly, stress) gives an
unfiltered draw an aim in one draw of AIM_SHARE: a route, picked evenly or by the
weights a steering round passes, whose pins join the draw's (each pin a feature the
construction picks, so the route comes from construction, not rejection), and one of
its boundary kinds, which the size draws then aim at (`Chooser.aim`: lengths one below,
on or one above a tile multiple, or B x KV heads on a split threshold). Smoke makes no
decision here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fia_fuzz.rules.profiles.a2_routes import ANTIQUANT_MODES, FREE, GROUPS, groups
from fia_fuzz.strategies.choices import Chooser
from fia_fuzz.strategies.draft import Profile
from fia_fuzz.strategies.sizes import CORE_UNITS, SPLIT_UNITS


def _antiquant_value(mode: str) -> str:
    return f"separate:{mode}" if "/" in mode else f"combined:{mode}"


#: route -> the pins that steer a draw onto it
AIMS: dict[str, dict[str, Any]] = {
    "v3.gqa": {"q_dtype": "float16", "kv_dtype": "float16", "rope_d": "none"},
    "fai": {"layout": "TND", "rope_d": "none", "q_dtype": "bfloat16"},
    "ifa.float": {"branch": "decode", "q_dtype": "float16", "kv_dtype": "float16"},
    "pfa.float": {"branch": "prefill", "pse": True},
    "v3.mla": {"rope_d": "512", "q_dtype": "bfloat16"},
    **{f"ifa.antiquant.{m}": {"branch": "decode", "antiquant": _antiquant_value(m)}
       for m in ANTIQUANT_MODES},
    "ifa.mla_quant": {"rope_d": "512", "q_dtype": "int8"},
    "ifa.post_quant": {"branch": "decode", "post_quant": True, "q_dtype": "float16"},
    "pfa.antiquant": {"branch": "prefill", "antiquant": "combined:0"},
    "pfa.full_quant": {"branch": "prefill", "q_dtype": "int8", "rope_d": "none"},
    "pfa.post_quant": {"branch": "prefill", "post_quant": True, "q_dtype": "float16"},
}
#: Aims drawn more often than once per route: the post-quant routes' draws die more often
#: (their pins meet D % 32 and dtype limits late in the construction), and the rarest
#: antiquant modes' families carry them in few layouts
AIM_WEIGHTS = {"pfa.post_quant": 6, "ifa.post_quant": 2, "ifa.antiquant.4/4": 2,
               "ifa.antiquant.2/2": 2}
#: One unfiltered draw in AIM_SHARE takes an aim
AIM_SHARE = 4


def _boundary_aim(ch: Chooser, route: str, boundary: str | None) -> tuple[str, Any]:
    """Chooser.aim for one of the route's boundary kinds (`boundary` a cell's, or drawn)."""
    kind = next(g for g, cells in GROUPS.items() if boundary in cells) if boundary \
        else ch.one(groups(route))
    if kind in ("cores", "split"):
        return ("units", CORE_UNITS if kind == "cores" else SPLIT_UNITS)
    if boundary:
        return ("edge", -1 if boundary.endswith("-1") else 1 if boundary.endswith("+1") else 0)
    return ("edge", ch.one((-1, 0, 1)))


def _pinned_route(ch: Chooser, pins: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(route, boundary) a route or route_edge filter names, None when neither does."""
    if "route" in pins:
        route, boundary = pins["route"], None
    elif pins.get("route_edge", FREE) != FREE:
        route, boundary = pins["route_edge"].split(":")
    else:
        return None
    if route == "ifa.antiquant":  # a cell of the modes' shared tiling: any mode
        route = ch.one([r for r in AIMS if r.startswith("ifa.antiquant.")])
    return route, boundary


def aim(ch: Chooser, prof: Profile, pins: Mapping[str, Any],
        weights: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The pins of the route this draw aims at, and its boundary in `ch.aim`: the route a
    route or route_edge filter names, else ({} for none) one in AIM_SHARE unfiltered
    draws of a profile with route aims (the others, and smoke, draw nothing here)."""
    pinned = _pinned_route(ch, pins)
    if pinned is not None:
        route, boundary = pinned
        if boundary is not None or route in AIMS:
            ch.aim = _boundary_aim(ch, route, boundary)
        return dict(AIMS.get(route, {}))
    if not prof.route_aims or pins:
        return {}
    if ch.int(0, AIM_SHARE - 1) != AIM_SHARE - 1:  # shrinks toward the families' own mix
        return {}
    weights = weights or AIM_WEIGHTS
    routes = [r for r in AIMS for _ in range(weights.get(r, 1))]
    route = ch.one(routes)
    ch.aim = _boundary_aim(ch, route, None)
    return dict(AIMS[route])
