"""Find, per rule id, a (base filters, mutation) that breaks that rule and no other.

Random walks draw legal cases under each base filter set, every applicable
mutation of `strategies/edits.py` is applied, and `validate` says which rules
fire. A pair whose result violates exactly one rule most often becomes that
rule's searched breaker. `python -m fia_fuzz.strategies.illegal.search`
prints, per `illegal/<prefix>.py`, the `searched(...)` entries for the rules
that have no written breaker (a written breaker serves its rule; the search
proposes nothing for it), to paste into that module's `BREAKERS`; with `--routes
[PREFIX...]`, the route bases of `spans.ROUTE_BASES`.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter, defaultdict
from typing import Any

from fia_fuzz.rules.rule import RULES
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.cases import PROFILES, build, families_for
from fia_fuzz.strategies.choices import Dead, RandomChooser
from fia_fuzz.strategies.edits import MUTATIONS, apply

#: Base filter sets: one per family and per optional feature, so every rule has a
#: legal neighbourhood in which it applies.
BASES: list[dict[str, Any]] = [
    {"plain": True, "layout": "BNSD"}, {"plain": True, "layout": "BSH"},
    {"plain": True, "branch": "decode"}, {"plain": True, "layout": "BSND", "branch": "prefill"},
    {"paged": True, "layout": "BNSD", "antiquant": "none", "branch": "decode"},
    {"paged": True, "branch": "prefill", "mask": "none", "pse": False},
    {"cache": "BnNBsD", "antiquant": "none", "rope": False},
    {"kv_list": True}, {"prefix": True, "branch": "prefill"}, {"prefix": True, "branch": "decode"},
    {"q_padding": True}, {"kv_padding": True, "branch": "decode"},
    {"sparse_mode": 0, "mask": "bool", "branch": "prefill", "layout": "BNSD"},
    {"sparse_mode": 1}, {"sparse_mode": 2}, {"sparse_mode": 3, "layout": "BNSD"},
    {"sparse_mode": 4, "full_quant": False},
    {"mask": "bool", "branch": "decode"},
    {"pse": True, "branch": "prefill"}, {"pse": True, "branch": "decode"},
    {"sink": True}, {"lse": True, "plain": True},
    {"antiquant": "combined:0", "branch": "decode"}, {"antiquant": "combined:1"},
    {"antiquant": "combined:0", "branch": "prefill"},
    {"antiquant": "separate:0/0", "branch": "decode", "kv_dtype": "int8"},
    {"antiquant": "separate:1/1", "branch": "prefill"},
    {"antiquant": "separate:0/0", "branch": "prefill"},
    {"antiquant": "separate:2/2"}, {"antiquant": "separate:3/3"},
    {"antiquant": "separate:4/4"}, {"antiquant": "separate:5/5"},
    {"antiquant": "separate:0/1", "kv_dtype": "int8"},
    {"kv_dtype": "int4"}, {"kv_dtype": "int32"},
    {"full_quant": True, "post_quant": False}, {"full_quant": True, "post_quant": True},
    {"post_quant_form": "per_tensor", "q_dtype": "float16"},
    {"post_quant_form": "per_channel", "layout": "BSH"},
    {"post_quant_offset": True, "sparse_mode": 4},
    {"layout": "TND", "rope": False}, {"layout": "NTD_TND"}, {"layout": "TND", "paged": True},
    {"rope_d": "128"}, {"rope_d": "512", "layout": "BNSD"}, {"rope_d": "512", "layout": "TND"},
    {"rope_d": "512", "cache": "NZ"}, {"layout": "BSH_NBSD"},
    {"q_seq": ">2048"}, {"empty": "kv"},
]


def search(walks: int = 6, seed: int = 0, out=sys.stdout) -> dict[str, tuple[int, str, float]]:
    """rule id -> (base index, mutation name, single-violation rate)."""
    rng = random.Random(seed)
    prof = PROFILES["smoke"]
    hits: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    tries: Counter[tuple[int, str]] = Counter()
    for bi, base in enumerate(BASES):
        fams = families_for(base)
        cases = []
        for _ in range(walks * 40):
            if len(cases) >= walks:
                break
            try:
                cases.append(build(RandomChooser(rng, base), prof, fams, base))
            except Dead:
                continue
        for case in cases:
            for name, mutate in MUTATIONS.items():
                change = mutate(RandomChooser(rng, {}), case)
                if change is None:
                    continue
                broken = apply(case, change)
                tries[bi, name] += 1
                rules = [v.rule for v in validate(**broken.specs())]
                if len(rules) == 1:
                    hits[bi, name][rules[0]] += 1
    best: dict[str, tuple[int, str, float]] = {}
    for (bi, name), counter in hits.items():
        for rid, n in counter.items():
            rate = n / tries[bi, name]
            if n >= 2 and (rid not in best or rate > best[rid][2]):
                best[rid] = (bi, name, rate)
    missing = [r for r in RULES if r not in best]
    print(f"# {len(best)} of {len(RULES)} rules have a breaker; none for {missing}", file=out)
    return best


def _py(obj: Any) -> str:
    """A filter dict as Python source in the project's style (double quotes)."""
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, str):
        return json.dumps(obj, ensure_ascii=False)
    return repr(obj)


