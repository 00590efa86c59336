"""Route bases: each breaker also starts on the Atlas A2 routes where its change breaks its
rule and its own bases do not go, so a broken bound meets every kernel path that checks it.

A breaker's bases are written for the families and layouts its change is written on; the
route model (rules/profiles/a2_routes) splits those further by kernel and template, and a
base filter alone lands on the routes its family favours (a plain BNSD prefill draws V3
GQA and rarely the prompt kernel). `ROUTE_BASES` adds, per rule, one base pinned to each
route its change breaks the rule on (from `width.route_pool`) that its own bases missed:
one of its own filters with the route pinned where that is drawable and lands, else the
route alone. `python -m fia_fuzz.strategies.illegal.search --routes [PREFIX...]` prints
the entries (to paste here); tests/strategies/test_illegal_sides.py fails when a bound rule's bases
miss a route its change breaks it on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis.errors import InvalidArgument

from fia_fuzz.strategies.illegal.breaker import Breaker

#: rule id -> bases pinned to the routes its own bases miss (generated, see above)
ROUTE_BASES: dict[str, tuple[dict[str, Any], ...]] = {
}


def spanning(rule: str, breaker: Breaker) -> Breaker:
    """`breaker` with its rule's route bases among its alternatives."""
    extra = ROUTE_BASES.get(rule, ())
    return replace(breaker, alt=(*breaker.alt, *extra)) if extra else breaker


def route_bases(rule: str, breaker: Breaker, pool: dict[str, list[Any]], n: int = 24,
                seed: int = 0) -> list[dict[str, Any]]:
    """The bases to add for `rule`: per route of `pool` where the change lands that
    `breaker`'s bases (`n` draws spread over them) do not reach, its first filter with the
    route pinned that draws and lands, else the route alone."""
    from fia_fuzz.strategies.illegal.width import breaks, by_base, covered, width

    reached = width(by_base(rule, breaker, n, seed)).routes
    on = [r for r, how in covered(rule, breaker, pool, seed=seed).items()
          if how == "lands" and r not in reached]
    out = []
    for route in on:
        for f in (*({**b, "route": route} for b in (breaker.base, *breaker.alt)
                    if b.get("route", route) == route), {"route": route}):
            try:
                if breaks(rule, replace(breaker, base=f, alt=()), 6, seed):
                    out.append(f)
                    break
            except InvalidArgument:     # the filters exclude each other
                continue
    return out
