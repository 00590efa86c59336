"""How wide each breaker reaches: the broken values, the sides of the bound, the families.

A breaker that always moves one value the same way from one kind of base
tests one corner of its rule. `breaks(rule, breaker, n)` draws `n` breaks per rule
(the same draws as `illegal_cases(rule)`: a base from the breaker, its change,
kept only when `validate` reports exactly that rule), `by_base` the same from each of
the breaker's bases in turn; `width` counts, per rule,
the distinct broken values (`broken_value`: what the violation names, numbers
bucketed), the sides of the rule's bound they broke (`sides`: the labels the
change carries, `edits.SIDE`, else inferred from base to broken case) and the
family, layout, branch and Atlas A2 route of the bases. `covered` finds the
families (or routes) a rule covers: those whose legal bases (`family_pool`,
`route_pool`) its breaker's change breaks it from alone. `fia-fuzz coverage
--illegal` prints the table with the sides a rule's bound has (`illegal.BOUNDS`)
and the covered families and routes each breaker misses, so a one-sided or
narrow breaker shows.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st
from hypothesis.errors import Frozen, Unsatisfiable, UnsatisfiedAssumption

from fia_fuzz.op.case import Case
from fia_fuzz.op.params import ATTR_DEFAULTS
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.profiles.a2_routes import ROUTES
from fia_fuzz.rules.rule import Violation
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.edits import SIDE, Change, apply, position
from fia_fuzz.strategies.illegal.breaker import Breaker
from fia_fuzz.strategies.sample import draw_cases
from fia_fuzz.strategies.seeded import fixed_constants


def bucket(x: int) -> str:
    """An int as itself up to 16 and at powers of two, else its power-of-two range (negative:
    the same, signed)."""
    if x < 0:
        return f"-{bucket(-x)}"
    if x <= 16 or x & (x - 1) == 0:
        return str(x)
    top = 1 << (x - 1).bit_length()
    return f"({top // 2},{top})"


def broken_value(message: str) -> str:
    """The values a violation names (its message, which names the offending values), each
    integer bucketed: the same kind of break at a like size reads the same."""
    return re.sub(r"-?\d+", lambda m: bucket(int(m.group())), message)


def family(feats: dict[str, Any]) -> str:
    """The structural family of a legal case (strategies/families.py), read off its features:
    the workloads family's calls are dense or packed calls, and count as those; packed MLA
    (rope, query D 128) is "packed_mla"."""
    if feats.get("rope_d") == "512":
        return "mla"
    if feats.get("rope_d") == "128":
        return "packed_mla"
    if feats.get("cache") == "NZ":
        return "gqa_nz"
    if feats.get("layout") in ("TND", "NTD_TND", "TND_NTD"):
        return "packed"
    if feats.get("full_quant"):
        return "full_quant"
    if feats.get("antiquant") != "none":
        return "antiquant"
    return "dense"


def _moved(a: Any, b: Any) -> set[str]:
    """The sides one argument moved to, from legal `a` to broken `b`: a number up or down, a
    list or rank longer or shorter, a shape's axes up or down, else each changed list
    element's direction and position (first, last)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return set()
    if isinstance(a, int) and isinstance(b, int):
        return {"above"} if b > a else {"below"} if b < a else set()
    if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
        if len(a.shape) != len(b.shape):
            return {"longer" if len(b.shape) > len(a.shape) else "shorter"}
        return set().union(*(_moved(x, y) for x, y in zip(a.shape, b.shape, strict=True)))
    if not isinstance(a, list) or not isinstance(b, list):
        return set()
    if len(a) != len(b):
        return {"longer" if len(b) > len(a) else "shorter"}
    out: set[str] = set()
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        moved = _moved(x, y)
        if moved:
            out |= moved | set(position(i, len(a)))
    return out


def infer_sides(base: Case, broken: Case) -> frozenset[str]:
    """The sides of a bound `broken` reaches from its legal `base`, read off the arguments
    that changed (a legal base sits inside the bound, so the way a value moved is the side it
    left by). A change that moves several arguments opposite ways names no side: its breaker
    labels its changes (`edits.sided`) instead."""
    found: set[str] = set()
    for name in set(base.params) | set(broken.params):
        a = base.params.get(name, ATTR_DEFAULTS.get(name))
        b = broken.params.get(name, ATTR_DEFAULTS.get(name))
        if a is None or b is None or a == b:
            continue
        found |= _moved(a, b)
    if {"above", "below"} <= found or {"longer", "shorter"} <= found:
        return frozenset()
    return frozenset(found)


