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
    """`breaker` with its rule's route bases."""
    return replace(breaker, routes=ROUTE_BASES.get(rule, ()))


def lands_alone(rule: str, breaker: Breaker, n: int, seed: int = 0) -> bool:
    """Whether `breaker`'s change, in `n` seeded draws from its bases, breaks `rule` alone
    at least once and in every draw it does not decline, raising nowhere."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable

    from fia_fuzz.rules.validate import validate
    from fia_fuzz.strategies.edits import apply
    from fia_fuzz.strategies.seeded import fixed_constants

    found: list[bool] = []
    bases = breaker.cases()

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def probe(data: st.DataObject) -> None:
        base = data.draw(bases)
        broken = apply(base, breaker.change(data.draw, base))
        found.append([v.rule for v in validate(**broken.specs())] == [rule])

    with fixed_constants():
        try:
            probe()
        except Unsatisfiable:
            return False
    return bool(found) and all(found)


def route_bases(rule: str, breaker: Breaker, pool: dict[str, list[Any]], n: int = 24,
                seed: int = 0) -> list[dict[str, Any]]:
    """The bases to add for `rule`: per route of `pool` where the change lands that
    `breaker`'s bases (`n` draws spread over them) do not reach, its first filter with the
    route pinned that draws and lands alone in every one of a few draws (`lands_alone`: the
    meta-tests hold a written breaker to that); a searched breaker (a
    mutation that declines where it does not apply) may take the route alone. A written
    change assumes its own filters' shapes, so it takes no other base."""
    from fia_fuzz.strategies.illegal.width import by_base, covered, width

    reached = width(by_base(rule, breaker, n, seed)).routes
    on = [r for r, how in covered(rule, breaker, pool, seed=seed).items()
          if how == "lands" and r not in reached]
    out = []
    for route in on:
        own = [{**b, "route": route} for b in (breaker.base, *breaker.alt)
               if b.get("route", route) == route]
        for f in own + ([{"route": route}] if breaker.mutation else []):
            try:
                if lands_alone(rule, replace(breaker, base=f, alt=(), routes=()), 6, seed):
                    out.append(f)
                    break
            except InvalidArgument:     # the filters exclude each other
                continue
            except Exception:   # noqa: BLE001  (a change that cannot take this base's shapes)
                continue
    return out
