"""How wide each breaker reaches: the broken values and the families its cases come from.

A breaker that always moves one value the same way from one kind of base
tests one corner of its rule. `breaks(rule, breaker, n)` draws `n` breaks per rule
(the same draws as `illegal_cases(rule)`: a base from the breaker, its change,
kept only when `validate` reports exactly that rule); `width` counts, per rule,
the distinct broken values (`broken_value`: what the violation names, numbers
bucketed) and the family, layout and branch of the bases. `fia-fuzz
coverage --illegal` prints the table, so a narrow breaker shows.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st

from fia_fuzz.op.case import Case
from fia_fuzz.rules.rule import Violation
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.edits import apply
from fia_fuzz.strategies.illegal.breaker import Breaker
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


@dataclass(frozen=True)
class Break:
    """A legal base, the case its breaker made of it, and the one violation it has."""

    base: Case
    broken: Case
    violation: Violation


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
        broken = apply(base, breaker.change(data.draw, base))
        found = validate(**broken.specs())
        if [v.rule for v in found] == [rule]:
            out.append(Break(base, broken, found[0]))

    with fixed_constants():
        collect()
    return out


@dataclass
class Width:
    """One rule's breaks counted: distinct broken values, and the bases' families, layouts
    and branches."""

    landed: int = 0
    values: Counter[str] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)
    layouts: Counter[str] = field(default_factory=Counter)
    branches: Counter[str] = field(default_factory=Counter)


def width(found: list[Break]) -> Width:
    """Counters over `found` (see `breaks`)."""
    w = Width(landed=len(found))
    for b in found:
        feats = b.base.features()
        w.values[broken_value(b.violation.message)] += 1
        w.families[family(feats)] += 1
        w.layouts[str(feats.get("layout"))] += 1
        w.branches[str(feats.get("branch"))] += 1
    return w


def table(widths: dict[str, Width], top: int = 3) -> list[str]:
    """One line per rule: breaks, distinct values, families, layouts, branches, top values."""
    def few(c: Counter[str]) -> str:
        return "/".join(sorted(c))

    lines = [f"{'rule':<32} {'n':>3} {'vals':>4} {'fam':>3}  families | layouts | branches | "
             f"most drawn values"]
    for rid, w in widths.items():
        vals = "; ".join(v for v, _ in w.values.most_common(top))
        lines.append(f"{rid:<32} {w.landed:>3} {len(w.values):>4} {len(w.families):>3}  "
                     f"{few(w.families)} | {few(w.layouts)} | {few(w.branches)} | {vals}")
    return lines
