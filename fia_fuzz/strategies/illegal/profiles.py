"""`illegal_cases(rules=PROFILE)`: cases that break exactly one rule of a device profile.

A documented rule the profile holds is broken by its documented breaker and
kept when the profile reports exactly that rule; a profile's own rule is
broken by its worked examples (`atlas_a2_examples.NEGATIVE`, one call per
device check, drawn with a fresh data seed) and, where the check belongs to one code
route, in half the draws by a breaker from a base on that route
(`illegal/a2_routes.py` ROUTE_BREAKERS). Rules the profile does not hold
(removed or replaced) cannot be asked for.
"""

from __future__ import annotations

from typing import Any

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fia_fuzz.op.case import Case
from fia_fuzz.rules.profiles import Profile
from fia_fuzz.rules.profiles import atlas_a2_examples as a2
from fia_fuzz.rules.rule import RULES
from fia_fuzz.rules.validate import case_violations
from fia_fuzz.strategies.edits import apply
from fia_fuzz.strategies.illegal.a2_routes import ROUTE_BREAKERS
from fia_fuzz.strategies.illegal.breaker import Breaker, host_sized
from fia_fuzz.strategies.illegal.width import broken_sides

#: Per profile: its own rule id -> calls breaking exactly that rule (and nothing else).
EXAMPLES: dict[str, dict[str, list[dict[str, Any]]]] = {"atlas-a2": {}}
for _row, _rid, _call in a2.NEGATIVE:
    if _rid.startswith("a2."):
        EXAMPLES["atlas-a2"].setdefault(_rid, []).append(_call)


def profile_illegal_cases(profile: Profile, rule: str | None, breakers: dict[str, Breaker],
                          skip: set[str]) -> st.SearchStrategy[tuple[Case, frozenset[str]]]:
    """Cases of `profile` whose only violation under it is `rule` (None: any breakable rule),
    each with the sides of the bound it broke (`illegal.sided_illegal_cases`)."""
    own = EXAMPLES.get(profile.name, {})
    if rule is not None and not profile.holds(rule):
        raise InvalidArgument(f"rule={rule!r} is not held by rules={profile.name!r} (see "
                              f"docs/rules.md, profile {profile.name})")
    if rule is not None and rule not in own and rule not in breakers:
        raise InvalidArgument(f"rule={rule!r} has no breaker under rules={profile.name!r}")
    ids = [rule] if rule else sorted(
        [r for r in breakers if r in RULES and r not in skip and profile.holds(r)] + list(own))
    bases = {r: breakers[r].cases() for r in ids if r not in own}
    routed = {r: ROUTE_BREAKERS[r] for r in ids if r in own and r in ROUTE_BREAKERS}
    bases.update({r: b.cases() for r, b in routed.items()})

    @st.composite
    def broken(draw: st.DrawFn) -> tuple[Case, frozenset[str]]:
        rid = draw(st.sampled_from(ids))
        sides: frozenset[str] = frozenset()
        if rid in routed and draw(st.booleans()):
            base = draw(bases[rid])
            case = apply(base, routed[rid].change(draw, base))
            case = Case(params=case.params, fills=case.fills, seed=case.seed,
                        rules=profile.name)
        elif rid in own:
            params = draw(st.sampled_from(own[rid]))
            case = Case(params=params, seed=draw(st.integers(0, 2**32 - 1)), rules=profile.name)
        else:
            base = draw(bases[rid])
            change = breakers[rid].change(draw, base)
            case = apply(base, change)
            sides = broken_sides(base, change, case)
            case = Case(params=case.params, fills=case.fills, seed=case.seed,
                        rules=profile.name)
        if [v.rule for v in case_violations(case)] != [rid]:
            reject()
        if rid not in skip and host_sized(case):
            reject()
        return case, sides

    return broken()