def broken_sides(base: Case, change: Change, broken: Case) -> frozenset[str]:
    """The sides of a bound `change` broke from `base` to `broken`: the labels it carries
    (`edits.SIDE`), else what `infer_sides` reads off the arguments that moved."""
    return frozenset(change[SIDE]) if SIDE in change else infer_sides(base, broken)


@dataclass(frozen=True)
class Break:
    """A legal base, the case its breaker made of it, the one violation it has and the sides
    of the rule's bound it reached."""

    base: Case
    broken: Case
    violation: Violation
    sides: frozenset[str] = frozenset()


def breaks(rule: str, breaker: Breaker, n: int, seed: int = 0) -> list[Break]:
    """The draws among `n` seeded Hypothesis examples of `breaker` that break `rule` alone
    (what `illegal_cases(rule)` keeps)."""
    out: list[Break] = []
    bases = breaker.cases()

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        base = data.draw(bases)
        change = breaker.change(data.draw, base)
        broken = apply(base, change)
        found = validate(**broken.specs())
        if [v.rule for v in found] == [rule]:
            sides = broken_sides(base, change, broken)
            out.append(Break(base, broken, found[0], sides))

    with fixed_constants():
        collect()
    return out


#: Draws each base of a breaker gets at least in `by_base`.
MIN_PER_BASE = 4


