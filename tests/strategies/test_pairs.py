"""Pairs of feature values: the stored feasible sets match the axes, their encoding round
trips, pair aims pin what they say and replay from their choices, and
`coverage --pairs` reports in its contract's form."""

from __future__ import annotations

import pytest

from fia_fuzz.cli import main
from fia_fuzz.op import args
from fia_fuzz.strategies import pair_aims, pairs
from fia_fuzz.strategies.axes import AXES
from fia_fuzz.strategies.cases import recorded_cases
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


def test_pair_aims_pin_their_pairs() -> None:
    aims = pair_aims.schedule("docs")
    drawn = draw_cases(60, seed=5, profile="nightly")
    # half the draws are aimed; a draw keeps an unaimed case only when PAIR_TRIES pinned
    # draws die, so most aimed draws carry every pin of one entry
    carried = 0
    for case in drawn:
        feats = case.features()
        carried += any(all(feats.get(a) == v for a, v in aim.items()) for aim in aims)
    assert carried >= 15
    with pair_aims.unaimed():
        plain = draw_cases(60, seed=5, profile="nightly")
    assert sum(any(all(c.features().get(a) == v for a, v in aim.items()) for aim in aims)
               for c in plain) < carried


def test_a_recorded_aimed_case_replays_from_its_choices_alone() -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    got: list[tuple] = []

    @hseed(11)
    @settings(max_examples=6, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(recorded_cases(profile="nightly"))
    def collect(drawn: tuple) -> None:
        got.append(drawn)

    collect()

    for case, choices in got:
        assert _replayed(choices) == case.case_id


def _replayed(choices: tuple[int, ...]) -> str | None:
    """The case id a choice sequence rebuilds through the nightly strategy (as the
    shrink replays it)."""
    from hypothesis import HealthCheck, Phase, given, settings

    from fia_fuzz.campaign.shrink import SeedDatabase

    again: list = []

    @settings(max_examples=1, database=SeedDatabase(choices), deadline=None,
              phases=[Phase.reuse], suppress_health_check=list(HealthCheck))
    @given(recorded_cases(profile="nightly"))
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
