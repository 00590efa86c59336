"""`fia-fuzz coverage --pairs`: how many drawn cases cover each feasible pair of feature
values, and each triple route x axis x axis (strategies/pairs.py holds the model).

Feasible pairs are the stored set's (a pinned or reference draw carried them) and any
pair the draws carry (feasible by witness). Feasible triples are those the stored
reference draws carried and those the draws carry: a triple is not pinned one by one
(there are about 10^6), so the reference draws stand for what a night can reach. Under
filters, a pair counts as feasible when each of its values pairs feasibly with every
filter (a triple the filters exclude may still slip in: the check is pairwise).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fia_fuzz.strategies import pairs

#: Triples route x axis x axis a night must cover, as a share of the feasible ones
TRIPLE_BAR = 0.90


@dataclass
class PairCoverage:
    feasible: int = 0
    covered: int = 0
    once: int = 0
    uncovered: list[int] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)
    contradicted: list[int] = field(default_factory=list)
    infeasible: Counter[str] = field(default_factory=Counter)
    hits: Counter[int] = field(default_factory=Counter)
    triples: int = 0
    triples_covered: int = 0
    per_route: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: (covered, feasible) pairs feasible under this rule profile but not under the docs
    beyond_docs: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        return not self.uncovered and self.triples_covered >= TRIPLE_BAR * self.triples

    def summary(self) -> str:
        return (f"pairs: {self.covered}/{self.feasible} feasible covered "
                f"({len(self.unknown)} unknown); triples route x axis x axis: "
                f"{self.triples_covered}/{self.triples}")


def _allowed(sp: pairs.Space, fs: pairs.Feasible, filters: Mapping[str, Any]) -> set[int]:
    """Value numbers that pair feasibly with every filter value (all, without filters)."""
    pinned = [sp.index[(a, repr(v))] for a, v in filters.items() if (a, repr(v)) in sp.index]
    keep = set()
    for i in range(sp.n):
        same = [f for f in pinned if sp.axis_of[f] == sp.axis_of[i]]
        if same and same != [i]:
            continue
        if all(f == i or fs.status.get(sp.pair_id(i, f)) == pairs.FEASIBLE
               for f in pinned):
            keep.add(i)
    return keep


def measure(features: list[dict[str, Any]], fs: pairs.Feasible,
            filters: Mapping[str, Any] | None = None,
            docs: pairs.Feasible | None = None) -> PairCoverage:
    """Pair and triple coverage of the drawn cases' features against the stored set;
    with the docs' set `docs` (for a device profile), also of the pairs only it admits."""
    sp = pairs.space()
    out = PairCoverage()
    seen3: set[tuple[int, int]] = set()
    for feats in features:
        ids = sp.indices(feats)
        out.hits.update(pairs.case_pairs(sp, ids))
        seen3.update(pairs.case_triples(sp, ids))
    keep = _allowed(sp, fs, filters or {})
    for p, code in fs.status.items():
        i, j = sp.split(p)
        if i not in keep or j not in keep:
            continue
        if code == pairs.FEASIBLE or p in out.hits:
            out.feasible += 1
            if p in out.hits:
                out.covered += 1
                out.once += out.hits[p] == 1
            else:
                out.uncovered.append(p)
            if code == pairs.INFEASIBLE:
                out.contradicted.append(p)
        elif code == pairs.UNKNOWN:
            out.unknown.append(p)
        else:
            out.infeasible[fs.reason.get(p, "?")] += 1
    if docs is not None:
        beyond = [p for p, code in fs.status.items() if code == pairs.FEASIBLE
                  and docs.status.get(p) != pairs.FEASIBLE]
        out.beyond_docs = (sum(1 for p in beyond if p in out.hits), len(beyond))
    stored3 = {t for t in fs.triples if t[0] in keep
               and all(i in keep for i in sp.split(t[1]))}
    all3 = stored3 | seen3
    out.triples, out.triples_covered = len(all3), len(seen3)
    by_route: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for t in all3:
        by_route[t[0]][1] += 1
        by_route[t[0]][0] += t in seen3
    out.per_route = {r: (c, n) for r, (c, n) in by_route.items()}
    return out


def lines(cov: PairCoverage, fs: pairs.Feasible) -> list[str]:
    """The report: triples per route, infeasible pairs by reason, unknown and uncovered
    pairs listed by axis pair, the pairs drawn least; the summary line last."""
    sp = pairs.space()
    out = ["triples route x axis x axis, per route (covered/feasible):"]
    for r, (c, n) in sorted(cov.per_route.items()):
        out.append(f"  {sp.values[r][1]:>22} | {c}/{n} ({100 * c / max(n, 1):.0f}%)")
    out.append(f"infeasible pairs: {sum(cov.infeasible.values())}, by constraint "
               f"(the 15 commonest):")
    for why, n in cov.infeasible.most_common(15):
        out.append(f"  {n:>6} | {why}")
    out.append(f"covered pairs drawn once: {cov.once}")
    if cov.beyond_docs is not None:
        out.append(f"pairs feasible under {fs.rules} but not under docs: "
                   f"{cov.beyond_docs[0]}/{cov.beyond_docs[1]} covered")
    for title, ids in (("unknown (no pinned draw in the walks allowed; its commonest "
                        "failure)", cov.unknown),
                       ("feasible but not covered", cov.uncovered),
                       ("witnessed though stored infeasible (refresh the set)",
                        cov.contradicted)):
        out.append(f"{title}: {len(ids)}")
        grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
        for p in ids:
            i, j = sp.split(p)
            (a, x), (b, y) = sp.values[i], sp.values[j]
            hint = f" [{fs.reason[p]}]" if title.startswith("unknown") and p in fs.reason \
                else ""
            grouped[(a, b)].append(f"{x}/{y}{hint}")
        for (a, b), cells in sorted(grouped.items()):
            out.append(f"  {a} x {b}: " + ", ".join(cells))
    out.append(cov.summary())
    return out