def by_base(rule: str, breaker: Breaker, n: int, seed: int = 0,
            routes: bool = False) -> list[Break]:
    """`breaks` from each of the breaker's bases in turn, `n` draws spread over them (at
    least MIN_PER_BASE each): a base listed last is measured as surely as the first. Drawn
    as one `one_of`, a few dozen Hypothesis examples fall unevenly on the alternatives (it
    repeats earlier choices), so a family's bases could go unmeasured by chance of order.
    `routes`: its route bases too (`spans.py`), MIN_PER_BASE draws each."""
    bases = (breaker.base, *breaker.alt)
    each = max(MIN_PER_BASE, -(-n // len(bases)))
    plan = [(base, each) for base in bases]
    plan += [(base, MIN_PER_BASE) for base in (breaker.routes if routes else ())]
    return [b for base, k in plan
            for b in breaks(rule, replace(breaker, base=base, alt=(), routes=()), k, seed)]


@dataclass
class Width:
    """One rule's breaks counted: distinct broken values, and the bases' families, layouts
    and branches."""

    landed: int = 0
    values: Counter[str] = field(default_factory=Counter)
    sides: Counter[str] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)
    layouts: Counter[str] = field(default_factory=Counter)
    branches: Counter[str] = field(default_factory=Counter)
    routes: Counter[str] = field(default_factory=Counter)


def width(found: list[Break]) -> Width:
    """Counters over `found` (see `breaks`)."""
    w = Width(landed=len(found))
    for b in found:
        feats = b.base.features()
        w.values[broken_value(b.violation.message)] += 1
        w.sides.update(b.sides)
        w.families[family(feats)] += 1
        w.layouts[str(feats.get("layout"))] += 1
        w.branches[str(feats.get("branch"))] += 1
        w.routes[str(feats.get("route"))] += 1
    return w


#: Legal bases per family for `covered`: each family's layouts, paged or not, and forms.
FAMILY_FILTERS: tuple[dict[str, Any], ...] = (
    {"plain": True, "layout": "BNSD"}, {"plain": True, "layout": "BSH"},
    {"antiquant": "none", "full_quant": False, "rope": False, "layout": "BSND",
     "paged": True},
    {"antiquant": "none", "full_quant": False, "rope": False, "layout": "BNSD_BSND"},
    {"antiquant": "combined:0"}, {"antiquant": "separate:1/1", "layout": "BSH"},
    {"antiquant": "separate:0/0", "paged": True, "cache": "BnBsH"},
    {"antiquant": "separate:0/1", "branch": "decode"},
    {"full_quant": True, "rope": False, "layout": "BNSD"},
    {"full_quant": True, "rope": False, "layout": "BSH"},
    {"layout": "TND", "rope": False, "paged": False},
    {"layout": "TND", "rope": False, "paged": True}, {"layout": "NTD_TND"},
    {"rope_d": "128"},
    {"rope_d": "512", "layout": "BSND"}, {"rope_d": "512", "layout": "TND"},
    {"rope_d": "512", "full_quant": True},
    {"cache": "NZ", "rope": False, "layout": "BSH"},
    {"cache": "NZ", "rope": False, "layout": "BNSD"},
)


def family_pool(per_filter: int = 2, seed: int = 0) -> dict[str, list[Case]]:
    """Legal bases of every family (FAMILY_FILTERS, `per_filter` seeded draws each), by
    family."""
    pool: dict[str, list[Case]] = {}
    for f in FAMILY_FILTERS:
        for case in draw_cases(per_filter, seed, **f):
            pool.setdefault(family(case.features()), []).append(case)
    return pool


@cache
def route_pool(per_route: int = 2, seed: int = 0) -> dict[str, list[Case]]:
    """Legal bases on every Atlas A2 route (`route` filter, `per_route` seeded draws each),
    by route: `covered` over it finds the routes a rule applies on, the kernel paths whose
    host checks a broken bound meets (drawn once per process: the same seeded draws)."""
    return {r: draw_cases(per_route, seed, route=r) for r in ROUTES}


def _probe(rule: str, breaker: Breaker, bases: list[Case], n: int, seed: int) -> str | None:
    """"lands" where `breaker`'s change breaks `rule` alone from one of `bases` in one of
    `n` seeded draws, else the first exception it raised there as "raises: ...", else None."""
    hit: list[str] = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def probe(data: st.DataObject) -> None:
        base = data.draw(st.sampled_from(bases))
        try:
            broken = apply(base, breaker.change(data.draw, base))
        except (UnsatisfiedAssumption, Frozen):
            raise
        except Exception as exc:   # a change written for other bases: what it raised is the note
            hit.append(f"raises: {type(exc).__name__}: {exc}"[:80])
            return
        if [v.rule for v in validate(**broken.specs())] == [rule] and "lands" not in hit:
            hit.insert(0, "lands")

    with fixed_constants():
        try:
            probe()
        except Unsatisfiable:       # the change rejected every base: it does not apply there
            pass
    return hit[0] if hit else None


def covered(rule: str, breaker: Breaker, pool: dict[str, list[Case]], n: int = 4,
            seed: int = 0) -> dict[str, str]:
    """The families `rule` covers, with their outcome: "lands" where its breaker's change
    breaks it alone from a base of `pool[family]` (in one of `n` seeded draws), else the
    first exception the change raised there (a change written for other bases) as
    "raises: ...". Families where it neither lands nor raises are left out."""
    out = {fam: _probe(rule, breaker, bases, n, seed) for fam, bases in pool.items()}
    return {fam: how for fam, how in out.items() if how}


def table(widths: dict[str, Width], top: int = 3,
          bounds: dict[str, tuple[str, ...]] | None = None,
          missed: dict[str, list[str]] | None = None,
          missed_routes: dict[str, list[str]] | None = None) -> list[str]:
    """One line per rule: breaks, distinct values, sides reached (with the sides of its bound
    in `bounds` it misses), families (with the covered ones it misses, `missed`), layouts,
    branches, routes (with the covered ones it misses, `missed_routes`), top values."""
    def few(c: Counter[str]) -> str:
        return "/".join(sorted(c))

    lines = [f"{'rule':<32} {'n':>3} {'vals':>4} {'fam':>3} {'rt':>2}  sides | families | "
             f"layouts | branches | routes | most drawn values"]
    for rid, w in widths.items():
        vals = "; ".join(v for v, _ in w.values.most_common(top))
        sides = few(w.sides) or "-"
        lacking = [s for s in (bounds or {}).get(rid, ()) if s not in w.sides]
        if lacking:
            sides += f" (misses {'/'.join(lacking)})"
        fams = few(w.families)
        if (missed or {}).get(rid):
            fams += f" (misses {'/'.join(missed[rid])})"  # type: ignore[index]
        routes = few(w.routes)
        if (missed_routes or {}).get(rid):
            routes += f" (misses {'/'.join(missed_routes[rid])})"  # type: ignore[index]
        lines.append(f"{rid:<32} {w.landed:>3} {len(w.values):>4} {len(w.families):>3} "
                     f"{len(w.routes):>2}  {sides} | {fams} | {few(w.layouts)} | "
                     f"{few(w.branches)} | {routes} | {vals}")
    return lines
