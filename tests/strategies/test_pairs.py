"""Pairs of feature values: the stored feasible sets match the axes, their encoding round
trips, a stream's pair aims pin what they say and its walks replay from their choices, and
`coverage --pairs` reports in its contract's form."""

from __future__ import annotations

import json

import pytest

from fia_fuzz.cli import main
from fia_fuzz.op import args
from fia_fuzz.strategies import pair_aims, pairs
from fia_fuzz.strategies.axes import AXES
from fia_fuzz.strategies.cases import aimed_cases, recorded_cases
from fia_fuzz.strategies.sample import draw_cases

RULES = ("docs", "atlas-a2")


@pytest.mark.parametrize("rules", RULES)
def test_the_stored_feasible_set_fits_the_axes(rules: str) -> None:
    why = pairs.stale(rules)
    assert why is None, (f"{why}: run `fia-fuzz coverage --pairs --refresh-feasible "
                         f"--rules {rules}` and commit fia_fuzz/strategies/feasible/")


def test_every_axis_but_the_forms_is_paired() -> None:
    paired = pairs.paired_axes()
    assert set(paired) == set(AXES) - set(args.form_axes())
    assert {"route", "route_edge", "values", "size_edge"} <= set(paired)


def test_the_packed_sets_round_trip() -> None:
    ints = [0, 1, 5, 127, 128, 300, 70000, 2**40]
    assert pairs._unpack(pairs._pack(ints)) == ints


@pytest.mark.parametrize("rules", RULES)
def test_each_pair_has_one_status_and_the_infeasible_ones_a_reason(rules: str) -> None:
    fs = pairs.load(rules)
    sp = pairs.space()
    assert set(fs.status) == set(sp.all_pairs())
    assert all(p in fs.reason for p in fs.pairs(pairs.INFEASIBLE))
    # one value fixing another is named: route_edge's cell lies on its route
    cell = sp.index[("route_edge", repr("fai:cores"))]
    other = sp.index[("route", repr("v3.gqa"))]
    assert fs.status[sp.pair_id(cell, other)] != pairs.FEASIBLE
    assert fs.aims and all(len(aim) >= 2 for aim in fs.aims)


def _stream(n: int, seed: int, rules: str = "docs") -> tuple[list[tuple], pair_aims.Stream]:
    """(case, choices, the aim `pair_aims.last()` names) of `n` draws of one nightly stream,
    and the stream."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from fia_fuzz.strategies.seeded import fixed_constants

    got: list[tuple] = []

    @hseed(seed)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(recorded_cases(profile="nightly", rules=rules))
    def collect(drawn: tuple) -> None:
        got.append((*drawn, pair_aims.last()))

    with fixed_constants(), pair_aims.stream(rules) as s:
        collect()
    return got, s


def test_a_streams_aimed_draws_carry_their_pins_and_walk_the_schedule() -> None:
    got, s = _stream(60, seed=5)
    aims = [json.loads(aim) for _, _, aim in got]
    # every other draw aims; an aim no walk carried leaves an unaimed walk ("{}")
    carried = [(case, aim) for (case, _, _), aim in zip(got, aims, strict=True) if aim]
    assert len(carried) >= 15
    for case, aim in carried:
        feats = case.features()
        assert all(feats.get(a) == v for a, v in aim.items()), (aim, case.case_id)
    assert s.drawn == 60 and s.cursor >= 30  # the schedule walked in order, skipping
    schedule = pair_aims.schedule("docs")
    assert all(aim in schedule for _, aim in carried)


def test_the_stream_covers_more_pairs_than_the_profiles_own_mix() -> None:
    def covered(got: list[tuple]) -> int:
        sp = pairs.space()
        return len({p for case, _, _ in got
                    for p in pairs.case_pairs(sp, sp.indices(case.features()))})

    aimed, s = _stream(200, seed=3)
    with pair_aims.unaimed():
        plain, _ = _stream(200, seed=3)
    assert covered(aimed) > covered(plain)
    assert s.uncovered == len(pairs.load("docs").pairs(pairs.FEASIBLE)) - len(
        {p for case, _, _ in aimed for p in pairs.case_pairs(
            pairs.space(), pairs.space().indices(case.features()))
         if pairs.load("docs").status.get(p) == pairs.FEASIBLE})


def test_each_walked_case_replays_from_its_choices_through_aimed_cases() -> None:
    got, _ = _stream(8, seed=11)
    assert {aim == "{}" for _, _, aim in got} == {True, False}  # aimed and unaimed walks
    for case, choices, aim in got:
        assert _replayed(choices, aim) == case.case_id


def test_a_draw_outside_a_stream_is_hypothesis_s_own() -> None:
    """Outside a stream (a test's @given, a campaign's steering round) nightly draws make
    no pair decision: the draw is built from Hypothesis's choices and replays from them."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    got: list[tuple] = []

    @hseed(11)
    @settings(max_examples=4, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(recorded_cases(profile="nightly"))
    def collect(drawn: tuple) -> None:
        got.append((*drawn, pair_aims.last()))

    collect()
    for case, choices, aim in got:
        assert aim is None
        assert _replayed(choices, None) == case.case_id


def _replayed(choices: tuple[int, ...], aim: str | None) -> str | None:
    """The case id a choice sequence rebuilds through what the shrink replays it with:
    `aimed_cases(aim)` for a stream's walk, the nightly strategy otherwise."""
    from hypothesis import HealthCheck, Phase, given, settings

    from fia_fuzz.campaign.shrink import SeedDatabase

    again: list = []
    strategy = recorded_cases(profile="nightly") if aim is None else \
        aimed_cases(aim, "nightly")

    @settings(max_examples=1, database=SeedDatabase(choices), deadline=None,
              phases=[Phase.reuse], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def replay(drawn: tuple) -> None:
        again.append(drawn[0].case_id)

    replay()
    return again[0] if again else None


def test_smoke_makes_no_pair_decision() -> None:
    a = [c.case_id for c in draw_cases(5, seed=1, profile="smoke")]
    with pair_aims.unaimed():
        b = [c.case_id for c in draw_cases(5, seed=1, profile="smoke")]
    assert a == b


def test_coverage_pairs_ends_with_its_summary_and_fails_on_an_uncovered_pair(capsys) -> None:
    assert main(["coverage", "--pairs", "--profile", "nightly", "--cases", "20"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("pairs: ") and "feasible covered (" in last
    assert " unknown); triples route x axis x axis: " in last


def test_refresh_feasible_needs_pairs(capsys) -> None:
    assert main(["coverage", "--refresh-feasible"]) == 2
    assert "--refresh-feasible" in capsys.readouterr().err
