"""Computing one rule profile's feasible pairs and its pair-aim schedule (stored by
strategies/pairs.py; `fia-fuzz coverage --pairs --refresh-feasible --rules R`).

A pair is feasible when a legal draw carries it: witnessed among REFERENCE unaimed
nightly draws, or by a pinned draw (random walks of the same construction as
`cases(**filters)`, up to WALKS per pair; every pair the successful draw carries is
witnessed with it). A pair no walk reaches is infeasible when the constraint is named:
no strategy family draws both values (families.FAMILY_SCOPE), every walk died at a
construction step or on a rule of the device profile (the commonest such failure is
the reason), or one value fixes the other's axis in every draw (a value that implies
another). Otherwise it is unknown, with the commonest failure of its walks.

The schedule (strategies/pair_aims.py) covers the feasible pairs the unaimed share of a
TARGET_DRAWS nightly leaves under RARE expected hits: greedily, each pin set starts from
the uncovered pair whose values have the most uncovered pairs left and adds the value
covering the most further ones, while a pinned draw still carries the set.
"""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.strategies import pair_aims, pairs
from fia_fuzz.strategies.cases import aim_families, build
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.draft import PROFILES
from fia_fuzz.strategies.sample import draw_cases

#: Unaimed nightly draws whose pairs are feasible by witness (and whose triples are the
#: stored triples)
REFERENCE = 5000
#: Pinned walks per pair no draw witnessed
WALKS = 24
#: The night the schedule is sized for, and the expected unaimed hits under which a
#: feasible pair is aimed at
TARGET_DRAWS, RARE = 5000, 8
#: Most pins in one aim, and the walks that must carry a pin set for it to be an aim
MAX_PINS, AIM_WALKS = 4, 12
#: The size budget feasibility is computed under (stress reaches at least as far)
PROFILE = "nightly"
#: A value seen this often with one value of another axis, and never with another, fixes it
IMPLIES_AFTER = 20


def _walk(pins: dict[str, Any], rules: str, rng: random.Random, tries: int
          ) -> tuple[dict[str, Any] | None, Counter[str]]:
    """(features of a pinned draw, or None; the failures of the walks that died)."""
    prof = PROFILES[PROFILE]
    scoped = aim_families(pins, rules)
    why: Counter[str] = Counter()
    if not scoped:
        why["scope"] = tries
        return None, why
    for _ in range(tries):
        try:
            return build(RandomChooser(rng, pins), prof, scoped, pins, rules).features(), why
        except Dead as exc:
            why[str(exc)] += 1
        except Exception as exc:  # noqa: BLE001  (a strategy bug on a pinned path: named)
            why[f"strategy error: {exc!r}"] += 1
    return None, why


def _classify(why: Counter[str], implied: str | None) -> tuple[int, str]:
    if why.get("scope"):
        return pairs.INFEASIBLE, "no strategy family draws both (families.FAMILY_SCOPE)"
    if implied:
        return pairs.INFEASIBLE, implied
    steps = Counter({w: n for w, n in why.items()
                     if "differ from filters" not in w and not w.startswith("strategy error")})
    top = why.most_common(1)[0][0] if why else "no walk"
    if steps and sum(steps.values()) == sum(why.values()):
        first = steps.most_common(1)[0][0]
        kind = "rule" if " under " in first else "construction"
        return pairs.INFEASIBLE, f"{kind}: {first}"
    return pairs.UNKNOWN, top


