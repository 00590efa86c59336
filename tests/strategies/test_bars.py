"""The production bars (strategies/bars.py): met by nightly draws, missed and named
when a sample lacks what they count, printed by `fia-fuzz coverage` for unfiltered draws."""

from __future__ import annotations

import random

import pytest

from fia_fuzz.strategies.bars import S2_REACH, masked_decode, measure, vllm_call
from fia_fuzz.strategies.cases import build, families_for
from fia_fuzz.strategies.choices import RandomChooser
from fia_fuzz.strategies.draft import PROFILES
from fia_fuzz.strategies.masks import DECODE_SHAPES
from fia_fuzz.strategies.sample import draw_cases


@pytest.fixture(scope="module")
def nightly() -> list[dict]:
    rng = random.Random(21)
    fams = families_for({})
    return [build(RandomChooser(rng, {}), PROFILES["nightly"], fams, {}).features()
            for _ in range(1200)]


def test_nightly_draws_meet_every_bar(nightly: list[dict]) -> None:
    bars = measure(nightly, "nightly")
    assert bars.missed() == [], bars.lines()
    text = "\n".join(bars.lines())
    assert f"| {bars.vllm} (" in text and "bar >= 1%" in text and "bar >= 5%" in text
    assert all(f"{s}: {bars.masked[s]}" in text for s in DECODE_SHAPES)
    assert f"largest S2 | {bars.largest_s2} ({bars.reach} draws >= 32768)" in text
    assert "MISSED" not in text


def test_a_sample_without_the_production_calls_misses_each_bar_by_name(
        nightly: list[dict]) -> None:
    short = [f for f in nightly if not vllm_call(f) and not masked_decode(f)
             and f["S2"] < S2_REACH["nightly"]]
    bars = measure(short, "nightly", illegal=3)
    assert bars.missed() == ["illegal", "vllm", "masked", *DECODE_SHAPES, "s2"]
    lines = bars.lines()
    assert all(line.endswith("MISSED") for line in lines[1:]), lines
    one_shape = [f for f in nightly if f["mask_shape"] != "B,1,S2"]
    assert measure(one_shape, "nightly").missed() == ["B,1,S2"]


def test_smoke_draws_print_the_figures_without_the_nightly_bars(nightly: list[dict]) -> None:
    bars = measure(nightly[:50], "smoke")
    assert bars.missed() == []
    assert "bar >=" not in "\n".join(bars.lines()) and ">= 32768" not in bars.lines()[3]


def test_coverage_prints_the_bars_for_unfiltered_draws_only(capsys) -> None:
    from fia_fuzz.cli import main

    main(["coverage", "--cases", "30"])
    text = capsys.readouterr().out
    assert "production bars (30 draws, profile smoke" in text and "illegal draws | 0" in text
    main(["coverage", "--cases", "30", "--filter", "layout=BSH"])
    assert "production bars" not in capsys.readouterr().out


def test_bars_read_the_case_features() -> None:
    """The predicates read `Case.features()` (op/case.py, one home): a vLLM decode is the
    TND paged sparse-3 call; a masked paged decode counts once its S2 passes 512 keys."""
    for case in draw_cases(5, profile="nightly", workload="vllm_decode"):
        assert vllm_call(case.features()) and not masked_decode(case.features())
    for case in draw_cases(5, profile="nightly", workload="paged_decode_bsh", mask="bool"):
        f = case.features()
        assert masked_decode(f) == (f["S2"] > 512) and not vllm_call(f)
