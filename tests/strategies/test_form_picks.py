"""How strategies pick argument forms: `Chooser.fixed` draws nothing and honours pins, and a
form filter reaches its form through the features it implies."""

from __future__ import annotations

import random

import pytest

from fia_fuzz.rules.validate import case_violations
from fia_fuzz.strategies.cases import PROFILES, build, families_for
from fia_fuzz.strategies.choices import Dead, RandomChooser


class _CountingChooserDouble(RandomChooser):
    """A RandomChooser that counts its decisions (plumbing test double)."""

    def __init__(self, pins: dict) -> None:
        super().__init__(random.Random(0), pins)
        self.decisions = 0

    def one(self, options):
        self.decisions += 1
        return super().one(options)


def test_fixed_draws_nothing_and_honours_pins() -> None:
    ch = _CountingChooserDouble({"pse_shift_form": "decode:B,N,1,S2"})
    assert ch.fixed("learnable_sink_form", "none") == "none"
    assert ch.fixed("pse_shift_form", "decode:B,N,1,S2") == "decode:B,N,1,S2"
    with pytest.raises(Dead, match="pse_shift_form"):
        ch.fixed("pse_shift_form", "none")
    assert ch.decisions == 0


def test_empty_kv_post_quant_filter_reaches_its_form_in_few_walks() -> None:
    """implied_pins steers the walk (empty KV, post-quant) instead of rejecting at the end."""
    pins = {"quant_scale2_form": "empty_kv", "empty": "kv", "post_quant": True}
    rng = random.Random(1)
    hits = 0
    for _ in range(40):
        try:
            case = build(RandomChooser(rng, pins), PROFILES["smoke"], families_for(pins), pins)
        except Dead:
            continue
        hits += 1
        assert case.features()["quant_scale2_form"] == "empty_kv" and not case_violations(case)
        assert "quant_offset2" not in case.params
    assert hits >= 10