def render_entry(rid: str, base: dict[str, Any], mutation: str) -> str:
    """One `BREAKERS` entry of a searched breaker, within 100 columns. The entry carries no
    landing rate: `fia-fuzz coverage --illegal` measures that for the breaker as it is."""
    one = f"    {_py(rid)}: searched({_py(base)}, {_py(mutation)}),"
    if len(one) <= 100:
        return one
    two = f"        {_py(base)}, {_py(mutation)}),"
    if len(two) <= 100:
        return f"    {_py(rid)}: searched(\n{two}"
    return f"    {_py(rid)}: searched(\n        {_py(base)},\n        {_py(mutation)}),"


def proposals(best: dict[str, tuple[int, str, float]], breakers: dict[str, Any]) -> list[str]:
    """The entries to paste, under a comment naming each module: one per rule the search
    broke that has no written breaker (a written breaker always serves its rule)."""
    written = {rid for rid, b in breakers.items() if b.mutation is None}
    lines, prefix = [], ""
    for rid in RULES:
        if rid in best and rid not in written:
            if rid.split(".")[0] != prefix:
                prefix = rid.split(".")[0]
                lines.append(f"# fia_fuzz/strategies/illegal/{prefix}.py")
            bi, name, _ = best[rid]
            lines.append(render_entry(rid, BASES[bi], name))
    return lines


def route_proposals(prefixes: list[str]) -> None:
    """Print the `spans.ROUTE_BASES` entries of the rules whose id starts with one of
    `prefixes` (all when empty), one rule at a time as it is found."""
    from fia_fuzz.strategies.illegal import OWN_BREAKERS
    from fia_fuzz.strategies.illegal.spans import route_bases
    from fia_fuzz.strategies.illegal.width import route_pool

    pool = route_pool()
    for rule, breaker in OWN_BREAKERS.items():
        if prefixes and not rule.startswith(tuple(prefixes)):
            continue
        found = route_bases(rule, breaker, pool)
        if found:
            print(f"    {_py(rule)}: (", *(_route_base(f) for f in found), "    ),",
                  sep="\n", flush=True)


def _route_base(f: dict[str, Any]) -> str:
    """One route base as an entry line, the route on a line of its own past 100 columns."""
    one = f"        {_py(f)},"
    if len(one) <= 100:
        return one
    rest = {k: v for k, v in f.items() if k != "route"}
    return f"        {_py(rest)[:-1]},\n         \"route\": {_py(f['route'])}}},"


def main() -> None:
    """`search`: the searched breakers to paste into each module's BREAKERS; `search --routes
    [PREFIX...]`: the route bases to paste into spans.ROUTE_BASES."""
    from fia_fuzz.strategies.illegal import BREAKERS

    if sys.argv[1:2] == ["--routes"]:
        route_proposals(sys.argv[2:])
    else:
        print("\n".join(proposals(search(), BREAKERS)))


if __name__ == "__main__":
    main()