def compute(rules: str = DEFAULT, reference: int = REFERENCE, walks: int = WALKS,
            log: Callable[[str], None] = print) -> pairs.Feasible:
    """The feasible set of `rules` with its schedule, computed afresh."""
    sp = pairs.space()
    fs = pairs.Feasible(rules=rules, fingerprint=sp.fingerprint)
    t0 = time.perf_counter()
    with pair_aims.unaimed():
        drawn = draw_cases(reference, 0, PROFILE, rules=rules)
    hits: Counter[int] = Counter()
    seen_with: dict[int, Counter[int]] = defaultdict(Counter)
    for case in drawn:
        ids = sp.indices(case.features())
        hits.update(pairs.case_pairs(sp, ids))
        fs.triples.update(pairs.case_triples(sp, ids))
        for i in ids:
            seen_with[i].update(ids)
    log(f"{len(drawn)} reference draws in {time.perf_counter() - t0:.0f}s: "
        f"{len(hits)} pairs, {len(fs.triples)} triples witnessed")
    for p in hits:
        fs.status[p] = pairs.FEASIBLE
    rng = random.Random(0)
    todo = [p for p in sp.all_pairs() if p not in fs.status]
    t1 = time.perf_counter()
    for p in todo:
        if p in fs.status:
            continue  # witnessed by an earlier pinned draw
        i, j = sp.split(p)
        feats, why = _walk(sp.pins((i, j)), rules, rng, walks)
        if feats is not None:
            for q in pairs.case_pairs(sp, sp.indices(feats)):
                fs.status[q] = pairs.FEASIBLE
            continue
        fs.status[p], fs.reason[p] = _classify(why, _implied(sp, seen_with, i, j))
    counts = Counter(fs.status.values())
    log(f"{len(todo)} pairs walked in {time.perf_counter() - t1:.0f}s: "
        f"{counts[pairs.FEASIBLE]} feasible, {counts[pairs.INFEASIBLE]} infeasible, "
        f"{counts[pairs.UNKNOWN]} unknown")
    t2 = time.perf_counter()
    fs.aims = schedule(sp, fs, hits, reference, rules, rng)
    log(f"{len(fs.aims)} pair aims in {time.perf_counter() - t2:.0f}s")
    fs.notes = {"reference": reference, "walks": walks, "profile": PROFILE,
                "target_draws": TARGET_DRAWS, "rare": RARE}
    return fs


def _implied(sp: pairs.Space, seen_with: dict[int, Counter[int]], i: int, j: int
             ) -> str | None:
    """'x implies b=y0' when x was drawn IMPLIES_AFTER times or more, always with y0 on
    j's axis (or the same the other way round)."""
    for x, y in ((i, j), (j, i)):
        n = seen_with[x][x]
        if n < IMPLIES_AFTER:
            continue
        others = [k for k in seen_with[x] if sp.axis_of[k] == sp.axis_of[y]]
        if len(others) == 1 and others[0] != y:
            return (f"{sp.name(x)} implies {sp.name(others[0])} (every one of {n} "
                    f"reference draws)")
    return None


def schedule(sp: pairs.Space, fs: pairs.Feasible, hits: Counter[int], reference: int,
             rules: str, rng: random.Random) -> list[dict[str, Any]]:
    """Greedy pin sets covering the feasible pairs the unaimed draws leave rare."""
    unaimed = TARGET_DRAWS * (1 - pair_aims.PAIR_AIMED / pair_aims.PAIR_AIM_OF)
    left = {p for p in fs.pairs(pairs.FEASIBLE) if hits[p] * unaimed / reference < RARE}
    degree: Counter[int] = Counter()
    partners: dict[int, set[int]] = defaultdict(set)
    for p in left:
        i, j = sp.split(p)
        degree.update((i, j))
        partners[i].add(j)
        partners[j].add(i)
    aims = []
    while left:
        seed = max(left, key=lambda p: (degree[sp.split(p)[0]] + degree[sp.split(p)[1]], -p))
        pins = list(sp.split(seed))
        while len(pins) < MAX_PINS:
            gain = Counter()
            for v in pins:
                for z in partners[v]:
                    if sp.axis_of[z] not in {sp.axis_of[q] for q in pins} and all(
                            fs.status.get(sp.pair_id(z, q)) == pairs.FEASIBLE for q in pins):
                        gain[z] += 1
            for z, _ in gain.most_common(3):
                if _walk(sp.pins((*pins, z)), rules, rng, AIM_WALKS)[0] is not None:
                    pins.append(z)
                    break
            else:
                break
        covered = {sp.pair_id(a, b) for a in pins for b in pins if a < b}
        for p in covered & left:
            left.discard(p)
            i, j = sp.split(p)
            degree.subtract((i, j))
            partners[i].discard(j)
            partners[j].discard(i)
        aims.append(sp.pins(pins))
    return aims
