"""The documented special values (a default spelled out explicitly, the no-band sentinel
given, a zero meaning another argument's) are drawn in legal nightly cases at a visible
rate, and smoke's stream draws none of them unfiltered (op/args `special`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from fia_fuzz.op import args
from fia_fuzz.op.case import Case
from fia_fuzz.op.forms import implied_pins
from fia_fuzz.rules.validate import case_violations
from fia_fuzz.strategies.cases import PROFILES, build, families_for
from fia_fuzz.strategies.choices import Dead, RandomChooser

Feats = dict[str, Any]

#: (form axis, special value) -> the cell where it applies (a predicate over features).
CELLS: dict[tuple[str, str], Callable[[Feats], bool]] = {
    ("band_form", "explicit_sentinel"): lambda f: f["band"] == "default",
    ("sparse_mode_form", "explicit_default"): lambda f: f["sparse_mode"] == 0,
    ("softmax_lse_flag_form", "explicit_default"): lambda f: not f["lse"],
    ("input_layout_form", "absent"): lambda f: f["layout"] == "BSH",
    ("scale_form", "absent"): lambda f: f["scale_form"] != "set",
    ("inner_precise_form", "explicit_default"): lambda f: f["inner_precise"] == 1,
    ("block_size_form", "explicit_default"): lambda f: not f["paged"],
    ("antiquant_mode_form", "explicit_default"): lambda f: f["antiquant"] == "combined:0",
    ("key_antiquant_mode_form", "explicit_default"):
        lambda f: f["antiquant"] in ("separate:0/0", "separate:0/1"),
    ("value_antiquant_mode_form", "explicit_default"):
        lambda f: f["antiquant"] == "separate:0/0",
    ("num_key_value_heads_form", "0"): lambda f: f["gqa"] == "mha",
    # given, yet the full S: the absent call spelled out (classified, drawn by `lengths`)
    ("actual_seq_lengths_form", "full"):
        lambda f: f["actual_q"] != "absent" and "TND" not in f["layout"],
    ("actual_seq_lengths_kv_form", "full"):
        lambda f: f["actual_kv"] != "absent" and "TND" not in f["layout"] and not f["paged"]
        and not f["kv_list"],
}


def _walk(n: int, seed: int, profile: str) -> list[Case]:
    rng = random.Random(seed)
    fams = families_for({})
    return [build(RandomChooser(rng, {}), PROFILES[profile], fams, {}) for _ in range(n)]


@pytest.fixture(scope="module")
def nightly() -> list[tuple[Case, Feats]]:
    return [(c, c.features()) for c in _walk(2000, seed=17, profile="nightly")]


def test_every_special_value_has_a_cell() -> None:
    assert args.special_forms() <= set(CELLS)


def test_nightly_draws_each_special_value_at_a_visible_rate(nightly) -> None:
    """At least 1% of the nightly draws of each value's cell take it (about a quarter do:
    draft.SPECIAL_WEIGHT), and every one of those draws is legal."""
    rates = {}
    for (axis, value), cell in CELLS.items():
        inside = [(c, f) for c, f in nightly if cell(f)]
        hits = [c for c, f in inside if f[axis] == value]
        assert len(inside) >= 20, (axis, value, len(inside))
        rates[axis, value] = len(hits) / len(inside)
        for c in hits[:25]:
            assert case_violations(c) == [], c.to_json()
    low = {k: r for k, r in rates.items() if r < 0.01}
    assert low == {}, rates


def test_smoke_draws_no_special_value_unfiltered() -> None:
    """Smoke makes no decision for them: its seeded stream is the one it was."""
    specials = args.special_forms()
    for c in _walk(600, seed=17, profile="smoke"):
        f = c.features()
        assert not {(a, f[a]) for a, _ in specials} & specials, c.to_json()


@pytest.mark.parametrize(("axis", "value"), sorted(args.special_forms()))
def test_a_smoke_filter_draws_the_special_value(axis: str, value: str) -> None:
    pins = {**implied_pins({axis: value}), axis: value}
    rng = random.Random(0)
    fams = families_for(pins)
    for _ in range(200):
        try:
            case = build(RandomChooser(rng, pins), PROFILES["smoke"], fams, pins)
        except Dead:
            continue
        assert case.features()[axis] == value and case_violations(case) == []
        return
    pytest.fail(f"no smoke walk drew {axis}={value}")


def test_a_form_value_spelled_like_a_number_filters_as_the_string() -> None:
    from fia_fuzz.cli import _filters

    assert _filters(["num_key_value_heads_form=0", "sparse_mode=0", "lse=true"]) == {
        "num_key_value_heads_form": "0", "sparse_mode": 0, "lse": True}
