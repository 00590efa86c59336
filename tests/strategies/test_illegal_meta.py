"""Meta-tests of `illegal_cases`: each draw breaks its rule and no other."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, Unsatisfiable

from fia_fuzz.op.case import Case
from fia_fuzz.rules.rule import RULES
from fia_fuzz.rules.validate import validate
from fia_fuzz.strategies import INEXPRESSIBLE, NOT_MATERIALISABLE, illegal_cases
from fia_fuzz.strategies.edits import apply
from fia_fuzz.strategies.illegal import BREAKERS, MODULES, breaker
from fia_fuzz.strategies.illegal.breaker import host_sized
from fia_fuzz.strategies.illegal.search import proposals

COVERED = sorted(r for r in BREAKERS if r in RULES)
#: Written breakers (a change function, not a replayed searched mutation).
WRITTEN = sorted(r for r, b in BREAKERS.items() if b.mutation is None)
#: Rules whose legal neighbourhood the strategies do not draw yet, so they have no
#: breaker for now; drop an id here when its breaker lands.
PENDING: set[str] = set()


@pytest.mark.parametrize("rule", COVERED)
def test_breaker_violates_exactly_its_rule(rule: str) -> None:
    # searched breakers land on their rule alone in a share of draws (illegal/search.py);
    # the rest are discarded, so filtering is expected, but a rule that never lands fails
    @settings(max_examples=4, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(illegal_cases(rule))
    def check(case: Case) -> None:
        assert [v.rule for v in validate(**case.specs())] == [rule]
        assert Case.from_json(case.to_json()) == case

    check()


@pytest.mark.parametrize("rule", WRITTEN)
def test_written_breaker_lands_whenever_it_applies(rule: str) -> None:
    # these breakers reject() themselves where their change cannot apply; every change
    # they do make must break exactly their rule, so a rulebook or strategy change that
    # makes a second rule co-fire fails here instead of silently raising the discard rate
    breaker = BREAKERS[rule]
    bases = breaker.cases()

    @settings(max_examples=6, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.data())
    def check(data: st.DataObject) -> None:
        case = data.draw(bases)
        broken = apply(case, breaker.change(data.draw, case))
        assert [v.rule for v in validate(**broken.specs())] == [rule]

    check()


@pytest.mark.slow
@pytest.mark.parametrize("rule", WRITTEN)
def test_written_breaker_lands_in_most_draws(rule: str) -> None:
    # the figure behind "single-violation rate": 200 draws, every applied change exact,
    # and the change applies (does not reject) in at least half of the base draws
    breaker = BREAKERS[rule]
    bases = breaker.cases()
    tried, landed = [0], [0]

    @settings(max_examples=200, phases=[Phase.generate], database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        case = data.draw(bases)
        tried[0] += 1
        broken = apply(case, breaker.change(data.draw, case))
        assert [v.rule for v in validate(**broken.specs())] == [rule]
        landed[0] += 1

    check()
    assert landed[0] >= tried[0] / 2, f"{rule}: {landed[0]} of {tried[0]} base draws broken"


#: Cases up to this many elements are materialised with data (larger ones: shapes only).
MATERIALISE_MAX = 1 << 21


def _not_materialised(case: Case, rule: str) -> str | None:
    """Why `case` cannot go to a backend as a call, or None: `Case.call()` builds it (with
    data when small) and the call it builds still breaks `rule` alone."""
    try:
        case.call(data=False)
    except Exception as exc:  # what Case.call raises is the finding here
        return f"not built: {type(exc).__name__}: {exc}"
    if host_sized(case):
        return f"host-sized: {case.host_bytes()} bytes"
    if case.elements() <= MATERIALISE_MAX:
        broken = [v.rule for v in validate(**case.call())]
        assert broken == [rule], f"the materialised call breaks {broken}, not [{rule!r}]"
    return None


@pytest.mark.parametrize("rule", COVERED)
def test_breaker_cases_materialise_unless_listed(rule: str) -> None:
    # `fia-fuzz campaign --negative` sends these to backends, so Case.call() must build them
    # without repairing what they break; a rule in NOT_MATERIALISABLE must have a case that
    # cannot be built (its draws fixed, so the check is stable), so the list cannot rot; the
    # others' draws follow the profile (fixed in CI, fresh under "thorough")
    listed = rule in NOT_MATERIALISABLE
    why: list[str | None] = []

    @settings(max_examples=3, phases=[Phase.generate], database=None,
              derandomize=listed or bool(settings.default.derandomize),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(illegal_cases(rule))
    def check(case: Case) -> None:
        why.append(_not_materialised(case, rule))

    check()
    if listed:
        assert any(why), f"{rule} is in NOT_MATERIALISABLE, yet its cases materialise"
    else:
        assert not any(why), f"{rule}: add it to NOT_MATERIALISABLE or fix it: {why}"


@pytest.mark.parametrize("rules", ["docs", "atlas-a2"])
def test_host_sized_breaks_are_discarded_unless_listed(rules: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # mask.full_form's mask batch of 2048 landed at 2.1 GB from a large base (CI, 2026-11-24):
    # with every case counted host-sized, a materialisable rule has nothing left to draw,
    # while a listed one (host-sized by definition) still draws
    monkeypatch.setattr(breaker, "HOST_SIZED", -1)
    quiet = settings(max_examples=2, phases=[Phase.generate], database=None,
                     suppress_health_check=list(HealthCheck))
    with pytest.raises(Unsatisfiable):
        quiet(given(illegal_cases("mask.full_form", rules=rules))(lambda case: None))()
    drawn: list[Case] = []
    quiet(given(illegal_cases("args.memory", rules=rules))(lambda case: drawn.append(case)))()
    assert drawn and all(host_sized(c) for c in drawn)


def test_every_rule_has_a_breaker() -> None:
    missing = sorted(set(RULES) - set(BREAKERS) - set(INEXPRESSIBLE) - PENDING)
    assert not missing, f"rules without a breaker in fia_fuzz.strategies.illegal.<prefix>." \
                        f"BREAKERS " \
                        f"(add one, or say in INEXPRESSIBLE why a Case cannot break it): {missing}"
    stale = sorted(PENDING & set(BREAKERS))
    assert not stale, f"rules in PENDING that now have a breaker, drop them: {stale}"


@settings(max_examples=10, suppress_health_check=[HealthCheck.filter_too_much])
@given(illegal_cases())
def test_any_rule_draw_breaks_exactly_one_rule(case: Case) -> None:
    assert len(validate(**case.specs())) == 1


def test_unknown_rule_is_named() -> None:
    with pytest.raises(InvalidArgument, match="no.such.rule"):
        illegal_cases("no.such.rule")


@pytest.mark.parametrize("rule", sorted(set(RULES) - set(BREAKERS)))
def test_rules_without_breaker_are_named(rule: str) -> None:
    with pytest.raises(InvalidArgument, match=rule.replace(".", r"\.")):
        illegal_cases(rule)


def test_inexpressible_rules_say_why() -> None:
    for rule in INEXPRESSIBLE:
        with pytest.raises(InvalidArgument, match="cannot be broken by a Case"):
            illegal_cases(rule)


def test_breakers_live_in_the_module_of_their_prefix() -> None:
    """From a rule id to its breaker in one hop: `gqa.divisible` in `illegal/gqa.py`."""
    for m in MODULES:
        prefix = m.__name__.rsplit(".", 1)[1]
        for rid in (*m.BREAKERS, *getattr(m, "INEXPRESSIBLE", ()),
                    *getattr(m, "NOT_MATERIALISABLE", ())):
            assert rid.split(".")[0] == prefix, (rid, m.__name__)
    assert not set(INEXPRESSIBLE) & set(BREAKERS)
    assert len(BREAKERS) == sum(len(m.BREAKERS) for m in MODULES)


def test_search_proposes_nothing_for_written_breakers() -> None:
    # a written breaker serves its rule, so the search never emits a shadowed entry
    written, searched = WRITTEN[0], next(r for r, b in BREAKERS.items() if b.mutation)
    best = {written: (0, "attr:sparse_mode", 1.0), searched: (0, "attr:sparse_mode", 0.5)}
    text = "\n".join(proposals(best, BREAKERS))
    assert f'"{searched}": searched(' in text and written not in text
