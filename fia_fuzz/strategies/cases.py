"""`cases(**filters)`: legal cases drawn in dependency order, no rejection in the common path.

Order of every `sampled_from` list is the shrink order: a failing case
shrinks toward the dense family, BNSD, float16, MHA, small sizes and no
optional inputs. Filters pin features by their `case.features()` name (see
axes.AXES); they are validated up front, and a combination no family can
reach is reported when the strategy is built, not by a stalled search.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fia_fuzz.op.case import CACHE_ARGS, LAZY, LAZY_KEY, PAGED_ANTIQUANT_ARGS, Case
from fia_fuzz.op.features import WORKLOAD_PINS
from fia_fuzz.op.forms import implied_pins
from fia_fuzz.rules.profiles import DEFAULT
from fia_fuzz.rules.profiles import get as get_rules
from fia_fuzz.rules.validate import case_violations
from fia_fuzz.strategies import device_a2, pair_aims, routes, values
from fia_fuzz.strategies.axes import AXES
from fia_fuzz.strategies.choices import (
    Chooser,
    Dead,
    HypothesisChooser,
    RandomChooser,
    RecordingChooser,
)
from fia_fuzz.strategies.draft import PROFILES, Draft, Profile, pinned_profile
from fia_fuzz.strategies.families import FAMILIES, FAMILY_SCOPE
from fia_fuzz.strategies.workloads import OWN

__all__ = ["PROFILES", "Profile", "build", "cases", "families_for", "recorded_cases"]

#: Draw weight per family: dense carries most optional inputs, so it gets the most draws.
FAMILY_WEIGHTS = {"dense": 5, "antiquant": 3, "full_quant": 1, "packed": 1, "mla": 2,
                  "gqa_nz": 1}
#: Per rule profile: its extra families (name -> (builder, weight)) and the adapter that
#: turns a documented draw into the profile's form (the draw is rejected if still illegal).
DEVICE_FAMILIES: dict[str, dict[str, tuple[Any, int]]] = {
    device_a2.NAME: {"device_a2": (device_a2.device_a2, 4)}}
ADAPTERS: dict[str, Any] = {device_a2.NAME: device_a2.adapt}
#: Per rule profile: the regions its families exist to reach, each a predicate over a case.
DEVICE_REGIONS: dict[str, dict[str, Any]] = {device_a2.NAME: device_a2.REGIONS}
#: Decisions every draw makes at least: the simplest dense case needs ~33, shorter paths
#: of other families are padded to this so shrinking ends at that case (choices.pad).
MIN_PATH = 36
#: Walks a family may spend at build time before it is ruled out for the filters.
FEASIBILITY_WALKS = 200


def families_for(pins: dict[str, Any]) -> list[str]:
    """Families whose scope admits every pinned feature value."""
    return [f for f, scope in FAMILY_SCOPE.items()
            if all(pins[k] in scope[k] for k in pins if k in scope)]


def build(ch: Chooser, prof: Profile, families: list[str], pins: dict[str, Any],
          rules: str = DEFAULT) -> Case:
    """One case from the decisions of `ch`; raises Dead when a pin cannot be met on this path.

    Under a device rule profile `rules`, documented draws are adapted to it
    (ADAPTERS), its own families join, and a draw still illegal under it is Dead.
    A draw aiming at a route cell (strategies/routes.py) tries up to AIM_TRIES paths to
    land on it, and one whose paths cannot carry the aim's pins draws again without them
    (every decision recorded, so a replay takes the same paths); a route filter's aim is
    the filter, and stays Dead. In a stream with pair aims (strategies/pair_aims.py) an
    unfiltered draw is a seeded walk instead (`_walk_aim`).
    """
    case = _aimed(ch, prof, families, pins, rules)
    pair_aims.drew(case, pins)
    return case


def _aimed(ch: Chooser, prof: Profile, families: list[str], pins: dict[str, Any],
           rules: str) -> Case:
    paired = pair_aims.aim(ch, prof, pins)
    if paired is not None:
        return _walk_aim(ch, prof, families, *paired, rules)
    target = routes.aim(ch, prof, pins)
    if target is not None:
        carriers = [f for f in families_for(target.pins) if f in families
                    and f in target.families] or families
        built = 0
        for _ in range(2 * routes.AIM_TRIES):  # dead paths cost a try of their own
            try:
                case = _build(ch, prof, carriers, pins, rules, target.pins)
            except Dead:
                if pins:
                    raise
                continue
            built += 1
            if not target.cell or built == routes.AIM_TRIES \
                    or routes.landed(case, target.cell):
                return case
        ch.aim = None
    return _build(ch, prof, families, pins, rules, {})


def _walk_aim(ch: Chooser, prof: Profile, families: list[str], targets: list[dict[str, Any]],
              seed: int, rules: str) -> Case:
    """A stream's draw: walks seeded by `seed` that carry a pair aim's pin sets as filters
    (each in turn, PAIR_TRIES walks in all), else (or without an aim) an unaimed walk;
    `ch.replay` gets the walk's choices, which `aimed_cases(pair_aims.last())` replays."""
    rng = random.Random(seed)
    for target in targets:
        pins = _pins(target)
        for _ in range(pair_aims.PAIR_TRIES // len(targets)):
            walk = RecordingChooser(rng, pins)
            try:
                case = build(walk, prof, aim_families(pins, rules), pins, rules)
            except Dead:
                continue
            ch.replay = tuple(walk.choices)
            pair_aims.carried(target)
            return case
    with pair_aims.unaimed():
        for _ in range(FEASIBILITY_WALKS):
            walk = RecordingChooser(rng, {})
            try:
                case = build(walk, prof, families, {}, rules)
            except Dead:
                continue
            ch.replay = tuple(walk.choices)
            return case
    raise Dead(f"no unaimed walk of seed {seed} in {FEASIBILITY_WALKS}")


def aim_families(pins: dict[str, Any], rules: str) -> list[str]:
    """The families a pair aim's walks draw from (and `aimed_cases` replays them with)."""
    return families_for(pins) + list(DEVICE_FAMILIES.get(rules, {}))


def _build(ch: Chooser, prof: Profile, families: list[str], pins: dict[str, Any],
           rules: str, aimed: dict[str, Any]) -> Case:
    """One draw; under a route_edge filter up to routes.AIM_TRIES draws, as an unfiltered
    route aim takes (`_aimed`): a cell is the sizes of the whole finished case, which the
    aimed length and unit draws reach in some paths only (every decision recorded, so a
    replay takes the same paths). Unfiltered draws make one."""
    if pins.get("route_edge", routes.FREE) == routes.FREE:
        return _build_once(ch, prof, families, pins, rules, aimed)
    for _ in range(routes.AIM_TRIES - 1):
        try:
            return _build_once(ch, prof, families, pins, rules, aimed)
        except Dead:
            continue
    return _build_once(ch, prof, families, pins, rules, aimed)


def _build_once(ch: Chooser, prof: Profile, families: list[str], pins: dict[str, Any],
                rules: str, aimed: dict[str, Any]) -> Case:
    extra = DEVICE_FAMILIES.get(rules, {})
    weights = {**FAMILY_WEIGHTS, "workloads": prof.workload_weight,
               **{f: w for f, (_, w) in extra.items()}}
    ch.pins = {**{k: v for k, v in aimed.items() if k not in pins}, **pins}
    if pins.get("workload") in OWN and "workloads" in families:
        # a production pattern's filter draws it as the engines issue it (the other families
        # carry one only where the filters rule the workloads family out)
        families = ["workloads"]
    weighted = [f for f in families for _ in range(weights[f])]
    family = ch.one(weighted if len(families) > 1 else families)
    dr = Draft(prof=pinned_profile(prof, ch.pins), ch=ch)
    (extra[family][0] if family in extra else FAMILIES[family])(dr)
    values.draw(dr)
    if dr.lazy:
        for name in (*CACHE_ARGS, *PAGED_ANTIQUANT_ARGS):
            if name in dr.params:
                dr.fills[name] = {**dr.fills.get(name, {}), LAZY_KEY: LAZY}
    ch.pad(MIN_PATH)
    case = values.settle(Case(params=dr.params, fills=dr.fills, seed=ch.int(0, 2**32 - 1)))
    if rules != DEFAULT:
        case = ADAPTERS[rules](case)
        broken = case_violations(case)
        if broken:
            raise Dead(f"{family} draw breaks {[v.rule for v in broken]} under {rules}")
    if pins:
        feats = case.features()
        wrong = {k: feats.get(k) for k, v in pins.items() if feats.get(k) != v}
        if wrong:
            raise Dead(f"drawn features {wrong} differ from filters")
    return case


def _check_filters(profile: str, filters: dict[str, Any]) -> None:
    if profile not in PROFILES:
        raise InvalidArgument(f"profile={profile!r}, expected one of {sorted(PROFILES)}")
    for name, value in filters.items():
        if name not in AXES:
            raise InvalidArgument(f"unknown filter {name}={value!r}; filters are the feature "
                                  f"axes {sorted(AXES)}")
        allowed = AXES[name]
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            raise InvalidArgument(f"filter {name}={value!r} is not a value of that feature; "
                                  f"expected one of {list(allowed)}")


def _feasible(prof: Profile, family: str, pins: dict[str, Any], rules: str = DEFAULT) -> bool:
    """Random walks of the same construction, to prove a family can carry the filters."""
    rng = random.Random(0)
    for _ in range(FEASIBILITY_WALKS):
        try:
            build(RandomChooser(rng, pins), prof, [family], pins, rules)
            return True
        except Dead:
            continue
    return False


def cases(profile: str = "smoke", rules: str = DEFAULT, **filters: Any
          ) -> st.SearchStrategy[Case]:
    """Legal cases (every draw passes `validate(rules=rules)`); `filters` pin
    `case.features()` values.

    `profile` ("smoke", "nightly", "stress") sets the size budget; `rules` the
    rule profile ("docs", "atlas-a2": the device's legal space, its own regions
    included; see `fia_fuzz.strategies.device_a2`). Raises InvalidArgument for
    an unknown filter, value or rule profile, and for a combination of filters
    that no legal case can carry.
    """
    return _cases(*_plan(profile, filters, rules), _pins(filters), rules)


def device_cases(rules: str, profile: str = "smoke") -> st.SearchStrategy[Case]:
    """Cases of a device rule profile's own families only: the calls it admits beyond the
    docs (most of which the docs forbid), for negative campaigns that check the device
    takes them."""
    _plan(profile, {}, rules)
    return _cases(PROFILES[profile], tuple(DEVICE_FAMILIES.get(rules, {})), {}, rules)


def recorded_cases(profile: str = "smoke", rules: str = DEFAULT, **filters: Any
                   ) -> st.SearchStrategy[tuple[Case, tuple[int, ...]]]:
    """`cases(profile, rules, **filters)` drawing (case, its choice sequence): the same draws
    in the same order, so the sequence replayed through this strategy (e.g. from a
    Hypothesis example database) rebuilds the case, and Hypothesis can shrink from it."""
    return _recorded(*_plan(profile, filters, rules), _pins(filters), rules)


def aimed_cases(aim: str, profile: str = "smoke", rules: str = DEFAULT
                ) -> st.SearchStrategy[tuple[Case, tuple[int, ...]]]:
    """What replays a stream's pair-aimed draw (`pair_aims.last()`'s `aim`) from the choices
    `recorded_cases` gave with it: the pins held as filters, or for "{}" (a missed aim) the
    profile's unaimed draws."""
    target = json.loads(aim)
    if not target:
        return _recorded(*_plan(profile, {}, rules), {}, rules, unaimed=True)
    pins = _pins(target)
    return _recorded(PROFILES[profile], tuple(aim_families(pins, rules)), pins, rules)


#: Size classes a draw reaches through another decision: a tensor past 2^24, 2^31 or 2^32
#: elements is a lazy paged cache referenced past them (strategies/paged.py reach; the
#: nightly element budget keeps every other tensor under 2^24)
SIZE_IMPLIES = {("numel_class", v): {"cache_reach": v} for v in ("2^24", "2^31", "2^32")}


def _pins(filters: dict[str, Any]) -> dict[str, Any]:
    """The filters plus what their argument forms, size classes and workload imply
    (op/forms.py implied_pins, SIZE_IMPLIES, op/features.py WORKLOAD_PINS)."""
    sized = {k: v for item in filters.items() for k, v in SIZE_IMPLIES.get(item, {}).items()}
    if filters.get("empty_share") == "all":  # no batch references a block: reach reads near
        sized = {}
    work = WORKLOAD_PINS.get(filters.get("workload", "none"), {})
    return {**sized, **work, **implied_pins(filters), **filters}


def _plan(profile: str, filters: dict[str, Any], rules: str = DEFAULT
          ) -> tuple[Profile, tuple[str, ...]]:
    """(size budget, families that can carry the filters), or InvalidArgument."""
    _check_filters(profile, filters)
    try:
        get_rules(rules)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    prof = PROFILES[profile]
    pins = _pins(filters)
    candidates = families_for(pins) + list(DEVICE_FAMILIES.get(rules, {}))
    families = [f for f in candidates if not filters or _feasible(prof, f, pins, rules)]
    if not families:
        raise InvalidArgument(f"no legal case has all of {filters}: the filtered features "
                              f"exclude each other (see fia-semantics.md and axes.AXES)")
    return prof, tuple(families)


def _build_recorded(draw: st.DrawFn, prof: Profile, families: tuple[str, ...],
                    pins: dict[str, Any], rules: str) -> tuple[Case, tuple[int, ...]]:
    ch = HypothesisChooser(draw, pins)
    try:
        case = build(ch, prof, list(families), pins, rules)
        return case, ch.replay if ch.replay is not None else tuple(ch.choices)
    except Dead:
        reject()
        raise AssertionError("unreachable") from None


@st.composite
def _cases(draw: st.DrawFn, prof: Profile, families: tuple[str, ...], pins: dict[str, Any],
           rules: str = DEFAULT) -> Case:
    return _build_recorded(draw, prof, families, pins, rules)[0]


@st.composite
def _recorded(draw: st.DrawFn, prof: Profile, families: tuple[str, ...], pins: dict[str, Any],
              rules: str = DEFAULT, unaimed: bool = False) -> tuple[Case, tuple[int, ...]]:
    if unaimed:
        with pair_aims.unaimed():
            return _build_recorded(draw, prof, families, pins, rules)
    return _build_recorded(draw, prof, families, pins, rules)
