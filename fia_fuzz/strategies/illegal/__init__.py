"""`illegal_cases(rule)`: cases that break exactly one named rule, for negative testing.

The breakers of rule `p.x` are in `illegal/p.py`, named like its rules'
module `fia_fuzz/rules/rulebook/p.py`. Which breaker serves a rule: the one
entry for its id in that module's `BREAKERS`, either a written change (where
one exists the search proposes nothing for the rule) or `searched(base,
mutation)`, a named mutation of `strategies/edits.py` found by
`python -m fia_fuzz.strategies.illegal.search`. Each starts from a legal case
drawn by `cases(**base)` (the base filters put the case where the rule
applies; `spans.py` adds bases on the Atlas A2 routes they miss) and changes it
just enough to violate its rule. The result is
checked against `validate`: a draw whose violations are not exactly `[rule]`
is discarded, and the meta-tests assert such discards stay rare; so is a
host-sized one (`breaker.HOST_SIZED`) unless its rule is NOT_MATERIALISABLE. Rules a
`Case` cannot express (`INEXPRESSIBLE`) and rules without a breaker yet
raise InvalidArgument naming the rule.
"""

from __future__ import annotations

import importlib

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fia_fuzz.op.case import Case
from fia_fuzz.rules import rulebook
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.rules.profiles import get as get_rules
from fia_fuzz.rules.rule import RULES
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies.edits import apply
from fia_fuzz.strategies.illegal.breaker import Breaker, host_sized
from fia_fuzz.strategies.illegal.spans import spanning
from fia_fuzz.strategies.illegal.width import broken_sides

#: One module per rule-id prefix, named and ordered as the rulebook's.
MODULES = tuple(importlib.import_module(f"{__name__}.{m.__name__.rsplit('.', 1)[1]}")
                for m in rulebook.MODULES)

#: Each module's breakers on their own bases; BREAKERS adds the route bases (`spans.py`).
OWN_BREAKERS: dict[str, Breaker] = {rid: b for m in MODULES for rid, b in m.BREAKERS.items()}
BREAKERS: dict[str, Breaker] = {rid: spanning(rid, b) for rid, b in OWN_BREAKERS.items()}

#: Rules that a Case (JSON-serialisable TensorSpecs and int lists) cannot violate, with why
#: (each module may list its own).
INEXPRESSIBLE: dict[str, str] = {rid: why for m in MODULES
                                 for rid, why in getattr(m, "INEXPRESSIBLE", {}).items()}

#: The sides of each bound rule's illegal range (labels of `edits.SIDES`: a range's below and
#: above, an equality's both, a length's shorter and longer, a per-element limit's first and
#: last element) that its breaker must reach; each module declares its own, read off the
#: rule's check, and `fia-fuzz coverage --illegal` names the sides a breaker misses.
BOUNDS: dict[str, tuple[str, ...]] = {rid: sides for m in MODULES
                                      for rid, sides in getattr(m, "BOUNDS", {}).items()}

#: Rules whose breaking cases cannot be sent to a backend as a call: `Case.call()` cannot
#: build them, or they are host-sized (more host memory than legal draws take);
#: illegal_cases() without a rule leaves them out, illegal_cases(rule) still draws them
#: for validate-level tests (each module lists its own, with why; a meta-test holds every
#: other breaker's cases to materialise still breaking their rule).
NOT_MATERIALISABLE: set[str] = {rid for m in MODULES
                                 for rid in getattr(m, "NOT_MATERIALISABLE", ())}


def illegal_cases(rule: str | None = None, rules: str = DEFAULT) -> st.SearchStrategy[Case]:
    """Cases whose only violation is `rule` (None: any rule with a materialisable breaker)
    under the rule profile `rules` (see `illegal/profiles.py` for a device profile)."""
    return sided_illegal_cases(rule, rules).map(lambda drawn: drawn[0])


def sided_illegal_cases(rule: str | None = None, rules: str = DEFAULT
                        ) -> st.SearchStrategy[tuple[Case, frozenset[str]]]:
    """`illegal_cases(rule, rules)` with the sides of its rule's bound each case broke
    (`width.broken_sides`; none for a device profile's own examples): the same draws, so a
    negative finding can name the side a backend accepted."""
    if rules != DEFAULT:
        from fia_fuzz.strategies.illegal.profiles import profile_illegal_cases

        try:
            profile = get_rules(rules)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        return profile_illegal_cases(profile, rule, BREAKERS, NOT_MATERIALISABLE)
    if rule is not None and rule not in RULES:
        raise InvalidArgument(f"rule={rule!r} is not a rule id; see fia_fuzz.rules.rule.RULES")
    if rule in INEXPRESSIBLE:
        raise InvalidArgument(f"rule={rule!r} cannot be broken by a Case: {INEXPRESSIBLE[rule]}")
    if rule is not None and rule not in BREAKERS:
        raise InvalidArgument(f"rule={rule!r} has no breaker yet in "
                              f"fia_fuzz.strategies.illegal.{rule.split('.')[0]}.BREAKERS")
    ids = [rule] if rule else sorted(r for r in BREAKERS
                                     if r in RULES and r not in NOT_MATERIALISABLE)
    bases = {r: BREAKERS[r].cases() for r in ids}

    @st.composite
    def broken(draw: st.DrawFn) -> tuple[Case, frozenset[str]]:
        rid = draw(st.sampled_from(ids))
        base = draw(bases[rid])
        change = BREAKERS[rid].change(draw, base)
        case = apply(base, change)
        if [v.rule for v in validate(**case.specs())] != [rid]:
            reject()
        if rid not in NOT_MATERIALISABLE and host_sized(case):
            reject()
        sides = broken_sides(base, change, case)
        return case, sides

    return broken()
